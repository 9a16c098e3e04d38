//! `http_matches_epp_endpoints;` (an `upstream` block): the EPP's list
//! (`$inference_workload_endpoints`) becomes the request's tries in order, for
//! `proxy_next_upstream`. Only the block's own addresses are kept (no SSRF through the EPP),
//! at most its size + 4 elements read (`epp_proto::endpoints::choose`); none: round robin.

use core::ffi::c_void;
use std::net::SocketAddr;

use ngx::core::{NGX_CONF_ERROR, NGX_CONF_OK, Status};
use ngx::ffi::{
    NGX_BUSY, NGX_ERROR, NGX_LOG_ERR, NGX_LOG_INFO, NGX_LOG_WARN, NGX_OK, ngx_conf_t,
    ngx_http_request_t, ngx_http_upstream_init_round_robin, ngx_http_upstream_rr_peers_t,
    ngx_http_upstream_srv_conf_t, ngx_int_t, ngx_palloc, ngx_pcalloc, ngx_peer_connection_t,
    ngx_str_t, ngx_uint_t,
};
use ngx::http::{HttpModuleMainConf, HttpModuleServerConf, NgxHttpUpstreamModule};
use ngx::ngx_log_error;

use epp_proto::endpoints::{choose, room};

use crate::guard::{self, Slot};
use crate::state::{EndpointPool as Pool, SrvConf};
use crate::util::{array, conf_where, emerg, escape, text, var};
use crate::{ConfResult, HttpMatchesModule, variables};

/// The variable with the EPP's whole (checked) list.
pub(crate) const VAR_ENDPOINTS: &str = "inference_workload_endpoints";

/// One request's tries (request pool).
#[repr(C)]
struct Tries {
    pool: *const Pool,
    order: *const u32,
    n: usize,
    next: usize,
    /// The tries NGINX had after the last `free_peer` (`ngx_uint_t::MAX` before one).
    left: ngx_uint_t,
}

/// `http_matches_epp_endpoints;` (upstream block).
pub(crate) static ENDPOINTS: Slot<SrvConf> =
    Slot { given: |s| s.epp_endpoints.is_some(), set: endpoints };

fn endpoints(cf: *mut ngx_conf_t, scf: &mut SrvConf, _args: &[ngx_str_t]) -> ConfResult {
    // SAFETY: the directive only stands in an `upstream` block (NGX_HTTP_UPS_CONF), whose
    // context holds the upstream module's server conf of that block.
    let Some(uscf) = NgxHttpUpstreamModule::server_conf_mut(unsafe { &*cf }) else {
        return NGX_CONF_ERROR;
    };
    if uscf.peer.init_upstream.is_some() {
        let what = "http_matches_epp_endpoints must come before keepalive and instead of any \
                    other load balancing method (hash, ip_hash, least_conn, random, ...)";
        return emerg(cf, NGX_CONF_ERROR, format_args!("{what}"));
    }
    uscf.peer.init_upstream = Some(init_upstream);
    scf.epp_endpoints = Some(Box::new(Pool {
        name: text(uscf.host.as_bytes()).into_owned(),
        // SAFETY: called from a directive handler.
        at: unsafe { conf_where(cf) },
        ..Pool::default()
    }));
    NGX_CONF_OK
}

