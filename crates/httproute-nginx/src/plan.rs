//! The routing plan: which routes serve which listener and hostname, which NGINX locations
//! exist, and for each location the ordered candidate list (Gateway API precedence across all
//! routes of the listener, with fallback to shorter prefixes).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};

use std::fmt;

use crate::model::{
    AllowedRoutes, EndpointSlice, HeaderModifier, HttpRoute, Inputs, Match, ObjectRef,
    ReferenceGrant, RequestRedirect, Service, ServicePort, UrlRewrite,
};

/// Where backends live: `namespace/name:port` -> `host:port`.
pub type BackendMap = BTreeMap<String, String>;

pub const INTERNAL_PREFIX: &str = "/_httproute-internal/";

#[derive(Debug)]
pub struct Plan {
    pub ports: Vec<PortPlan>,
    pub warnings: Vec<String>,
    /// The TLS Secrets listeners use that came with the manifests (written next to
    /// nginx.conf): `namespace/name` -> (certificate chain, key).
    pub secrets: BTreeMap<String, (Vec<u8>, Vec<u8>)>,
    /// The conditions a controller would set (see `status`).
    pub status: Status,
}

/// A status condition: `type`, `status`, `reason`, `message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    pub kind: &'static str,
    pub ok: bool,
    pub reason: String,
    pub message: String,
}

impl Condition {
    fn yes(kind: &'static str, reason: &str) -> Condition {
        Condition { kind, ok: true, reason: reason.to_owned(), message: String::new() }
    }
    fn no(kind: &'static str, reason: &str, message: String) -> Condition {
        Condition { kind, ok: false, reason: reason.to_owned(), message }
    }
}

/// What the generator made of each Gateway, listener and HTTPRoute parentRef.
#[derive(Debug, Default)]
pub struct Status {
    /// Every listener of every Gateway, in input order.
    pub listeners: Vec<ListenerStatus>,
    /// Every HTTPRoute (sorted by namespace/name), each parentRef's conditions.
    pub routes: Vec<RouteStatus>,
}

#[derive(Debug)]
pub struct ListenerStatus {
    pub gateway_namespace: String,
    pub gateway: String,
    pub name: String,
    pub attached_routes: usize,
    pub conditions: Vec<Condition>,
}

#[derive(Debug)]
pub struct RouteStatus {
    /// A GRPCRoute.
    pub grpc: bool,
    pub namespace: String,
    pub name: String,
    pub parents: Vec<(crate::model::ParentRef, Vec<Condition>)>,
}

#[derive(Debug)]
pub struct PortPlan {
    pub port: u16,
    /// HTTPS (TLS terminated here) rather than HTTP.
    pub tls: bool,
    /// A GRPCRoute is served on the port: HTTP/2 (h2c with prior knowledge on a plain port,
    /// ALPN over TLS) besides HTTP/1.1.
    pub http2: bool,
    pub servers: Vec<ServerPlan>,
}

#[derive(Debug)]
pub struct ServerPlan {
    /// `None`: the catch-all (default) server of the port.
    pub hostname: Option<String>,
    /// `namespace/gateway/listener` serving this hostname, if any.
    pub listener: Option<String>,
    /// On an HTTPS port: the listener's certificates, as `namespace/name` of Secrets (empty:
    /// the TLS handshake is refused for this name).
    pub certificates: Vec<String>,
    pub locations: Vec<LocationPlan>,
    pub rules: Vec<RulePlan>,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Loc {
    /// `location = PATH`
    Exact(String),
    /// `location PATH` (PATH ends with `/`)
    Prefix(String),
}

impl Loc {
    /// Whether a request path that reaches this location is matched by `m`'s path.
    fn covered_by(&self, kind: PathKind, value: &str) -> bool {
        // Whether path `p` is `q` or lies under it, on segment boundaries.
        let under = |p: &str, q: &str| {
            q == "/"
                || p == q
                || (p.len() > q.len() && p.starts_with(q) && p.as_bytes()[q.len()] == b'/')
        };
        match (self, kind) {
            (Loc::Exact(x), PathKind::Exact) => x == value,
            (Loc::Exact(x), PathKind::Prefix) => under(x, value),
            (Loc::Prefix(_), PathKind::Exact) => false,
            // `y` is `q/` (or `/`): its requests are `q` itself or under it.
            (Loc::Prefix(y), PathKind::Prefix) => under(y.trim_end_matches('/'), value),
            // No location expresses a regex: the candidate goes into every list, with a path
            // condition the module checks (see `emit::entry`).
            (_, PathKind::Regex) => true,
        }
    }
}

#[derive(Debug, PartialEq)]
pub struct LocationPlan {
    pub loc: Loc,
    pub candidates: Vec<Candidate>,
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
    fn rank(self) -> u8 {
        match self {
            PathKind::Exact => 0,
            PathKind::Regex => 1,
            PathKind::Prefix => 2,
        }
    }

