//! `http_matches_fallback`: where a request with no winner goes, per listen socket. At
//! request time the target is NGINX's own choice for the name on the request's socket (exact
//! name, longest wildcard, else the default server: [`socket_server`]). At load the same choice
//! is made for every socket of every server ([`route_match::vhost::Names`]) and recorded;
//! `nginx -t` refuses self-reach, cycles and chains past [`MAX_CHAIN`]. A target outside the
//! record answers 500: a walk is a path of the checked graph.

use std::collections::HashMap;

use ngx::ffi::{
    NGX_LOG_EMERG, ngx_conf_t, ngx_hash_find, ngx_hash_find_wc_head, ngx_http_conf_addr_t,
    ngx_http_conf_port_t, ngx_http_core_srv_conf_t, ngx_http_request_t, ngx_http_server_name_t,
};
use ngx::http::{HttpModuleMainConf, HttpModuleServerConf, NgxHttpCoreModule};
use ngx::ngx_log_error;

use crate::HttpMatchesModule;
use crate::util::{array, text};
use route_match::vhost::{Socket, fallback_targets};

/// The most servers one request may pass through by `http_matches_fallback` (the first
/// included): a server per label of a 253-character name (127), and the catch-all, fit.
const MAX_CHAIN: usize = 128;

/// Every server in configuration order: its core conf, and its `server_name`s as NGINX stored
/// them (lowercased, `""` when it has none, without regular expressions).
#[derive(Default)]
struct Servers {
    confs: Vec<*const ngx_http_core_srv_conf_t>,
    names: Vec<Vec<Vec<u8>>>,
}

/// Every listen socket: its `addr:port`, and its servers.
#[derive(Default)]
struct Sockets {
    names: Vec<String>,
    sockets: Vec<Socket>,
}

/// The servers and the listen sockets of the http block.
///
/// # Safety
/// Only from postconfiguration: the core main conf, its merged servers and `ports` (consumed
/// by ngx_http_optimize_servers only after it) are alive.
unsafe fn servers_and_sockets(cf: *mut ngx_conf_t) -> (Servers, Sockets) {
    let (mut servers, mut sockets) = (Servers::default(), Sockets::default());
    // SAFETY: see the function's contract. `servers` is an array of core srv conf pointers;
    // each `server_names` an array of ngx_http_server_name_t; `ports` null or an array of
    // ngx_http_conf_port_t, each `addrs` an array of ngx_http_conf_addr_t, each `servers` an
    // array of core srv conf pointers (the same objects as `cmcf->servers`).
    unsafe {
        let Some(cmcf) = NgxHttpCoreModule::main_conf(&*cf) else { return (servers, sockets) };
        for &cscf in array::<*const ngx_http_core_srv_conf_t>(&cmcf.servers) {
            servers.names.push(
                array::<ngx_http_server_name_t>(&(*cscf).server_names)
                    .iter()
                    .filter(|n| n.regex.is_null())
                    .map(|n| n.name.as_bytes().to_ascii_lowercase())
                    .collect(),
            );
            servers.confs.push(cscf);
        }
        let index: HashMap<*const ngx_http_core_srv_conf_t, usize> =
            servers.confs.iter().enumerate().map(|(i, &c)| (c, i)).collect();
        let Some(ports) = cmcf.ports.as_ref() else { return (servers, sockets) };
        for port in array::<ngx_http_conf_port_t>(ports) {
            for addr in array::<ngx_http_conf_addr_t>(&port.addrs) {
                let on = array::<*const ngx_http_core_srv_conf_t>(&addr.servers);
                sockets.names.push(text(addr.opt.addr_text.as_bytes()).into_owned());
                sockets.sockets.push(Socket {
                    servers: on.iter().filter_map(|c| index.get(c).copied()).collect(),
                    default_server: index.get(&addr.default_server.cast_const()).copied(),
                });
            }
        }
    }
    (servers, sockets)
}

