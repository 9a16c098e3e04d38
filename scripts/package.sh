#!/usr/bin/env bash
# Builds the Debian 12 packages, for the installed Debian NGINX (scripts/build.sh --system):
#   libnginx-mod-http-matches_VERSION-1_ARCH.deb  the module, laid out as Debian's own
#       libnginx-mod-* packages: /usr/lib/nginx/modules/ngx_http_matches_module.so,
#       /usr/share/nginx/modules-available/mod-http-matches.conf enabled by a
#       /etc/nginx/modules-enabled symlink on install (set aside on remove, gone on purge),
#       Depends: the nginx-abi-* the module was built against;
#   httproute-nginx_VERSION-1_ARCH.deb  the generator, /usr/bin/httproute-nginx.
# Built with dpkg-deb from small control directories (packaging/debian/): nothing to install
# beyond dpkg, and the module package needs maintainer scripts of its own anyway (cargo-deb
# would fit the generator, but would be one more tool to build for one file).
# The last lines are deb=<absolute path>, one per package.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
arch=$(dpkg --print-architecture)
out=$(scripts/build.sh --system)
module=$(echo "$out" | sed -n 's/^module=//p' | tail -n 1)
abi=$(dpkg-query -W -f='${Provides}' nginx | tr ',' '\n' | sed -n 's/^ *\(nginx-abi-[^ ]*\).*/\1/p' | head -n 1)
[ -n "$abi" ] || { echo "package.sh: the installed nginx provides no nginx-abi-*" >&2; exit 1; }
# The packaged generator writes for this NGINX by default (--nginx-version): e.g. HTTP/2 as a
# `listen` parameter before 1.25.1. Its own target directory, so the default build is not redone.
nginx_version=$(dpkg-query -W -f='${Version}' nginx | sed 's/-.*//')
HTTPROUTE_NGINX_VERSION=$nginx_version CARGO_TARGET_DIR=$root/target/system \
  cargo build --release -q -p httproute-nginx >&2
work=$root/target/package
rm -rf "$work"
mkdir -p "$work"

# changelog.Debian.gz from CHANGELOG.md's version line (Debian's format, one entry).
debian_changelog() { # package
  printf '%s (%s-1) unstable; urgency=medium\n\n  * Release %s; see CHANGELOG.md.\n\n -- ngx-http-matches <ngx-http-matches@localhost>  %s\n' \
    "$1" "$version" "$version" "$(date -R -d "$(sed -n "s/^## \[$version\] - //p" CHANGELOG.md)")" | gzip -9n
}

stage() { # package -> its staging directory
  local d=$work/$1
  mkdir -p "$d/DEBIAN" "$d/usr/share/doc/$1"
  install -m 0644 packaging/debian/copyright "$d/usr/share/doc/$1/copyright"
  debian_changelog "$1" >"$d/usr/share/doc/$1/changelog.Debian.gz"
  gzip -9nc CHANGELOG.md >"$d/usr/share/doc/$1/changelog.gz"
  echo "$d"
}

finish() { # staging dir, package, version -> .deb
  local d=$1 name=$2
  (cd "$d" && find usr -type f -exec md5sum {} + >DEBIAN/md5sums)
  local deb=$work/${name}_${version}-1_${arch}.deb
  dpkg-deb --root-owner-group -Zxz --build "$d" "$deb" >&2
  echo "$deb"
}

d=$(stage libnginx-mod-http-matches)
install -D -m 0644 "$module" "$d/usr/lib/nginx/modules/ngx_http_matches_module.so"
strip --strip-unneeded "$d/usr/lib/nginx/modules/ngx_http_matches_module.so"
install -D -m 0644 packaging/debian/mod-http-matches.conf "$d/usr/share/nginx/modules-available/mod-http-matches.conf"
for s in postinst prerm postrm; do install -m 0755 "packaging/debian/$s" "$d/DEBIAN/$s"; done
cat >"$d/DEBIAN/control" <<CONTROL
Package: libnginx-mod-http-matches
Version: ${version}-1
Architecture: ${arch}
Maintainer: ngx-http-matches <ngx-http-matches@localhost>
Installed-Size: $(du -sk "$d/usr" | cut -f1)
Depends: ${abi}, libc6, libpcre2-8-0
Recommends: nginx
Section: httpd
Priority: optional
Description: HTTPRoute header, query and method matching for NGINX
 A native replacement for the njs script (httpmatches.js) of NGINX Gateway
 Fabric: match lists compiled once, evaluated per request, internal redirect to
 the first entry the request satisfies.
CONTROL
mod_deb=$(finish "$d" libnginx-mod-http-matches)

d=$(stage httproute-nginx)
install -D -m 0755 target/system/release/httproute-nginx "$d/usr/bin/httproute-nginx"
strip --strip-unneeded "$d/usr/bin/httproute-nginx"
cat >"$d/DEBIAN/control" <<CONTROL
Package: httproute-nginx
Version: ${version}-1
Architecture: ${arch}
Maintainer: ngx-http-matches <ngx-http-matches@localhost>
Installed-Size: $(du -sk "$d/usr" | cut -f1)
Depends: libc6
Suggests: libnginx-mod-http-matches
Section: httpd
Priority: optional
Description: Gateway API routes in, an NGINX configuration out
 Reads Gateway, HTTPRoute, GRPCRoute and related manifests and writes a complete
 NGINX configuration that uses ngx_http_matches_module.
CONTROL
gen_deb=$(finish "$d" httproute-nginx)

echo "deb=$mod_deb"
echo "deb=$gen_deb"
