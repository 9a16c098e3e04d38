//! The plan's nodes: ports, servers, locations with their candidates, rules and their
//! backends, as the stages build them (listeners, attach, backends, rules, servers,
//! precedence, merge) and emit and explain read them. Below every stage: it imports none.

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use crate::model::{HeaderModifier, RequestRedirect, UrlRewrite};

use super::entry::Entry;
use super::ids::{ListenerId, RuleId};
use super::status::Reason;

/// Where backends live: `namespace/name:port` -> `host:port`.
pub type BackendMap = BTreeMap<String, String>;

/// What the target NGINX can do, from its version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// The version (major, minor, patch).
    pub version: (u32, u32, u32),
    /// 1.25.1 and later: the `http2` directive, and HTTP/1.1 beside cleartext HTTP/2 on one
    /// port. Before, HTTP/2 is a `listen` parameter, and a plain port with it speaks only
    /// HTTP/2.
    pub http2_directive: bool,
}

/// The first NGINX with the `http2` directive (and HTTP/1.1 beside cleartext HTTP/2).
pub const HTTP2_DIRECTIVE: (u32, u32, u32) = (1, 25, 1);

impl Capabilities {
    pub fn of_nginx(version: (u32, u32, u32)) -> Capabilities {
        Capabilities { version, http2_directive: version >= HTTP2_DIRECTIVE }
    }
}

impl Default for Capabilities {
    /// The vendored NGINX's (1.28.0).
    fn default() -> Capabilities {
        Capabilities::of_nginx((1, 28, 0))
    }
}

#[derive(Debug)]
pub struct PortPlan {
    pub port: u16,
    /// HTTPS (TLS terminated here) rather than HTTP.
    pub tls: bool,
    /// A GRPCRoute is served on the port: HTTP/2 (h2c with prior knowledge on a plain port,
    /// ALPN over TLS) besides HTTP/1.1 (see `servers::Speaks` for NGINX before 1.25.1).
    pub http2: bool,
    /// The port speaks HTTP/1.1: always, but before NGINX 1.25.1 on a plain port whose oldest
    /// route is a GRPCRoute (HTTP/2 alone there; `servers::Speaks`).
    pub http1: bool,
    /// In name order (the catch-all first).
    pub servers: Vec<ServerPlan>,
}

impl PortPlan {
    /// Where the requests none of server `s`'s routes answers go ([`ServerPlan::fallback`]),
    /// passing over the servers `written` leaves out (a name only left-out routes bring) to
    /// their own fallbacks: a fallback names a server, and NGINX would look a name it does
    /// not have up as a host, which another Gateway's wildcard may cover. Each hop is a less
    /// specific name of the same listener's Gateway, as the plan's.
    pub fn fallback_written(
        &self,
        s: &ServerPlan,
        written: &dyn Fn(&ServerPlan) -> bool,
    ) -> Option<Option<String>> {
        let mut fallback = s.fallback.clone()?;
        while let Some(t) = fallback.as_deref().and_then(|n| self.server(n)) {
            if written(t) {
                break;
            }
            fallback = t.fallback.clone()?;
        }
        Some(fallback)
    }

    /// The server named `name`, if the port has one.
    fn server(&self, name: &str) -> Option<&ServerPlan> {
        let at = self.servers.binary_search_by(|s| s.hostname.as_deref().cmp(&Some(name)));
        at.ok().map(|i| &self.servers[i])
    }
}

