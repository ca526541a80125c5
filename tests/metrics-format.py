#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The Prometheus text format's rules (version 0.0.4), checked on cacheaged's metrics, and the
values against `cacheagectl show`.

Usage: metrics-format.py METRICS SHOW_OUTPUT CACHE ADAPTER
Rules: every line is "# HELP", "# TYPE" or a sample; a family's HELP and TYPE come once, before
its samples, and its samples are together; names match [a-zA-Z_:][a-zA-Z0-9_:]*; label values
escape backslash, double quote and newline; help text escapes backslash and newline; values are
numbers; a counter's name ends in _total and only a counter's does; units are base units (no
usec, no ppm). Every family of the library maps to one property of the cache, and every family
of the adapter to one AdapterStats entry, with the same value (durations in seconds); the
refaults by distance add up to the refaults.
"""
import re
import sys

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL_VALUE = r'(?:[^"\\\n]|\\[\\"n])*'
SAMPLE = re.compile(r"^(%s)\{((?:%s=\"%s\"(?:,%s=\"%s\")*)?)\} (\S+)$"
                    % (NAME, NAME, LABEL_VALUE, NAME, LABEL_VALUE))
LABEL = re.compile(r'(%s)="(%s)"' % (NAME, LABEL_VALUE))


def fail(msg):
    print("metrics-format: " + msg)
    sys.exit(1)


def main():
    metrics, show, cache, adapter = sys.argv[1:5]
    families = {}  # name -> {"help", "type", "samples": [(labels, value)]}
    order = []
    current = None
    for no, line in enumerate(open(metrics, encoding="utf-8").read().split("\n"), 1):
        if line == "":
            continue
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            parts = line.split(" ", 3)
            if len(parts) < 4 or not re.fullmatch(NAME, parts[2]):
                fail("line %d: malformed %s" % (no, line))
            name = parts[2]
            fam = families.setdefault(name, {"help": None, "type": None, "samples": []})
            if fam["samples"]:
                fail("line %d: %s after the samples of %s" % (no, parts[1], name))
            key = "help" if parts[1] == "HELP" else "type"
            if fam[key] is not None:
                fail("line %d: a second %s for %s" % (no, parts[1], name))
            if key == "help" and re.search(r"\\[^\\n]|\\$", parts[3]):
                fail("line %d: an unescaped backslash in help text" % no)
            if key == "type" and parts[3] not in ("counter", "gauge"):
                fail("line %d: type %s" % (no, parts[3]))
            fam[key] = parts[3]
            if name not in order:
                order.append(name)
            current = name
            continue
        if line.startswith("#"):
            fail("line %d: a comment that is neither HELP nor TYPE" % no)
        m = SAMPLE.match(line)
        if not m:
            fail("line %d: not a sample: %r" % (no, line))
        name = m.group(1)
        if name != current:
            fail("line %d: sample of %s outside its family (or before HELP/TYPE)" % (no, name))
        fam = families[name]
        if fam["help"] is None or fam["type"] is None:
            fail("line %d: %s lacks HELP or TYPE" % (no, name))
        try:
            value = float(m.group(3))
        except ValueError:
            fail("line %d: value %r" % (no, m.group(3)))
        labels = dict(LABEL.findall(m.group(2)))
        fam["samples"].append((labels, value))

    for name, fam in families.items():
        if fam["type"] == "counter" and not name.endswith("_total"):
            fail("counter %s does not end in _total" % name)
        if fam["type"] != "counter" and name.endswith("_total"):
            fail("gauge %s ends in _total" % name)
        if re.search(r"usec|ppm", name):
            fail("%s: not a base unit" % name)
        if not fam["samples"]:
            fail("%s: no sample" % name)

    # What cacheagectl show says of the cache.
    props, adapter_stats = {}, {}
    for line in open(show, encoding="utf-8"):
        key, _, value = line.rstrip("\n").partition("=")
        if key.startswith("AdapterStats."):
            adapter_stats[key[len("AdapterStats."):]] = value
        else:
            props[re.sub(r"(usec|ppm)$", "", key.lower())] = value

    lib, ad = 0, 0
    # The refaults by distance: one sample per bucket, adding up to the refaults.
    dist = families.pop("cacheage_refaults_by_distance_total", None)
    if dist is None:
        fail("no cacheage_refaults_by_distance_total")
    buckets = [v for labels, v in dist["samples"]
               if labels.get("cache") == cache and "min_rotations" in labels]
    total = [v for labels, v in families["cacheage_refaults_total"]["samples"]
             if labels.get("cache") == cache]
    if len(buckets) < 2 or total != [sum(buckets)]:
        fail("refaults by distance %s do not add up to the refaults %s" % (buckets, total))
    for name, fam in families.items():
        samples = [v for labels, v in fam["samples"]
                   if labels == {"cache": cache, "adapter": adapter}]
        if len(samples) != 1:
            fail("%s: %d samples for cache %s" % (name, len(samples), cache))
        value = samples[0]
        prefix = "cacheage_%s_" % adapter
        if name.startswith(prefix):
            stat = re.sub(r"_total$", "", name[len(prefix):])
            if stat not in adapter_stats:
                fail("%s: no AdapterStats.%s in show" % (name, stat))
            if float(adapter_stats[stat]) != value:
                fail("%s = %s, show says %s" % (name, value, adapter_stats[stat]))
            ad += 1
            continue
        base = re.sub(r"_(total|seconds|timestamp_seconds|ratio)$", "",
                      name[len("cacheage_"):])
        key = base.replace("_", "")
        if key not in props:
            fail("%s: no property %s in show" % (name, key))
        shown = props[key]
        if re.fullmatch(r"[0-9]+", shown):
            scale = 1e6 if re.search(r"_(seconds|ratio)$", name) else 1
            if abs(float(shown) / scale - value) > 1e-9:
                fail("%s = %s, show says %s" % (name, value, shown))
        lib += 1
    if lib < 13 or ad < 3:
        fail("only %d families of the library and %d of the adapter" % (lib, ad))
    print("%d families of the library, %d of the adapter, %d lines: the format's rules hold"
          % (lib, ad, sum(len(f["samples"]) for f in families.values()) + 2 * len(families)))


main()
