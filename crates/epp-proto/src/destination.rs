//! The rules both `http_matches_epp` modes and `http_matches_epp_endpoints` apply to what they
//! are given, pure: the directive's URL ([`check_url`]), an element of the EPP's destination
//! list ([`address`]) and the list's preferred element ([`first`]); and what the shim mode
//! keeps of the shim's answer ([`joined`], [`BodyHead`]). No NGINX, no I/O.

use core::ops::Range;
use std::net::SocketAddr;

/// Bytes of the shim's answer body kept, and shown in an `[error]` line.
pub const BODY_SHOWN: usize = 256;

/// The start of the shim's answer body, fed as the body arrives ([`BodyHead::feed`]): its first
/// [`BODY_SHOWN`] bytes, and whether more came (nothing past them is read). All-zero bytes
/// are an empty one.
#[derive(Debug)]
pub struct BodyHead {
    body: [u8; BODY_SHOWN],
    shown: usize,
    more: bool,
}

impl Default for BodyHead {
    fn default() -> Self {
        BodyHead { body: [0; BODY_SHOWN], shown: 0, more: false }
    }
}

impl BodyHead {
    /// A piece of the body; `true` once more came than is kept (the call may stop).
    pub fn feed(&mut self, bytes: &[u8]) -> bool {
        let n = bytes.len().min(BODY_SHOWN - self.shown);
        self.body[self.shown..self.shown + n].copy_from_slice(&bytes[..n]);
        self.shown += n;
        self.more |= bytes.len() > n;
        self.more
    }

    /// The bytes kept, and whether more came.
    pub fn shown(&self) -> (&[u8], bool) {
        (&self.body[..self.shown], self.more)
    }
}

/// The values of an answer's destination lines (`X-Gateway-Destination-Endpoint`, several
/// allowed), joined with `, ` as one list.
pub fn joined<'a>(values: impl Iterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = Vec::new();
    for v in values {
        if !out.is_empty() {
            out.extend_from_slice(b", ");
        }
        out.extend_from_slice(v);
    }
    out
}

/// The shim answer's headers the proxy would act on, ignored on the call (issue #46): the
/// answer only names an endpoint, it never moves the call or tunes the client's answer.
pub const IGNORED: [&[u8]; 5] = [
    b"X-Accel-Redirect",
    b"X-Accel-Expires",
    b"X-Accel-Limit-Rate",
    b"X-Accel-Buffering",
    b"X-Accel-Charset",
];

/// A directive of the proxy module a [`Mode`] runs for the `http_matches_epp` location: its
/// name and values, and whether an operator's own one given before stays (NGINX's "is
/// duplicate" taken as already set).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command<'a> {
    pub name: &'static [u8],
    pub values: Vec<&'a [u8]>,
    pub kept: bool,
}

impl Mode {
    /// The NGINX module that makes the call.
    pub fn module(self) -> &'static core::ffi::CStr {
        match self {
            Mode::Shim => c"ngx_http_proxy_module",
            Mode::Grpc { .. } => c"ngx_http_grpc_module",
        }
    }

    /// The directives the mode runs, in order: the pass to `url`, the ignored headers
    /// ([`IGNORED`]), then the shim's `proxy_buffering off` (unbuffered, as the gRPC proxy
    /// always is: the body filter ends the call once it has the bytes it shows, `u->length = 0`,
    /// which the buffered event pipe ignores; an operator's own is refused as a duplicate) or,
    /// over TLS, `grpc_ssl_verify on` (NGINX's default is off: a man in the middle would name
    /// any destination; an operator's own before the directive stays).
    pub fn commands(self, url: &[u8]) -> Vec<Command<'_>> {
        let c =
            |name, values: &[&'static [u8]], kept| Command { name, values: values.to_vec(), kept };
        let (pass, ignore): (&'static [u8], &'static [u8]) = match self {
            Mode::Shim => (b"proxy_pass", b"proxy_ignore_headers"),
            Mode::Grpc { .. } => (b"grpc_pass", b"grpc_ignore_headers"),
        };
        let mut out = vec![Command { name: pass, values: vec![url], kept: false }];
        out.push(c(ignore, &IGNORED, false));
        match self {
            Mode::Shim => out.push(c(b"proxy_buffering", &[b"off"], false)),
            Mode::Grpc { tls: true } => out.push(c(b"grpc_ssl_verify", &[b"on"], true)),
            Mode::Grpc { tls: false } => {}
        }
        out
    }
}

