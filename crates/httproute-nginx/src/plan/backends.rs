//! Backends: what a backendRef resolves to (`--backend`, a Service's ready endpoints from
//! EndpointSlices, a cluster DNS name, an ExternalName), whether a ReferenceGrant permits it,
//! and a route's `ResolvedRefs` condition.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::model::{EndpointSlice, InferencePool, Inputs, ObjectRef, Service, ServicePort};

use super::grants::Grants;
use super::ids::RouteKind;
use super::status::Reason;
use super::types::{BackendMap, Target};

/// What backend references resolve against.
#[derive(Clone, Copy)]
pub(super) struct Refs<'a> {
    /// The route is a GRPCRoute (its backends speak HTTP/2).
    pub grpc: bool,
    pub backends: &'a BackendMap,
    pub grants: &'a Grants<'a>,
    pub services: &'a BTreeMap<String, Service>,
    /// The namespaces with Services and EndpointSlices among the inputs ([`given`]).
    pub given: &'a Given,
    /// The EndpointSlices of each Service: (namespace, `kubernetes.io/service-name`).
    pub slices: &'a BTreeMap<(&'a str, &'a str), Vec<&'a EndpointSlice>>,
    /// Services the API server would refuse (`Inputs::refused_services`).
    pub refused_services: &'a BTreeMap<String, String>,
    /// EndpointSlices the API server would refuse (`Inputs::refused_slices`).
    pub refused_slices: &'a BTreeMap<(String, String), Vec<String>>,
    /// ExternalName Services are followed (`--allow-external-name`); without it a backendRef
    /// to one does not resolve.
    pub allow_external_name: bool,
    /// InferencePools given, `namespace/name` -> pool, and the EndpointSlices they select
    /// (`plan/inference.rs`).
    pub pools: &'a BTreeMap<String, InferencePool>,
    pub labeled: &'a Labeled<'a>,
    /// Pools refused for their namespace's budget (`inference::admit`), with why.
    pub refused_pools: &'a BTreeMap<String, String>,
    /// Each Service port's and pool's endpoints, resolved once ([`Endpoints`]).
    pub endpoints: &'a Endpoints,
}

/// The endpoints of each Service port (`--backend` or its ready EndpointSlice addresses) and
/// each InferencePool, resolved the first time a reference names them and shared (`Arc`) by
/// every other: routes x references x endpoints was copied per reference.
#[derive(Debug, Default)]
pub(super) struct Endpoints {
    by_key: RefCell<BTreeMap<String, Arc<[String]>>>,
    /// Addresses resolved: each Service port's and pool's once ([`crate::plan::Plan::work`]).
    made: Cell<usize>,
}

impl Endpoints {
    /// The endpoints of `key`, `make` run the first time only.
    pub(super) fn of(&self, key: &str, make: impl FnOnce() -> Vec<String>) -> Arc<[String]> {
        if let Some(found) = self.by_key.borrow().get(key) {
            return found.clone();
        }
        let made: Arc<[String]> = make().into();
        self.made.set(self.made.get() + made.len());
        self.by_key.borrow_mut().insert(key.to_owned(), made.clone());
        made
    }

    /// How many addresses were resolved.
    pub(super) fn made(&self) -> usize {
        self.made.get()
    }
}

/// The namespaces whose Services, and whose EndpointSlices, are among the inputs (those the
/// API server would refuse too). Whether Services (or slices) are given is decided per
/// namespace: a reference into a namespace with none is resolved by its cluster DNS name, so
/// that what one tenant's namespace holds never changes how another's references resolve (a
/// Service given in namespace b made every Service reference of namespace a, given none,
/// `BackendNotFound`).
#[derive(Debug, Default)]
pub(super) struct Given {
    pub services: BTreeSet<String>,
    pub slices: BTreeSet<String>,
}

/// The [`Given`] of `inputs`.
pub(super) fn given(inputs: &Inputs) -> Given {
    let ns_of = |key: &str| key.split_once('/').map_or(key, |(ns, _)| ns).to_owned();
    Given {
        services: inputs
            .services
            .keys()
            .chain(inputs.refused_services.keys())
            .map(|k| ns_of(k))
            .collect(),
        slices: inputs
            .endpoint_slices
            .iter()
            .map(|s| s.metadata.namespace.clone())
            .chain(inputs.refused_slices.keys().map(|(ns, _)| ns.clone()))
            .collect(),
    }
}

/// The EndpointSlices of each Service, (namespace, service name) -> slices in input order.
pub(super) fn slices_by_service(inputs: &Inputs) -> BTreeMap<(&str, &str), Vec<&EndpointSlice>> {
    let mut out: BTreeMap<(&str, &str), Vec<&EndpointSlice>> = BTreeMap::new();
    for s in &inputs.endpoint_slices {
        if let Some(name) = s.metadata.labels.get("kubernetes.io/service-name") {
            out.entry((&s.metadata.namespace, name)).or_default().push(s);
        }
    }
    out
}

/// A backend that cannot be used: the condition reason, and why.
pub(super) type Unusable = (Reason, String);

