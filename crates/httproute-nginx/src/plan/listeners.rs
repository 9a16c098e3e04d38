//! Listeners and certificates: which listeners of the Gateways can be served (protocol, TLS
//! mode, one protocol per port), and the TLS Secrets each one's hosts are served with.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::{AllowedRoutes, Inputs};

use super::grants::Grants;
use super::ids::{ListenerId, oldest_first};
use super::status::{Condition, ConditionType, ListenerStatus, Reason, Status};
use super::types::PortProbe;

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

/// Why a listener is not served, as the reason of its `Accepted=False` condition.
type Skip = (Reason, String);

/// Every listener of every Gateway: those that can be served, and the status of all of them.
/// `given`: the Secrets with files of their own (`--certificate`); `probe`: the ports another
/// process holds (each asked once).
///
/// Gateways are taken oldest first (`creationTimestamp`; none counts as the newest), then by
/// the `"{namespace}/{name}"` string: Gateway API's order for conflicts, so the Gateway that
/// decides a shared port's protocol, and wins a tie between equally specific listeners of
/// different Gateways on one port, does not depend on the order of the input documents.
/// Within a Gateway, its listeners' own order.
pub(super) fn listeners(
    inputs: &Inputs,
    grants: &Grants<'_>,
    (given, probe): (&BTreeSet<String>, Option<&PortProbe>),
    status: &mut Status,
    warnings: &mut Vec<String>,
) -> Vec<Listener> {
    let mut listeners: Vec<Listener> = Vec::new();
    let mut owners = Owners::default();
    let mut held: BTreeMap<u16, Option<String>> = BTreeMap::new();
    let mut free = |port: u16| match probe {
        Some(probe) => match held.entry(port).or_insert_with(|| (probe.0)(port)) {
            Some(why) => Err((Reason::PortUnavailable, why.clone())),
            None => Ok(()),
        },
        None => Ok(()),
    };
    let metas: Vec<_> = inputs.gateways.iter().map(|g| &g.metadata).collect();
    for g in oldest_first(&metas).into_iter().map(|i| &inputs.gateways[i]) {
        for l in &g.spec.listeners {
            let id = ListenerId {
                namespace: g.metadata.namespace.clone(),
                gateway: g.metadata.name.clone(),
                name: l.name.clone(),
            };
            let usable = tls_of(l).and_then(|tls| owners.taken(&listeners, l, tls).map(|_| tls));
            let tls = match usable.and_then(|tls| free(l.port).map(|()| tls)) {
                Ok(tls) => tls,
                Err(skip) => {
                    skipped(id, skip, status, warnings);
                    continue;
                }
            };
            let gns = g.metadata.namespace.as_str();
            let mut certificates = Vec::new();
            let mut refs = Condition::yes(ConditionType::ResolvedRefs, Reason::ResolvedRefs);
            for (ci, c) in l.tls.iter().flat_map(|t| t.certificate_refs.iter()).enumerate() {
                let secret = format!("{}/{}", c.namespace.as_deref().unwrap_or(gns), c.name);
                let Some((reason, why)) = certificate_problem(inputs, grants, given, gns, c) else {
                    certificates.push(secret);
                    continue;
                };
                let why = format!("tls.certificateRefs[{ci}]: {why}");
                warnings.push(format!("listener {id}: {why}; ignored"));
                if refs.ok {
                    refs = Condition::no(ConditionType::ResolvedRefs, reason, why);
                }
            }
            let programmed = programmed(&id, tls && certificates.is_empty(), warnings);
            status.listeners.push(ListenerStatus {
                id: id.clone(),
                attached_routes: 0,
                conditions: vec![
                    Condition::yes(ConditionType::Accepted, Reason::Accepted),
                    refs,
                    programmed,
                ],
            });
            owners.port.entry(l.port).or_insert(listeners.len());
            owners.host.insert((l.port, l.hostname.as_deref()), listeners.len());
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

/// Not accepted (and, for a hostname conflict, `Conflicted`), with a warning.
fn skipped(id: ListenerId, (reason, why): Skip, status: &mut Status, warnings: &mut Vec<String>) {
    use ConditionType::{Accepted, Conflicted, Programmed};
    warnings.push(format!("listener {id}: {why}; skipped"));
    let mut conditions = vec![Condition::no(Accepted, reason, why.clone())];
    if reason == Reason::HostnameConflict {
        conditions.push(Condition::yes_for(Conflicted, reason, why));
    }
    conditions.push(Condition::no(Programmed, Reason::Invalid, "not accepted".into()));
    status.listeners.push(ListenerStatus { id, attached_routes: 0, conditions });
}

/// Whether the listener terminates TLS: HTTP, or HTTPS in mode `Terminate`.
fn tls_of(l: &crate::model::Listener) -> Result<bool, Skip> {
    match (l.protocol.as_str(), &l.tls) {
        ("HTTP", _) => Ok(false),
        ("HTTPS", Some(t)) if t.mode == "Terminate" => Ok(true),
        ("HTTPS", Some(t)) => Err((
            Reason::UnsupportedValue,
            format!("TLS mode {} is not supported (HTTPRoutes need Terminate)", t.mode),
        )),
        ("HTTPS", None) => Err((Reason::UnsupportedValue, "HTTPS without tls".to_owned())),
        (p, _) => Err((Reason::UnsupportedProtocol, format!("protocol {p} is not supported yet"))),
    }
}

/// The first served listener of each port, and of each port and hostname (none: every host),
/// in the order of [`listeners`].
#[derive(Default)]
struct Owners<'a> {
    port: BTreeMap<u16, usize>,
    host: BTreeMap<(u16, Option<&'a str>), usize>,
}

impl Owners<'_> {
    /// Whether an earlier listener holds the port for the other protocol, or the port and
    /// hostname.
    fn taken(
        &self,
        listeners: &[Listener],
        l: &crate::model::Listener,
        tls: bool,
    ) -> Result<(), Skip> {
        // HTTP and HTTPS cannot share a port: the first listener of a port decides.
        if let Some(other) = self.port.get(&l.port).map(|&i| &listeners[i])
            && other.tls != tls
        {
            let why = format!(
                "port {} is already {} for listener {}",
                l.port,
                if other.tls { "HTTPS" } else { "HTTP" },
                other.id
            );
            return Err((Reason::PortUnavailable, why));
        }
        // Of two listeners with one port and hostname (the CRD refuses that within a Gateway: of
        // two Gateways), the first serves the host; the other would serve nothing and be reported
        // as served: it is conflicted.
        if let Some(other) = self.host.get(&(l.port, l.hostname.as_deref())) {
            let other = &listeners[*other].id;
            let why = match &l.hostname {
                Some(h) => format!("port {} and hostname {h} are listener {other}'s", l.port),
                None => format!("port {} without a hostname is listener {other}'s", l.port),
            };
            let order = "first in Gateway order: oldest, then namespace/name";
            return Err((Reason::HostnameConflict, format!("{why} ({order})")));
        }
        Ok(())
    }
}

/// Why a listener of namespace `gns` cannot use the certificate `c`, if it cannot: not a
/// Secret, not granted, not among the inputs, or one NGINX could not load (files given with
/// `--certificate` replace it; a Secret the API server refuses is among `bad_secrets`).
fn certificate_problem(
    inputs: &Inputs,
    grants: &Grants<'_>,
    given: &BTreeSet<String>,
    gns: &str,
    c: &crate::model::SecretRef,
) -> Option<Skip> {
    let cns = c.namespace.as_deref().unwrap_or(gns);
    if c.kind != "Secret" || !c.group.is_empty() {
        return Some((Reason::InvalidCertificateRef, format!("kind {:?} is not a Secret", c.kind)));
    }
    if cns != gns && !grants.granted(("Gateway", gns), cns, ("Secret", &c.name)) {
        let why = format!("no ReferenceGrant in namespace {cns} lets Gateways of {gns} use it");
        return Some((Reason::RefNotPermitted, why));
    }
    let secret = format!("{cns}/{}", c.name);
    let known = inputs.secrets.contains_key(&secret) || inputs.bad_secrets.contains_key(&secret);
    if !known && !given.contains(&secret) {
        let why = format!("Secret {secret} is not among the inputs");
        return Some((Reason::InvalidCertificateRef, why));
    }
    let bad = inputs.bad_secrets.get(&secret).filter(|_| !given.contains(&secret));
    bad.map(|b| (Reason::InvalidCertificateRef, format!("Secret {secret}: {b}")))
}

/// `Programmed`: not for a TLS listener without a usable certificate (its hosts refuse the
/// handshake).
fn programmed(id: &ListenerId, no_certificate: bool, warnings: &mut Vec<String>) -> Condition {
    if !no_certificate {
        return Condition::yes(ConditionType::Programmed, Reason::Programmed);
    }
    let why = "no usable certificate: its hosts refuse the TLS handshake";
    warnings
        .push(format!("listener {id}: no usable certificate; its hosts refuse the TLS handshake"));
    Condition::no(ConditionType::Programmed, Reason::Invalid, why.to_owned())
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