/// `init_upstream`: round robin's, then the allowed set from the peers it built.
unsafe extern "C" fn init_upstream(
    cf: *mut ngx_conf_t,
    us: *mut ngx_http_upstream_srv_conf_t,
) -> ngx_int_t {
    let body = || {
        // SAFETY: NGINX calls init_upstream with its configuration and the block's conf.
        if unsafe { ngx_http_upstream_init_round_robin(cf, us) } != NGX_OK as ngx_int_t {
            return NGX_ERROR as ngx_int_t;
        }
        // SAFETY: as above; the block's server confs were created by its `upstream` block.
        let us = unsafe { &mut *us };
        let Some(pool) =
            HttpMatchesModule::server_conf_mut(us).and_then(|s| s.epp_endpoints.as_deref_mut())
        else {
            return NGX_ERROR as ngx_int_t;
        };
        #[cfg(feature = "panic-test")]
        if pool.name == "panic_test" {
            panic!("panic-test: init_upstream of the upstream named panic_test");
        }
        // SAFETY: round robin's init_upstream made `peer.data` its peer lists (primary, then
        // backup in `next`), configuration memory.
        let refused = unsafe { index_peers(pool, us.peer.data.cast()) };
        if let Some(why) = refused {
            let what = format_args!("http_matches_epp_endpoints: {why} in {}", pool.at);
            return emerg(cf, NGX_ERROR as ngx_int_t, what);
        }
        match variables::variable_index(cf, VAR_ENDPOINTS) {
            Some(i) => pool.var = i,
            None => return NGX_ERROR as ngx_int_t,
        }
        pool.rr_init_peer = us.peer.init;
        us.peer.init = Some(init_peer);
        NGX_OK as ngx_int_t
    };
    guard::conf_status(cf, || Status(body()))
}

/// Fills `pool.peers` and `pool.index` from round robin's lists; what is refused, if any.
///
/// # Safety
/// `peers` is round robin's `ngx_http_upstream_rr_peers_t` of an explicit block.
unsafe fn index_peers(
    pool: &mut Pool,
    peers: *const ngx_http_upstream_rr_peers_t,
) -> Option<String> {
    let mut list = peers;
    // SAFETY: round robin's lists and their peers are configuration memory, linked by `next`.
    unsafe {
        while let Some(l) = list.as_ref() {
            #[cfg(ngx_peer_resolve)]
            if !l.resolve.is_null() {
                return Some(
                    "a server with \"resolve\" is not supported (the allowed set is fixed at load)"
                        .into(),
                );
            }
            let mut p = l.peer;
            while let Some(peer) = p.as_mut() {
                // The address as NGINX wrote it (`ngx_sock_ntop`: `ip:port`, `[ipv6]:port`, or
                // `unix:path`, which is not kept).
                let addr = text(peer.name.as_bytes()).parse::<SocketAddr>().ok();
                if let Some(addr) = addr.filter(|_| peer.down == 0) {
                    let i = pool.peers.len() as u32;
                    if let std::collections::hash_map::Entry::Vacant(e) = pool.index.entry(addr) {
                        e.insert(i);
                        pool.peers.push(p);
                    }
                }
                p = peer.next;
            }
            list = l.next;
        }
    }
    pool.peers.is_empty().then(|| "no server of the block is an ip:port address that is up".into())
}

/// `init_peer`: round robin's; then, when the EPP's list names servers of the block, those
/// become the tries.
unsafe extern "C" fn init_peer(
    r: *mut ngx_http_request_t,
    us: *mut ngx_http_upstream_srv_conf_t,
) -> ngx_int_t {
    guard::request(r, || {
        // SAFETY: NGINX calls init_peer with the request and the block's conf, whose server
        // conf of this module holds the pool (set up by init_upstream, alive with the cycle).
        let pool = unsafe { HttpMatchesModule::server_conf(&*us) }
            .and_then(|s| s.epp_endpoints.as_deref());
        let Some(pool) = pool else { return NGX_ERROR as ngx_int_t };
        let Some(rr) = pool.rr_init_peer else { return NGX_ERROR as ngx_int_t };
        // SAFETY: round robin's own init_peer, with NGINX's arguments.
        if unsafe { rr(r, us) } != NGX_OK as ngx_int_t {
            return NGX_ERROR as ngx_int_t;
        }
        // SAFETY: `r` is the request being proxied; its variables array has a slot for every
        // indexed variable of its configuration, `pool.var` one of them.
        let list = unsafe { var::get(&*(*r).variables.add(pool.var)) }.unwrap_or_default();
        // SAFETY: as above; the upstream exists (init_peer runs for it).
        unsafe { use_list(r, pool, list) }
    })
}

