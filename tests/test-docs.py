#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The Markdown documents (README.md, HACKING.md, doc/**/*.md) against the tree (TAP).

  1. Every command they show exists: a script, bench or test of the tree, a program of the
     build, a benchmark or test name of `meson test`.
  2. Every long option they give such a command is one it takes: in its --help (programs of
     the build, cacheagectl, cacheaged) or in its text (scripts).
  3. Every figure of a measurement has a command that reproduces it: a section (between two
     headings) of README.md, doc/benchmarks.md or an adapter's guide that gives a ratio
     ("1.5x") or a share ("96%") names a command in it.
  4. Every configuration key they show is one the daemon or the adapter takes: tables of keys
     and `key = value` lines of ini blocks, against cacheaged.conf(5) (which test-man holds
     to the key tables).
  5. Every statistic they name is one the adapter reports: the lists of cacheaged.conf(5)
     ("Its statistics: ...", all of them, no other) and of the guides ("**Statistics**", no
     other), against AdapterStats of a live cacheaged with one cache of each adapter
     (--statistics FILE: `cacheagectl --json show` of each, written by test-docs.sh); a
     documented statistic the live caches did not report (one of another mode) must be named
     in the adapter's source.

usage: test-docs.py SRCDIR BUILDDIR [--statistics FILE]
"""

import json
import os
import re
import subprocess
import sys

src, build = sys.argv[1], sys.argv[2]
stats_file = sys.argv[4] if len(sys.argv) > 4 and sys.argv[3] == "--statistics" else None

docs = ["README.md", "HACKING.md"]
for root, _, names in os.walk(os.path.join(src, "doc")):
    docs += [os.path.relpath(os.path.join(root, n), src) for n in sorted(names) if n.endswith(".md")]
docs.sort()

n = 0
failed = False


def result(ok, what, details=()):
    global n, failed
    n += 1
    print(("ok" if ok else "not ok") + " %d - %s" % (n, what))
    for d in details:
        print("# " + d)
    failed |= not ok


def read(path):
    with open(os.path.join(src, path), encoding="utf-8") as f:
        return f.read()


def sections(text):
    """(heading, body) pairs; code blocks are kept whole (a # inside one is not a heading)."""
    out, head, body, fence = [], "(top)", [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fence = not fence
        if not fence and re.match(r"#{1,6} ", line):
            out.append((head, "\n".join(body)))
            head, body = line.lstrip("#").strip(), []
        else:
            body.append(line)
    out.append((head, "\n".join(body)))
    return out


def code_lines(text):
    """Every line of a fenced block, and every inline code span, of @text."""
    out, fence = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fence = not fence
            continue
        if fence:
            out.append(line)
        else:
            out += re.findall(r"`([^`]+)`", line)
    return out


# --- 1 and 2: commands and their options ---------------------------------------------------

COMMAND = re.compile(r"^(?:sudo\s+|nice(?:\s+-n\s*\d+)?\s+|[A-Z_]+=\S+\s+)*"
                     r"((?:build[\w-]*/)?(?:bench|scripts|tests|daemon)/[\w.-]+|cacheagectl|cacheaged)"
                     r"(\s.*)?$")
help_cache = {}


def program_help(prog):
    """The --help text of a program of the build, or the text of a script."""
    if prog in help_cache:
        return help_cache[prog]
    text = None
    if prog == "cacheaged":
        path = os.path.join(build, "daemon", prog)
    elif prog == "cacheagectl":
        path = os.path.join(build, "daemon", "ctl", prog)
    elif re.match(r"build[\w-]*/", prog):
        path = os.path.join(build, prog.split("/", 1)[1])
    else:
        path = os.path.join(src, prog)
    if os.path.isdir(path):
        text = ""  # a directory of the tree, named as a place
    elif os.path.isfile(path) and not path.endswith((".sh", ".py")) and os.access(path, os.X_OK):
        try:
            p = subprocess.run([path, "--help"], capture_output=True, text=True, timeout=20)
            text = p.stdout + p.stderr
        except (OSError, subprocess.TimeoutExpired):
            text = ""
    elif os.path.isfile(path):
        text = open(path, encoding="utf-8", errors="replace").read()
    help_cache[prog] = text
    return text


def meson_names():
    names = set()
    for kind in ("--tests", "--benchmarks"):
        try:
            p = subprocess.run(["meson", "introspect", kind, build], capture_output=True, text=True,
                               timeout=60)
            for t in json.loads(p.stdout or "[]"):
                names.add(t["name"])
                names.update(t.get("suite", []))
                names.update(s.split(":")[-1] for s in t.get("suite", []))
        except (OSError, ValueError, subprocess.TimeoutExpired):
            pass
    return names


def sanitized():
    try:
        p = subprocess.run(["meson", "introspect", "--buildoptions", build], capture_output=True,
                           text=True, timeout=60)
        return any(o["name"] == "b_sanitize" and o["value"] != "none"
                   for o in json.loads(p.stdout or "[]"))
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return False


def plain_only_names():
    """In a sanitized build the guests' tests are not defined (plain build only): their names
    as the meson.build files write them, literally, and the prefixes of those named in a loop
    (test('vm-' + kernel, ...))."""
    names, prefixes = set(), set()
    for root, _, files in os.walk(src):
        if "meson.build" in files and not os.path.relpath(root, src).startswith(("build", ".")):
            text = read(os.path.relpath(os.path.join(root, "meson.build"), src))
            names.update(re.findall(r"(?:test|benchmark)\('([\w.-]+)'\s*[,)]", text))
            prefixes.update(re.findall(r"(?:test|benchmark)\('([\w.-]+)'\s*\+", text))
    return names, prefixes


known_meson, known_prefixes = meson_names(), set()
if sanitized():
    plain, known_prefixes = plain_only_names()
    known_meson |= plain
missing, bad_options, bad_meson = [], [], []
for doc in docs:
    for line in code_lines(read(doc)):
        line = re.sub(r"(^|\s)#.*$", "", line)  # a shell comment
        for cmd in re.split(r"\s*(?:&&|\|\||;|\|)\s*", line.strip()):
            m = re.match(r"^meson test -C \S+ (.*)$", cmd)
            if m:
                names = [w for w in m.group(1).split() if not w.startswith("-") and w not in
                         ("--benchmark", "--suite")]
                bad_meson += ["%s: %s" % (doc, w) for w in names if w not in known_meson and
                              not any(w.startswith(p) for p in known_prefixes)]
                continue
            m = COMMAND.match(cmd)
            if not m:
                continue
            prog, args = m.group(1), m.group(2) or ""
            text = program_help(prog)
            if text is None:
                missing.append("%s: %s" % (doc, prog))
                continue
            args = args.split(" -- ")[0]
            for opt in re.findall(r"(?<![\w-])(--[a-z][\w-]*)", args):
                if not re.search(r"(?<![\w-])" + re.escape(opt) + r"(?![\w-])", text):
                    bad_options.append("%s: %s %s" % (doc, prog, opt))
result(not missing, "every command the documents show exists", sorted(set(missing)))
result(not bad_options, "every option they give a command is one it takes", sorted(set(bad_options)))
result(not bad_meson, "every meson test or benchmark they name exists", sorted(set(bad_meson)))

# --- 3: figures have a command ---------------------------------------------------------------

FIGURE = re.compile(r"\b\d+(?:\.\d+)?\s?(?:x|×)(?![\w])|\b\d+(?:\.\d+)?\s?%")
REPRODUCE = re.compile(r"`[^`]*(?:build[\w-]*/|bench/|scripts/|tests/|meson test)[^`]*`|"
                       r"^```", re.M)
no_command = []
for doc in docs:
    if not (doc == "README.md" or doc == "doc/benchmarks.md" or doc.startswith("doc/adapters/")):
        continue
    for head, body in sections(read(doc)):
        prose = re.sub(r"```.*?```", "", body, flags=re.S)
        if FIGURE.search(prose) and not re.search(
                r"(?:build[\w-]*/|bench/|scripts/|tests/|meson test)", "\n".join(code_lines(body))):
            no_command.append("%s: \"%s\" gives %s with no command" %
                              (doc, head, FIGURE.search(prose).group(0)))
result(not no_command, "every section that gives a measured figure names its command", no_command)

# --- 4: keys ---------------------------------------------------------------------------------

man = read("doc/cacheaged.conf.5.scd")
man_keys, man_stats, current = {}, {}, None
for line in man.splitlines():
    h = re.match(r"^(#{1,2}) (.*)$", line)
    if h:
        title = h.group(2)
        if title.startswith("[daemon]"):
            current = "daemon"
        elif title.startswith("[cache NAME]"):
            current = "cache"
        elif h.group(1) == "##":
            current = title.strip()
        else:
            current = None
        continue
    k = re.match(r"^\*([a-z0-9_]+)\* = _", line)
    if k and current:
        man_keys.setdefault(current, set()).add(k.group(1))
# "Its statistics: a, b, c." may run over several lines, up to the period that ends it.
for adapter, body in re.findall(r"^## (\S+)\n(.*?)(?=^#)", man, re.M | re.S):
    m = re.search(r"Its statistics:\s*(.*?)\.(?:\s|$)", body, re.S)
    if m:
        man_stats[adapter] = {s.strip() for s in re.split(r",\s*", re.sub(r"\s+", " ", m.group(1)))
                              if re.fullmatch(r"[a-z][a-z0-9_]*", s.strip())}
adapters = [a for a in man_keys if a not in ("daemon", "cache")]
host_keys = man_keys.get("cache", set())
bad_keys = []
for doc in docs:
    text = read(doc)
    guide = re.match(r"doc/adapters/([\w-]+)\.md$", doc)
    # Tables of keys in a guide: | `key` | default | meaning |
    if guide and guide.group(1) in man_keys:
        for key in re.findall(r"^\| `([a-z0-9_]+)` \|", text, re.M):
            if key not in man_keys[guide.group(1)] | host_keys:
                bad_keys.append("%s: key %s" % (doc, key))
    # ini blocks: the keys of each section, by its adapter.
    for block in re.findall(r"^```ini\n(.*?)^```", text, re.M | re.S):
        section, adapter, keys = None, None, []

        def check_section():
            allowed = man_keys.get("daemon", set()) if section == "daemon" else \
                host_keys | man_keys.get(adapter or "", set()) | {"adapter"}
            for key in keys:
                if key not in allowed:
                    bad_keys.append("%s: [%s] %s" % (doc, section, key))

        for line in block.splitlines():
            s = re.match(r"^\s*\[(daemon|cache [^\]]+)\]", line)
            if s:
                if section:
                    check_section()
                section, adapter, keys = s.group(1).split()[0], None, []
                continue
            kv = re.match(r"^\s*([a-z0-9_]+)\s*=\s*(\S*)", line)
            if kv and section:
                if kv.group(1) == "adapter":
                    adapter = kv.group(2)
                else:
                    keys.append(kv.group(1))
        if section:
            check_section()
result(not bad_keys, "every key the documents show is one the daemon or its adapter takes", bad_keys)

# --- 5: statistics ---------------------------------------------------------------------------

if stats_file:
    live = json.load(open(stats_file))  # {"adapter": ["stat", ...]}
    wrong = []
    for adapter in adapters:
        if adapter not in live:
            wrong.append("no live cache of adapter %s to compare with" % adapter)
            continue
        have = set(live[adapter])
        doc_stats = man_stats.get(adapter, set())
        # Some statistics are reported only in some modes (the kernel's actions, cgroup v2's
        # slab): one the live caches did not report must at least be one the adapter's source
        # names.
        source = ""
        adir = os.path.join(src, "lib", "adapters")
        for f in sorted(os.listdir(adir)):
            if f.startswith(adapter) and f.endswith(".c"):
                source += open(os.path.join(adir, f), encoding="utf-8").read()
        unknown = {s for s in doc_stats - have if '"%s"' % s not in source}
        if have - doc_stats or unknown:
            wrong.append("cacheaged.conf(5) %s: missing %s, not reported %s" %
                         (adapter, sorted(have - doc_stats) or "-", sorted(unknown) or "-"))
        try:
            guide = read("doc/adapters/%s.md" % adapter)
        except OSError:
            continue
        m = re.search(r"\*\*Statistics\*\*[^:]*:(.*?)(?:\n\n|$)", guide, re.S)
        if m:
            # a key named in passing ("over `max_files`") is not a statistic
            named = set(re.findall(r"`([a-z][a-z0-9_]*)`", m.group(1))) - {"adapterstats"} - \
                man_keys.get(adapter, set()) - host_keys - man_keys.get("daemon", set())
            if named - have:
                wrong.append("doc/adapters/%s.md names statistics it does not report: %s" %
                             (adapter, sorted(named - have)))
    result(not wrong, "every statistic the documents name is one the adapter reports", wrong)

print("1..%d" % n)
sys.exit(1 if failed else 0)
