//! The routing plan: which routes serve which listener and hostname, which NGINX locations
//! exist, and for each location the ordered candidate list (Gateway API precedence across all
//! routes of the listener, with fallback to shorter prefixes), with the status a controller
//! would write.
//!
//! [`plan`] runs the Gateway API's own steps in order, one file each:
//!
//! | step | file |
//! |------|------|
//! | listeners and their certificates (protocol, TLS mode, one protocol per port, Secrets) | `plan/listeners.rs` |
//! | attachment (parentRefs, sectionName/port, `allowedRoutes`, hostnames, ReferenceGrant, one kind per listener hostname) | `plan/attach.rs` |
//! | backends (backendRef resolution, ready endpoints, `ResolvedRefs`) | `plan/backends.rs` |
//! | rules (filters, timeouts, retry, each backendRef's target and weight) | `plan/rules.rs` |
//! | servers (one per port and hostname, listener isolation, HTTP/2 per the target NGINX) | `plan/servers.rs` |
//! | precedence (candidates and their sort key, locations, `Loc`/`PathKind`) | `plan/precedence.rs` |
//! | status (condition types and reasons, listener and route conditions) | `plan/status.rs` |
//!
//! and `plan/ids.rs` (typed listener, route and rule ids), `plan/entry.rs` (the match-list entry
//! emit writes and explain evaluates). The target NGINX is an input ([`Capabilities`]):
//! nothing patches a plan once made.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use crate::model::{HeaderModifier, HttpRoute, Inputs, RequestRedirect, UrlRewrite};

mod attach;
mod backends;
mod entry;
mod ids;
mod listeners;
mod precedence;
mod rules;
pub mod segments;
mod servers;
mod status;

pub use entry::Entry;
pub use ids::{ListenerId, RouteId, RouteKind, RuleId};
pub use precedence::{Loc, PathKind, SortKey};
pub use status::{
    Condition, ConditionType, ListenerStatus, Reason, RouteStatus, Status,
    dropped_from_configuration,
};

/// Where backends live: `namespace/name:port` -> `host:port`.
pub type BackendMap = BTreeMap<String, String>;

pub const INTERNAL_PREFIX: &str = "/_httproute-internal/";

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

/// Everything besides the manifests that decides a plan: generate and explain pass the same.
#[derive(Debug, Clone)]
pub struct PlanOptions<'a> {
    /// `--backend` / `--backends`.
    pub backends: &'a BackendMap,
    /// TLS Secrets (`namespace/name`) with files of their own (`--certificate`) besides those
    /// among the inputs; a listener's certificate that is neither is left out (its hosts
    /// refuse the handshake if it has no other), with a warning.
    pub given_certificates: BTreeSet<String>,
    /// The NGINX that runs the configuration (`--nginx-version`).
    pub capabilities: Capabilities,
    /// Experimental-channel fields (`retry`) are used (`--experimental`); without it they are
    /// warned about and left out.
    pub experimental: bool,
    /// ExternalName Services are followed (`--allow-external-name`); without it a backendRef
    /// to one is `ResolvedRefs: False, UnsupportedValue` (as NGF: the operator opts in).
    pub allow_external_name: bool,
}

