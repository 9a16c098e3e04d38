# Sourced by scripts/build.sh (--system) and scripts/bench/njs.sh.
# debian_configure DIR [ARG...]: a copy of Debian's NGINX source (nginx-dev) in DIR, configured
# there with the package's own flags (conf_flags, dpkg-buildflags) and ARGs, so that what is
# built against it matches /usr/sbin/nginx. Its log: DIR/configure.log (printed on failure).
debian_configure() {
  local dir=$1
  shift
  rm -rf "$dir"
  mkdir -p "$dir"
  cp -a /usr/share/nginx/src/. "$dir/"
  (
    cd "$dir"
    # shellcheck disable=SC1091
    . ./conf_flags
    ./configure --with-cc-opt="$(dpkg-buildflags --get CFLAGS) -fPIC $(dpkg-buildflags --get CPPFLAGS)" \
      --with-ld-opt="$(dpkg-buildflags --get LDFLAGS) -fPIC" "${NGX_CONF_FLAGS[@]}" "$@" \
      >"$dir/configure.log" 2>&1 || { cat "$dir/configure.log" >&2; exit 1; }
  )
}
