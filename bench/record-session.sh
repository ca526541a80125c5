#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Record a real interactive session under strace, for the replay lab's refault and adaptive-age
# targets (README, "Aging that tunes itself"): six programs that a developer runs again and again,
# each round in a random order, with a pause of 1 to 7 s before each program, for SECONDS of wall
# time: an edit (vim appends a line), a compile (gcc), a link (make), a commit (git), a python
# import and a look at the processes (ps). Most of what they look up they look up at every run;
# some names are new each time, as in any session: gcc's and ld's temporary files, the objects
# of each commit, the processes started since the last ps. Every program is run from a shell that enters
# the work directory, under `strace -f -ttt -qq -e trace=%file -e signal=none`, appended to one
# log: the pauses are real time in the log, the shell between programs is not traced.
#
#   bench/record-session.sh SEED SECONDS OUT.log[.xz]
#
# SEED makes the order and the pauses (awk's srand) the same from one recording to the next;
# what the programs look up is whatever they look up on this machine now. An OUT ending in .xz
# is compressed (xz -9e): the logs repeat themselves, so a 10-minute session of 6 MB keeps in
# a few hundred KiB, which bench-replay reads as it is.
set -eu

if [ $# -ne 3 ]; then
        echo "usage: $0 SEED SECONDS OUT.log[.xz]" >&2
        exit 2
fi
seed=$1 seconds=$2 out=$3
for tool in strace gcc git ps vim make /usr/bin/python3; do
        if ! command -v "$tool" >/dev/null 2>&1; then
                echo "record-session: $tool is needed" >&2
                exit 1
        fi
done

work=$(mktemp -d /tmp/cacheage-session.XXXXXX)
log=$work.log
trap 'rm -rf "$work" "$log"' EXIT

# The work directory: a small C program with its Makefile, notes, in a git repository.
cd "$work"
printf '#include <stdio.h>\n\nint main(void)\n{\n\tputs("hello");\n\treturn 0;\n}\n' >hello.c
printf 'hello: hello.o\n\tcc -o hello hello.o\n' >Makefile
printf 'notes\n' >notes.txt
for i in 1 2 3 4 5 6 7 8 9 10; do
        printf 'part %s\n' "$i" >"part$i.txt"
done
git init -q .
git -c user.name=session -c user.email=session@localhost add .
git -c user.name=session -c user.email=session@localhost commit -qm start

run() {
        strace -f -ttt -qq -A -o "$log" -e trace=%file -e signal=none \
                sh -c "cd '$work' && exec $1" >/dev/null 2>&1 </dev/null || true
}

program() {
        case $1 in
        0) run "/usr/bin/python3 -c 'import json, email.parser, argparse'" ;;
        1) run "gcc -O0 -c hello.c -o hello.o" ;;
        2) run "git -c user.name=session -c user.email=session@localhost commit -qam edit" ;;
        3) run "ps aux" ;;
        4) run "vim -es -u DEFAULTS -c 'normal Go.' -c wq notes.txt" ;;
        5) run "make -s" ;;
        esac
}

# The schedule: rounds of the six programs shuffled, a pause in tenths of a second before each.
schedule=$(awk -v seed="$seed" 'BEGIN {
        srand(seed);
        for (r = 0; r < 1000; r++) {
                for (i = 0; i < 6; i++) p[i] = i;
                for (i = 5; i > 0; i--) { j = int(rand() * (i + 1)); t = p[i]; p[i] = p[j]; p[j] = t }
                for (i = 0; i < 6; i++) printf "%d %d\n", p[i], 10 + int(rand() * 61);
        }
}')

start=$(date +%s)
echo "$schedule" | while read -r prog tenths; do
        [ $(($(date +%s) - start)) -lt "$seconds" ] || break
        sleep "$((tenths / 10)).$((tenths % 10))"
        program "$prog"
done

cd /
case $out in
*.xz) xz -9e -c "$log" >"$out" ;;
*) cp "$log" "$out" ;;
esac
echo "record-session: $(wc -l <"$log") lines in $out ($(wc -c <"$out") bytes)"
