#!/usr/bin/env bash
# Installs the Debian packages the build needs (only those missing). Run as root.
#   libclang-dev  bindgen (nginx-sys) needs libclang and clang's builtin headers
#   libpcre2-dev  NGINX's rewrite module and our regex engine (PCRE2)
#   libssl-dev pkg-config  the openssl crate (openssl-sys): the generator checks TLS Secrets
#                 in process with the library NGINX loads them with
#   g++           libFuzzer (C++), built by the fuzz crate for scripts/fuzz.sh
#   curl openssl  the HTTPS end-to-end test (a self-signed certificate, requests with SNI)
#   python3-grpcio  the GRPCRoute end-to-end test (a real gRPC server and client)
#   python3-venv  scripts/conf-roundtrip.sh installs crossplane (PyPI) into target/venv
#   nginx         Debian's NGINX 1.22, the njs side of tests/epp_njs.rs (NGF's epp.js on njs
#                 1.0.1 built for it: NGX_MATCHES_NJS_MODULE)
#   extra packages can be named as arguments (run.sh adds curl).
set -euo pipefail
want=(libclang-dev libpcre2-dev libssl-dev pkg-config make g++ curl openssl python3-grpcio python3-venv nginx "$@")
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "install-deps: installing ${missing[*]}" >&2
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
