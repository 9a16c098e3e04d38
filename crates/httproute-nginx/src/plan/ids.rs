//! Typed names of what planning works on: listeners, routes and rules. Their `Display` is the
//! text warnings, comments and status show (`namespace/gateway/listener`, `namespace/name`,
//! `namespace/name rule N`).

use std::fmt;

use crate::model::Meta;

/// Indexes of `metas`, oldest first: by `creationTimestamp` (none counts as the oldest), then
/// by the `"{namespace}/{name}"` string (the spec's words: the string, which orders `a-b/c`
/// before `a/b-c`, where the (namespace, name) pair does not). Gateway API's order wherever
/// objects conflict: precedence ties between routes, Gateways sharing a port.
pub(super) fn oldest_first(metas: &[&Meta]) -> Vec<usize> {
    let names: Vec<String> = metas.iter().map(|m| format!("{}/{}", m.namespace, m.name)).collect();
    let mut order: Vec<usize> = (0..metas.len()).collect();
    order.sort_by(|&a, &b| {
        (&metas[a].creation_timestamp, &names[a]).cmp(&(&metas[b].creation_timestamp, &names[b]))
    });
    order
}

/// A listener of a Gateway.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ListenerId {
    pub namespace: String,
    pub gateway: String,
    pub name: String,
}

impl fmt::Display for ListenerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.namespace, self.gateway, self.name)
    }
}

/// What kind of route.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RouteKind {
    Http,
    Grpc,
}

impl RouteKind {
    pub fn of(grpc: bool) -> RouteKind {
        if grpc { RouteKind::Grpc } else { RouteKind::Http }
    }

    /// The Kubernetes kind: `HTTPRoute`, `GRPCRoute`.
    pub fn as_str(self) -> &'static str {
        match self {
            RouteKind::Http => "HTTPRoute",
            RouteKind::Grpc => "GRPCRoute",
        }
    }
}

impl fmt::Display for RouteKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A route. Shown as `namespace/name` (the kind is said separately where it matters).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RouteId {
    pub kind: RouteKind,
    pub namespace: String,
    pub name: String,
}

impl RouteId {
    pub fn of(r: &crate::model::HttpRoute) -> RouteId {
        RouteId {
            kind: RouteKind::of(r.grpc),
            namespace: r.metadata.namespace.clone(),
            name: r.metadata.name.clone(),
        }
    }
}

impl fmt::Display for RouteId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// A rule of a route: shown as `namespace/name rule N`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RuleId {
    pub route: RouteId,
    /// Its index in the route's `rules`.
    pub index: usize,
}

impl fmt::Display for RuleId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} rule {}", self.route, self.index)
    }
}
