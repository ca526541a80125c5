#!/usr/bin/env bash
# The full soak (issue 11; tests/soak.sh says what it does and checks), its figures for
# doc/benchmarks.md: a plain build with 5,000,000 objects across 5 caches at a 250ms interval for 300 s
# (over 1,000 rotations each) with the RSS, rotation and slice checks; an ASan+UBSan build for
# 90 s with 1,000,000 objects (LeakSanitizer at exit); valgrind memcheck for 90 s with 200,000
# objects (zero errors, nothing definitely lost). About 10 minutes. Ends with "N passed, N failed".
#   scripts/soak.sh [SECONDS]
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-300}
scripts/deps.sh || exit 1
command -v valgrind >/dev/null || {
    SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo
    $SUDO apt-get install -y -qq --no-install-recommends valgrind >/dev/null || exit 1
}
build() { # dir, meson options
    local dir=$1; shift
    [ -d "$dir" ] || meson setup "$dir" -Dwerror=true "$@" >/dev/null || return 1
    ninja -C "$dir" >/dev/null
}
build build-soak || exit 1
build build-soak-asan -Db_sanitize=address,undefined -Db_lundef=false || exit 1
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
passed=0 failed=0
run() { # name, soak arguments
    local name=$1; shift
    echo "=== soak $name: tests/soak.sh $*"
    if tests/soak.sh "$@" 2>&1 | tee "build-soak/soak-$name.log" | grep -E '^(figure|soak):'; then :; fi
    if tail -1 "build-soak/soak-$name.log" | grep -q '^soak: PASS'; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
    fi
}
run plain build-soak --seconds "$seconds" --objects 5000000 --caches 5 --interval 250ms --rss --timing
run asan build-soak-asan --seconds 90 --objects 1000000 --caches 5 --interval 250ms
run valgrind build-soak --seconds 90 --objects 200000 --caches 2 --interval 500ms --valgrind
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
