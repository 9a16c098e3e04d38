#!/usr/bin/env bash
# Builds the module the way NGINX builds third-party modules: in an NGINX source tree,
#   ./configure --with-compat --with-debug --add-dynamic-module=<this repo> && make modules
# Default tree: a copy of the NGINX 1.28 source vendored by the nginx-src crate (what CI tests);
# NGINX_SOURCE=/path/to/nginx-x.y.z uses another one (configured in a copy, never in place).
# Last two lines: module=<.so> and nginx=<the vendored nginx binary of the same version, for a
# smoke test; empty with NGINX_SOURCE>.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
scripts/install-deps.sh

if [ -n "${NGINX_SOURCE:-}" ]; then
  src=$NGINX_SOURCE
  nginx_bin=
else
  src=$(cargo metadata --format-version 1 | python3 -c '
import json, os, sys
for p in json.load(sys.stdin)["packages"]:
    if p["name"] == "nginx-src":
        print(os.path.join(os.path.dirname(p["manifest_path"]), "nginx"))
        break')
  nginx_bin=$(scripts/build.sh | sed -n 's/^nginx=//p')
fi
[ -x "$src/auto/configure" ] || [ -x "$src/configure" ] || { echo "build-addon: no NGINX source at '$src'" >&2; exit 1; }

work=$root/target/addon/nginx
rm -rf "$work"
mkdir -p "$work"
cp -a "$src/." "$work/"
cd "$work"
configure=./configure
[ -x "$configure" ] || configure=./auto/configure
$configure --with-compat --with-debug --add-dynamic-module="$root" >configure.log 2>&1 || { cat configure.log; exit 1; }
make -j"$(nproc)" -f objs/Makefile modules
echo "module=$work/objs/ngx_http_matches_module.so"
echo "nginx=$nginx_bin"
