#!/usr/bin/env bash
# A short, bounded run of every cargo-fuzz target on its committed seed corpus.
#
#   bash scripts/fuzz-smoke.sh            # every target, FUZZ_SECONDS (8) each
#   FUZZ_SECONDS=60 bash scripts/fuzz-smoke.sh gateway_frame
#
# Works with the pinned stable toolchain: cargo-fuzz needs nightly flags, which
# RUSTC_BOOTSTRAP=1 allows. The sanitizer is FUZZ_SANITIZER (default: address; `none` builds
# faster and still catches panics and failed invariants). Each run fuzzes a temporary copy of
# fuzz/corpus/<target>/, so generated inputs are never committed; a crashing input is kept in
# fuzz/artifacts/<target>/ (ignored by git) and the script exits non-zero. Turn every crash into
# a regression unit test in the crate that owns the parser.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

seconds="${FUZZ_SECONDS:-8}"
sanitizer="${FUZZ_SANITIZER:-address}"
export RUSTC_BOOTSTRAP=1
export PATH="$HOME/.cargo/bin:$PATH"

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz-smoke: installing cargo-fuzz 0.13.2" >&2
    cargo install cargo-fuzz --locked --version 0.13.2
fi

if [ "$#" -gt 0 ]; then
    targets=("$@")
else
    mapfile -t targets < <(cargo fuzz list)
fi
if [ "${#targets[@]}" -eq 0 ]; then
    echo "fuzz-smoke: no fuzz targets found" >&2
    exit 1
fi

echo "fuzz-smoke: building ${targets[*]} (sanitizer: $sanitizer)" >&2
cargo fuzz build -s "$sanitizer"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failed=()
for target in "${targets[@]}"; do
    seeds="corpus/$target"
    if ! compgen -G "$seeds/seed-*" >/dev/null; then
        echo "fuzz-smoke: $target has no seed corpus in fuzz/$seeds" >&2
        failed+=("$target (no seeds)")
        continue
    fi
    mkdir -p "$work/$target"
    cp "$seeds"/seed-* "$work/$target/"
    echo "fuzz-smoke: $target for ${seconds}s" >&2
    # -timeout: one input taking longer than 10 s is a hang and fails the run.
    if cargo fuzz run -s "$sanitizer" "$target" "$work/$target" -- \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 >"$work/$target.log" 2>&1; then
        grep -E '^(stat::number_of_executed_units|Done )' "$work/$target.log" >&2 || true
    else
        # The cause first (panic message, sanitizer report), then the end of the log.
        grep -E -A3 "panicked at|ERROR: (AddressSanitizer|libFuzzer)|^SUMMARY" \
            "$work/$target.log" | head -n 40 >&2 || true
        tail -n 30 "$work/$target.log" >&2
        echo "fuzz-smoke: $target FAILED; crashing inputs are in fuzz/artifacts/$target/" >&2
        failed+=("$target")
    fi
done

if [ "${#failed[@]}" -gt 0 ]; then
    echo "fuzz-smoke: failed: ${failed[*]}" >&2
    exit 1
fi
echo "fuzz-smoke: all ${#targets[@]} targets ran ${seconds}s without a crash" >&2
