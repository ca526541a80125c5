#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Record a real interactive session under strace, for the replay lab (doc/benchmarks.md, "Aging
# that tunes itself"): programs that a developer runs again and again, each round in a random
# order, with a pause before each program, for SECONDS of wall time. Most of what they look up
# they look up at every run; some names are new each time, as in any session: gcc's and ld's
# temporary files, the objects of each commit, sed's temporary file, the processes started since
# the last ps or top. Every program is run from a shell that enters the work directory, under
# `strace -f -ttt -qq -e trace=%file -e signal=none`, appended to one log: the pauses are real
# time in the log, the shell between programs is not traced.
#
#   bench/record-session.sh [--programs SET] [--pause MIN:MAX] SEED SECONDS OUT.log[.xz]
#
# SET (default dev) names the programs of a round:
#   dev    six: an edit (vim appends a line), a compile (gcc), a link (make), a commit (git), a
#          python import and a look at the processes (ps aux)
#   shell  ten, looking around a project of 24 C files in three directories: ls -la, grep -rn,
#          find -newer, git log --stat, tar czf, a perl tree walk, top -b -n1, file, du -s, and an
#          edit with sed -i followed by make -s (one object rebuilt)
#   mixed  eight of both: vim edits a source file, make -s, git diff --stat, grep -rn, ls -la,
#          top -b -n1, a python import, find -newer
# MIN:MAX (default 1:7) bounds the pause before each program, in seconds with at most one
# decimal; each pause is drawn uniformly in tenths of a second.
#
# SEED makes the order and the pauses (awk's srand) the same from one recording to the next;
# what the programs look up is whatever they look up on this machine now. An OUT ending in .xz
# is compressed (xz -9e): the logs repeat themselves, so a 10-minute session of 6 MB keeps in
# a few hundred KiB, which bench-replay reads as it is.
set -eu

usage() {
        echo "usage: $0 [--programs dev|shell|mixed] [--pause MIN:MAX] SEED SECONDS OUT.log[.xz]" >&2
        exit 2
}

set_name=dev pause=1:7
while [ $# -gt 0 ]; do
        case $1 in
        --programs) [ $# -ge 2 ] || usage; set_name=$2; shift 2 ;;
        --pause) [ $# -ge 2 ] || usage; pause=$2; shift 2 ;;
        --) shift; break ;;
        -*) usage ;;
        *) break ;;
        esac
done
[ $# -eq 3 ] || usage
seed=$1 seconds=$2 out=$3

# MIN:MAX in tenths of a second
tenths() {
        case $1 in
        *.?) echo "$(( ${1%.*} * 10 + ${1#*.} ))" ;;
        *) echo "$(( $1 * 10 ))" ;;
        esac
}
case $pause in
[0-9]*:[0-9]*) ;;
*) usage ;;
esac
lo=$(tenths "${pause%%:*}") hi=$(tenths "${pause#*:}")
[ "$lo" -le "$hi" ] || usage

case $set_name in
dev) nprog=6 tools="strace gcc git ps vim make /usr/bin/python3" ;;
shell) nprog=10 tools="strace gcc git make top tar perl file find grep du sed" ;;
mixed) nprog=8 tools="strace gcc git make vim top find grep /usr/bin/python3" ;;
*) usage ;;
esac
for tool in $tools; do
        if ! command -v "$tool" >/dev/null 2>&1; then
                echo "record-session: $tool is needed" >&2
                exit 1
        fi
done

work=$(mktemp -d /tmp/cacheage-session.XXXXXX)
log=$work.log
trap 'rm -rf "$work" "$log"' EXIT

git_() {
        git -c user.name=session -c user.email=session@localhost "$@"
}

# The work directory, in a git repository: for dev a small C program with its Makefile and
# notes; for shell and mixed a project of 24 C files in src/{a,b,c} with a header, built into
# obj/ by make (built once before the recording starts, as a project one works on is).
cd "$work"
if [ "$set_name" = dev ]; then
        printf '#include <stdio.h>\n\nint main(void)\n{\n\tputs("hello");\n\treturn 0;\n}\n' >hello.c
        printf 'hello: hello.o\n\tcc -o hello hello.o\n' >Makefile
        printf 'notes\n' >notes.txt
        for i in 1 2 3 4 5 6 7 8 9 10; do
                printf 'part %s\n' "$i" >"part$i.txt"
        done