#[derive(Debug)]
pub struct ServerPlan {
    /// `None`: the catch-all (default) server of the port.
    pub hostname: Option<String>,
    /// The listener serving this hostname, if any.
    pub listener: Option<ListenerId>,
    /// That listener's hostname (`None`: it has none, or no listener serves this name). On an
    /// HTTPS port, the tag of listener isolation: a connection whose SNI chose a server of a
    /// listener carries any host of that listener (they share its certificates), none of
    /// another's.
    pub listener_hostname: Option<String>,
    /// On an HTTPS port: the listener's certificates, as `namespace/name` of Secrets (empty:
    /// the TLS handshake is refused for this name).
    pub certificates: Vec<String>,
    /// The routes whose hostnames alone brought this server (a name that is neither a
    /// listener's of the port nor the catch-all), sorted; empty otherwise. The writer gives
    /// its name to them (`emit::Unit::Route`): with all of them left out, the server is not
    /// written.
    pub brought_by: Vec<super::ids::RouteId>,
    /// The locations of the routes attached with this hostname itself (exactly; a wildcard
    /// server's, with that wildcard; the catch-all's, with none).
    pub locations: Vec<LocationPlan>,
    /// The rules of the routes served, each route's in a row; shared (planned once per route)
    /// by every server the route serves.
    pub rules: Vec<Arc<RulePlan>>,
    /// The hostname whose server (as NGINX looks up a `Host` header on the port) takes the
    /// requests none of this server's routes answers (`http_matches_fallback`): the next less
    /// specific hostname of the same listener (`Some(None)`: the port's default server).
    /// `None`: the server of the listener's own hostname, where a request ends. So a route is
    /// written in the server of its own hostname alone, not in every server it serves.
    pub fallback: Option<Option<String>>,
}

#[derive(Debug, PartialEq)]
pub struct LocationPlan {
    pub loc: Loc,
    /// Its candidates in precedence order, as runs of the server's blocks (see
    /// [`super::segments`]): each block is held once by the server, whatever the number of
    /// locations whose lists hold it.
    pub segments: Vec<Segment>,
}

impl LocationPlan {
    /// Its candidates, in precedence order.
    pub fn candidates(&self) -> impl Iterator<Item = &Candidate> + '_ {
        self.segments.iter().flat_map(Segment::candidates)
    }

    /// How many candidates it has.
    pub fn len(&self) -> usize {
        self.segments.iter().map(|s| s.range.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.segments.iter().all(|s| s.range.is_empty())
    }

    /// Changes this location's candidates with `f` (a test's or a tool's edit): its runs are
    /// copied first, so the other locations that shared them keep theirs.
    pub fn edit_candidates(&mut self, mut f: impl FnMut(&mut Candidate)) {
        for s in &mut self.segments {
            let mut own = s.candidates().to_vec();
            own.iter_mut().for_each(&mut f);
            *s = Segment { range: 0..own.len(), block: own.into() };
        }
    }
}

/// A run of a location's list: a contiguous piece of one block of the server's candidates
/// (one host rank, path type and path; for regexes, one host rank), shared by every location
/// whose list holds it.
#[derive(Debug, Clone)]
pub struct Segment {
    pub(super) block: Arc<[Candidate]>,
    pub range: std::ops::Range<usize>,
}

impl Segment {
    pub fn candidates(&self) -> &[Candidate] {
        &self.block[self.range.clone()]
    }

    /// The whole block this run is a piece of (`range` within it).
    pub fn block(&self) -> &[Candidate] {
        &self.block
    }

    /// What tells runs apart: the same in every location that holds this run (its block, by
    /// address, and its piece of it).
    pub fn id(&self) -> (usize, usize, usize) {
        (Arc::as_ptr(&self.block).cast::<Candidate>() as usize, self.range.start, self.range.end)
    }
}

/// The candidates of locations that a walk still keeps, each run (shared by the locations
/// that hold it) filtered in full once and then only for what it kept: `keep` may only turn
/// false over the walk (refusals grow), so a run kept to k candidates costs k per location
/// after its first, not its length. A walk over lists capped in bytes (inline carriers) is then
/// bounded by what can be written, plus each run once.
#[derive(Default)]
pub struct Kept {
    /// By [`Segment::id`] (an address and indexes: the fast hasher).
    runs: rustc_hash::FxHashMap<(usize, usize, usize), Vec<usize>>,
    /// Candidates looked at (tests bound it: counted, never timed).
    pub walked: usize,
}