/// What an `http_matches_epp` URL selects: the shim (`http://`, `https://`) or the EPP
/// protocol over NGINX's gRPC proxy (`grpc://`, `grpcs://`: `tls`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Shim,
    Grpc { tls: bool },
}

/// The URL as `proxy_pass` / `grpc_pass` take it, with no path, query or fragment (the shim
/// is asked at `/`) and no variables (the proxy would then resolve names per request and
/// send another URI); the mode it selects.
pub fn check_url(url: &[u8]) -> Result<Mode, &'static str> {
    let (rest, mode) = [
        (&b"http://"[..], Mode::Shim),
        (b"https://", Mode::Shim),
        (b"grpc://", Mode::Grpc { tls: false }),
        (b"grpcs://", Mode::Grpc { tls: true }),
    ]
    .into_iter()
    .find_map(|(scheme, mode)| Some((url.strip_prefix(scheme)?, mode)))
    .ok_or("expected http://, https://, grpc:// or grpcs://")?;
    if rest.is_empty() {
        return Err("no host");
    }
    if rest.contains(&b'/') {
        return Err("a path is not allowed (the shim is asked at \"/\", as epp.js does)");
    }
    if rest.contains(&b'$') {
        return Err("variables are not allowed");
    }
    if rest.contains(&b'?') || rest.contains(&b'#') {
        // proxy_pass would take "?..." as the URI's query and send it to the shim.
        return Err("a query or fragment is not allowed (the shim is asked at \"/\")");
    }
    Ok(mode)
}

/// An element of a destination list without the spaces and tabs around it (only those: a CR,
/// LF or form feed stays and is refused, never carried into a variable or a header).
pub fn trim(item: &[u8]) -> &[u8] {
    let blank = |b: &u8| matches!(b, b' ' | b'\t');
    let start = item.iter().take_while(|b| blank(b)).count();
    let end = item.len() - item[start..].iter().rev().take_while(|b| blank(b)).count();
    &item[start..end]
}

/// One element of the protocol's destination list (spaces and tabs around it already
/// trimmed, [`trim`]) when it is `ip:port`: an IP literal (IPv6 in brackets, no zone) and a port other than 0.
pub fn address(one: &[u8]) -> Option<SocketAddr> {
    let addr = core::str::from_utf8(one).ok()?.parse::<SocketAddr>().ok()?;
    (addr.port() != 0 && !one.contains(&b'%')).then_some(addr)
}

/// The EPP protocol's destination: `ip:port` or a comma-separated list of them in order of
/// preference, spaces and tabs around each allowed (several header lines come joined as one
/// list). Where the first (preferred) element is in `list` (`proxy_pass
/// http://$inference_workload_endpoint` takes one address), or the first element that is not
/// `ip:port` (every one must be), trimmed: what `endpoints::Refusal::NotIpPort` shows.
pub fn first(list: &[u8]) -> Result<Range<usize>, &[u8]> {
    let mut first = None;
    for item in list.split(|&b| b == b',') {
        let one = trim(item);
        if address(one).is_none() {
            return Err(one);
        }
        // `one` is a subslice of `list`: its offset is the distance between their starts.
        let at = one.as_ptr() as usize - list.as_ptr() as usize;
        first.get_or_insert(at..at + one.len());
    }
    first.ok_or(list)
}
