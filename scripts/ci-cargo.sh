#!/usr/bin/env bash
# Every build of the test binaries and of the commands the tests run, in one shape:
#   scripts/ci-cargo.sh COMMAND [ARGS...]
# is `cargo COMMAND --profile ci --workspace --features epp-proto/fake ARGS` bound to the
# vendored NGINX that scripts/build.sh built. Cargo resolves dependency features per package
# selection, and nginx-sys rebuilds when its NGINX_* variables change: a call with -p, without
# the fake EPP, or without the tree rebuilds ~120 crates (NGINX among them), and the next
# call in the usual shape rebuilds them back. So narrow with --test/--bin/--example and test
# filters, never with -p; build binaries with `test --no-run` (a `cargo build` leaves the
# dev-dependencies' features out, another rebuild). The binaries land in target/ci/.
set -euo pipefail
cd "$(dirname "$0")/.."
export NGX_CONFIGURE_ARGS=${NGX_CONFIGURE_ARGS:---with-debug}
# shellcheck source=scripts/lib/built.sh
. scripts/lib/built.sh
[ $# -gt 0 ] || { echo "usage: scripts/ci-cargo.sh COMMAND [ARGS...]" >&2; exit 2; }
cmd=$1
shift
# shellcheck disable=SC2046
exec env $(vendored_tree) cargo "$cmd" --profile ci --workspace --features epp-proto/fake "$@"
