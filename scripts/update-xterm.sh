#!/usr/bin/env bash
# Refreshes the terminal renderer the Control UI embeds (web/vendor/): @xterm/xterm and its fit
# addon, at the exact versions below, installed with npm in a scratch directory outside the
# repository. Only the distributed module, its stylesheet and the licences are copied; source
# maps are left out (the binary serves nothing else). See docs/gateway.md §6 "Updating xterm".
#
# Usage: scripts/update-xterm.sh [XTERM_VERSION [FIT_VERSION]]
# Then review `git diff --stat web/vendor`, run the Control UI browser tests, and commit.
set -euo pipefail

XTERM_VERSION="${1:-6.0.0}"
FIT_VERSION="${2:-0.11.0}"
root="$(cd "$(dirname "$0")/.." && pwd)"
vendor="$root/web/vendor"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

cd "$scratch"
npm init -y >/dev/null
npm install --no-audit --no-fund --ignore-scripts --save-exact \
  "@xterm/xterm@$XTERM_VERSION" "@xterm/addon-fit@$FIT_VERSION" >/dev/null

xterm="$scratch/node_modules/@xterm/xterm"
fit="$scratch/node_modules/@xterm/addon-fit"
# The versions npm resolved must be the ones asked for.
for pair in "$xterm:$XTERM_VERSION" "$fit:$FIT_VERSION"; do
  dir="${pair%%:*}"; want="${pair##*:}"
  got="$(node -p "require('$dir/package.json').version")"
  [ "$got" = "$want" ] || { echo "wanted $want, npm gave $got ($dir)" >&2; exit 1; }
done

mkdir -p "$vendor"
# Drop the source-map comment: the map is not served, and a browser would ask for it.
sed '/^\/\/# sourceMappingURL=/d' "$xterm/lib/xterm.mjs" >"$vendor/xterm.mjs"
sed '/^\/\/# sourceMappingURL=/d' "$fit/lib/addon-fit.mjs" >"$vendor/addon-fit.mjs"
cp "$xterm/css/xterm.css" "$vendor/xterm.css"
cp "$xterm/LICENSE" "$vendor/xterm.LICENSE"
cp "$fit/LICENSE" "$vendor/addon-fit.LICENSE"
{
  echo "# Embedded by crates/server/src/control_ui.rs; refreshed by scripts/update-xterm.sh."
  echo "@xterm/xterm $XTERM_VERSION"
  echo "@xterm/addon-fit $FIT_VERSION"
  (cd "$vendor" && sha256sum xterm.mjs addon-fit.mjs xterm.css)
} >"$vendor/VERSIONS"
echo "web/vendor now holds @xterm/xterm $XTERM_VERSION and @xterm/addon-fit $FIT_VERSION"