    /// The engine's `path` condition for a regex candidate: anchored at the start.
    pub fn regex_condition(value: &str) -> String {
        format!("RegularExpression:^(?:{value})")
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// Index into the server's `rules`.
    pub rule: usize,
    pub route: String,
    pub rule_index: usize,
    pub match_index: usize,
    pub path_kind: PathKind,
    pub path: String,
    pub route_hostname: Option<String>,
    pub method: Option<String>,
    /// (name, type, value), names de-duplicated (headers case-insensitively), first kept.
    pub headers: Vec<(String, String, String)>,
    pub params: Vec<(String, String, String)>,
    pub key: SortKey,
}

/// Gateway API precedence; the smallest key wins.
pub type SortKey = (
    Reverse<usize>, // characters of the matching non-wildcard route hostname
    Reverse<usize>, // characters of the matching route hostname
    u8,             // path type: Exact, RegularExpression, PathPrefix (PathKind::rank)
    // Path characters (of the pattern, for a regex), 0; for a GRPCRoute, whose precedence
    // counts the characters of the matched service, then method, instead of path type and
    // length: whether the match names a service, a method (see `Match::grpc_names`).
    Reverse<(usize, usize)>,
    bool,                            // no method
    Reverse<usize>,                  // header matches
    Reverse<usize>,                  // query param matches
    Option<crate::model::Timestamp>, // creationTimestamp, as an instant (none: oldest)
    String,                          // namespace
    String,                          // name
    usize,                           // rule index
    usize,                           // match index
);

#[derive(Debug, Clone, PartialEq)]
pub struct RulePlan {
    pub route: String,
    pub rule_index: usize,
    pub rule_name: Option<String>,
    /// The backend refs with a weight above 0, in order.
    pub backends: Vec<Backend>,
    /// The rule's RequestHeaderModifier and ResponseHeaderModifier filters.
    pub request_headers: HeaderModifier,
    pub response_headers: HeaderModifier,
    pub redirect: Option<RequestRedirect>,
    pub rewrite: Option<UrlRewrite>,
    /// The prefix a ReplacePrefixMatch replaces: the rule's only match's (normalized) path.
    pub match_prefix: String,
    /// RequestMirror filters: (where to, share of requests 0..=1); never a status.
    pub mirrors: Vec<(Target, f64)>,
    /// The rule's `CORS` filter.
    pub cors: Option<crate::model::Cors>,
    /// A GRPCRoute's rule: `grpc_pass`.
    pub grpc: bool,
    /// `retry` (Experimental; emitted only with `--experimental`).
    pub retry: Option<crate::model::Retry>,
    /// `timeouts`: the bound on each phase of a backend exchange (connect, each send, each
    /// read), in milliseconds: the smaller of `request` and `backendRequest`; `Some(0)` when
    /// they disable it.
    pub timeout_ms: Option<u64>,
}

/// One backendRef of a rule: where its share of requests goes.
#[derive(Debug, Clone, PartialEq)]
pub struct Backend {
    pub target: Target,
    /// The backend speaks TLS (`appProtocol: kubernetes.io/wss` or `https`).
    pub tls: bool,
    pub weight: u32,
    /// The backendRef's own RequestHeaderModifier and ResponseHeaderModifier filters, applied
    /// after the rule's, to this backend's share only.
    pub request_headers: HeaderModifier,
    pub response_headers: HeaderModifier,
    /// Why it cannot serve, for a [`Target::Status`]: the Gateway API condition reason
    /// (`BackendNotFound`, `RefNotPermitted`, `InvalidKind`, `UnsupportedValue`, or
    /// `NoReadyEndpoints` for a 503) and what is wrong.
    pub problem: Option<(&'static str, String)>,
}

/// Where requests for a backend go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// An `upstream` block of fixed addresses (`--backend`, or a Service's ready endpoints).
    Upstream { name: String, servers: Vec<String> },
    /// `host:port` resolved when a request needs it (NGINX `resolver`): a Service's cluster
    /// DNS name when no Service objects were given, or an ExternalName Service.
    Resolve(String),
    /// Answered with this status: 500 for a reference that cannot be used, 503 for a Service
    /// without ready endpoints.
    Status(u16),
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Upstream { name, servers } => write!(f, "{name} ({})", servers.join(", ")),
            Target::Resolve(addr) => write!(f, "{addr} (resolved per request)"),
            Target::Status(code) => write!(f, "status {code}"),
        }
    }
}

/// Normalized PathPrefix value: no trailing `/` except for `/` itself.
pub fn normalize_prefix(v: &str) -> String {
    let t = v.trim_end_matches('/');
    if t.is_empty() { "/".to_owned() } else { t.to_owned() }
}

/// Whether wildcard hostname `wild` (`*.example.com`) covers `host`; false for a name
/// without wildcard.
pub(crate) fn wildcard_covers(wild: &str, host: &str) -> bool {
    match wild.strip_prefix('*') {
        Some(suffix) => host.len() > suffix.len() && host.ends_with(suffix),
        None => false,
    }
}

/// Listener hostname ∩ route hostnames (`None` = any host).
fn intersect(listener: Option<&str>, route: &[String]) -> Vec<Option<String>> {
    if route.is_empty() {
        return vec![listener.map(str::to_owned)];
    }
    let Some(l) = listener else { return route.iter().cloned().map(Some).collect() };
    let mut out = Vec::new();
    for r in route {
        if r == l || wildcard_covers(l, r) {
            out.push(Some(r.clone()));
        } else if wildcard_covers(r, l) {
            out.push(Some(l.to_owned()));
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Whether route hostname `e` (after intersection) serves every request of server `h`.
fn serves(e: &Option<String>, h: &Option<String>) -> bool {
    match (e, h) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some(e), Some(h)) => e == h || wildcard_covers(e, h),
    }
}

struct Attachment<'a> {
    listener: usize,
    route: &'a HttpRoute,
    hostnames: Vec<Option<String>>,
}

struct ListenerRef {
    /// Its entry in `Status::listeners`.
    status: usize,
    id: String,
    port: u16,
    hostname: Option<String>,
    allowed: AllowedRoutes,
    tls: bool,
    certificates: Vec<String>,
}

/// Why `allowedRoutes` keeps a route of namespace `ns` off a listener of a Gateway in `gw_ns`.
fn refused(
    a: &AllowedRoutes,
    gw_ns: &str,
    ns: &str,
    kind: &str,
    inputs: &Inputs,
) -> Option<String> {
    if let Some(kinds) = &a.kinds {
        if !kinds.iter().any(|k| k.kind == kind && k.group == "gateway.networking.k8s.io") {
            return Some(format!("allowedRoutes.kinds does not list {kind}"));
        }
    }
    match a.namespaces.from.as_str() {
        "All" => None,
        "Selector" => {
            // Kubernetes labels every namespace with its own name.
            let mut labels = inputs.namespace_labels.get(ns).cloned().unwrap_or_default();
            labels.insert("kubernetes.io/metadata.name".into(), ns.to_owned());
            let selector = a.namespaces.selector.clone().unwrap_or_default();
            (!selector.matches(&labels))
                .then(|| format!("namespace {ns} does not match allowedRoutes.namespaces.selector"))
        }
        _ => (ns != gw_ns).then(|| {
            format!("allowedRoutes.namespaces.from is Same and the Gateway is in {gw_ns}")
        }),
    }
}

