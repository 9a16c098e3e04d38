# Sourced by scripts that need the module and an NGINX to load it into.
# build_module [build.sh args]: runs scripts/build.sh and sets $module and $nginx from the
# module= / nginx= lines it prints last.
build_module() {
  local out
  out=$(scripts/build.sh "$@")
  module=$(echo "$out" | sed -n 's/^module=//p' | tail -n 1)
  nginx=$(echo "$out" | sed -n 's/^nginx=//p' | tail -n 1)
  [ -n "$module" ] && [ -n "$nginx" ] || { echo "build.sh printed no module=/nginx= lines" >&2; return 1; }
}

# vendored_tree: "NGINX_SOURCE_DIR=... NGINX_BUILD_DIR=..." of the vendored NGINX that
# scripts/build.sh built (building it if needed: the objs/ and the source it was configured
# from, as nginx-src records it), so that another profile or target directory binds to it
# instead of compiling NGINX again. Empty if that tree is not there.
vendored_tree() {
  local objs src
  objs=$(dirname "$(scripts/build.sh | sed -n 's/^nginx=//p' | tail -n 1)")
  src=$(sed -n '1s/^"\([^"]*\)".*/\1/p' "$objs/last-build-info" 2>/dev/null || true)
  if [ -n "$src" ] && [ -f "$src/src/core/nginx.h" ] && [ -f "$objs/ngx_auto_config.h" ]; then
    echo "NGINX_SOURCE_DIR=$src NGINX_BUILD_DIR=$objs"
  fi
}
