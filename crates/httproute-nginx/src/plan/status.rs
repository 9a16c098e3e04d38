//! Status: the conditions a Gateway API controller would set on listeners and on each
//! route's parentRefs, as typed values (`crate::status` writes them as YAML).

use std::collections::{BTreeMap, BTreeSet};

use crate::model::ParentRef;

use super::ids::{ListenerId, RouteId, RouteKind, RuleId};

/// A condition's `type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConditionType {
    Accepted,
    Programmed,
    ResolvedRefs,
    /// A route some of whose rules are left out (Gateway API's `PartiallyInvalid`, status
    /// True, reason UnsupportedValue, a message starting "Dropped Rule").
    PartiallyInvalid,
}

impl ConditionType {
    pub fn as_str(self) -> &'static str {
        match self {
            ConditionType::Accepted => "Accepted",
            ConditionType::Programmed => "Programmed",
            ConditionType::ResolvedRefs => "ResolvedRefs",
            ConditionType::PartiallyInvalid => "PartiallyInvalid",
        }
    }
}

/// A condition's `reason` (and, for a backend that cannot serve, why: see
/// `Backend::problem`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    Accepted,
    Programmed,
    ResolvedRefs,
    Invalid,
    NoMatchingParent,
    NotAllowedByListeners,
    NoMatchingListenerHostname,
    UnsupportedValue,
    UnsupportedProtocol,
    PortUnavailable,
    InvalidCertificateRef,
    RefNotPermitted,
    InvalidKind,
    BackendNotFound,
    /// Only a backend's problem, never in a condition: a Service without ready endpoints
    /// resolves (its share answers 503); explain says why.
    NoReadyEndpoints,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Accepted => "Accepted",
            Reason::Programmed => "Programmed",
            Reason::ResolvedRefs => "ResolvedRefs",
            Reason::Invalid => "Invalid",
            Reason::NoMatchingParent => "NoMatchingParent",
            Reason::NotAllowedByListeners => "NotAllowedByListeners",
            Reason::NoMatchingListenerHostname => "NoMatchingListenerHostname",
            Reason::UnsupportedValue => "UnsupportedValue",
            Reason::UnsupportedProtocol => "UnsupportedProtocol",
            Reason::PortUnavailable => "PortUnavailable",
            Reason::InvalidCertificateRef => "InvalidCertificateRef",
            Reason::RefNotPermitted => "RefNotPermitted",
            Reason::InvalidKind => "InvalidKind",
            Reason::BackendNotFound => "BackendNotFound",
            Reason::NoReadyEndpoints => "NoReadyEndpoints",
        }
    }
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A status condition: `type`, `status`, `reason`, `message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    pub kind: ConditionType,
    pub ok: bool,
    pub reason: Reason,
    pub message: String,
}

impl Condition {
    pub fn yes(kind: ConditionType, reason: Reason) -> Condition {
        Condition { kind, ok: true, reason, message: String::new() }
    }
    pub fn no(kind: ConditionType, reason: Reason, message: String) -> Condition {
        Condition { kind, ok: false, reason, message }
    }
}

/// What the generator made of each Gateway, listener and route parentRef.
#[derive(Debug, Default)]
pub struct Status {
    /// Every listener of every Gateway, in input order.
    pub listeners: Vec<ListenerStatus>,
    /// Every route (sorted by namespace/name), each parentRef's conditions.
    pub routes: Vec<RouteStatus>,
}

#[derive(Debug)]
pub struct ListenerStatus {
    pub id: ListenerId,
    pub attached_routes: usize,
    pub conditions: Vec<Condition>,
}

#[derive(Debug)]
pub struct RouteStatus {
    pub id: RouteId,
    pub parents: Vec<(ParentRef, Vec<Condition>)>,
}

/// What the ports lost to the target NGINX: (GRPCRoutes not served on some port, and those
/// ports; GRPCRoutes served on some port).
pub(super) type Http2Loss = (BTreeMap<RouteId, BTreeSet<u16>>, BTreeSet<RouteId>);

/// The statuses of routes the model refused as a whole (`Inputs::rejected`): every parentRef
/// `Accepted: False, UnsupportedValue`, and a warning each.
pub(super) fn rejected(
    inputs: &crate::model::Inputs,
    status: &mut Status,
    warnings: &mut Vec<String>,
) {
    for r in &inputs.rejected {
        let kind = RouteKind::of(r.grpc);
        let name = format!("{}/{}", r.namespace.escape_debug(), r.name.escape_debug());
        warnings.push(format!("{kind} {name} is not served: {}", r.error));
        let why = match r.error.field.as_str() {
            "" => r.error.message.clone(),
            f => format!("{f}: {}", r.error.message),
        };
        let parents = r
            .parent_refs
            .iter()
            .map(|p| {
                let c =
                    Condition::no(ConditionType::Accepted, Reason::UnsupportedValue, why.clone());
                (p.clone(), vec![c])
            })
            .collect();
        status.routes.push(RouteStatus {
            id: RouteId { kind, namespace: r.namespace.clone(), name: r.name.clone() },
            parents,
        });
    }
}

/// GRPCRoutes the target NGINX cannot serve on some port and serves on no other
/// (see `servers::http2`): their `Accepted` conditions become `False, UnsupportedValue`.
pub(super) fn grpc_not_served(status: &mut Status, loss: &Http2Loss, version: (u32, u32, u32)) {
    let (lost, kept) = loss;
    if lost.is_empty() {
        return;
    }
    for route in &mut status.routes {
        let Some(ports) = lost
            .get(&route.id)
            .filter(|_| route.id.kind == RouteKind::Grpc && !kept.contains(&route.id))
        else {
            continue;
        };
        for (_, conditions) in &mut route.parents {
            if let Some(c) =
                conditions.iter_mut().find(|c| c.kind == ConditionType::Accepted && c.ok)
            {
                *c = Condition::no(
                    ConditionType::Accepted,
                    Reason::UnsupportedValue,
                    format!(
                        "NGINX {}.{}.{} cannot serve cleartext HTTP/2 beside HTTP/1.1 on port {}",
                        version.0,
                        version.1,
                        version.2,
                        ports.iter().map(u16::to_string).collect::<Vec<_>>().join(", ")
                    ),
                );
            }
        }
    }
}

/// Rules (or matches: `match N: ...`) the configuration left out because NGINX cannot take a
/// word written from them (`crate::emit::Output::dropped`): each route's parentRefs get
/// `PartiallyInvalid: True, UnsupportedValue` with "Dropped Rule N: why" for each, as Gateway
/// API says for a route whose invalid rules are dropped (its `Accepted` stays as it is).
pub fn dropped_from_configuration(status: &mut Status, dropped: &[(RuleId, String)]) {
    if dropped.is_empty() {
        return;
    }
    for route in &mut status.routes {
        let mut message = String::new();
        for (rule, why) in dropped.iter().filter(|(r, _)| r.route == route.id) {
            if !message.is_empty() {
                message.push_str("; ");
            }
            message.push_str(&format!("Dropped Rule {}: {why}", rule.index));
        }
        if message.is_empty() {
            continue;
        }
        for (_, conditions) in &mut route.parents {
            let accepted = conditions.iter().any(|c| c.kind == ConditionType::Accepted && c.ok);
            if accepted {
                conditions.push(Condition {
                    kind: ConditionType::PartiallyInvalid,
                    ok: true,
                    reason: Reason::UnsupportedValue,
                    message: message.clone(),
                });
            }
        }
    }
}