/// Whether a ReferenceGrant in `to_ns` lets objects of kind `from.0` (a Gateway API kind) in
/// namespace `from.1` use the core object `to` (kind, name).
fn granted(grants: &[ReferenceGrant], from: (&str, &str), to_ns: &str, to: (&str, &str)) -> bool {
    grants.iter().filter(|g| g.metadata.namespace == to_ns).any(|g| {
        g.spec.from.iter().any(|f| {
            f.group == "gateway.networking.k8s.io" && f.kind == from.0 && f.namespace == from.1
        }) && g.spec.to.iter().any(|t| {
            t.group.is_empty() && t.kind == to.0 && t.name.as_deref().is_none_or(|n| n == to.1)
        })
    })
}

pub fn plan(inputs: &Inputs, backends: &BackendMap) -> Plan {
    plan_with(inputs, backends, &BTreeSet::new())
}

/// [`plan`], where the TLS Secrets named in `given` have files of their own (`--certificate`)
/// besides those among the inputs; a listener's certificate that is neither is left out (its
/// hosts refuse the handshake if it has no other), with a warning.
pub fn plan_with(inputs: &Inputs, backends: &BackendMap, given: &BTreeSet<String>) -> Plan {
    let mut warnings = Vec::new();
    for (what, at) in &inputs.unsupported {
        warnings.push(format!("{what} is not supported yet and was ignored (first in {at})"));
    }
    warnings.extend(inputs.warnings.iter().cloned());
    let mut listeners: Vec<ListenerRef> = Vec::new();
    let mut status = Status::default();
    for g in &inputs.gateways {
        for l in &g.spec.listeners {
            let id = format!("{}/{}/{}", g.metadata.namespace, g.metadata.name, l.name);
            let mut skip = |reason: &str, why: String| {
                warnings.push(format!("listener {id}: {why}; skipped"));
                status.listeners.push(ListenerStatus {
                    gateway_namespace: g.metadata.namespace.clone(),
                    gateway: g.metadata.name.clone(),
                    name: l.name.clone(),
                    attached_routes: 0,
                    conditions: vec![
                        Condition::no("Accepted", reason, why),
                        Condition::no("Programmed", "Invalid", "not accepted".to_owned()),
                    ],
                });
            };
            let tls = match (l.protocol.as_str(), &l.tls) {
                ("HTTP", _) => false,
                ("HTTPS", Some(t)) if t.mode == "Terminate" => true,
                ("HTTPS", Some(t)) => {
                    skip(
                        "UnsupportedValue",
                        format!("TLS mode {} is not supported (HTTPRoutes need Terminate)", t.mode),
                    );
                    continue;
                }
                ("HTTPS", None) => {
                    skip("UnsupportedValue", "HTTPS without tls".to_owned());
                    continue;
                }
                (p, _) => {
                    skip("UnsupportedProtocol", format!("protocol {p} is not supported yet"));
                    continue;
                }
            };
            // HTTP and HTTPS cannot share a port: the first listener of a port decides.
            if let Some(other) = listeners.iter().find(|o| o.port == l.port && o.tls != tls) {
                let why = format!(
                    "port {} is already {} for listener {}",
                    l.port,
                    if other.tls { "HTTPS" } else { "HTTP" },
                    other.id
                );
                skip("PortUnavailable", why);
                continue;
            }
            let gns = g.metadata.namespace.as_str();
            let mut certificates = Vec::new();
            let mut refs = Condition::yes("ResolvedRefs", "ResolvedRefs");
            for (ci, c) in l.tls.iter().flat_map(|t| t.certificate_refs.iter()).enumerate() {
                let cns = c.namespace.as_deref().unwrap_or(gns);
                let why = if c.kind != "Secret" || !c.group.is_empty() {
                    Some(("InvalidCertificateRef", format!("kind {:?} is not a Secret", c.kind)))
                } else if cns != gns
                    && !granted(&inputs.grants, ("Gateway", gns), cns, ("Secret", &c.name))
                {
                    Some((
                        "RefNotPermitted",
                        format!(
                            "no ReferenceGrant in namespace {cns} lets Gateways of {gns} use it"
                        ),
                    ))
                } else {
                    None
                };
                let secret = format!("{cns}/{}", c.name);
                let why = why.or_else(|| {
                    (!inputs.secrets.contains_key(&secret) && !given.contains(&secret)).then(|| {
                        (
                            "InvalidCertificateRef",
                            format!("Secret {secret} is not among the inputs"),
                        )
                    })
                });
                // A Secret whose certificate NGINX could not load costs only this listener
                // (files given with --certificate replace it).
                let why = why.or_else(|| {
                    let bad = inputs.bad_secrets.get(&secret).filter(|_| !given.contains(&secret));
                    bad.map(|b| ("InvalidCertificateRef", format!("Secret {secret}: {b}")))
                });
                match why {
                    Some((reason, why)) => {
                        let why = format!("tls.certificateRefs[{ci}]: {why}");
                        warnings.push(format!("listener {id}: {why}; ignored"));
                        if refs.ok {
                            refs = Condition::no("ResolvedRefs", reason, why);
                        }
                    }
                    None => certificates.push(secret),
                }
            }
            let programmed = if tls && certificates.is_empty() {
                warnings.push(format!(
                    "listener {id}: no usable certificate; its hosts refuse the TLS handshake"
                ));
                Condition::no(
                    "Programmed",
                    "Invalid",
                    "no usable certificate: its hosts refuse the TLS handshake".to_owned(),
                )
            } else {
                Condition::yes("Programmed", "Programmed")
            };
            status.listeners.push(ListenerStatus {
                gateway_namespace: g.metadata.namespace.clone(),
                gateway: g.metadata.name.clone(),
                name: l.name.clone(),
                attached_routes: 0,
                conditions: vec![Condition::yes("Accepted", "Accepted"), refs, programmed],
            });
            listeners.push(ListenerRef {
                status: status.listeners.len() - 1,
                id,
                port: l.port,
                hostname: l.hostname.clone(),
                allowed: l.allowed_routes.clone(),
                tls,
                certificates,
            });
        }
    }
    let mut attachments = Vec::new();
    let mut routes: Vec<&HttpRoute> = inputs.routes.iter().collect();
    routes.sort_by(|a, b| {
        (&a.metadata.namespace, &a.metadata.name).cmp(&(&b.metadata.namespace, &b.metadata.name))
    });
    let refs = Refs {
        grpc: false,
        backends,
        grants: &inputs.grants,
        services: &inputs.services,
        slices: &inputs.endpoint_slices,
    };
    for r in &routes {
        let ns = &r.metadata.namespace;
        let mut attached = false;
        let resolved = route_refs(r, &refs);
        let mut parents = Vec::new();
        for p in &r.spec.parent_refs {
            if p.kind.as_deref().unwrap_or("Gateway") != "Gateway"
                || !matches!(p.group.as_deref(), None | Some("gateway.networking.k8s.io"))
            {
                continue;
            }
            let gw_ns = p.namespace.as_deref().unwrap_or(ns);
            // What kept it off the listeners it names, most telling last.
            let (mut named, mut refusal, mut hosts_miss) = (false, None, false);
            let mut here = false;
            for (li, l) in listeners.iter().enumerate() {
                let mut parts = l.id.splitn(3, '/');
                let (lns, lgw, lname) = (parts.next(), parts.next(), parts.next());
                if lns != Some(gw_ns) || lgw != Some(p.name.as_str()) {
                    continue;
                }
                if p.section_name.as_deref().is_some_and(|s| Some(s) != lname)
                    || p.port.is_some_and(|port| port != l.port)
                {
                    continue;
                }
                named = true;
                let kind = if r.grpc { "GRPCRoute" } else { "HTTPRoute" };
                if let Some(why) = refused(&l.allowed, gw_ns, ns, kind, inputs) {
                    warnings.push(format!(
                        "{kind} {ns}/{}: listener {} does not accept it: {why}",
                        r.metadata.name, l.id
                    ));
                    refusal = Some(format!("listener {}: {why}", l.id));
                    continue;
                }
                let hostnames = intersect(l.hostname.as_deref(), &r.spec.hostnames);
                if hostnames.is_empty() {
                    hosts_miss = true;
                    continue;
                }
                attached = true;
                here = true;
                status.listeners[l.status].attached_routes += 1;
                attachments.push(Attachment { listener: li, route: r, hostnames });
            }
            let accepted = if here {
                Condition::yes("Accepted", "Accepted")
            } else if hosts_miss {
                Condition::no(
                    "Accepted",
                    "NoMatchingListenerHostname",
                    "no hostname of the route matches a listener's".to_owned(),
                )
            } else if let Some(why) = refusal {
                Condition::no("Accepted", "NotAllowedByListeners", why)
            } else if named {
                Condition::no("Accepted", "NoMatchingParent", "no usable listener".to_owned())
            } else {
                Condition::no(
                    "Accepted",
                    "NoMatchingParent",
                    format!("no listener of Gateway {gw_ns}/{} matches", p.name),
                )
            };
            parents.push((p.clone(), vec![accepted, resolved.clone()]));
        }
        status.routes.push(RouteStatus {
            grpc: r.grpc,
            namespace: ns.clone(),
            name: r.metadata.name.clone(),
            parents,
        });
        if !attached {
            warnings.push(format!(
                "{} {ns}/{}: attaches to no listener (parentRefs, sectionName, port or \
                 hostnames do not match); its requests get 404",
                if r.grpc { "GRPCRoute" } else { "HTTPRoute" },
                r.metadata.name
            ));
        }
    }
    for r in &inputs.rejected {
        let kind = if r.grpc { "GRPCRoute" } else { "HTTPRoute" };
        let name = format!("{}/{}", r.namespace.escape_debug(), r.name.escape_debug());
        warnings.push(format!("{kind} {name} is not served: {}", r.error));
        let why = match r.error.field.as_str() {
            "" => r.error.message.clone(),
            f => format!("{f}: {}", r.error.message),
        };
        let parents = r
            .parent_refs
            .iter()
            .map(|p| (p.clone(), vec![Condition::no("Accepted", "UnsupportedValue", why.clone())]))
            .collect();
        status.routes.push(RouteStatus {
            grpc: r.grpc,
            namespace: r.namespace.clone(),
            name: r.name.clone(),
            parents,
        });
    }
    status.routes.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    reject_kind_conflicts(&listeners, &mut attachments, &mut status, &mut warnings);
    let ports: BTreeSet<u16> = listeners.iter().map(|l| l.port).collect();
    let mut out = Vec::new();
    for port in ports {
        let on_port: Vec<usize> =
            (0..listeners.len()).filter(|&i| listeners[i].port == port).collect();
        let mut names: BTreeSet<Option<String>> = BTreeSet::new();
        names.insert(None);
        for &i in &on_port {
            names.insert(listeners[i].hostname.clone());
        }
        for a in attachments.iter().filter(|a| listeners[a.listener].port == port) {
            names.extend(a.hostnames.iter().cloned());
        }
        let mut servers = Vec::new();
        for h in names {
            let best = best_listener(&listeners, &on_port, &h);
            let mut server = ServerPlan {
                hostname: h.clone(),
                listener: best.map(|i| listeners[i].id.clone()),
                certificates: best.map(|i| listeners[i].certificates.clone()).unwrap_or_default(),
                locations: Vec::new(),
                rules: Vec::new(),
            };
            if let Some(li) = best {
                let mut candidates = Vec::new();
                for a in attachments.iter().filter(|a| a.listener == li) {
                    let Some(e) =
                        a.hostnames.iter().filter(|e| serves(e, &h)).max_by_key(|e| host_rank(e))
                    else {
                        continue;
                    };
                    add_route(a.route, e, &refs, &mut server, &mut candidates, &mut warnings);
                }
                server.locations = locations(candidates);
            }
            if !server.locations.iter().any(|l| l.loc == Loc::Prefix("/".into())) {
                server
                    .locations
                    .push(LocationPlan { loc: Loc::Prefix("/".into()), candidates: Vec::new() });
                server.locations.sort_by(|a, b| a.loc.cmp(&b.loc));
            }
            servers.push(server);
        }
        let tls = on_port.iter().any(|&i| listeners[i].tls);
        let http2 = servers.iter().any(|s| s.rules.iter().any(|r| r.grpc));
        out.push(PortPlan { port, tls, http2, servers });
    }
    warnings.sort();
    warnings.dedup();
    let secrets = listeners
        .iter()
        .flat_map(|l| l.certificates.iter())
        .filter_map(|c| inputs.secrets.get(c).map(|pem| (c.clone(), pem.clone())))
        .collect();
    Plan { ports: out, warnings, secrets, status }
}

