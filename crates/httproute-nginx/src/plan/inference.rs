//! InferencePool backends (`group: inference.networking.k8s.io, kind: InferencePool`): the
//! pool's endpoints and its Endpoint Picker (EPP) Service.
//!
//! Without a cluster there are no Pods to select, so the pool's endpoints are read from the
//! EndpointSlices of the pool's namespace whose **labels** hold every `selector.matchLabels`
//! pair (the EndpointSlice controller copies a Service's labels onto its slices: a Service
//! labeled as the pool selects, such as the headless one a controller makes for the pool,
//! gives them): each ready address with each of `targetPorts`. The picker is the
//! `--backend NAMESPACE/POOL:PORT=HOST:PORT` (a target port) gives the endpoints instead, as
//! for a Service. The picker is the `endpointPickerRef` Service of the pool's namespace,
//! resolved as a GRPCRoute's backend: `--backend` or its ready endpoints, never a name NGINX
//! resolves when it loads (one it cannot resolve fails `nginx -t` for every tenant).

use std::collections::{BTreeMap, BTreeSet};

use crate::model::{INFERENCE_GROUP, InferencePool, Inputs, ObjectRef};

use super::backends::{Labeled, Refs, Resolved, ready_ips, resolve};
use super::grants::POOL_KIND;
use super::ids::{RouteKind, oldest_first};
use super::status::Reason;
use super::types::{Pool, Target};

/// Whether `r` names an InferencePool.
pub(super) fn is_pool(r: &ObjectRef) -> bool {
    r.group.as_deref() == Some(INFERENCE_GROUP) && r.kind.as_deref() == Some("InferencePool")
}

/// A backendRef to an InferencePool of a route in `ns`: a 503 when the pool has no ready
/// endpoints (or `FailClose` and its picker has none); with a picker without ready endpoints,
/// `FailOpen` sends to the pool's endpoints directly. A picker whose endpoints are not known
/// (only its cluster DNS name) does not resolve: `BackendNotFound`, the rule's share answers 500.
pub(super) fn resolve_pool(r: &ObjectRef, ns: &str, refs: &Refs<'_>) -> Resolved {
    let (name, bns) = (r.name.as_str(), r.namespace.as_deref().unwrap_or(ns));
    if refs.grpc {
        let why = "an InferencePool serves HTTPRoutes only".to_owned();
        return Err((Reason::InvalidKind, why));
    }
    let kind = RouteKind::of(false).as_str();
    if bns != ns && !refs.grants.granted((kind, ns), bns, (POOL_KIND, name)) {
        return Err((
            Reason::RefNotPermitted,
            format!(
                "no ReferenceGrant in namespace {bns} lets {kind}s of {ns} use InferencePool {name}"
            ),
        ));
    }
    let id = format!("{bns}/{name}");
    let Some(pool) = refs.pools.get(&id) else {
        return Err((Reason::BackendNotFound, format!("InferencePool {id} does not exist")));
    };
    if let Some(why) = refs.refused_pools.get(&id) {
        return Err((Reason::BackendNotFound, format!("InferencePool {id}: {why}")));
    }
    // Resolved by `admit`, oldest pool first.
    let servers = refs.endpoints.of(&endpoints_key(&id), || {
        debug_assert!(
            false,
            "InferencePool {id}: not resolved by `admit`, which walks the same pools and resolves \
             every one it does not refuse; none here would answer 503 silently"
        );
        Vec::new()
    });
    if servers.is_empty() {
        return Ok((Target::Status(503), false));
    }
    let upstream: String = format!("{bns}_{name}_pool")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
        .collect();
    let picker_ref = &pool.spec.endpoint_picker_ref;
    let fail_open = picker_ref.fail_open();
    let svc = ObjectRef {
        name: picker_ref.name.clone(),
        namespace: None,
        port: picker_ref.port.map(|p| p.number),
        kind: None,
        group: None,
    };
    // The picker speaks gRPC: resolved as a GRPCRoute's backend (h2c allowed).
    let picker = match resolve(&svc, bns, &Refs { grpc: true, ..*refs }) {
        Ok((_, true)) => {
            return Err((
                Reason::UnsupportedProtocol,
                format!(
                    "InferencePool {id}: its endpoint picker speaks TLS (grpcs), not written yet"
                ),
            ));
        }
        Ok((Target::Status(_), _)) if fail_open => {
            return Ok((Target::Upstream { name: upstream, servers }, false));
        }
        Ok((Target::Status(code), _)) => return Ok((Target::Status(code), false)),
        // A name NGINX resolves when it loads: an unresolvable one fails every tenant's
        // `nginx -t`. A picker is written only as the upstream of its known endpoints.
        Ok((Target::Resolve(addr), _)) => {
            return Err((
                Reason::BackendNotFound,
                format!(
                    "InferencePool {id}: its endpoint picker Service {bns}/{} has no known \
                     endpoints (no EndpointSlices of its namespace given, no --backend); it \
                     would be the name {addr}, which NGINX would resolve when it loads",
                    picker_ref.name
                ),
            ));
        }
        Ok((t, _)) => t,
        Err((reason, why)) => {
            return Err((reason, format!("InferencePool {id}: endpointPickerRef: {why}")));
        }
    };
    let pool = Pool { id, upstream, servers, picker, fail_open };
    Ok((Target::Inference(Box::new(pool)), false))
}

