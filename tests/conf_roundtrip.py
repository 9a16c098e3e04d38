"""Reads configurations written by httproute-nginx back with crossplane (NGINX's config
parser in Python, independent of the generator) and compares each directive with the tree the
writer meant to write (NAME.json next to NAME.conf, from
`cargo test -p httproute-nginx --test generate trees_for_the_crossplane_round_trip`).

crossplane's lexer keeps a `\\` escape as written (`\\\\` stays two bytes) where NGINX stores
one byte, and strips the parentheses of `if`: the writer's words are mapped the same way
before comparing. Prints the figures; exits 1 on the first difference.

    python3 tests/conf_roundtrip.py DIR
"""

import json
import os
import sys

import crossplane


def crossplane_word(w):
    # The writer quotes every word holding a backslash and escapes it as `\\`, which
    # crossplane keeps as two bytes.
    return w.replace("\\", "\\\\")


def strip_if(args):
    # crossplane's _prepare_if_args, applied to the writer's words.
    if args and args[0].startswith("(") and args[-1].endswith(")"):
        args[0] = args[0][1:].lstrip()
        args[-1] = args[-1][:-1].rstrip()
        start, end = 0, len(args) - 1
        while start < end and not args[start]:
            start += 1
        while start <= end and not args[end]:
            end -= 1
        args[:] = args[start : end + 1]
    return args


def expected(stmts):
    out = []
    for s in stmts:
        words = [crossplane_word(w) for w in s["words"]]
        d = {"directive": words[0], "args": words[1:]}
        if d["directive"] == "if":
            strip_if(d["args"])
        if "block" in s:
            d["block"] = expected(s["block"])
        out.append(d)
    return out


def parsed(stmts):
    out = []
    for s in stmts:
        d = {"directive": s["directive"], "args": s["args"]}
        if "block" in s:
            d["block"] = parsed(s["block"])
        out.append(d)
    return out


def count(stmts):
    return sum(1 + len(s["args"]) + count(s.get("block", [])) for s in stmts)


def main(root):
    files = sorted(f for f in os.listdir(root) if f.endswith(".conf"))
    if not files:
        sys.exit(f"no .conf files in {root}")
    total = 0
    for f in files:
        path = os.path.join(root, f)
        with open(path.replace(".conf", ".json")) as j:
            want = expected(json.load(j))
        p = crossplane.parse(
            path, single=True, comments=False, strict=False, check_ctx=False, check_args=False,
            catch_errors=False,
        )
        if p["status"] != "ok":
            sys.exit(f"{f}: crossplane: {p['errors']}")
        got = parsed(p["config"][0]["parsed"])
        if got != want:
            for a, b in zip(got, want):
                if a != b:
                    print(f"{f}: crossplane read\n  {a}\nthe writer meant\n  {b}", file=sys.stderr)
                    break
            sys.exit(f"{f}: crossplane reads something else than the writer wrote")
        n = count(got)
        total += n
        print(f"{f}: {n} words read back as written")
    print(f"crossplane round trip: {len(files)} configurations, {total} directive names and "
          f"arguments, all as written")


if __name__ == "__main__":
    main(sys.argv[1])
