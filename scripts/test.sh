#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs the test dependencies, checks format and
# lints, then runs every test (unit, integration, end to end, interop, browser, terminal).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup-test-env.sh
export AX_TEST_PYTHON="$PWD/.venv-test/bin/python"

cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
# These crates' modules import one way (docs/architecture.md, "Imports inside a crate"); the
# crates with circles through their root (gateway, client, protocol, cli) are left out (see there).
for src in crates/server/src crates/tui/src crates/hub/src crates/acp/src crates/tuimcp/src; do
    python3 scripts/import-cycles.py "$src" --top
done
# The operator terminal starts the person's `$SHELL` as an interactive shell, which reads their
# rc files: a slow or locked rc (e.g. a version manager's rehash lock left by a killed shell,
# which makes every interactive bash wait 60 s) would time the terminal tests out. The tests
# are about our PTY handling, so they get a plain POSIX shell.
SHELL=/bin/sh cargo test --workspace --locked
# The Control UI's pure modules (web/layout.js, web/signin.js, ...), with Node's own test runner.
node --test tests/js/

# A short bounded run of every fuzz target on its committed seeds (seconds each, not minutes).
bash scripts/fuzz-smoke.sh
bash scripts/real-agents.sh  # the real ACP adapters through ax-code, offline (README: Real agents conformance suite)
