//! Turns what nginx-sys learned about the NGINX it builds against (DEP_NGINX_*) into cfgs, and
//! hands the NGINX build directory to the end-to-end tests.

use std::env;

fn main() {
    for var in ["FEATURES", "FEATURES_CHECK", "OS", "OS_CHECK", "VERSION_NUMBER", "BUILD_DIR"] {
        println!("cargo::rerun-if-env-changed=DEP_NGINX_{var}");
    }
    let check = |var: &str| env::var(var).unwrap_or_else(|_| "any()".to_owned());
    println!(
        "cargo::rustc-check-cfg=cfg(ngx_feature, values({}))",
        check("DEP_NGINX_FEATURES_CHECK")
    );
    println!("cargo::rustc-check-cfg=cfg(ngx_os, values({}))", check("DEP_NGINX_OS_CHECK"));
    if let Ok(features) = env::var("DEP_NGINX_FEATURES") {
        for f in features.split(',').map(str::trim).filter(|f| !f.is_empty()) {
            println!("cargo::rustc-cfg=ngx_feature=\"{f}\"");
        }
    }
    // `server ... resolve` (NGINX 1.27.3, with the upstream zone): round robin's peer lists
    // carry the `resolve` field (see src/epp/endpoints.rs).
    println!("cargo::rustc-check-cfg=cfg(ngx_peer_resolve)");
    let version = env::var("DEP_NGINX_VERSION_NUMBER").ok().and_then(|v| v.parse::<u64>().ok());
    let zone = env::var("DEP_NGINX_FEATURES")
        .is_ok_and(|f| f.split(',').any(|x| x.trim() == "http_upstream_zone"));
    if version.is_some_and(|v| v >= 1_027_003) && zone {
        println!("cargo::rustc-cfg=ngx_peer_resolve");
    }
    if let Ok(os) = env::var("DEP_NGINX_OS") {
        println!("cargo::rustc-cfg=ngx_os=\"{os}\"");
    }
    // The module stays mapped after NGINX's dlclose, so what an exiting worker leaves
    // allocated stays reachable from its statics (state::leave_reachable). glibc already keeps
    // a module with a thread-local destructor mapped (std registers some), but does not promise it.
    println!("cargo::rustc-cdylib-link-arg=-Wl,-z,nodelete");
    if let Ok(dir) = env::var("DEP_NGINX_BUILD_DIR") {
        println!("cargo::rustc-env=DEP_NGINX_BUILD_DIR={dir}");
    }
}