impl Plan {
    /// Fits the plan to the NGINX that will run it (`version`: major, minor, patch). Before
    /// 1.25.1 there is no `http2` directive: HTTP/2 is a `listen` parameter, and on a plain
    /// port it makes the port speak only HTTP/2 with prior knowledge. So a plain port that
    /// serves GRPCRoutes and HTTP/1.1 routes together keeps HTTP/1.1: its GRPCRoutes cannot be
    /// served there (a warning, and `Accepted: False` for a GRPCRoute served nowhere else).
    pub fn fit_nginx(&mut self, version: (u32, u32, u32)) {
        if version >= HTTP2_DIRECTIVE {
            return;
        }
        let mut lost: BTreeMap<String, BTreeSet<u16>> = BTreeMap::new();
        let mut kept: BTreeSet<String> = BTreeSet::new();
        for port in &mut self.ports {
            let rules = || port.servers.iter().flat_map(|s| s.rules.iter());
            let grpc: BTreeSet<String> =
                rules().filter(|r| r.grpc).map(|r| r.route.clone()).collect();
            if grpc.is_empty() {
                continue;
            }
            if port.tls || rules().all(|r| r.grpc) {
                kept.extend(grpc);
                continue;
            }
            port.http2 = false;
            self.warnings.push(format!(
                "port {}: NGINX {}.{}.{} cannot serve HTTP/1.1 and cleartext HTTP/2 (gRPC) on one \
                 port (1.25.1 can): the GRPCRoutes {} are not served there; give them a \
                 listener of their own or a TLS one",
                port.port,
                version.0,
                version.1,
                version.2,
                grpc.iter().cloned().collect::<Vec<_>>().join(", ")
            ));
            for route in grpc {
                lost.entry(route).or_default().insert(port.port);
            }
        }
        for route in &mut self.status.routes {
            let id = format!("{}/{}", route.namespace, route.name);
            let Some(ports) = lost.get(&id).filter(|_| route.grpc && !kept.contains(&id)) else {
                continue;
            };
            for (_, conditions) in &mut route.parents {
                if let Some(c) = conditions.iter_mut().find(|c| c.kind == "Accepted" && c.ok) {
                    *c = Condition::no(
                        "Accepted",
                        "UnsupportedValue",
                        format!(
                            "NGINX {}.{}.{} cannot serve cleartext HTTP/2 beside HTTP/1.1 on \
                             port {}",
                            version.0,
                            version.1,
                            version.2,
                            ports.iter().map(u16::to_string).collect::<Vec<_>>().join(", ")
                        ),
                    );
                }
            }
        }
        self.warnings.sort();
        self.warnings.dedup();
    }
}