/// Makes the kept elements of `list` the request's tries, or leaves round robin's (logged).
///
/// # Safety
/// `r` is a request with its upstream, just initialized by round robin.
unsafe fn use_list(r: *mut ngx_http_request_t, pool: &Pool, list: &[u8]) -> ngx_int_t {
    // SAFETY: see the contract.
    let (log, rp, u) = unsafe { ((*(*r).connection).log, (*r).pool, &mut *(*r).upstream) };
    if list.is_empty() {
        // Normal under a FailOpen picker's load shedding; http_matches_epp logged the call.
        ngx_log_error!(
            NGX_LOG_INFO,
            log,
            "http_matches_epp_endpoints: upstream \"{}\": no endpoint list from the \
             EndpointPicker; round robin",
            pool.name
        );
        return NGX_OK as ngx_int_t;
    }
    // Per request: `m` tries (min(block, elements read), 4 bytes each), a bit per address.
    let (n, m) = (pool.peers.len(), room(list, pool.peers.len()));
    let bytes = n.div_ceil(8);
    // SAFETY: allocations from the request's live pool (`ngx_palloc` aligns to NGX_ALIGNMENT,
    // enough for `Tries` and u32), checked for null below; `seen` and `out` are zeroed by
    // ngx_pcalloc, `tries` written whole before use.
    let (tries, out, seen) = unsafe {
        let tries = ngx_palloc(rp, core::mem::size_of::<Tries>()).cast::<Tries>();
        let out = ngx_pcalloc(rp, m * 4).cast::<u32>();
        let seen = ngx_pcalloc(rp, bytes).cast::<u8>();
        if tries.is_null() || out.is_null() || seen.is_null() {
            return NGX_ERROR as ngx_int_t;
        }
        (tries, out, core::slice::from_raw_parts_mut(seen, bytes))
    };
    // SAFETY: `out` holds `m` u32, zeroed by ngx_pcalloc.
    let out_slice = unsafe { core::slice::from_raw_parts_mut(out, m) };
    let c = choose(list, n, |a| pool.index.get(a).copied(), out_slice, seen);
    if let Some(refused) = c.refusals() {
        // One line per request: [warn] for the EPP's stale view (outside the block, repeated,
        // too long), [error] for a malformed list.
        let level = if c.malformed { NGX_LOG_ERR } else { NGX_LOG_WARN };
        ngx_log_error!(
            level,
            log,
            "http_matches_epp_endpoints: upstream \"{}\": refused from the EndpointPicker's \
             list \"{}\": {refused}",
            pool.name,
            escape(list, 256)
        );
    }
    if c.kept == 0 {
        return NGX_OK as ngx_int_t;
    }
    // SAFETY: `tries` is ours (above), `pool` lives with the cycle, `out` with the request.
    unsafe {
        tries.write(Tries { pool, order: out, n: c.kept, next: 0, left: ngx_uint_t::MAX });
        u.peer.data = tries.cast();
        u.peer.get = Some(get_peer);
        u.peer.free = Some(free_peer);
        u.peer.tries = c.kept as ngx_uint_t;
        #[cfg(any(ngx_feature = "ssl", ngx_feature = "compat"))]
        {
            u.peer.set_session = Some(set_session);
            u.peer.save_session = Some(save_session);
        }
    }
    NGX_OK as ngx_int_t
}

