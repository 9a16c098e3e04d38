#!/usr/bin/env bash
# Builds NGINX with the module linked in (a static module), the way NGINX builds third-party
# modules into itself:
#   ./configure ... --add-module=<this repo> && make
# in a copy of the NGINX 1.28 source vendored by the nginx-src crate, with the configure
# arguments of the vendored build (scripts/build.sh), so the harness tests (t/) see the same
# NGINX with the module built in. NGINX_SOURCE=/path/to/nginx-x.y.z uses another source tree
# (configured in a copy, never in place).
# Last line: nginx=<the nginx binary, module included>.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
scripts/install-deps.sh

if [ -n "${NGINX_SOURCE:-}" ]; then
  src=$NGINX_SOURCE
else
  src=$(cargo metadata --format-version 1 | python3 -c '
import json, os, sys
for p in json.load(sys.stdin)["packages"]:
    if p["name"] == "nginx-src":
        print(os.path.join(os.path.dirname(p["manifest_path"]), "nginx"))
        break')
fi
[ -x "$src/auto/configure" ] || [ -x "$src/configure" ] || { echo "build-static: no NGINX source at '$src'" >&2; exit 1; }

work=$root/target/static/nginx
rm -rf "$work"
mkdir -p "$work"
cp -a "$src/." "$work/"
cd "$work"
configure=./configure
[ -x "$configure" ] || configure=./auto/configure
# The modules of the vendored build (nginx-sys), so the same t/ files run against both.
$configure --with-compat --with-debug --with-http_realip_module --with-http_ssl_module \
  --with-http_v2_module --with-stream --with-stream_realip_module --with-stream_ssl_module \
  --with-threads --add-module="$root" >configure.log 2>&1 || { cat configure.log; exit 1; }
make -j"${JOBS:-2}" -f objs/Makefile
echo "nginx=$work/objs/nginx"
