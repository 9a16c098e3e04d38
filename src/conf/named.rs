//! The lists' `@name` redirect paths, checked against the servers' named locations.

use ngx::ffi::{ngx_conf_t, ngx_http_core_loc_conf_t, ngx_http_core_srv_conf_t};
use ngx::http::{HttpModuleMainConf, NgxHttpCoreModule};
use route_match::Warning;

use super::report::report;
use crate::state::MainConf;
use crate::util::array;

/// The named locations (`@name`) of every server, per server.
///
/// # Safety
/// Only from postconfiguration: the core module's main conf, its servers and their
/// `named_locations` arrays (built by ngx_http_init_locations just before) are alive.
unsafe fn named_locations(
    cf: *mut ngx_conf_t,
) -> Vec<(*const ngx_http_core_srv_conf_t, Vec<Vec<u8>>)> {
    let mut out = Vec::new();
    // SAFETY: see the function's contract; `servers` is an array of core srv conf pointers and
    // each `named_locations` is null or a null-terminated array of core loc conf pointers.
    unsafe {
        let Some(cmcf) = NgxHttpCoreModule::main_conf(&*cf) else { return out };
        for &cscf in array::<*const ngx_http_core_srv_conf_t>(&cmcf.servers) {
            let mut names = Vec::new();
            let mut p = (*cscf).named_locations;
            while !p.is_null() && !(*p).is_null() {
                let clcf: *const ngx_http_core_loc_conf_t = *p;
                names.push((*clcf).name.as_bytes().to_vec());
                p = p.add(1);
            }
            out.push((cscf, names));
        }
    }
    out
}

/// `@name` redirect paths no server defines (an inline list's: its own server, where
/// `ngx_http_named_location` looks) are a `[warn]`, or under `http_matches_strict on` an
/// `[emerg]` (`false`: the load fails).
pub(super) fn check_named_locations(
    cf: *mut ngx_conf_t,
    mcf: &mut MainConf,
    file_strict: bool,
) -> bool {
    let checks = core::mem::take(&mut mcf.named_checks);
    if checks.is_empty() && mcf.file.is_none() {
        return true;
    }
    // SAFETY: called from postconfiguration.
    let servers = unsafe { named_locations(cf) };
    const WINS: &str = "a request that it wins answers 500";
    let mut ok = true;
    for c in &checks {
        let names = servers.iter().find(|(s, _)| core::ptr::eq(*s, c.server)).map(|(_, n)| n);
        let defined = |p: &[u8]| names.is_some_and(|n| n.iter().any(|n| n == p));
        // SAFETY: `c.loc` is a location conf in the configuration pool, merged by now.
        let loc = unsafe { &*c.loc };
        let Some(list) = &loc.inline else { continue };
        let missing = list.unknown_named(None, defined, "this server does not define");
        ok &= report(cf, &missing, &loc.pending_where, loc.strict == 1, WINS);
    }
    if let Some(file) = &mcf.file {
        let defined = |p: &[u8]| servers.iter().any(|(_, n)| n.iter().any(|n| n == p));
        let mut missing: Vec<Warning> = file
            .iter()
            .flat_map(|(key, list)| list.unknown_named(Some(key), defined, "no server defines"))
            .collect();
        missing.sort_by(|a, b| (&a.key, a.entry).cmp(&(&b.key, b.entry)));
        ok &= report(cf, &missing, &mcf.file_where, file_strict, WINS);
    }
    ok
}
