//! The module's variables: registered before the configuration is parsed, their indexes
//! resolved once it is (the handlers only read and store by index).

use ngx::core::Status;
use ngx::ffi::{
    ngx_conf_t, ngx_hash_key_t, ngx_http_add_variable, ngx_http_get_variable_index,
    ngx_http_get_variable_pt, ngx_http_request_t, ngx_http_variable_value_t, ngx_int_t, ngx_str_t,
    ngx_uint_t,
};
use ngx::http::{HttpModuleMainConf, NgxHttpCoreModule};

use crate::state::MainConf;

pub(crate) const VAR_REDIRECT: &str = "matches_redirect";
pub(crate) const VAR_ENTRY: &str = "matches_entry";
/// Set by `http_matches_fallback`: how many servers the request fell back through.
pub(crate) const VAR_FALLBACK: &str = "matches_fallback";
pub(crate) const VAR_WORK: &str = "http_matches_work";

/// Getter of our variables: until the handler stores a value (see `handler`), there is none.
unsafe extern "C" fn variable_not_set(
    _r: *mut ngx_http_request_t,
    v: *mut ngx_http_variable_value_t,
    _data: usize,
) -> ngx_int_t {
    // SAFETY: NGINX passes the value slot to fill.
    unsafe { (*v).set_not_found(1) };
    Status::NGX_OK.into()
}

/// Getter of a variable `http_matches_epp` sets, before it did: empty.
pub(crate) unsafe extern "C" fn empty(
    _r: *mut ngx_http_request_t,
    v: *mut ngx_http_variable_value_t,
    _data: usize,
) -> ngx_int_t {
    // SAFETY: NGINX passes the value slot to fill; an empty static string.
    unsafe { crate::util::var::set(&mut *v, c"".as_ptr().cast::<u8>().cast_mut(), 0) };
    Status::NGX_OK.into()
}

/// The declared variable named `name` (by `set`, `map`, ...), as ngx_http_add_variable made it;
/// `None` when nothing declared it.
fn declared_variable(
    cf: *mut ngx_conf_t,
    name: &str,
) -> Option<*const ngx::ffi::ngx_http_variable_t> {
    // SAFETY: during postconfiguration the core main conf and its `variables_keys` (freed only
    // later, by ngx_http_variables_init_vars) are alive; `keys` is an array of ngx_hash_key_t,
    // each `value` the `ngx_http_variable_t` that ngx_http_add_variable made (alive with the
    // configuration).
    unsafe {
        let cmcf = NgxHttpCoreModule::main_conf(&*cf)?;
        let vk = cmcf.variables_keys.as_ref()?;
        crate::util::array::<ngx_hash_key_t>(&vk.keys)
            .iter()
            .find(|k| k.key.as_bytes() == name.as_bytes())
            .map(|k| k.value as *const ngx::ffi::ngx_http_variable_t)
    }
}

/// Whether the declared variable `name` has a definition of its own (a `map`, `geo`, `js_set`
/// getter). `set` alone declares it weak (`NGX_HTTP_VAR_WEAK`): after postconfiguration NGINX
/// gives it the prefix variable's getter, and `$http_...` reads the header where no `set` ran.
fn has_getter(cf: *mut ngx_conf_t, name: &str) -> bool {
    match declared_variable(cf, name) {
        Some(v) if !v.is_null() => {
            // SAFETY: `v` is a live ngx_http_variable_t of this configuration
            // (`declared_variable`).
            let v = unsafe { &*v };
            v.get_handler.is_some() && v.flags & ngx::ffi::NGX_HTTP_VAR_WEAK as ngx_uint_t == 0
        }
        _ => false,
    }
}

/// The index of variable `name` when something in the configuration (`log_format`, `return`,
/// `add_header`, ...) refers to it; `None` when nothing does (the handler then counts no work).
fn indexed_variable(cf: *mut ngx_conf_t, name: &str) -> Option<ngx_uint_t> {
    // SAFETY: during postconfiguration the core main conf and its `variables` array (of
    // ngx_http_variable_t, one per indexed variable, in index order) are alive.
    let vars = unsafe {
        let cmcf = NgxHttpCoreModule::main_conf(&*cf)?;
        crate::util::array::<ngx::ffi::ngx_http_variable_t>(&cmcf.variables)
    };
    vars.iter().position(|v| v.name.as_bytes() == name.as_bytes())
}

/// The index of variable `name` (an error when nothing declares or registers it).
pub(crate) fn variable_index(cf: *mut ngx_conf_t, name: &str) -> Option<ngx_uint_t> {
    let mut n = ngx_str_t { len: name.len(), data: name.as_ptr().cast_mut() };
    // SAFETY: valid during configuration; the name is copied by NGINX.
    let i = unsafe { ngx_http_get_variable_index(cf, &mut n) };
    (i != ngx::ffi::NGX_ERROR as ngx_int_t).then_some(i as ngx_uint_t)
}

/// Registers `name` with `flags`, its getter `get` answering until a handler stores a value.
pub(crate) fn add(
    cf: *mut ngx_conf_t,
    name: &str,
    flags: ngx_uint_t,
    get: ngx_http_get_variable_pt,
) -> bool {
    let mut n = ngx_str_t { len: name.len(), data: name.as_ptr().cast_mut() };
    // SAFETY: `ngx_http_add_variable` copies the name into the configuration pool.
    let v = unsafe { ngx_http_add_variable(cf, &mut n, flags) };
    if v.is_null() {
        return false;
    }
    // SAFETY: `v` is the variable NGINX just created; we set its getter.
    unsafe { (*v).get_handler = get };
    true
}

/// Registers `$matches_redirect`, `$matches_entry`, `$http_matches_work` and
/// `$matches_fallback` before the configuration is parsed, so `log_format` and friends can
/// name them.
pub(crate) fn register(cf: *mut ngx_conf_t) -> bool {
    [VAR_REDIRECT, VAR_ENTRY, VAR_WORK, VAR_FALLBACK]
        .into_iter()
        .all(|name| add(cf, name, 0, Some(variable_not_set)))
}

/// The index of `name` when some directive (`set`, `map`, ...) declares it: asking NGINX for
/// an undeclared one would fail the configuration with "unknown variable".
pub(crate) fn declared_index(cf: *mut ngx_conf_t, name: &str) -> Option<ngx_uint_t> {
    declared_variable(cf, name).and_then(|_| variable_index(cf, name))
}

/// Resolves the indexes of the variables the handler reads and stores (postconfiguration).
pub(crate) fn resolve(cf: *mut ngx_conf_t, mcf: &mut MainConf) -> Status {
    if mcf.file.is_some() {
        mcf.match_key = declared_index(cf, "match_key");
    }
    mcf.http_matches = declared_index(cf, "http_matches");
    if mcf.http_matches.is_some() {
        mcf.http_matches_getter = has_getter(cf, "http_matches");
    }
    mcf.var_work = indexed_variable(cf, VAR_WORK);
    mcf.var_fallback = variable_index(cf, VAR_FALLBACK);
    match (variable_index(cf, VAR_REDIRECT), variable_index(cf, VAR_ENTRY)) {
        (Some(r), Some(e)) => {
            mcf.var_redirect = r;
            mcf.var_entry = e;
            Status::NGX_OK
        }
        _ => Status::NGX_ERROR,
    }
}
