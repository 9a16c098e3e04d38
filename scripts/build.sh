#!/usr/bin/env bash
# Builds the module.
#   scripts/build.sh                  against the vendored NGINX 1.28 (nginx-src), with --with-debug
#   scripts/build.sh --system         against the installed Debian NGINX (nginx + nginx-dev: a
#                                     configure-only run of its source with its own flags), for
#                                     /usr/sbin/nginx; output in target/system/
#   NGINX_BUILD_DIR=/path/objs scripts/build.sh
#                                     against a configured NGINX tree (its objs/ directory)
# Environment: PROFILE=release|debug (default release).
# The last two lines of output are, for other tools to read:
#   module=<absolute path of the .so>
#   nginx=<absolute path of the nginx binary it matches>
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
profile=${PROFILE:-release}
flags=()
[ "$profile" = release ] && flags+=(--release)
target=$root/target

if [ "${1:-}" = --system ]; then
  scripts/install-deps.sh nginx nginx-dev
  # Debian ships the headers and its configure flags, not a configured tree: run configure
  # (only) on a copy, with the package's own flags, so the bindings match /usr/sbin/nginx.
  src=$root/target/system/nginx-src
  if [ ! -f "$src/objs/ngx_auto_config.h" ] || [ /usr/share/nginx/src/conf_flags -nt "$src/objs/ngx_auto_config.h" ]; then
    # shellcheck source=scripts/lib/debian-nginx.sh
    . scripts/lib/debian-nginx.sh
    debian_configure "$src" --builddir="$src/objs"
  fi
  export NGINX_BUILD_DIR=$src/objs
  export NGINX_BINARY=${NGINX_BINARY:-/usr/sbin/nginx}
  # A target directory of its own, so switching between this and the vendored build does not
  # rebuild either.
  target=$root/target/system
  export CARGO_TARGET_DIR=$target
fi

if [ -n "${NGINX_BUILD_DIR:-}" ]; then
  NGINX_BUILD_DIR=$(cd "$NGINX_BUILD_DIR" && pwd)
  export NGINX_BUILD_DIR
  flags+=(--no-default-features --features export-modules)
  nginx_bin=${NGINX_BINARY:-$NGINX_BUILD_DIR/nginx}
else
  # Same value everywhere (test.sh, run.sh, CI), or nginx-sys rebuilds NGINX.
  export NGX_CONFIGURE_ARGS=${NGX_CONFIGURE_ARGS:---with-debug}
  nginx_bin=
fi

json=$(mktemp)
trap 'rm -f "$json"' EXIT
cargo build -p ngx-http-matches "${flags[@]}" --message-format=json-render-diagnostics >"$json"

if [ -z "$nginx_bin" ]; then
  nginx_bin=$(python3 - "$json" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "build-script-executed" and "nginx-sys" in m.get("package_id", ""):
        print(m["out_dir"] + "/objs/nginx")
PY
)
fi
module=$target/$profile/libngx_http_matches.so
[ -f "$module" ] || { echo "build.sh: $module was not built" >&2; exit 1; }
[ -x "$nginx_bin" ] || { echo "build.sh: no nginx binary at '$nginx_bin'" >&2; exit 1; }
echo "module=$module"
echo "nginx=$nginx_bin"