/// The first NGINX with the `http2` directive (and HTTP/1.1 beside cleartext HTTP/2).
pub const HTTP2_DIRECTIVE: (u32, u32, u32) = (1, 25, 1);

/// A GRPCRoute and an HTTPRoute attached to one listener with hostnames in common: the spec
/// accepts exactly one of them there, the older (then the first by namespace/name).
fn reject_kind_conflicts(
    listeners: &[ListenerRef],
    attachments: &mut Vec<Attachment<'_>>,
    status: &mut Status,
    warnings: &mut Vec<String>,
) {
    let key = |r: &HttpRoute| {
        let m = &r.metadata;
        (m.creation_timestamp.clone(), m.namespace.clone(), m.name.clone())
    };
    let overlap = |a: &[Option<String>], b: &[Option<String>]| {
        a.iter().any(|x| {
            b.iter().any(|y| match (x, y) {
                (None, _) | (_, None) => true,
                (Some(x), Some(y)) => x == y || wildcard_covers(x, y) || wildcard_covers(y, x),
            })
        })
    };
    let mut losers: Vec<(usize, String, String)> = Vec::new();
    for (i, a) in attachments.iter().enumerate() {
        for b in attachments[i + 1..].iter() {
            if a.listener != b.listener
                || a.route.grpc == b.route.grpc
                || !overlap(&a.hostnames, &b.hostnames)
            {
                continue;
            }
            let (win, lose) = if key(a.route) <= key(b.route) { (a, b) } else { (b, a) };
            let kind = |r: &HttpRoute| if r.grpc { "GRPCRoute" } else { "HTTPRoute" };
            let name = |r: &HttpRoute| format!("{}/{}", r.metadata.namespace, r.metadata.name);
            let why = format!(
                "{} {} has hostnames in common with the older {} {} on listener {}: only that one \
                 is accepted there",
                kind(lose.route),
                name(lose.route),
                kind(win.route),
                name(win.route),
                listeners[a.listener].id
            );
            warnings.push(why.clone());
            losers.push((a.listener, name(lose.route), why));
        }
    }
    for (li, route, why) in &losers {
        let before = attachments.len();
        attachments.retain(|a| {
            !(a.listener == *li
                && format!("{}/{}", a.route.metadata.namespace, a.route.metadata.name) == *route)
        });
        if attachments.len() == before {
            continue;
        }
        let l = &listeners[*li];
        status.listeners[l.status].attached_routes -= 1;
        let gateway = l.id.rsplit_once('/').map_or("", |(g, _)| g).to_owned();
        for r in
            status.routes.iter_mut().filter(|r| format!("{}/{}", r.namespace, r.name) == *route)
        {
            for (p, conditions) in &mut r.parents {
                let pns = p.namespace.as_deref().unwrap_or(&r.namespace);
                if format!("{pns}/{}", p.name) == gateway {
                    conditions[0] = Condition::no("Accepted", "NotAllowedByListeners", why.clone());
                }
            }
        }
    }
}