impl Kept {
    /// Location `l`'s candidates that `keep` keeps, in precedence order.
    pub fn of<'l>(
        &mut self,
        l: &'l LocationPlan,
        keep: impl FnMut(&Candidate) -> bool,
    ) -> Vec<&'l Candidate> {
        self.places(l, keep).into_iter().map(|(s, i)| &s.candidates()[i]).collect()
    }

    /// [`Kept::of`], each candidate as its run and its index there.
    pub fn places<'l>(
        &mut self,
        l: &'l LocationPlan,
        mut keep: impl FnMut(&Candidate) -> bool,
    ) -> Vec<(&'l Segment, usize)> {
        let mut out = Vec::new();
        for s in &l.segments {
            let all = s.candidates();
            let kept = self.runs.entry(s.id()).or_insert_with(|| (0..all.len()).collect());
            self.walked += kept.len();
            kept.retain(|&i| keep(&all[i]));
            out.extend(kept.iter().map(|&i| (s, i)));
        }
        out
    }
}

impl PartialEq for Segment {
    fn eq(&self, other: &Segment) -> bool {
        self.candidates() == other.candidates()
    }
}

impl ServerPlan {
    /// Keeps, in every location, only the candidates `keep` takes (what explain does with the
    /// matches the writer left out). Each block is filtered once and stays shared, so the
    /// cost is the server's candidates and runs, not their product.
    pub fn retain_candidates(&mut self, mut keep: impl FnMut(&Candidate) -> bool) {
        // Per block (by address: the fast hasher): the kept block, and how many were kept
        // before each place.
        let mut kept: rustc_hash::FxHashMap<usize, (Arc<[Candidate]>, Vec<usize>)> =
            Default::default();
        for loc in &mut self.locations {
            for s in &mut loc.segments {
                let (block, before) = kept.entry(s.id().0).or_insert_with(|| {
                    let mut before = Vec::with_capacity(s.block.len() + 1);
                    let mut out = Vec::new();
                    for c in s.block.iter() {
                        before.push(out.len());
                        if keep(c) {
                            out.push(c.clone());
                        }
                    }
                    before.push(out.len());
                    (out.into(), before)
                });
                *s = Segment {
                    range: before[s.range.start]..before[s.range.end],
                    block: Arc::clone(block),
                };
            }
            loc.segments.retain(|s| !s.range.is_empty());
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// Index into the server's `rules` (its slot).
    pub rule: usize,
    /// Its route and its index there.
    pub id: RuleId,
    pub match_index: usize,
    pub path_kind: PathKind,
    /// The decoded path (normalized for a prefix), or the pattern as written for a regex.
    pub path: String,
    /// The hostname of its server (one copy, shared by the server's candidates).
    pub route_hostname: Option<Arc<str>>,
    /// Its match-list entry: the method, the headers and query parameters (names
    /// de-duplicated, headers case-insensitively, first kept) and the compiled-and-checked
    /// regex path condition. The candidate holds them there alone.
    pub entry: Entry,
    pub key: SortKey,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RulePlan {
    /// Its route and its index there.
    pub id: RuleId,
    pub rule_name: Option<String>,
    /// The backend refs with a weight above 0, in order.
    pub backends: Vec<Backend>,
    /// The rule's RequestHeaderModifier and ResponseHeaderModifier filters.
    pub request_headers: Modifier,
    pub response_headers: Modifier,
    // Boxed, as the other filters a rule seldom has: a rule plan is held for every rule
    // served (at 50,000 rules, each 100 bytes of a plan is 5 MB of the peak).
    pub redirect: Option<Box<RequestRedirect>>,
    pub rewrite: Option<Box<UrlRewrite>>,
    /// The prefix a ReplacePrefixMatch replaces: the rule's only match's (normalized) path.
    pub match_prefix: String,
    /// RequestMirror filters: (where to, share of requests 0..=1); never a status.
    pub mirrors: Vec<(Target, f64)>,
    /// The rule's `CORS` filter.
    pub cors: Option<Box<crate::model::Cors>>,
    /// A GRPCRoute's rule: `grpc_pass`.
    pub grpc: bool,
    /// `retry` (Experimental: `None` without [`PlanOptions::experimental`]).
    pub retry: Option<Box<crate::model::Retry>>,
    /// `timeouts`: the bound on each phase of a backend exchange (connect, each send, each
    /// read), in milliseconds: the smaller of `request` and `backendRequest`; `Some(0)` when
    /// they disable it.
    pub timeout_ms: Option<u64>,
    /// How many matches the rule has, and those planning skipped (a path or a header regex
    /// that cannot match or compile): (match index, the warning). Their conditions:
    /// [`super::dropped_from_configuration`].
    pub match_count: usize,
    pub skipped_matches: Vec<(usize, String)>,
}

/// A RequestHeaderModifier or ResponseHeaderModifier filter, held only when it changes a
/// header: most rules and backendRefs have none, and a plan holds four a rule (8 bytes each
/// instead of 72). Reads as the filter (empty when none).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Modifier(Option<Box<HeaderModifier>>);

/// The filter of no header.
static NO_HEADERS: HeaderModifier =
    HeaderModifier { set: Vec::new(), add: Vec::new(), remove: Vec::new() };

impl Modifier {
    pub fn of(m: HeaderModifier) -> Modifier {
        let changes = !(m.set.is_empty() && m.add.is_empty() && m.remove.is_empty());
        Modifier(changes.then(|| Box::new(m)))
    }
}

impl std::ops::Deref for Modifier {
    type Target = HeaderModifier;
    fn deref(&self) -> &HeaderModifier {
        self.0.as_deref().unwrap_or(&NO_HEADERS)
    }
}

/// One backendRef of a rule: where its share of requests goes.
#[derive(Debug, Clone, PartialEq)]
pub struct Backend {
    /// Its index among the rule's `backendRefs` (those of weight 0 are not planned).
    pub index: usize,
    pub target: Target,
    /// The backend speaks TLS (`appProtocol: kubernetes.io/wss` or `https`).
    pub tls: bool,
    pub weight: u32,
    /// The backendRef's own RequestHeaderModifier and ResponseHeaderModifier filters, applied
    /// after the rule's, to this backend's share only.
    pub request_headers: Modifier,
    pub response_headers: Modifier,
    /// Why it cannot serve, for a [`Target::Status`]: the Gateway API condition reason
    /// (`BackendNotFound`, `RefNotPermitted`, `InvalidKind`, `UnsupportedValue`,
    /// `UnsupportedProtocol`, or [`Reason::NoReadyEndpoints`] for a 503) and what is wrong.
    pub problem: Option<(Reason, String)>,
}

/// Where requests for a backend go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// An `upstream` block of fixed addresses (`--backend`, or a Service's ready endpoints):
    /// resolved once per Service port and shared by every reference to it (`Endpoints`).
    Upstream { name: String, servers: Arc<[String]> },
    /// `host:port` resolved when a request needs it (NGINX `resolver`): a Service's cluster
    /// DNS name when no Service (or no EndpointSlice) of its namespace was given, or an
    /// ExternalName Service.
    Resolve(String),
    /// Answered with this status: 500 for a reference that cannot be used, 503 for a Service
    /// without ready endpoints.
    Status(u16),
    /// An InferencePool: its Endpoint Picker chooses one of the pool's endpoints per request.
    Inference(Box<Pool>),
}

/// An InferencePool as a backend (see `plan/inference.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pool {
    /// `namespace/name`.
    pub id: String,
    /// The `upstream` of the pool's ready endpoints (every target port of each), non-empty:
    /// where `FailOpen` sends a request the picker gave no endpoint for.
    pub upstream: String,
    /// Resolved once per pool, shared by every reference to it.
    pub servers: Arc<[String]>,
    /// The Endpoint Picker Service: an [`Target::Upstream`] of its ready endpoints (or the
    /// `--backend` address) or its cluster DNS name ([`Target::Resolve`]).
    pub picker: Target,
    /// `failureMode: FailOpen` (else `FailClose`: no endpoint from the picker answers 500).
    pub fail_open: bool,
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Upstream { name, servers } => write!(f, "{name} ({})", servers.join(", ")),
            Target::Resolve(addr) => write!(f, "{addr} (resolved per request)"),
            Target::Status(code) => write!(f, "status {code}"),
            Target::Inference(p) => write!(
                f,
                "InferencePool {} ({}), picked by {}{}",
                p.id,
                p.servers.join(", "),
                p.picker,
                if p.fail_open { ", FailOpen" } else { "" }
            ),
        }
    }
}

