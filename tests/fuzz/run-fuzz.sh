#!/bin/sh
# Run one libFuzzer target for a bounded time, as a meson test (suite "fuzz"):
#   run-fuzz.sh FUZZER SEED_DIR ARTIFACT_DIR SECONDS [libFuzzer options...]
# New inputs go to a temporary corpus in front of the seeds, so that the source tree is never
# written; a crash, leak or timeout is saved in ARTIFACT_DIR and printed in base64, so that
# it can be reproduced from a CI log alone: base64 -d > crash; FUZZER crash.
# CA_FUZZ_SECONDS overrides SECONDS (longer local runs through meson test).
set -u
fuzzer=$1 seeds=$2 artifacts=$3 seconds=${CA_FUZZ_SECONDS:-$4}
shift 4

work=$(mktemp -d "${TMPDIR:-/tmp}/cacheage-fuzz.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
# The targets' own scratch files (fuzz-config writes its input as files) go there too,
# and are gone with it even after a crash.
export TMPDIR="$work/tmp"
mkdir "$work/corpus" "$TMPDIR" || exit 1
rm -rf "$artifacts" && mkdir -p "$artifacts" || exit 1  # only this run's findings

"$fuzzer" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$@" "$work/corpus" "$seeds"
status=$?
if [ "$status" -ne 0 ]; then
    for f in "$artifacts"/*; do
        [ -f "$f" ] || continue
        echo "=== $f ($(wc -c <"$f") bytes), base64:"
        base64 "$f" | head -c 65536
        echo
    done
fi
exit "$status"
