//! Listeners and certificates: which listeners of the Gateways can be served (protocol, TLS
//! mode, one protocol per port), and the TLS Secrets each one's hosts are served with.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::{AllowedRoutes, Inputs};

use super::grants::Grants;
use super::ids::{ListenerId, oldest_first};
use super::status::{Condition, ConditionType, ListenerStatus, Reason, Status};

/// A listener that is served.
pub(super) struct Listener {
    /// Its entry in `Status::listeners`.
    pub status: usize,
    pub id: ListenerId,
    pub port: u16,
    pub hostname: Option<String>,
    pub allowed: AllowedRoutes,
    pub tls: bool,
    /// Its usable certificates, as `namespace/name` of Secrets.
    pub certificates: Vec<String>,
}

/// Every listener of every Gateway: those that can be served, and the status of all of them.
/// `given`: the Secrets with files of their own (`--certificate`).
///
/// Gateways are taken oldest first (`creationTimestamp`; none counts as the newest), then by
/// the `"{namespace}/{name}"` string: Gateway API's order for conflicts, so the Gateway that
/// decides a shared port's protocol, and wins a tie between equally specific listeners of
/// different Gateways on one port, does not depend on the order of the input documents.
/// Within a Gateway, its listeners' own order.
pub(super) fn listeners(
    inputs: &Inputs,
    grants: &Grants<'_>,
    given: &BTreeSet<String>,
    status: &mut Status,
    warnings: &mut Vec<String>,
) -> Vec<Listener> {
    use ConditionType::{Accepted, Conflicted, Programmed, ResolvedRefs};
    let mut listeners: Vec<Listener> = Vec::new();
    // The first listener of each port: HTTP and HTTPS cannot share a port.
    let mut port_owner: BTreeMap<u16, usize> = BTreeMap::new();
    // The first listener of each port and hostname (none: every host): it serves them.
    let mut host_owner: BTreeMap<(u16, Option<&str>), usize> = BTreeMap::new();
    let metas: Vec<_> = inputs.gateways.iter().map(|g| &g.metadata).collect();
    for g in oldest_first(&metas).into_iter().map(|i| &inputs.gateways[i]) {
        for l in &g.spec.listeners {
            let id = ListenerId {
                namespace: g.metadata.namespace.clone(),
                gateway: g.metadata.name.clone(),
                name: l.name.clone(),
            };
            // Not accepted (and, for a hostname conflict, `Conflicted`), with a warning.
            let mut skip = |reason: Reason, why: String| {
                warnings.push(format!("listener {id}: {why}; skipped"));
                let mut conditions = vec![Condition::no(Accepted, reason, why.clone())];
                if reason == Reason::HostnameConflict {
                    conditions.push(Condition { kind: Conflicted, ok: true, reason, message: why });
                }
                conditions.push(Condition::no(Programmed, Reason::Invalid, "not accepted".into()));
                status.listeners.push(ListenerStatus {
                    id: id.clone(),
                    attached_routes: 0,
                    conditions,
                });
            };
            let tls = match (l.protocol.as_str(), &l.tls) {
                ("HTTP", _) => false,
                ("HTTPS", Some(t)) if t.mode == "Terminate" => true,
                ("HTTPS", Some(t)) => {
                    skip(
                        Reason::UnsupportedValue,
                        format!("TLS mode {} is not supported (HTTPRoutes need Terminate)", t.mode),
                    );
                    continue;
                }
                ("HTTPS", None) => {
                    skip(Reason::UnsupportedValue, "HTTPS without tls".to_owned());
                    continue;
                }
                (p, _) => {
                    skip(Reason::UnsupportedProtocol, format!("protocol {p} is not supported yet"));
                    continue;
                }
            };
            // HTTP and HTTPS cannot share a port: the first listener of a port (in the order
            // above) decides.
            if let Some(other) = port_owner.get(&l.port).map(|&i| &listeners[i])
                && other.tls != tls
            {
                let why = format!(
                    "port {} is already {} for listener {}",
                    l.port,
                    if other.tls { "HTTPS" } else { "HTTP" },
                    other.id
                );
                skip(Reason::PortUnavailable, why);
                continue;
            }
            // Of two listeners with one port and hostname (the CRD refuses that within a
            // Gateway: of two Gateways), the first (in the order above) serves the host; the
            // other would serve nothing and be reported as served: it is conflicted.
            if let Some(other) = host_owner.get(&(l.port, l.hostname.as_deref())) {
                let other = &listeners[*other].id;
                let why = match &l.hostname {
                    Some(h) => format!("port {} and hostname {h} are listener {other}'s", l.port),
                    None => format!("port {} without a hostname is listener {other}'s", l.port),
                };
                let order = "first in Gateway order: oldest, then namespace/name";
                skip(Reason::HostnameConflict, format!("{why} ({order})"));
                continue;
            }
            let gns = g.metadata.namespace.as_str();
            let mut certificates = Vec::new();
            let mut refs = Condition::yes(ResolvedRefs, Reason::ResolvedRefs);
            for (ci, c) in l.tls.iter().flat_map(|t| t.certificate_refs.iter()).enumerate() {
                let cns = c.namespace.as_deref().unwrap_or(gns);
                let why = if c.kind != "Secret" || !c.group.is_empty() {
                    Some((
                        Reason::InvalidCertificateRef,
                        format!("kind {:?} is not a Secret", c.kind),
                    ))
                } else if cns != gns && !grants.granted(("Gateway", gns), cns, ("Secret", &c.name))
                {
                    Some((
                        Reason::RefNotPermitted,
                        format!(
                            "no ReferenceGrant in namespace {cns} lets Gateways of {gns} use it"
                        ),
                    ))
                } else {
                    None
                };
                let secret = format!("{cns}/{}", c.name);
                let why = why.or_else(|| {
                    // A Secret refused as the API server refuses it is among `bad_secrets`.
                    let known = inputs.secrets.contains_key(&secret)
                        || inputs.bad_secrets.contains_key(&secret);
                    (!known && !given.contains(&secret)).then(|| {
                        (
                            Reason::InvalidCertificateRef,
                            format!("Secret {secret} is not among the inputs"),
                        )
                    })
                });
                // A Secret whose certificate NGINX could not load costs only this listener
                // (files given with --certificate replace it).
                let why = why.or_else(|| {
                    let bad = inputs.bad_secrets.get(&secret).filter(|_| !given.contains(&secret));
                    bad.map(|b| (Reason::InvalidCertificateRef, format!("Secret {secret}: {b}")))
                });
                match why {
                    Some((reason, why)) => {
                        let why = format!("tls.certificateRefs[{ci}]: {why}");
                        warnings.push(format!("listener {id}: {why}; ignored"));
                        if refs.ok {
                            refs = Condition::no(ResolvedRefs, reason, why);
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
                    Programmed,
                    Reason::Invalid,
                    "no usable certificate: its hosts refuse the TLS handshake".to_owned(),
                )
            } else {
                Condition::yes(Programmed, Reason::Programmed)
            };
            status.listeners.push(ListenerStatus {
                id: id.clone(),
                attached_routes: 0,
                conditions: vec![Condition::yes(Accepted, Reason::Accepted), refs, programmed],
            });
            port_owner.entry(l.port).or_insert(listeners.len());
            host_owner.insert((l.port, l.hostname.as_deref()), listeners.len());
            listeners.push(Listener {
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
    listeners
}

/// The TLS Secrets the listeners use that came with the manifests: `namespace/name` ->
/// (certificate chain, key).
pub(super) fn secrets(
    inputs: &Inputs,
    listeners: &[Listener],
) -> BTreeMap<String, (Vec<u8>, Vec<u8>)> {
    listeners
        .iter()
        .flat_map(|l| l.certificates.iter())
        .filter_map(|c| inputs.secrets.get(c).map(|pem| (c.clone(), pem.clone())))
        .collect()
}
