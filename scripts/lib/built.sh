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