/// A route's ResolvedRefs condition: the first backendRef (rules in order, then mirrors)
/// that cannot be used. A Service without ready endpoints resolves (it answers 503).
fn route_refs(r: &HttpRoute, refs: &Refs<'_>) -> Condition {
    let refs = &Refs { grpc: r.grpc, ..*refs };
    let ns = &r.metadata.namespace;
    for (ri, rule) in r.spec.rules.iter().enumerate() {
        let objects = rule.backend_refs.iter().map(|b| (b.object(), "backendRefs")).chain(
            rule.filters
                .iter()
                .filter_map(|f| f.request_mirror.as_ref())
                .map(|m| (m.backend_ref.clone(), "filters[].requestMirror.backendRef")),
        );
        let named = rule.name.as_deref().map(|n| format!(" ({n})")).unwrap_or_default();
        for (object, field) in objects {
            if let Err((reason, why)) = resolve(&object, ns, refs) {
                return Condition::no(
                    "ResolvedRefs",
                    reason,
                    format!("rules[{ri}]{named}.{field}: {why}"),
                );
            }
        }
    }
    Condition::yes("ResolvedRefs", "ResolvedRefs")
}

fn host_rank(e: &Option<String>) -> (usize, usize) {
    match e {
        None => (0, 0),
        Some(e) if e.starts_with('*') => (0, e.len()),
        Some(e) => (e.len(), e.len()),
    }
}

/// The most specific listener of the port for hostname `h` (listener isolation).
fn best_listener(
    listeners: &[ListenerRef],
    on_port: &[usize],
    h: &Option<String>,
) -> Option<usize> {
    let exact = on_port
        .iter()
        .copied()
        .find(|&i| listeners[i].hostname.is_some() && listeners[i].hostname == *h);
    if exact.is_some() {
        return exact;
    }
    if let Some(h) = h {
        let wild = on_port
            .iter()
            .copied()
            .filter(|&i| listeners[i].hostname.as_deref().is_some_and(|l| wildcard_covers(l, h)))
            .max_by_key(|&i| listeners[i].hostname.as_ref().map_or(0, String::len));
        if wild.is_some() {
            return wild;
        }
    }
    on_port.iter().copied().find(|&i| listeners[i].hostname.is_none())
}

/// What backend references resolve against.
#[derive(Clone, Copy)]
struct Refs<'a> {
    /// The route is a GRPCRoute (its backends speak HTTP/2).
    grpc: bool,
    backends: &'a BackendMap,
    grants: &'a [ReferenceGrant],
    services: &'a BTreeMap<String, Service>,
    slices: &'a [EndpointSlice],
}

fn add_route(
    r: &HttpRoute,
    hostname: &Option<String>,
    refs: &Refs<'_>,
    server: &mut ServerPlan,
    candidates: &mut Vec<Candidate>,
    warnings: &mut Vec<String>,
) {
    let refs = &Refs { grpc: r.grpc, ..*refs };
    let m = &r.metadata;
    let route = format!("{}/{}", m.namespace, m.name);
    let (nonwild, chars) = host_rank(hostname);
    for (ri, rule) in r.spec.rules.iter().enumerate() {
        let rule_slot = server.rules.len();
        let mut plan = rule_plan(&route, ri, rule, &m.namespace, refs, warnings);
        plan.grpc = r.grpc;
        server.rules.push(plan);
        for (mi, mat) in rule.matches.iter().enumerate() {
            let Some(c) = candidate(&route, ri, mi, mat, rule_slot, hostname, warnings) else {
                continue;
            };
            let (rank, path_chars) = match (r.grpc, mat.grpc_names) {
                (true, names) => {
                    let (service, method) = names.unwrap_or_default();
                    (0, (usize::from(service), usize::from(method)))
                }
                (false, _) => (c.path_kind.rank(), (c.path.len(), 0)),
            };
            let key = (
                Reverse(nonwild),
                Reverse(chars),
                rank,
                Reverse(path_chars),
                c.method.is_none(),
                Reverse(c.headers.len()),
                Reverse(c.params.len()),
                m.creation_timestamp.clone(),
                m.namespace.clone(),
                m.name.clone(),
                ri,
                mi,
            );
            candidates.push(Candidate { key, ..c });
        }
    }
}

fn candidate(
    route: &str,
    ri: usize,
    mi: usize,
    m: &Match,
    rule: usize,
    hostname: &Option<String>,
    warnings: &mut Vec<String>,
) -> Option<Candidate> {
    let at = format!("HTTPRoute {route} rules[{ri}].matches[{mi}]");
    // NGINX matches locations against the decoded path: `/my%20path` is `/my path`.
    let mut decoded = || match crate::model::decoded_path(&m.path.value) {
        Ok(p) => Some(p),
        Err(why) => {
            warnings.push(format!(
                "{at}: path {:?} {why}: no request can match it; match skipped",
                m.path.value
            ));
            None
        }
    };
    let (path_kind, path) = match m.path.kind.as_str() {
        "Exact" => (PathKind::Exact, decoded()?),
        "PathPrefix" => (PathKind::Prefix, normalize_prefix(&decoded()?)),
        "RegularExpression" => {
            let anchored = PathKind::regex_condition(&m.path.value);
            let pattern = anchored.trim_start_matches("RegularExpression:");
            if let Err(e) = route_match::Pattern::new(pattern) {
                warnings.push(format!(
                    "{at}: path regular expression {:?} does not compile ({e}); match skipped",
                    m.path.value
                ));
                return None;
            }
            (PathKind::Regex, m.path.value.clone())
        }
        _ => {
            warnings.push(format!(
                "{at}: path type {} is not supported yet; match skipped",
                m.path.kind
            ));
            return None;
        }
    };
    if path.starts_with(INTERNAL_PREFIX.trim_end_matches('/')) {
        warnings.push(format!("{at}: paths under {INTERNAL_PREFIX} are reserved; match skipped"));
        return None;
    }
    // Compiled as the module compiles them, so that a bad one is a warning here rather than a
    // list the module refuses.
    for (kind, list) in [("headers", &m.headers), ("queryParams", &m.query_params)] {
        for (i, h) in list.iter().enumerate() {
            if h.kind == "RegularExpression"
                && let Err(e) = route_match::Pattern::new(&h.value)
            {
                warnings.push(format!(
                    "{at}.{kind}[{i}].value: regular expression {:?} does not compile ({e}); \
                     match skipped",
                    h.value
                ));
                return None;
            }
        }
    }
    let mut headers: Vec<(String, String, String)> = Vec::new();
    for h in &m.headers {
        if !headers.iter().any(|(n, _, _)| n.eq_ignore_ascii_case(&h.name)) {
            headers.push((h.name.clone(), h.kind.clone(), h.value.clone()));
        }
    }
    let mut params: Vec<(String, String, String)> = Vec::new();
    for q in &m.query_params {
        if !params.iter().any(|(n, _, _)| *n == q.name) {
            params.push((q.name.clone(), q.kind.clone(), q.value.clone()));
        }
    }
    Some(Candidate {
        rule,
        route: route.to_owned(),
        rule_index: ri,
        match_index: mi,
        path_kind,
        path,
        route_hostname: hostname.clone(),
        method: m.method.clone(),
        headers,
        params,
        key: Default::default(),
    })
}

