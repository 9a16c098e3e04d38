//! A route's references resolved once: each backendRef and mirror is an InferencePool
//! (`inference`) or a Service (`backends`), and the route's `ResolvedRefs` condition.

use crate::model::{HttpRoute, ObjectRef};

use super::backends::{Refs, Resolved, resolve};
use super::status::{Condition, ConditionType, Reason};

/// A backendRef or mirror of a route in `ns`: an InferencePool (`plan/inference.rs`) or
/// [`resolve`].
fn resolve_ref(r: &ObjectRef, ns: &str, refs: &Refs<'_>) -> Resolved {
    if super::inference::is_pool(r) {
        return super::inference::resolve_pool(r, ns, refs);
    }
    resolve(r, ns, refs)
}

/// A route's references resolved once, for the route's own kind (its grants are checked
/// for it): the stages after this one (the route's `ResolvedRefs` condition, each rule's
/// backends and mirrors on every server it is written for) read this node and resolve
/// nothing again.
/// Whether references `a` and `b` name the same object (every field).
fn same(a: &ObjectRef, b: &ObjectRef) -> bool {
    (&a.name, &a.namespace, a.port, &a.kind, &a.group)
        == (&b.name, &b.namespace, b.port, &b.kind, &b.group)
}

pub(super) struct ResolvedRoute {
    /// Per rule: each backendRef's outcome (weight 0 too), in order, and each
    /// RequestMirror filter's, in order.
    pub rules: Vec<ResolvedRule>,
    /// The route's `ResolvedRefs` condition (see [`route_refs`]).
    pub condition: Condition,
}

/// A rule's references (see [`ResolvedRoute`]).
pub(super) struct ResolvedRule {
    pub backends: Vec<Resolved>,
    pub mirrors: Vec<Resolved>,
}

/// Resolves every reference of route `r`, once, with [`Refs::grpc`] its own kind.
pub(super) fn resolve_route(r: &HttpRoute, refs: &Refs<'_>) -> ResolvedRoute {
    let refs = &Refs { grpc: r.grpc, ..*refs };
    let ns = &r.metadata.namespace;
    // A reference the same as the one before (a route's rules often share their backend) is
    // resolved once: resolving is a function of the reference, the route's namespace and kind.
    let mut last: Option<(ObjectRef, Resolved)> = None;
    let mut resolve = |o: &ObjectRef| match &last {
        Some((l, known)) if same(l, o) => known.clone(),
        _ => last.insert((o.clone(), resolve_ref(o, ns, refs))).1.clone(),
    };
    let rules: Vec<ResolvedRule> = r
        .spec
        .rules
        .iter()
        .map(|rule| ResolvedRule {
            backends: rule.backend_refs.iter().map(|b| resolve(&b.object())).collect(),
            mirrors: rule
                .filters
                .iter()
                .filter_map(|f| f.request_mirror.as_ref())
                .map(|m| resolve(&m.backend_ref))
                .collect(),
        })
        .collect();
    let condition = route_refs(r, &rules, refs);
    ResolvedRoute { rules, condition }
}

/// A route's ResolvedRefs condition: the first backendRef (rules in order, then mirrors)
/// that cannot be used. A Service without ready endpoints resolves (it answers 503).
fn route_refs(r: &HttpRoute, resolved: &[ResolvedRule], refs: &Refs<'_>) -> Condition {
    let ns = &r.metadata.namespace;
    for (ri, (rule, outcome)) in r.spec.rules.iter().zip(resolved).enumerate() {
        let objects = rule.backend_refs.iter().map(|b| (b.object(), "backendRefs")).chain(
            rule.filters
                .iter()
                .filter_map(|f| f.request_mirror.as_ref())
                .map(|m| (m.backend_ref.clone(), "filters[].requestMirror.backendRef")),
        );
        let outcomes = outcome.backends.iter().chain(&outcome.mirrors);
        let named = rule.name.as_deref().map(|n| format!(" ({n})")).unwrap_or_default();
        for ((object, field), outcome) in objects.zip(outcomes) {
            let refused = |why: String| {
                Condition::no(
                    ConditionType::ResolvedRefs,
                    Reason::UnsupportedValue,
                    format!("rules[{ri}]{named}.{field}: {why}; its other EndpointSlices serve"),
                )
            };
            match outcome {
                Err((reason, why)) => {
                    return Condition::no(
                        ConditionType::ResolvedRefs,
                        *reason,
                        format!("rules[{ri}]{named}.{field}: {why}"),
                    );
                }
                // A refused EndpointSlice of the Service: said on the route that uses it.
                Ok(_) => {
                    let bns = object.namespace.as_deref().unwrap_or(ns);
                    let key = (bns.to_owned(), object.name.clone());
                    if let Some(why) = refs.refused_slices.get(&key).and_then(|w| w.first()) {
                        return refused(format!("{why} (as the API server refuses it)"));
                    }
                }
            }
        }
    }
    Condition::yes(ConditionType::ResolvedRefs, Reason::ResolvedRefs)
}