impl<'a> PlanOptions<'a> {
    /// These backends; no certificate files, the default NGINX, no Experimental fields.
    pub fn new(backends: &'a BackendMap) -> PlanOptions<'a> {
        PlanOptions {
            backends,
            given_certificates: BTreeSet::new(),
            capabilities: Capabilities::default(),
            experimental: false,
            allow_external_name: false,
        }
    }
}

#[derive(Debug)]
pub struct Plan {
    pub ports: Vec<PortPlan>,
    pub warnings: Vec<String>,
    /// The TLS Secrets listeners use that came with the manifests (written next to
    /// nginx.conf): `namespace/name` -> (certificate chain, key).
    pub secrets: BTreeMap<String, (Vec<u8>, Vec<u8>)>,
    /// The conditions a controller would set (see `crate::status`).
    pub status: Status,
    /// The NGINX the plan is for.
    pub capabilities: Capabilities,
}

#[derive(Debug)]
pub struct PortPlan {
    pub port: u16,
    /// HTTPS (TLS terminated here) rather than HTTP.
    pub tls: bool,
    /// A GRPCRoute is served on the port: HTTP/2 (h2c with prior knowledge on a plain port,
    /// ALPN over TLS) besides HTTP/1.1 (see `servers::http2` for NGINX before 1.25.1).
    pub http2: bool,
    pub servers: Vec<ServerPlan>,
}

#[derive(Debug)]
pub struct ServerPlan {
    /// `None`: the catch-all (default) server of the port.
    pub hostname: Option<String>,
    /// The listener serving this hostname, if any.
    pub listener: Option<ListenerId>,
    /// On an HTTPS port: the listener's certificates, as `namespace/name` of Secrets (empty:
    /// the TLS handshake is refused for this name).
    pub certificates: Vec<String>,
    pub locations: Vec<LocationPlan>,
    pub rules: Vec<RulePlan>,
}

#[derive(Debug, PartialEq)]
pub struct LocationPlan {
    pub loc: Loc,
    /// In precedence order; shared between the locations they serve.
    pub candidates: Vec<Arc<Candidate>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// Index into the server's `rules`.
    pub rule: usize,
    /// Its route and its index there.
    pub id: RuleId,
    pub match_index: usize,
    pub path_kind: PathKind,
    /// The decoded path (normalized for a prefix), or the pattern as written for a regex.
    pub path: String,
    pub route_hostname: Option<String>,
    pub method: Option<String>,
    /// (name, type, value), names de-duplicated (headers case-insensitively), first kept.
    pub headers: Vec<(String, String, String)>,
    pub params: Vec<(String, String, String)>,
    /// Its match-list entry (with the compiled-and-checked regex path condition).
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
    /// `retry` (Experimental: `None` without [`PlanOptions::experimental`]).
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
    /// (`BackendNotFound`, `RefNotPermitted`, `InvalidKind`, `UnsupportedValue`,
    /// `UnsupportedProtocol`, or [`Reason::NoReadyEndpoints`] for a 503) and what is wrong.
    pub problem: Option<(Reason, String)>,
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

/// The plan of `inputs`: the one planning generate, explain and status share.
pub fn plan(inputs: &Inputs, opts: &PlanOptions<'_>) -> Plan {
    let mut warnings = Vec::new();
    for (what, at) in &inputs.unsupported {
        warnings.push(format!("{what} is not supported yet and was ignored (first in {at})"));
    }
    warnings.extend(inputs.warnings.iter().cloned());
    let mut status = Status::default();
    // 1. Listeners and their certificates.
    let listeners =
        listeners::listeners(inputs, &opts.given_certificates, &mut status, &mut warnings);
    // 2. Attachment, with each route's ResolvedRefs (3. backends).
    let mut routes: Vec<&HttpRoute> = inputs.routes.iter().collect();
    routes.sort_by(|a, b| {
        (&a.metadata.namespace, &a.metadata.name).cmp(&(&b.metadata.namespace, &b.metadata.name))
    });
    // Older first, then "alphabetical order by {namespace}/{name}" (the spec's words: the
    // string, which orders `a-b/c` before `a/b-c`, where the (namespace, name) pair does not):
    // the last tie-breakers of precedence.
    let mut by_age: Vec<usize> = (0..routes.len()).collect();
    let full_names: Vec<String> =
        routes.iter().map(|r| format!("{}/{}", r.metadata.namespace, r.metadata.name)).collect();
    by_age.sort_by(|&a, &b| {
        (&routes[a].metadata.creation_timestamp, &full_names[a])
            .cmp(&(&routes[b].metadata.creation_timestamp, &full_names[b]))
    });
    let mut ages = vec![0; routes.len()];
    for (age, &i) in by_age.iter().enumerate() {
        ages[i] = age;
    }
    let slices = backends::slices_by_service(inputs);
    let refs = backends::Refs {
        grpc: false,
        backends: opts.backends,
        grants: &inputs.grants,
        services: &inputs.services,
        any_slices: !inputs.endpoint_slices.is_empty() || !inputs.refused_slices.is_empty(),
        slices: &slices,
        refused_services: &inputs.refused_services,
        refused_slices: &inputs.refused_slices,
        allow_external_name: opts.allow_external_name,
    };
    let mut attachments =
        attach::attach(inputs, &routes, &ages, &listeners, &refs, &mut status, &mut warnings);
    status::rejected(inputs, &mut status, &mut warnings);
    status.routes.sort_by(|a, b| (&a.id.namespace, &a.id.name).cmp(&(&b.id.namespace, &b.id.name)));
    attach::reject_kind_conflicts(&listeners, &mut attachments, &mut status, &mut warnings);
    // 4.-6. Servers, their rules and locations in precedence order, on the target NGINX.
    let (ports, loss) = servers::ports(
        &listeners,
        &attachments,
        &refs,
        &opts.capabilities,
        opts.experimental,
        &mut warnings,
    );
    status::grpc_not_served(&mut status, &loss, opts.capabilities.version);
    warnings.sort();
    warnings.dedup();
    let secrets = listeners::secrets(inputs, &listeners);
    Plan { ports, warnings, secrets, status, capabilities: opts.capabilities }
}
