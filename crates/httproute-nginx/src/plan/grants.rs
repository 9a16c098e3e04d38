//! ReferenceGrants: whether one lets a route's (or a Gateway's) namespace use an object of
//! another namespace. Below the stages that ask (listeners for certificates, backends).

use crate::model::ReferenceGrant;

/// Whether a ReferenceGrant in `to_ns` lets objects of kind `from.0` (a Gateway API kind) in
/// namespace `from.1` use the core object `to` (kind, name).
pub(super) fn granted(
    grants: &[ReferenceGrant],
    from: (&str, &str),
    to_ns: &str,
    to: (&str, &str),
) -> bool {
    grants.iter().filter(|g| g.metadata.namespace == to_ns).any(|g| {
        g.spec.from.iter().any(|f| {
            f.group == "gateway.networking.k8s.io" && f.kind == from.0 && f.namespace == from.1
        }) && g.spec.to.iter().any(|t| {
            t.group.is_empty() && t.kind == to.0 && t.name.as_deref().is_none_or(|n| n == to.1)
        })
    })
}