/// Normalized PathPrefix value: no trailing `/` except for `/` itself.
pub fn normalize_prefix(v: &str) -> String {
    let t = v.trim_end_matches('/');
    if t.is_empty() { "/".to_owned() } else { t.to_owned() }
}

/// (characters of a non-wildcard hostname, characters of the hostname); `None`: any host.
pub(super) fn host_rank(e: Option<&str>) -> (usize, usize) {
    match e {
        None => (0, 0),
        Some(e) if e.starts_with('*') => (0, e.len()),
        Some(e) => (e.len(), e.len()),
    }
}

/// Whether wildcard hostname `wild` (`*.example.com`) covers `host`; false for a name
/// without wildcard.
pub(crate) fn wildcard_covers(wild: &str, host: &str) -> bool {
    match wild.strip_prefix('*') {
        Some(suffix) => host.len() > suffix.len() && host.ends_with(suffix),
        None => false,
    }
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Loc {
    /// `location = PATH`
    Exact(String),
    /// `location PATH` (PATH ends with `/`)
    Prefix(String),
}

impl Loc {
    /// Whether a request path that reaches this location is matched by a path match of type
    /// `kind` and value `value`.
    pub fn covered_by(&self, kind: PathKind, value: &str) -> bool {
        match (self, kind) {
            (Loc::Exact(x), PathKind::Exact) => x == value,
            (Loc::Exact(x), PathKind::Prefix) => under(x, value),
            (Loc::Prefix(_), PathKind::Exact) => false,
            // `y` is `q/` (or `/`): its requests are `q` itself or under it.
            (Loc::Prefix(y), PathKind::Prefix) => under(y.trim_end_matches('/'), value),
            // No location expresses a regex: the candidate goes into every list, with a path
            // condition the module checks (see [`Entry::path`]).
            (_, PathKind::Regex) => true,
        }
    }
}

/// Whether path `p` is `q` or lies under it, on segment boundaries.
fn under(p: &str, q: &str) -> bool {
    q == "/" || p == q || (p.len() > q.len() && p.starts_with(q) && p.as_bytes()[q.len()] == b'/')
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathKind {
    Exact,
    Prefix,
    /// `value` is the pattern as written; it matches when found at the start of the path
    /// (`^(?:value)`, what NGF's `location ~ ^value` does).
    Regex,
}

impl PathKind {
    /// Precedence between path types, smaller first: Exact > RegularExpression > PathPrefix.
    /// The spec leaves regex implementation-specific; this is the order of Envoy Gateway and
    /// Contour, and what NGF's `location ~` gives in NGINX (a regex location beats prefixes).
    pub(super) fn rank(self) -> u8 {
        match self {
            PathKind::Exact => 0,
            PathKind::Regex => 1,
            PathKind::Prefix => 2,
        }
    }
}

/// Gateway API precedence; the smallest key wins. Counts in 32 bits (40 bytes a candidate,
/// not 80): the CRDs bound each far below (a hostname 253 characters, a path 1,024, 16
/// headers, 16 rules, 64 matches), and a route's place below 2^32 routes.
pub type SortKey = (
    Reverse<u32>, // characters of the matching non-wildcard route hostname
    Reverse<u32>, // characters of the matching route hostname
    u8,           // path type: Exact, RegularExpression, PathPrefix (PathKind::rank)
    // Path characters (of the pattern, for a regex), 0; for a GRPCRoute, whose precedence
    // counts the characters of the matched service, then method, instead of path type and
    // length: whether the match names a service, a method (see `Match::grpc_names`).
    Reverse<(u32, u32)>,
    bool,         // no method
    Reverse<u32>, // header matches
    Reverse<u32>, // query param matches
    // The route's place by creationTimestamp, as an instant (none: newest), then the
    // `"{namespace}/{name}"` string.
    u32,
    u32, // rule index
    u32, // match index
);

/// Why a port cannot be listened on, if it cannot: `apply`'s probe of the machine
/// ([`crate::apply::port_probe`]).
#[derive(Clone)]
pub struct PortProbe(pub std::sync::Arc<dyn Fn(u16) -> Option<String> + Send + Sync>);

impl std::fmt::Debug for PortProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PortProbe")
    }
}