/// Resolves every server's fallback name on each of its sockets and checks the graph
/// (`route_match::vhost::fallback_targets`): each `SrvConf` records its targets, or `false`
/// fails the load (each problem an `[emerg]` at its directive).
pub(crate) fn resolve(cf: *mut ngx_conf_t) -> bool {
    // SAFETY: postconfiguration runs with `cf->ctx` = the http block's context; each server
    // of the core main conf is a live core server conf.
    let cscfs = unsafe {
        match NgxHttpCoreModule::main_conf(&*cf) {
            Some(cmcf) => array::<*const ngx_http_core_srv_conf_t>(&cmcf.servers),
            None => return true,
        }
    };
    // SAFETY: each `cscf` is a live core server conf; its `ctx->srv_conf` holds this module's
    // server conf, created by `create_srv_conf`, alive with the configuration. No other
    // reference to it is held while this runs.
    let conf_of = |cscf: *const ngx_http_core_srv_conf_t| unsafe {
        HttpMatchesModule::server_conf_mut(&*cscf).filter(|c| c.fallback.is_some())
    };
    // Most configurations set no fallback: no server list or socket map is built for them.
    if !cscfs.iter().any(|&c| conf_of(c).is_some()) {
        return true;
    }
    // SAFETY: called from postconfiguration.
    let (servers, sockets) = unsafe { servers_and_sockets(cf) };
    // Each server's fallback name, lowercased at the directive (`None`: no directive).
    let fallbacks: Vec<Option<Vec<u8>>> =
        servers.confs.iter().map(|&s| conf_of(s).map(|c| c.fallback_name.clone())).collect();
    let refusals = match fallback_targets(&servers.names, &sockets.sockets, &fallbacks, MAX_CHAIN) {
        Ok(targets) => {
            for (&s, t) in servers.confs.iter().zip(&targets) {
                if let Some(c) = conf_of(s) {
                    c.fallback_targets = t.iter().map(|&t| servers.confs[t]).collect();
                }
            }
            return true;
        }
        Err(refusals) => refusals,
    };
    let conf = |i: usize| servers.confs.get(i).and_then(|&s| conf_of(s));
    // As written.
    let written = |i| text(conf(i).and_then(|c| c.fallback.as_deref()).unwrap_or_default()).into();
    let at = |i| conf(i).map(|c| c.fallback_where.clone()).unwrap_or_default();
    // SAFETY: NGINX passes a valid configuration context whose log outlives the call.
    let log = unsafe { (*cf).log };
    for r in refusals {
        let what = r.text(&servers.names, &sockets.names, written, at, MAX_CHAIN);
        ngx_log_error!(NGX_LOG_EMERG, log, "http_matches_fallback: {what}");
    }
    false
}

/// The server NGINX picks for `scf`'s fallback name on `r`'s socket: its names hash (exact,
/// then `*.`/`.` wildcards; as at load), else the default server. Null without a socket conf.
///
/// # Safety
/// `r` must be a valid request; `scf` its current server's conf, resolved at load.
pub(crate) unsafe fn socket_server(
    r: *const ngx_http_request_t,
    scf: &crate::SrvConf,
) -> *const ngx_http_core_srv_conf_t {
    let name = &scf.fallback_name;
    // SAFETY: `r->main` outlives `r`; its `http_connection` (a subrequest's own is null)
    // holds the socket's `addr_conf` of this cycle, whose hashes NGINX built from lowercased
    // names and only reads; the hash functions read `len` bytes and return a core server conf
    // or null.
    unsafe {
        let hc = (*(*r).main).http_connection;
        if hc.is_null() || (*hc).addr_conf.is_null() {
            return core::ptr::null();
        }
        let ac = &*(*hc).addr_conf;
        if let Some(vn) = ac.virtual_names.as_ref() {
            let data = name.as_ptr().cast_mut();
            if !vn.names.hash.buckets.is_null() {
                let hash = core::ptr::from_ref(&vn.names.hash).cast_mut();
                let c = ngx_hash_find(hash, scf.fallback_key, data, name.len());
                if !c.is_null() {
                    return c.cast_const().cast();
                }
            }
            if !name.is_empty() && !vn.names.wc_head.is_null() {
                let c = ngx_hash_find_wc_head(vn.names.wc_head, data, name.len());
                if !c.is_null() {
                    return c.cast_const().cast();
                }
            }
        }
        ac.default_server.cast_const()
    }
}

/// Whether the request is on TLS and `target` verifies client certificates: a fallback is a
/// server the client did not name, so, as NGINX for such a `Host`, it is refused (421).
///
/// # Safety
/// `r` must be a valid request; `target` a core server conf of its configuration.
pub(crate) unsafe fn verifies_clients(
    r: *const ngx_http_request_t,
    target: *const ngx_http_core_srv_conf_t,
) -> bool {
    #[cfg(ngx_feature = "http_ssl")]
    // SAFETY: see the function's contract: `r->connection` is the request's connection (a
    // stream's copy for HTTP/2, with the TLS connection's `ssl`); `target`'s `ctx` holds its
    // server confs, the SSL module's among them, merged at load.
    unsafe {
        if !(*(*r).connection).ssl.is_null() {
            let ssl = ngx::http::NgxHttpSslModule::server_conf(&*target);
            return ssl.is_some_and(|s| s.verify != 0);
        }
    }
    // Without the SSL module no connection is TLS.
    let _ = (r, target);
    false
}