fn rule_plan(
    route: &str,
    ri: usize,
    rule: &crate::model::Rule,
    ns: &str,
    refs: &Refs<'_>,
    warnings: &mut Vec<String>,
) -> RulePlan {
    let mut plan = RulePlan {
        route: route.to_owned(),
        rule_index: ri,
        rule_name: rule.name.clone(),
        backends: Vec::new(),
        request_headers: modifier(rule, "RequestHeaderModifier", route, &ri, warnings),
        response_headers: modifier(rule, "ResponseHeaderModifier", route, &ri, warnings),
        redirect: rule.filters.iter().find_map(|f| f.request_redirect.clone()),
        rewrite: rule.filters.iter().find_map(|f| f.url_rewrite.clone()),
        match_prefix: rule
            .matches
            .first()
            .map(|m| normalize_prefix(&m.path.value))
            .unwrap_or_default(),
        mirrors: Vec::new(),
        cors: rule.filters.iter().find_map(|f| f.cors.clone()),
        grpc: false,
        retry: rule.retry.clone(),
        timeout_ms: rule.timeouts.as_ref().and_then(|t| {
            let ms = |v: &Option<String>| v.as_deref().and_then(crate::model::duration_ms);
            match (ms(&t.request), ms(&t.backend_request)) {
                (None, None) => None,
                (Some(a), Some(b)) if a != 0 && b != 0 => Some(a.min(b)),
                (Some(0), Some(b)) | (Some(b), Some(0)) | (Some(b), None) | (None, Some(b)) => {
                    Some(b)
                }
                (Some(a), Some(_)) => Some(a),
            }
        }),
    };
    let mirrors = rule.filters.iter().filter_map(|f| f.request_mirror.as_ref());
    for (mi, m) in mirrors.enumerate() {
        match resolve(&m.backend_ref, ns, refs).map(|(t, _)| t) {
            Ok(t @ (Target::Upstream { .. } | Target::Resolve(_))) => {
                plan.mirrors.push((t, m.share()))
            }
            Ok(Target::Status(_)) => warnings.push(format!(
                "HTTPRoute {route} rules[{ri}]: RequestMirror {mi}: the Service has no ready \
                 endpoints; not mirrored"
            )),
            Err((_, why)) => warnings.push(format!(
                "HTTPRoute {route} rules[{ri}]: RequestMirror {mi}: {why}; not mirrored"
            )),
        }
    }
    for (bi, b) in rule.backend_refs.iter().enumerate() {
        if b.weight == 0 {
            continue;
        }
        let at = format!("HTTPRoute {route} rules[{ri}].backendRefs[{bi}]");
        let resolved = resolve(&b.object(), ns, refs);
        let tls = resolved.as_ref().is_ok_and(|(_, tls)| *tls);
        let (target, problem) = match resolved.map(|(t, _)| t) {
            Ok(Target::Status(code)) => {
                let why = format!("Service {} has no ready endpoints", b.name);
                warnings.push(format!("{at}: {why}; its share of requests answers {code}"));
                (Target::Status(code), Some(("NoReadyEndpoints", why)))
            }
            Ok(t) => (t, None),
            Err((reason, why)) => {
                warnings.push(format!("{at}: {why}; its share of requests answers 500"));
                (Target::Status(500), Some((reason, why)))
            }
        };
        let own = crate::model::Rule {
            name: None,
            matches: Vec::new(),
            backend_refs: Vec::new(),
            filters: b.filters.clone(),
            timeouts: None,
            retry: None,
            other: BTreeMap::new(),
        };
        let at = format!("{ri}].backendRefs[{bi}");
        plan.backends.push(Backend {
            target,
            tls,
            weight: b.weight,
            request_headers: modifier(&own, "RequestHeaderModifier", route, &at, warnings),
            response_headers: modifier(&own, "ResponseHeaderModifier", route, &at, warnings),
            problem,
        });
    }
    plan
}