fn endpoints_key(id: &str) -> String {
    format!("InferencePool {id}")
}

/// Every InferencePool's endpoints, resolved into `refs.endpoints` oldest pool first
/// (`creationTimestamp`, then namespace/name) within its namespace's budget of `per_tenant`
/// units: a slice and each address of its endpoints looked at, each address taken (pools that
/// share a selector wrote pools x slices addresses). A pool past what is left is refused
/// (returned, with why) and spends the rest, so a namespace's pools cost its budget and one
/// slice each at the most; never an older pool, never another namespace's (a pool is its own
/// namespace's, whoever refers to it; one no route refers to spends its budget too).
/// `--backend NS/POOL:PORT=HOST:PORT` for its target ports gives the endpoints instead, as for
/// a Service (not charged).
pub(super) fn admit(
    inputs: &Inputs,
    refs: &Refs<'_>,
    per_tenant: usize,
) -> BTreeMap<String, String> {
    let pools: Vec<(&String, &InferencePool)> = inputs.inference_pools.iter().collect();
    let metas: Vec<_> = pools.iter().map(|(_, p)| &p.metadata).collect();
    let mut left: BTreeMap<&str, usize> = BTreeMap::new();
    let mut refused = BTreeMap::new();
    for (id, pool) in oldest_first(&metas).into_iter().map(|i| pools[i]) {
        let given: Vec<String> = (pool.spec.target_ports.iter())
            .filter_map(|p| refs.backends.get(&format!("{id}:{}", p.number)).cloned())
            .collect();
        if !given.is_empty() {
            refs.endpoints.of(&endpoints_key(id), || given);
            continue;
        }
        let left = left.entry(pool.metadata.namespace.as_str()).or_insert(per_tenant);
        match pool_endpoints(pool, refs.labeled, *left) {
            Ok((servers, units)) => {
                *left -= units;
                refs.endpoints.of(&endpoints_key(id), || servers);
            }
            Err(_) => {
                let why = format!(
                    "budget: pool endpoints: its EndpointSlices and addresses pass what is left of \
                     the {per_tenant} units namespace {} may take (older pools first)",
                    pool.metadata.namespace
                );
                *left = 0;
                refused.insert(id.clone(), why);
            }
        }
    }
    refused
}

/// `address:port` of each ready address of the pool's EndpointSlices with each target port,
/// and the units that took (a slice looked at and each address of its endpoints, each ready
/// address with each target port); `Err` past `limit` units.
fn pool_endpoints(
    pool: &InferencePool,
    labeled: &Labeled<'_>,
    limit: usize,
) -> Result<(Vec<String>, usize), usize> {
    let labels = &pool.spec.selector.match_labels;
    let Some((k, v)) = labels.iter().next() else { return Ok((Vec::new(), 0)) };
    let ns = pool.metadata.namespace.as_str();
    let slices = labeled.get(&(ns, k.as_str(), v.as_str())).map_or(&[][..], |s| s);
    let (mut out, mut units) = (BTreeSet::new(), 0usize);
    for slice in slices {
        // Its endpoints' addresses are read when its labels hold.
        units += 1 + slice.endpoints.iter().map(|e| e.addresses.len()).sum::<usize>();
        if units > limit {
            return Err(units);
        }
        if !labels.iter().all(|(k, v)| slice.metadata.labels.get(k) == Some(v)) {
            continue;
        }
        for ip in ready_ips(slice) {
            for p in &pool.spec.target_ports {
                units += 1;
                if units > limit {
                    return Err(units);
                }
                out.insert(std::net::SocketAddr::new(ip, p.number).to_string());
            }
        }
    }
    Ok((out.into_iter().collect(), units))
}
