#!/usr/bin/env python3
"""Compares two runs of NGINX's test suite recorded by tap-record.pl: without the module
(BASE) and with it loaded (WITH).

    suite-compare.py BASE.tsv WITH.tsv [BROKEN_FILES]

Prints files, tests, skips and failures of each run, how many tests had the same outcome in
both, and every difference. Exits 1 when the module broke something: a test that passed (or
was skipped) without the module fails with it or is missing, or a file that passed without it
fails with it. BROKEN_FILES, when given, receives the names of the files concerned, one a line
(for a second look at them)."""

import sys

PASSING = {"ok", "skip", "todo", "todo_passed"}


def load(path):
    tests, files = {}, {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if parts[0] == "T" and len(parts) >= 4:
                desc = parts[4] if len(parts) > 4 else ""
                tests[(parts[1], int(parts[2]))] = (parts[3], desc)
            elif parts[0] == "F" and len(parts) >= 3:
                files[parts[1]] = (parts[2], parts[3] if len(parts) > 3 else "")
    return tests, files


def summary(name, tests, files):
    by = lambda s: sum(1 for v in files.values() if v[0] == s)
    st = lambda s: sum(1 for v in tests.values() if v[0] == s)
    print(
        f"{name}: {len(files)} files ({by('pass')} passed, {by('skip_all')} skipped whole, "
        f"{by('fail')} failed); {len(tests)} tests ({st('ok')} ok, {st('skip')} skipped, "
        f"{st('not_ok')} failed, {st('todo')} todo, {st('todo_passed')} todo passed)"
    )


def main():
    base_t, base_f = load(sys.argv[1])
    with_t, with_f = load(sys.argv[2])
    if not base_f or not with_f:
        print("suite-compare: a run recorded no files", file=sys.stderr)
        return 1
    summary("without the module", base_t, base_f)
    summary("with the module   ", with_t, with_f)

    broken, other, broken_files = [], [], set()
    for key in sorted(set(base_t) | set(with_t)):
        b = base_t.get(key, ("missing", ""))
        w = with_t.get(key, ("missing", ""))
        if b[0] == w[0]:
            continue
        line = f"{key[0]} #{key[1]} ({b[1] or w[1]}): {b[0]} without the module, {w[0]} with it"
        if b[0] in PASSING and w[0] not in PASSING:
            broken.append(line)
            broken_files.add(key[0])
        else:
            other.append(line)
    for name in sorted(set(base_f) | set(with_f)):
        b = base_f.get(name, ("missing", ""))
        w = with_f.get(name, ("missing", ""))
        if b[0] == w[0]:
            continue
        line = f"{name}: {b[0]} without the module ({b[1]}), {w[0]} with it ({w[1]})"
        if b[0] in ("pass", "skip_all") and w[0] not in ("pass", "skip_all"):
            broken.append(line)
            broken_files.add(name)
        else:
            other.append(line)

    same = sum(1 for k, v in base_t.items() if k in with_t and with_t[k][0] == v[0])
    same_files = sum(1 for k, v in base_f.items() if k in with_f and with_f[k][0] == v[0])
    print(
        f"identical outcomes: {same} of {len(set(base_t) | set(with_t))} tests, "
        f"{same_files} of {len(set(base_f) | set(with_f))} files"
    )
    fails = sorted(f"{k}: {v[1]}" for k, v in base_f.items() if v[0] == "fail")
    if fails:
        print("failing without the module too (the suite's own, not the module's):")
        for f in fails:
            print(f"  {f}")
    for line in other:
        print(f"differs (not a failure caused by the module): {line}")
    for line in broken:
        print(f"FAIL: {line}")
    if len(sys.argv) > 3:
        with open(sys.argv[3], "w", encoding="utf-8") as f:
            f.writelines(f"{name}\n" for name in sorted(broken_files))
    if broken:
        print(f"suite-compare: {len(broken)} outcomes broken by the module", file=sys.stderr)
        return 1
    print("no test fails with the module that passes without it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
