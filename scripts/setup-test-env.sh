#!/usr/bin/env bash
# Installs what the test suite needs on a fresh machine: Debian's Chromium and ChromeDriver
# (Control UI tests), tmux, Node.js and npm (real-agent suite), nats-server and iproute2 (hub
# tests), and a private Python venv with the official MCP SDK (interop tests).
# Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
command -v chromedriver >/dev/null 2>&1 || need_apt+=(chromium-driver)
command -v tmux >/dev/null 2>&1 || need_apt+=(tmux)
command -v c++ >/dev/null 2>&1 || need_apt+=(g++)  # libFuzzer (fuzz smoke) builds C++
command -v python3 >/dev/null 2>&1 || need_apt+=(python3 python3-venv)
# The real-agent conformance suite (scripts/real-agents.sh) runs the agents' npm adapters.
command -v node >/dev/null 2>&1 || need_apt+=(nodejs)
command -v npm >/dev/null 2>&1 || need_apt+=(npm)
# The hub tests (crates/hub/tests, crates/cli/tests/hub_e2e.rs) start a real NATS server.
command -v nats-server >/dev/null 2>&1 || [ -x /usr/sbin/nats-server ] || need_apt+=(nats-server)
# The hub's network-namespace test (crates/cli/tests/hub_netns.rs) makes links with `ip`.
command -v ip >/dev/null 2>&1 || [ -x /usr/sbin/ip ] || need_apt+=(iproute2)
command -v nsenter >/dev/null 2>&1 || need_apt+=(util-linux)
command -v openssl >/dev/null 2>&1 || need_apt+=(openssl)  # the hub's TLS tests' throwaway CA
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

venv=.venv-test
pkgs=("mcp>=2.3,<3" "jsonschema>=4.20" "selenium>=4.30")
if ! "$venv/bin/python" -c 'import mcp, jsonschema, selenium' >/dev/null 2>&1; then
  echo "setup: creating the Python venv $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "${pkgs[@]}"
fi
"$venv/bin/python" -c 'import mcp, jsonschema, selenium; print("setup: python test deps ok")'
