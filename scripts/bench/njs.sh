# Sourced by scripts/bench/bench.sh and scripts/bench/ngf-scale.sh: which njs the comparison runs.
#   NJS_MODULE=/path/to/ngx_http_js_module.so   an njs dynamic module built for the NGINX under
#                                               test (e.g. njs 1.0.1 for Debian's 1.22.1)
#   NJS_SRC=/path/to/njs                        an njs checkout (git clone
#                                               https://github.com/nginx/njs): built here for
#                                               Debian's NGINX into target/njs/ (needs
#                                               libssl-dev zlib1g-dev libxml2-dev libxslt1-dev)
#   neither                                     Debian's libnginx-mod-http-js (njs 0.7.9 on
#                                               Debian 12)
# njs_select NGINX sets and exports NJS_MODULE and NJS_VERSION (what `njs.version` says in a
# js_content handler of that module, so every table can name the njs it ran).

# njs_build SRC: configures Debian's NGINX source (nginx-dev: its own configure flags) with njs
# as a dynamic module and builds only the modules; prints the .so's path. Follows the recipe of
# the njs 1.0.1 build the benchmarks were run with (untested here: no njs source on this
# machine).
njs_build() {
  local src out
  src=$(cd "$1" && pwd)
  out=$PWD/target/njs
  scripts/install-deps.sh nginx-dev libpcre2-dev libssl-dev zlib1g-dev libxml2-dev libxslt1-dev >&2
  rm -rf "$out"
  mkdir -p "$out"
  # shellcheck source=scripts/lib/debian-nginx.sh
  . scripts/lib/debian-nginx.sh
  debian_configure "$out/ngx" --add-dynamic-module="$src/nginx"
  # Debian's tree has no top-level Makefile.
  (cd "$out/ngx" && make -j2 -f objs/Makefile modules >"$out/make.log" 2>&1) \
    || { tail -50 "$out/make.log" >&2; exit 1; }
  strip --strip-debug "$out/ngx/objs/ngx_http_js_module.so"
  echo "$out/ngx/objs/ngx_http_js_module.so"
}

# njs_version NGINX MODULE: `njs.version` as a js_content handler of MODULE answers it.
njs_version() {
  local nginx=$1 module=$2 p=$PWD/target/njs-version port=${NJS_VERSION_PORT:-18799} v=
  rm -rf "$p"
  mkdir -p "$p/logs" "$p/tmp"
  printf 'function v(r) { r.return(200, njs.version); }\nexport default { v };\n' >"$p/v.js"
  cat >"$p/nginx.conf" <<EOF
load_module $module;
daemon off; master_process off; pid logs/nginx.pid; error_log logs/error.log;
events { worker_connections 16; }
http { access_log off; client_body_temp_path tmp; proxy_temp_path tmp; fastcgi_temp_path tmp;
  uwsgi_temp_path tmp; scgi_temp_path tmp; js_import v from $p/v.js;
  server { listen 127.0.0.1:$port; location / { js_content v.v; } } }
EOF
  "$nginx" -p "$p/" -c nginx.conf &
  local pid=$!
  for _ in $(seq 100); do
    v=$(curl -sf "http://127.0.0.1:$port/" 2>/dev/null) && break
    sleep 0.1
  done
  kill -QUIT "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  [ -n "$v" ] || { echo "njs_version: $module did not answer; see $p/logs/error.log" >&2; return 1; }
  echo "$v"
}

njs_select() {
  local nginx=$1
  if [ -n "${NJS_MODULE:-}" ]; then
    [ -f "$NJS_MODULE" ] || { echo "NJS_MODULE=$NJS_MODULE: no such file" >&2; return 1; }
  elif [ -n "${NJS_SRC:-}" ]; then
    NJS_MODULE=$(njs_build "$NJS_SRC")
  else
    scripts/install-deps.sh libnginx-mod-http-js >&2
    NJS_MODULE=/usr/lib/nginx/modules/ngx_http_js_module.so
  fi
  NJS_MODULE=$(realpath "$NJS_MODULE")
  NJS_VERSION=$(njs_version "$nginx" "$NJS_MODULE")
  export NJS_MODULE NJS_VERSION
  echo "njs: $NJS_VERSION ($NJS_MODULE)" >&2
}