/// A backend reference of a route in `ns`: where it goes (a 503 status for a Service without
/// ready endpoints), or the condition reason and why it cannot be used.
///
/// In order: `--backend` / `--backends`; the Service among the inputs (its ready endpoints
/// from EndpointSlices, or its cluster DNS name resolved per request when no EndpointSlices
/// were given, or its external name); when the inputs hold no Service at all, the cluster DNS
/// name resolved per request. When they hold Services, one that is not among them does not
/// exist.
///
/// Also whether the backend speaks TLS (`appProtocol: kubernetes.io/wss` or `https`).
fn resolve(
    r: &ObjectRef,
    ns: &str,
    refs: &Refs<'_>,
) -> Result<(Target, bool), (&'static str, String)> {
    let (kind, group, name, port) =
        (r.kind.as_deref(), r.group.as_deref(), r.name.as_str(), r.port);
    let bns = r.namespace.as_deref().unwrap_or(ns);
    if !matches!(kind, None | Some("Service")) || !matches!(group, None | Some("")) {
        return Err(("InvalidKind", format!("kind {:?} is not a Service", kind.unwrap_or(""))));
    }
    if bns != ns && !granted(refs.grants, ("HTTPRoute", ns), bns, ("Service", name)) {
        return Err((
            "RefNotPermitted",
            format!(
                "no ReferenceGrant in namespace {bns} lets HTTPRoutes of {ns} use Service {name}"
            ),
        ));
    }
    let Some(port) = port else {
        return Err(("UnsupportedValue", "a Service reference needs a port".to_owned()));
    };
    let key = format!("{bns}/{name}:{port}");
    let upstream: String = format!("{bns}_{name}_{port}")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
        .collect();
    if let Some(address) = refs.backends.get(&key) {
        return Ok((Target::Upstream { name: upstream, servers: vec![address.clone()] }, false));
    }
    if !crate::model::is_dns_label(name) || !crate::model::is_dns_label(bns) {
        return Err((
            "UnsupportedValue",
            format!("{bns}/{name} is not a valid Service name (RFC 1123 label)"),
        ));
    }
    let cluster_name = format!("{name}.{bns}.svc.cluster.local:{port}");
    if refs.services.is_empty() {
        return Ok((Target::Resolve(cluster_name), false));
    }
    let Some(svc) = refs.services.get(&format!("{bns}/{name}")) else {
        return Err(("BackendNotFound", format!("Service {bns}/{name} does not exist")));
    };
    if svc.spec.kind.as_deref() == Some("ExternalName") {
        return match svc.spec.external_name.as_deref() {
            Some(host) if is_dns_name(host) => {
                Ok((Target::Resolve(format!("{host}:{port}")), false))
            }
            other => Err((
                "UnsupportedValue",
                format!("ExternalName Service {bns}/{name} has no valid externalName ({other:?})"),
            )),
        };
    }
    let Some(sp) = svc.spec.ports.iter().find(|p| p.port == port) else {
        return Err(("BackendNotFound", format!("Service {bns}/{name} has no port {port}")));
    };
    // GEP-1911: what the backend speaks on the port.
    let tls = match sp.app_protocol.as_deref() {
        None | Some("http" | "kubernetes.io/ws") => false,
        Some("https" | "kubernetes.io/wss") => true,
        Some("kubernetes.io/h2c") if refs.grpc => false,
        Some(other) => {
            return Err((
                "UnsupportedProtocol",
                format!(
                    "Service {bns}/{name} port {port} speaks {other}, which this gateway cannot \
                     send{}",
                    if other == "kubernetes.io/h2c" {
                        " from an HTTPRoute (NGINX speaks HTTP/2 to a backend only with grpc_pass)"
                    } else {
                        ""
                    }
                ),
            ));
        }
    };
    if refs.slices.is_empty() {
        return Ok((Target::Resolve(cluster_name), tls));
    }
    let servers = ready_endpoints(refs.slices, bns, name, sp);
    if servers.is_empty() {
        return Ok((Target::Status(503), tls));
    }
    Ok((Target::Upstream { name: upstream, servers }, tls))
}

/// `address:port` of every ready endpoint of Service `ns/name` for its port `sp`: the
/// EndpointSlice port of the same name (NGF's rule: the Service port maps to the endpoints'
/// target port by name).
fn ready_endpoints(
    slices: &[EndpointSlice],
    ns: &str,
    name: &str,
    sp: &ServicePort,
) -> Vec<String> {
    let mut out = BTreeSet::new();
    let wanted = sp.name.as_deref().unwrap_or("");
    for slice in slices.iter().filter(|s| {
        s.metadata.namespace == ns
            && s.metadata.labels.get("kubernetes.io/service-name").map(String::as_str) == Some(name)
    }) {
        let Some(port) = slice
            .ports
            .iter()
            .flatten()
            .find(|p| p.name.as_deref().unwrap_or("") == wanted)
            .and_then(|p| p.port)
        else {
            continue;
        };
        for ep in slice.endpoints.iter().filter(|e| e.conditions.ready != Some(false)) {
            for a in &ep.addresses {
                match a.parse::<std::net::IpAddr>() {
                    Ok(std::net::IpAddr::V4(v4)) => out.insert(format!("{v4}:{port}")),
                    Ok(std::net::IpAddr::V6(v6)) => out.insert(format!("[{v6}]:{port}")),
                    // FQDN slices and garbage: not an address NGINX can take as is.
                    Err(_) => false,
                };
            }
        }
    }
    out.into_iter().collect()
}

/// A DNS name: labels of letters, digits and `-`, dot-separated (a final dot allowed).
fn is_dns_name(s: &str) -> bool {
    crate::model::is_host_name(s.strip_suffix('.').unwrap_or(s))
}

/// The rule's filter of type `kind` (the CRD allows one of each header modifier per rule).
/// A value with a control character (the CRD bounds only its length) would split the header
/// it is written into: that entry is left out, with a warning.
fn modifier(
    rule: &crate::model::Rule,
    kind: &str,
    route: &str,
    ri: &dyn fmt::Display,
    warnings: &mut Vec<String>,
) -> HeaderModifier {
    let mut m = rule
        .filters
        .iter()
        .find(|f| f.kind == kind)
        .and_then(|f| match kind {
            "RequestHeaderModifier" => f.request_header_modifier.clone(),
            _ => f.response_header_modifier.clone(),
        })
        .unwrap_or_default();
    for (op, list) in [("set", &mut m.set), ("add", &mut m.add)] {
        list.retain(|h| {
            let bad = h.value.chars().find(|c| c.is_control() && *c != '\t');
            if let Some(c) = bad {
                warnings.push(format!(
                    "HTTPRoute {route} rules[{ri}]: {kind} {op} {}: the value has the control \
                     character {c:?}; left out",
                    h.name
                ));
            }
            bad.is_none()
        });
    }
    m
}

/// NGINX locations for a server's candidates, each with its ordered candidate list.
fn locations(mut candidates: Vec<Candidate>) -> Vec<LocationPlan> {
    candidates.sort_by(|a, b| a.key.cmp(&b.key));
    let mut locs: BTreeSet<Loc> = BTreeSet::new();
    for c in &candidates {
        match c.path_kind {
            PathKind::Exact => {
                locs.insert(Loc::Exact(c.path.clone()));
            }
            PathKind::Prefix if c.path == "/" => {
                locs.insert(Loc::Prefix("/".into()));
            }
            PathKind::Prefix => {
                locs.insert(Loc::Exact(c.path.clone()));
                locs.insert(Loc::Prefix(format!("{}/", c.path)));
            }
            // Requests no other location takes reach `location /`.
            PathKind::Regex => {
                locs.insert(Loc::Prefix("/".into()));
            }
        }
    }
    locs.into_iter()
        .map(|loc| {
            let list = candidates
                .iter()
                .filter(|c| loc.covered_by(c.path_kind, &c.path))
                .cloned()
                .collect();
            LocationPlan { loc, candidates: list }
        })
        .collect()
}
