#!/usr/bin/env bash
# The real-agent conformance suite (tests/real_agents/, docs/agents.md §10): Claude Code, Codex
# and Gemini CLI through their pinned ACP adapters, offline against scripted fake model
# servers, each through ax-code's real backend (`ax-code serve`), the Control UI in headless
# Chromium where a scenario needs it.
#
#   scripts/real-agents.sh [--traces DIR] [AGENT [SCENARIO]]
#
# AGENT: claude, codex or gemini; SCENARIO: one of tests/real_agents/scenarios.py. Prints one
# line per scenario and `N passed, N failed`; exits non-zero when one failed. `--traces DIR`
# keeps each scenario's ACP traffic as DIR/AGENT-SCENARIO.jsonl.
#
# The adapters are installed once into a cache outside the work tree,
# ${AX_REAL_AGENTS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ax-code/real-agents}, and reused while
# their versions are the pinned ones. An install of exactly these versions found at
# $AX_REAL_AGENTS_SEED (default ~/.cache/ax-code-real-agents, an npm prefix) is copied instead
# of installing.
set -euo pipefail
cd "$(dirname "$0")/.."

CACHE="${AX_REAL_AGENTS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ax-code/real-agents}"
SEED="${AX_REAL_AGENTS_SEED:-$HOME/.cache/ax-code-real-agents}"
PINS=(
  "@zed-industries/claude-agent-acp@0.23.1"
  "@zed-industries/codex-acp@0.16.0"
  "@google/gemini-cli@0.61.0"
)
PY="${AX_TEST_PYTHON:-$PWD/.venv-test/bin/python}"
[ -x "$PY" ] || PY=python3

# Whether the npm prefix $1 holds exactly the pinned versions.
pinned() {
  "$PY" - "$1" "${PINS[@]}" <<'EOF'
import json, os, sys
prefix = sys.argv[1]
for pin in sys.argv[2:]:
    name, version = pin.rsplit("@", 1)
    try:
        with open(os.path.join(prefix, "node_modules", name, "package.json")) as f:
            if json.load(f).get("version") != version:
                sys.exit(1)
    except (OSError, ValueError):
        sys.exit(1)
EOF
}

if ! pinned "$CACHE"; then
  mkdir -p "$(dirname "$CACHE")"
  rm -rf "$CACHE.tmp"
  if [ -d "$SEED" ] && pinned "$SEED"; then
    echo "real-agents: copying the pinned adapters from $SEED" >&2
    cp -a "$SEED" "$CACHE.tmp"
  else
    echo "real-agents: installing ${PINS[*]} into $CACHE" >&2
    mkdir -p "$CACHE.tmp"
    npm install --prefix "$CACHE.tmp" --no-audit --no-fund --loglevel=error "${PINS[@]}"
  fi
  rm -rf "$CACHE"
  mv "$CACHE.tmp" "$CACHE"
  pinned "$CACHE" || { echo "real-agents: $CACHE does not hold the pinned versions" >&2; exit 1; }
fi

# The backend under test: the workspace's debug binary, brought up to date.
cargo build --quiet --bin ax-code

export SHELL=/bin/sh
exec "$PY" tests/real_agents/run.py --binary "$PWD/target/debug/ax-code" --cache "$CACHE" "$@"