/// A backend reference of a route in `ns`: where it goes (a 503 status for a Service without
/// ready endpoints), or the condition reason and why it cannot be used.
///
/// In order: `--backend` / `--backends`; the Service among the inputs (its ready endpoints
/// from EndpointSlices, or its cluster DNS name resolved per request when no EndpointSlices
/// of its namespace were given, or its external name); when the inputs hold no Service of its
/// namespace, the cluster DNS name resolved per request. When they hold Services of its
/// namespace, one that is not among them does not exist ([`Given`]: per namespace).
///
/// Also whether the backend speaks TLS (`appProtocol: kubernetes.io/wss` or `https`).
/// The upstream of a Service's port: `NAMESPACE_NAME_PORT`, each character but ASCII letters,
/// digits, `_` and `-` as `_`. Into one buffer of its size (a `format!` then a collect of
/// its characters was most of a reference's resolution).
fn upstream_name(namespace: &str, name: &str, port: u16) -> String {
    let port = port.to_string();
    let mut out = String::with_capacity(namespace.len() + name.len() + port.len() + 2);
    for part in [namespace, "_", name, "_", &port] {
        out.extend(
            part.chars()
                .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }),
        );
    }
    out
}

pub(super) fn resolve(r: &ObjectRef, ns: &str, refs: &Refs<'_>) -> Resolved {
    let (kind, group, name, port) =
        (r.kind.as_deref(), r.group.as_deref(), r.name.as_str(), r.port);
    let bns = r.namespace.as_deref().unwrap_or(ns);
    // Gateway API spells the core group "" (or leaves it out); `core` is no group of the API.
    if let Some(kind) = kind.filter(|k| *k != "Service") {
        return Err((Reason::InvalidKind, format!("kind {kind:?} is not a Service")));
    }
    if let Some(group) = group.filter(|g| !g.is_empty()) {
        return Err((Reason::InvalidKind, format!("group {group:?} is not the core group (\"\")")));
    }
    // The grant is for the route's own kind: one for HTTPRoutes does not admit a GRPCRoute.
    let kind = RouteKind::of(refs.grpc).as_str();
    if bns != ns && !refs.grants.granted((kind, ns), bns, ("Service", name)) {
        return Err((
            Reason::RefNotPermitted,
            format!("no ReferenceGrant in namespace {bns} lets {kind}s of {ns} use Service {name}"),
        ));
    }
    let Some(port) = port else {
        return Err((Reason::UnsupportedValue, "a Service reference needs a port".to_owned()));
    };
    let key = format!("{bns}/{name}:{port}");
    let upstream = || upstream_name(bns, name, port);
    if let Some(address) = refs.backends.get(&key) {
        let servers = refs.endpoints.of(&key, || vec![address.clone()]);
        return Ok((Target::Upstream { name: upstream(), servers }, false));
    }
    if !crate::model::is_dns_label(name) || !crate::model::is_dns_label(bns) {
        return Err((
            Reason::UnsupportedValue,
            format!("{bns}/{name} is not a valid Service name (RFC 1123 label)"),
        ));
    }
    let cluster_name = || format!("{name}.{bns}.svc.cluster.local:{port}");
    if let Some(why) = refs.refused_services.get(&format!("{bns}/{name}")) {
        return Err((
            Reason::BackendNotFound,
            format!("Service {bns}/{name} is refused as the API server refuses it: {why}"),
        ));
    }
    if !refs.given.services.contains(bns) {
        return Ok((Target::Resolve(cluster_name()), false));
    }
    let Some(svc) = refs.services.get(&format!("{bns}/{name}")) else {
        return Err((Reason::BackendNotFound, format!("Service {bns}/{name} does not exist")));
    };
    if svc.spec.kind.as_deref() == Some("ExternalName") {
        return external_name(svc, bns, name, port, refs.allow_external_name);
    }
    let Some(sp) = svc.spec.ports.iter().find(|p| p.port == port) else {
        return Err((Reason::BackendNotFound, format!("Service {bns}/{name} has no port {port}")));
    };
    let tls = speaks_tls(sp, refs.grpc, bns, name)?;
    if !refs.given.slices.contains(bns) {
        return Ok((Target::Resolve(cluster_name()), tls));
    }
    let slices = refs.slices.get(&(bns, name)).map_or(&[][..], |v| v);
    let servers = refs.endpoints.of(&key, || ready_endpoints(slices, sp));
    if servers.is_empty() {
        return Ok((Target::Status(503), tls));
    }
    Ok((Target::Upstream { name: upstream(), servers }, tls))
}

/// GEP-1911: whether the backend speaks TLS on Service port `sp` (`appProtocol`), or why it
/// speaks what this gateway cannot send.
fn speaks_tls(sp: &ServicePort, grpc: bool, bns: &str, name: &str) -> Result<bool, Unusable> {
    let port = sp.port;
    match sp.app_protocol.as_deref() {
        None | Some("http" | "kubernetes.io/ws") => Ok(false),
        Some("https" | "kubernetes.io/wss") => Ok(true),
        Some("kubernetes.io/h2c") if grpc => Ok(false),
        Some(other) => Err((
            Reason::UnsupportedProtocol,
            format!(
                "Service {bns}/{name} port {port} speaks {other}, which this gateway cannot \
                     send{}",
                if other == "kubernetes.io/h2c" {
                    " from an HTTPRoute (NGINX speaks HTTP/2 to a backend only with grpc_pass)"
                } else {
                    ""
                }
            ),
        )),
    }
}

