#!/usr/bin/env bash
# Install, build with warnings as errors, and run the whole test suite twice: plainly, then
# under AddressSanitizer + UndefinedBehaviorSanitizer; the threaded aging test and the files
# adapter's tests (its deletion thread) also run under ThreadSanitizer, the fuzz targets run for
# a bounded time under libFuzzer (clang), and the Debian packages are built, checked with
# lintian, installed and purged (scripts/deb.sh).
# Ends with one line: "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
top=$PWD

scripts/deps.sh || { echo "0 passed, 1 failed"; exit 1; }

status=0
builds=()
run_build() {   # name, meson options..., -- test args...
    local dir=$1; shift
    local opts=() targs=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    targs=("$@")
    rm -rf "$dir"
    echo "=== $dir: meson setup ${opts[*]}"
    if ! meson setup "$dir" -Dwerror=true "${opts[@]}" >"$dir.setup.log" 2>&1; then
        cat "$dir.setup.log"; status=1; return
    fi
    rm -f "$dir.setup.log"
    # shellcheck disable=SC2086 # BUILD_TARGETS: a list of ninja targets, empty for all
    if ! ninja -C "$dir" ${BUILD_TARGETS:-} >"$dir.build.log" 2>&1; then
        tail -50 "$dir.build.log"; status=1; return
    fi
    # BACKGROUND_SUITE: these suites (blank-separated) run beside this build's other tests and
    # the next builds (their own log, meson-logs/background.*), and are waited for at the end.
    if [ -n "${BACKGROUND_SUITE:-}" ]; then
        local bargs=() suite
        for suite in $BACKGROUND_SUITE; do
            bargs+=(--suite "$suite")
            targs+=(--no-suite "$suite")
        done
        echo "=== $dir: meson test ${bargs[*]} (beside what follows; its output at the end)"
        meson test -C "$dir" --no-rebuild --print-errorlogs --num-processes 2 \
            "${bargs[@]}" --logbase background >"$dir.background.log" 2>&1 &
        background+=("$!:$dir")
    fi
    echo "=== $dir: meson test ${targs[*]}"
    meson test -C "$dir" --print-errorlogs --num-processes 2 "${targs[@]}" || status=1
    builds+=("$dir")
}
background=()

# The system lab's images, Debian 13's build chroot, both systems' .debs and the kernels
# (scripts/syslab.sh --prepare), from the start, beside the builds: the suite system's guests
# find them ready, or wait for them. A first run on a machine builds them (minutes); later runs
# find the images and the chroot cached, and build the .debs again only for a changed tree.
echo "=== syslab: scripts/syslab.sh --prepare 12 13 (beside everything; its output at the end)"
scripts/syslab.sh --prepare 12 13 > build-ci-syslab.log 2>&1 &
syslab_pid=$!

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# The VM lab's guests (suite vm, plain build only: 1-2 min each, emulated) and the system lab's
# (suite system: three Debian systems booted by systemd, 2-4 min each) run beside the other
# tests and the next builds, which leave a CPU idle much of the time.
BACKGROUND_SUITE="vm system" run_build build-ci
# The benchmarks' quick checks (suite bench: whether a bench still runs and what it must show)
# run in the plain build only: under ASan they measure the sanitizer, and every path they take
# is one the tests above take under it too. The VM lab's guests run plain only as well.
run_build build-ci-asan -Db_sanitize=address,undefined -Db_lundef=false -- --no-suite bench
# The Debian packages: built, lintian-clean, installed and purged again (scripts/deb.sh, TAP),
# beside the ThreadSanitizer build and the fuzz targets (those run for a fixed time whatever
# else runs): CI stays within its 15 minutes, the fuzzers' runs are fewer.
echo "=== build-ci-deb: scripts/deb.sh (beside the next builds; its output follows them)"
scripts/deb.sh build-ci-deb > build-ci-deb.tap 2>&1 &
deb_pid=$!
TSAN_OPTIONS=halt_on_error=1 run_build build-ci-tsan -Db_sanitize=thread -- --suite age \
    --suite files
# libFuzzer (clang) on every parser of outside input, 20 s per target, two at a time; only the
# fuzz targets are built: the rest of the tree is GCC's, built and tested above.
CC=clang BUILD_TARGETS="tests/fuzz/fuzz-trace tests/fuzz/fuzz-config tests/fuzz/fuzz-duration \
    tests/fuzz/fuzz-memcached tests/fuzz/fuzz-redis" \
    run_build build-ci-fuzz -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false \
    -- --suite fuzz
wait "$deb_pid" || status=1
# 77: the lab cannot run here (no network for the images, not root), which its tests say too.
syslab_status=0
wait "$syslab_pid" || syslab_status=$?
echo "=== syslab: scripts/syslab.sh --prepare 12 13 (exit status $syslab_status)"
cat build-ci-syslab.log
[ "$syslab_status" = 0 ] || [ "$syslab_status" = 77 ] || status=1
echo "=== build-ci-deb: scripts/deb.sh build-ci-deb"
cat build-ci-deb.tap
for b in "${background[@]}"; do
    wait "${b%%:*}" || status=1
    echo "=== ${b#*:}: the suite run beside the others"
    cat "${b#*:}.background.log"
done

STATUS=$status python3 - "${builds[@]}" <<'PY'
import json, os, re, sys
passed = failed = 0
why = []  # what each failed test case said, printed last: CI shows the end of the output
# scripts/deb.sh's TAP: one result per check
if os.path.exists("build-ci-deb.tap"):
    for line in open("build-ci-deb.tap"):
        if re.match(r"ok \d", line) and "# SKIP" not in line:
            passed += 1
        elif re.match(r"not ok \d", line):
            failed += 1
logs = [f"{d}/meson-logs/{base}.json" for d in sys.argv[1:] for base in ("testlog", "background")]
for log in logs:
    if not os.path.exists(log):
        continue  # no suite ran beside that build's tests
    with open(log) as f:
        for line in f:
            t = json.loads(line)
            tap = [l for l in t.get("stdout", "").splitlines() if re.match(r"(not )?ok( |$)", l)]
            if t["result"] not in ("OK", "SKIP", "EXPECTEDFAIL"):
                lines, said, inside = t.get("stdout", "").splitlines(), [], False
                for l in lines:  # Criterion's TAP: "not ok - NAME", then a YAML block to "  ..."
                    if l.startswith("not ok"):
                        inside = True
                    if inside and l.strip() not in ("---", "...", ""):
                        said.append(l.strip())
                    if l.strip() == "...":
                        inside = False
                why.append(f"{log.split('/')[0]}: {t['name']}: " + (" | ".join(said)[:3000] or t["result"]))
            if tap:
                # TAP: one result per test case; a crash after the plan still fails the binary
                failed += sum(1 for l in tap if l.startswith("not ok"))
                passed += sum(1 for l in tap if l.startswith("ok"))
                if t["result"] not in ("OK", "SKIP") and not any(l.startswith("not ok") for l in tap):
                    failed += 1
            elif t["result"] in ("OK", "EXPECTEDFAIL"):
                passed += 1
            elif t["result"] != "SKIP":
                failed += 1
if os.environ.get("STATUS") != "0" and failed == 0:
    failed = 1  # a build or a test binary failed outside any counted test case
for w in why:
    print("FAILED", w)
print(f"{passed} passed, {failed} failed")
PY
exit $status
