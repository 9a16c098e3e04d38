#!/usr/bin/env bash
# Builds the module the way NGINX builds third-party modules (addons), in a copy of an NGINX
# source tree (never in place):
#   scripts/build-addon.sh           ./configure ... --add-dynamic-module=<this repo> && make modules
#   scripts/build-addon.sh --static  ./configure ... --add-module=<this repo> && make: NGINX with
#                                    the module linked in
# Default tree: the NGINX 1.28 source vendored by the nginx-src crate (what CI tests), configured
# with the modules of the vendored build (scripts/build.sh), so the harness tests (t/) see the
# same NGINX; NGINX_SOURCE=/path/to/nginx-x.y.z uses another one.
# Last two lines: module=<the .so; empty with --static> and nginx=<the nginx binary: with
# --static the one just built; else the vendored build's of the same version, for a smoke test,
# empty with NGINX_SOURCE>.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
link=dynamic
[ "${1:-}" = --static ] && link=static
scripts/install-deps.sh

nginx_bin=
if [ -n "${NGINX_SOURCE:-}" ]; then
  src=$NGINX_SOURCE
else
  src=$(cargo metadata --format-version 1 | python3 -c '
import json, os, sys
for p in json.load(sys.stdin)["packages"]:
    if p["name"] == "nginx-src":
        print(os.path.join(os.path.dirname(p["manifest_path"]), "nginx"))
        break')
  [ "$link" = static ] || nginx_bin=$(scripts/build.sh | sed -n 's/^nginx=//p')
fi
[ -x "$src/auto/configure" ] || [ -x "$src/configure" ] || { echo "build-addon: no NGINX source at '$src'" >&2; exit 1; }

kind=$([ "$link" = static ] && echo static || echo addon)
work=$root/target/$kind/nginx
rm -rf "$work"
mkdir -p "$work"
cp -a "$src/." "$work/"
cd "$work"
configure=./configure
[ -x "$configure" ] || configure=./auto/configure
add=--add-dynamic-module
[ "$link" = dynamic ] || add=--add-module
$configure --with-compat --with-debug --with-http_realip_module --with-http_ssl_module \
  --with-http_v2_module --with-stream --with-stream_realip_module --with-stream_ssl_module \
  --with-threads "$add=$root" >configure.log 2>&1 || { cat configure.log; exit 1; }
# cargo's target directory (config.make: objs/ngx_http_matches) outside the tree copied afresh
# above, so the module's dependencies are not rebuilt every time.
mkdir -p "$root/target/$kind/cargo"
ln -sfn "$root/target/$kind/cargo" objs/ngx_http_matches
if [ "$link" = static ]; then
  make -j"$(nproc)" -f objs/Makefile
  echo "module="
  echo "nginx=$work/objs/nginx"
else
  make -j"$(nproc)" -f objs/Makefile modules
  echo "module=$work/objs/ngx_http_matches_module.so"
  echo "nginx=$nginx_bin"
fi