/// The next try of the list. A try NGINX gives back (`u->peer.tries++`, only after an error on
/// a cached connection) is the same element again, on a new connection: bounded, each give-back
/// closed one cached connection.
unsafe extern "C" fn get_peer(pc: *mut ngx_peer_connection_t, data: *mut c_void) -> ngx_int_t {
    // SAFETY: `data` is the request's `Tries` (use_list); `order` holds `n` indexes of
    // `pool.peers`, round robin's peers, alive with the cycle. Nothing here can panic.
    unsafe {
        let t = &mut *data.cast::<Tries>();
        let pc = &mut *pc;
        if pc.tries > t.left {
            t.next = t.next.saturating_sub(1);
        }
        t.left = ngx_uint_t::MAX;
        if t.next >= t.n {
            return NGX_BUSY as ngx_int_t;
        }
        let i = *t.order.add(t.next) as usize;
        t.next += 1;
        let Some(&peer) = (&*t.pool).peers.get(i) else { return NGX_BUSY as ngx_int_t };
        pc.sockaddr = (*peer).sockaddr;
        pc.socklen = (*peer).socklen;
        pc.name = &raw mut (*peer).name;
        pc.connection = core::ptr::null_mut();
        pc.set_cached(0);
    }
    NGX_OK as ngx_int_t
}

/// A try is over: one fewer left (the EPP judges its endpoints; no failure is recorded);
/// what is left noted for [`get_peer`].
unsafe extern "C" fn free_peer(
    pc: *mut ngx_peer_connection_t,
    data: *mut c_void,
    _state: ngx_uint_t,
) {
    // SAFETY: NGINX passes its live peer connection and the request's `Tries` (use_list).
    let (pc, t) = unsafe { (&mut *pc, &mut *data.cast::<Tries>()) };
    pc.tries = pc.tries.saturating_sub(1);
    t.left = pc.tries;
}

/// No TLS session reuse for the list's tries (round robin's would read its own state).
#[cfg(any(ngx_feature = "ssl", ngx_feature = "compat"))]
unsafe extern "C" fn set_session(_pc: *mut ngx_peer_connection_t, _data: *mut c_void) -> ngx_int_t {
    NGX_OK as ngx_int_t
}

#[cfg(any(ngx_feature = "ssl", ngx_feature = "compat"))]
unsafe extern "C" fn save_session(_pc: *mut ngx_peer_connection_t, _data: *mut c_void) {}

/// Registers `$inference_workload_endpoints` (not changeable: only `http_matches_epp` sets it).
pub(crate) fn preconfiguration(cf: *mut ngx_conf_t) -> bool {
    variables::add(cf, VAR_ENDPOINTS, 0, Some(variables::empty))
}

/// Sets `$inference_workload_endpoints` to the EPP's whole checked `list` (pool memory of
/// `r`), when the variable is indexed.
///
/// # Safety
/// `r` is the client's request; `list` lives in its pool.
pub(crate) unsafe fn set_list(r: *mut ngx_http_request_t, list: ngx_str_t) {
    // SAFETY: `r` is live; its main conf is this module's.
    let Some(i) = HttpMatchesModule::main_conf(unsafe { &*r }).and_then(|m| m.epp.endpoints) else {
        return;
    };
    // SAFETY: `i` is an indexed variable of the request's configuration.
    unsafe { var::set(&mut *(*r).variables.add(i), list.data, list.len) };
}

/// Whether every block with the directive kept it (a later `hash`, `least_conn`, ... replaces
/// it with only a warning); refused with its file:line (after every `init_upstream` ran).
pub(crate) fn check_blocks(cf: *mut ngx_conf_t) -> bool {
    // SAFETY: postconfiguration runs with `cf->ctx` = the http block's context, which holds
    // the upstream module's main conf; its `upstreams` array holds the blocks' confs.
    let blocks = unsafe {
        let Some(umcf) = NgxHttpUpstreamModule::main_conf(&*cf) else { return true };
        array::<*mut ngx_http_upstream_srv_conf_t>(&umcf.upstreams)
    };
    for &us in blocks {
        // SAFETY: each element is a live block conf of this configuration.
        let pool = unsafe { us.as_ref() }
            .and_then(HttpMatchesModule::server_conf)
            .and_then(|s| s.epp_endpoints.as_deref());
        if let Some(p) = pool.filter(|p| p.rr_init_peer.is_none()) {
            let what = format_args!(
                "http_matches_epp_endpoints: a later load balancing method in upstream \"{}\" \
                 replaced it in {}",
                p.name, p.at
            );
            return emerg(cf, false, what);
        }
    }
    true
}