/// An ExternalName Service's name and the backendRef's port, resolved per request: only with
/// `--allow-external-name` (Gateway API: implementations SHOULD NOT follow them; the name may
/// be the gateway's own loopback, or another namespace's Service without a ReferenceGrant,
/// CVE-2021-25740). Even then, a name that is an IP address the API server refuses for
/// endpoints (loopback, link-local, ...) is refused.
fn external_name(
    svc: &Service,
    bns: &str,
    name: &str,
    port: u16,
    allowed: bool,
) -> Result<(Target, bool), Unusable> {
    if !allowed {
        return Err((
            Reason::UnsupportedValue,
            format!(
                "Service {bns}/{name} is of type ExternalName, which this gateway follows only \
                 with --allow-external-name (CVE-2021-25740)"
            ),
        ));
    }
    let host = svc.spec.external_name.as_deref().unwrap_or("");
    let ip = host.parse::<std::net::IpAddr>().ok();
    let special = ip.and_then(|ip| crate::model::special_ip(ip).or(crate::model::unusable_ip(ip)));
    match special {
        None if is_dns_name(host) => Ok((Target::Resolve(format!("{host}:{port}")), false)),
        None => Err((
            Reason::UnsupportedValue,
            format!("ExternalName Service {bns}/{name} has no valid externalName ({host:?})"),
        )),
        Some(why) => Err((
            Reason::UnsupportedValue,
            format!("ExternalName Service {bns}/{name}: externalName {host:?} {why}"),
        )),
    }
}

/// `address:port` of every ready endpoint of a Service's `slices` for its port `sp`: the
/// EndpointSlice port of the same name (NGF's rule: the Service port maps to the endpoints'
/// target port by name).
fn ready_endpoints(slices: &[&EndpointSlice], sp: &ServicePort) -> Vec<String> {
    let mut out = BTreeSet::new();
    let wanted = sp.name.as_deref().unwrap_or("");
    for slice in slices {
        // A port the API server does not range-check: only 1-65535 is one.
        let Some(port) = slice
            .ports
            .iter()
            .flatten()
            .find(|p| p.name.as_deref().unwrap_or("") == wanted)
            .and_then(|p| p.port)
            .and_then(|p| u16::try_from(p).ok())
            .filter(|&p| p != 0)
        else {
            continue;
        };
        for ip in ready_ips(slice) {
            out.insert(std::net::SocketAddr::new(ip, port).to_string());
        }
    }
    out.into_iter().collect()
}

/// The ready addresses of `slice` of its own family (an FQDN slice has none: a name may be an
/// IP literal, never read as an address).
pub(super) fn ready_ips(slice: &EndpointSlice) -> impl Iterator<Item = std::net::IpAddr> + '_ {
    let v4 = match slice.address_type.as_str() {
        "IPv4" => Some(true),
        "IPv6" => Some(false),
        _ => None,
    };
    let ready =
        slice.endpoints.iter().filter(move |e| v4.is_some() && e.conditions.ready != Some(false));
    ready.flat_map(|ep| &ep.addresses).filter_map(move |a| {
        let ip = a.parse::<std::net::IpAddr>().ok()?;
        // The slice was checked as the API server checks it; what it accepts and no TCP
        // peer answers on (multicast, broadcast) is left out too.
        let special = crate::model::special_ip(ip).or(crate::model::unusable_ip(ip));
        (special.is_none() && Some(ip.is_ipv4()) == v4).then_some(ip)
    })
}

/// A DNS name: labels of letters, digits and `-`, dot-separated (a final dot allowed).
fn is_dns_name(s: &str) -> bool {
    crate::model::is_host_name(s.strip_suffix('.').unwrap_or(s))
}

/// What one reference resolved to ([`resolve`]).
pub(super) type Resolved = Result<(Target, bool), Unusable>;

/// EndpointSlices by (namespace, label key, label value): a pool looks up its first
/// `matchLabels` pair and checks the others on those slices only. Empty when no pool is given.
pub(super) type Labeled<'a> = BTreeMap<(&'a str, &'a str, &'a str), Vec<&'a EndpointSlice>>;

/// The [`Labeled`] index of `inputs`.
pub(super) fn slices_by_label(inputs: &Inputs) -> Labeled<'_> {
    let mut out: Labeled<'_> = BTreeMap::new();
    if inputs.inference_pools.is_empty() {
        return out;
    }
    for s in &inputs.endpoint_slices {
        for (k, v) in &s.metadata.labels {
            out.entry((&s.metadata.namespace, k, v)).or_default().push(s);
        }
    }
    out
}