else
        mkdir -p include src/a src/b src/c obj
        printf '#pragma once\nint f(int x);\n' >include/common.h
        for d in a b c; do
                for i in 1 2 3 4 5 6 7 8; do
                        printf '#include "common.h"\n/* TODO: %s%s */\nint %s%s(int x)\n{\n\treturn x + %s;\n}\n' \
                                "$d" "$i" "$d" "$i" "$i" >"src/$d/f$i.c"
                done
        done
        printf 'int main(void)\n{\n\treturn 0;\n}\n' >src/a/main.c
        cat >Makefile <<'EOF'
SRCS := $(wildcard src/*/*.c)
OBJS := $(patsubst src/%.c,obj/%.o,$(SRCS))

prog: $(OBJS)
	cc -o $@ $(OBJS)

obj/%.o: src/%.c include/common.h
	@mkdir -p $(dir $@)
	cc -Iinclude -O0 -c $< -o $@
EOF
        printf 'obj/\nprog\nsnap.tgz\n' >.gitignore
        printf 'notes\n' >notes.txt
        make -s >/dev/null 2>&1
fi
git init -q .
git_ add .
git_ commit -qm start

run() {
        strace -f -ttt -qq -A -o "$log" -e trace=%file -e signal=none \
                sh -c "cd '$work' && exec $1" >/dev/null 2>&1 </dev/null || true
}

program_dev() {
        case $1 in
        0) run "/usr/bin/python3 -c 'import json, email.parser, argparse'" ;;
        1) run "gcc -O0 -c hello.c -o hello.o" ;;
        2) run "git -c user.name=session -c user.email=session@localhost commit -qam edit" ;;
        3) run "ps aux" ;;
        4) run "vim -es -u DEFAULTS -c 'normal Go.' -c wq notes.txt" ;;
        5) run "make -s" ;;
        esac
}

program_shell() {
        case $1 in
        0) run "ls -la" ;;
        1) run "grep -rn TODO src include" ;;
        2) run "find . -name '*.c' -newer Makefile" ;;
        3) run "git log -3 --stat" ;;
        4) run "tar czf snap.tgz src include" ;;
        5) run "perl -MFile::Find -e 'find(sub { -f and \$n++ }, \"src\"); print \"\$n\\n\"'" ;;
        6) run "top -b -n1" ;;
        7) run "file src/a/f1.c src/b/f2.c include/common.h Makefile" ;;
        8) run "du -s ." ;;
        9) run "sh -c 'sed -i \"\\\$a /* edit */\" src/b/f3.c && make -s'" ;;
        esac
}

program_mixed() {
        case $1 in
        0) run "vim -es -u DEFAULTS -c 'normal Go/* edit */' -c wq src/a/f1.c" ;;
        1) run "make -s" ;;
        2) run "git diff --stat" ;;
        3) run "grep -rn TODO src include" ;;
        4) run "ls -la" ;;
        5) run "top -b -n1" ;;
        6) run "/usr/bin/python3 -c 'import json, email.parser, argparse'" ;;
        7) run "find . -name '*.c' -newer Makefile" ;;
        esac
}

# The schedule: rounds of the programs shuffled, a pause in tenths of a second before each.
schedule=$(awk -v seed="$seed" -v n="$nprog" -v lo="$lo" -v hi="$hi" 'BEGIN {
        srand(seed);
        for (r = 0; r < 1000; r++) {
                for (i = 0; i < n; i++) p[i] = i;
                for (i = n - 1; i > 0; i--) { j = int(rand() * (i + 1)); t = p[i]; p[i] = p[j]; p[j] = t }
                for (i = 0; i < n; i++) printf "%d %d\n", p[i], lo + int(rand() * (hi - lo + 1));
        }
}')

start=$(date +%s)
echo "$schedule" | while read -r prog tenths; do
        [ $(($(date +%s) - start)) -lt "$seconds" ] || break
        sleep "$((tenths / 10)).$((tenths % 10))"
        "program_$set_name" "$prog"
done

cd /
case $out in
*.xz) xz -9e -c "$log" >"$out" ;;
*) cp "$log" "$out" ;;
esac
echo "record-session: $(wc -l <"$log") lines in $out ($(wc -c <"$out") bytes)"
