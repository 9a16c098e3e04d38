//! Panic containment: no Rust panic may unwind into NGINX (it would abort the worker).
//! Each entry point runs its body under `catch_unwind`; a panic becomes a logged error.

use core::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};

use ngx::core::{NGX_CONF_ERROR, Status};
use ngx::ffi::{
    NGX_HTTP_INTERNAL_SERVER_ERROR, NGX_LOG_ALERT, NGX_LOG_EMERG, NGX_OK, ngx_command_t,
    ngx_conf_t, ngx_http_finalize_request, ngx_http_request_t, ngx_int_t, ngx_log_t, ngx_str_t,
};
use ngx::{ngx_conf_log_error, ngx_log_error};

use crate::ConfResult;
use crate::state::Level;
use crate::util::array;

thread_local! {
    /// Where the last panic happened ("file:line"), recorded by the panic hook.
    static PANIC_AT: core::cell::RefCell<String> = const { core::cell::RefCell::new(String::new()) };
}

/// Replaces Rust's panic hook (stderr, no time or level) by one that records where the panic
/// happened: every entry point logs it once, through NGINX.
pub(crate) fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            let at =
                info.location().map(|l| format!("{}:{}", l.file(), l.line())).unwrap_or_default();
            PANIC_AT.with(|p| *p.borrow_mut() = at);
        }));
    });
}

pub(crate) fn describe(payload: &(dyn Any + Send)) -> String {
    let message = (payload.downcast_ref::<&str>().copied())
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)");
    let at = PANIC_AT.with(|p| core::mem::take(&mut *p.borrow_mut()));
    if at.is_empty() { message.to_owned() } else { format!("{message}, at {at}") }
}

/// Runs `body`; a panic is logged at `level` on `log` ("internal error (panic: ..., at
/// file:line)" then `then`) and gives `None`: the caller ends its callback as it can.
#[inline(always)]
pub(crate) fn caught<T>(
    log: *mut ngx_log_t,
    level: u32,
    then: &str,
    body: impl FnOnce() -> T,
) -> Option<T> {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(value) => Some(value),
        Err(payload) => {
            log_panic(log, level, then, payload);
            None
        }
    }
}

/// [`caught`]'s line for a panic, out of the line of every entry point.
#[cold]
#[inline(never)]
fn log_panic(log: *mut ngx_log_t, level: u32, then: &str, payload: Box<dyn Any + Send>) {
    let why = describe(&*payload);
    ngx_log_error!(level, log, "http_matches: internal error (panic: {why}){then}");
}

/// Runs a request handler body; a panic answers 500 and logs an `[alert]`.
pub(crate) fn request(r: *mut ngx_http_request_t, body: impl FnOnce() -> ngx_int_t) -> ngx_int_t {
    // SAFETY: NGINX passed a valid request whose connection (and its log) outlives every
    // handler call.
    let log = unsafe { (*(*r).connection).log };
    let then = "; the request gets 500, the worker keeps serving";
    caught(log, NGX_LOG_ALERT, then, body).unwrap_or(NGX_HTTP_INTERNAL_SERVER_ERROR as ngx_int_t)
}

/// Runs a configuration callback (a directive handler, pre/postconfiguration, an upstream's
/// `init_upstream`); a panic is an `[emerg]` naming the configuration's file:line, and `None`.
fn conf_caught<T>(cf: *mut ngx_conf_t, body: impl FnOnce() -> T) -> Option<T> {
    let payload = catch_unwind(AssertUnwindSafe(body)).map_err(|p| describe(&*p));
    if let Err(why) = &payload {
        ngx_conf_log_error!(NGX_LOG_EMERG, cf, "http_matches: internal error (panic: {why})");
    }
    payload.ok()
}

/// Runs a directive handler body; a panic fails the configuration with an `[emerg]`.
pub(crate) fn directive(cf: *mut ngx_conf_t, body: impl FnOnce() -> ConfResult) -> ConfResult {
    conf_caught(cf, body).unwrap_or(NGX_CONF_ERROR)
}

/// What NGINX prints after a directive's name for one given twice (then "in FILE:LINE"); its
/// own slot setters return the same text.
pub(crate) const DUPLICATE: &core::ffi::CStr = c"is duplicate";

/// One directive of this module (a `static` its command's `post` points at): `given`, the
/// conf has its value already ([`DUPLICATE`]); `set`, from its arguments (`[0]` its name).
pub(crate) struct Slot<T> {
    pub(crate) given: fn(&T) -> bool,
    pub(crate) set: fn(*mut ngx_conf_t, &mut T, &[ngx_str_t]) -> ConfResult,
}

/// NGINX's handler of every [`Slot`] directive, under [`directive`], on the conf it writes
/// (a `T`, checked against the command's `conf` offset).
pub(crate) unsafe extern "C" fn slot<T: Level>(
    cf: *mut ngx_conf_t,
    cmd: *mut ngx_command_t,
    conf: *mut core::ffi::c_void,
) -> ConfResult {
    directive(cf, || {
        // SAFETY: NGINX passes the command, its context and the conf its `conf` offset names
        // (a `T` of this module's `create_*_conf`, as checked); `post` is the static
        // `Slot<T>` paired with `slot::<T>`; `cf->args` lives until the handler returns.
        let (s, slot, args) = unsafe {
            if (*cmd).conf != T::OFFSET || conf.is_null() || (*cmd).post.is_null() {
                return NGX_CONF_ERROR;
            }
            (&*(*cmd).post.cast::<Slot<T>>(), &mut *conf.cast::<T>(), array(&*(*cf).args))
        };
        if (s.given)(slot) {
            return DUPLICATE.as_ptr().cast_mut();
        }
        (s.set)(cf, slot, args)
    })
}

/// Runs a configuration hook that returns a status (pre/postconfiguration, init_upstream).
pub(crate) fn conf_status(cf: *mut ngx_conf_t, body: impl FnOnce() -> Status) -> ngx_int_t {
    conf_caught(cf, body).unwrap_or(Status::NGX_ERROR).into()
}

/// Runs a callback that returns nothing (an event handler); a panic is [`request`]'s
/// `[alert]`, and `r` is finalized with 500.
pub(crate) fn finalizing(r: *mut ngx_http_request_t, body: impl FnOnce()) {
    let ok = NGX_OK as ngx_int_t;
    let rc = request(r, || {
        body();
        ok
    });
    if rc != ok {
        // SAFETY: NGINX passed a valid request; finalizing with an error answers the client.
        unsafe { ngx_http_finalize_request(r, rc) };
    }
}
