#!/usr/bin/env bash
# The writer's round trip through an independent parser: configurations generated from the
# golden sets and a set of hostile values (every carrier), read back with crossplane (PyPI,
# installed into target/venv) and compared, directive by directive, with the tree of words
# the writer meant to write.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/venv
if ! "$venv/bin/python" -c 'import crossplane' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q crossplane
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
CONF_TREE_DIR=$dir scripts/ci-cargo.sh test -q --test generate \
  trees_for_the_crossplane_round_trip >&2
"$venv/bin/python" tests/conf_roundtrip.py "$dir"
