//! Attachment: which routes attach to which listeners (parentRefs, sectionName and port,
//! `allowedRoutes`, hostname intersection), ReferenceGrants, and the one kind a listener
//! accepts for hostnames a GRPCRoute and an HTTPRoute share.

use std::collections::{BTreeMap, HashMap};

use crate::model::{AllowedRoutes, HttpRoute, Inputs, ParentRef};

use super::ids::{ListenerId, RouteId, RouteKind};
use super::listeners::Listener;
use super::references::ResolvedRoute;
use super::status::{Condition, ConditionType, Reason, RouteNode};
use super::types::wildcard_covers;

/// A route attached to a listener, with the hostnames it serves there.
pub(super) struct Attachment {
    pub listener: usize,
    /// Its route's node: an index into the nodes [`attach`] returns, one per route in the
    /// order of the routes it was given (so also the route's index there).
    pub node: usize,
    pub route: RouteId,
    /// The route's place by age: creationTimestamp, then the `"{namespace}/{name}"` string (see
    /// `precedence::SortKey`).
    pub age: usize,
    /// Listener hostname ∩ route hostnames (`None`: any host).
    pub hostnames: Vec<Option<String>>,
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
            // A selector selects Namespace objects: without one there is nothing to match.
            let Some(labels) = inputs.namespace_labels.get(ns) else {
                return Some(format!(
                    "namespace {ns} has no Namespace object among the inputs, so \
                     allowedRoutes.namespaces.selector matches nothing"
                ));
            };
            // Kubernetes labels every namespace with its own name.
            let mut labels = labels.clone();
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

/// Whether a parentRef names a Gateway (the only parents served).
fn to_gateway(p: &ParentRef) -> bool {
    p.kind.as_deref().unwrap_or("Gateway") == "Gateway"
        && matches!(p.group.as_deref(), None | Some("gateway.networking.k8s.io"))
}

/// What kept a parentRef off the listeners it names.
#[derive(Default)]
struct Missed {
    /// It names some.
    named: bool,
    /// Why the last of them that does not accept the route refuses it.
    refusal: Option<String>,
    /// One accepts it, but no hostname of the route matches its.
    hosts: bool,
}

impl Missed {
    /// `Accepted: False` for a parentRef to Gateway `gateway` attached nowhere, most telling
    /// reason first.
    fn condition(self, gateway: &str) -> Condition {
        use ConditionType::Accepted;
        if self.hosts {
            let why = "no hostname of the route matches a listener's";
            Condition::no(Accepted, Reason::NoMatchingListenerHostname, why.to_owned())
        } else if let Some(why) = self.refusal {
            Condition::no(Accepted, Reason::NotAllowedByListeners, why)
        } else if self.named {
            Condition::no(Accepted, Reason::NoMatchingParent, "no usable listener".to_owned())
        } else {
            let why = format!("no listener of Gateway {gateway} matches");
            Condition::no(Accepted, Reason::NoMatchingParent, why)
        }
    }
}

/// Attaches every route (sorted by namespace/name) to the listeners its parentRefs name and
/// that accept it, and gives each route its node (`Accepted` per parentRef, `ResolvedRefs`),
/// one per route, in order. `ages[i]`: the place of `routes[i]` by age.
pub(super) fn attach(
    inputs: &Inputs,
    routes: &[&HttpRoute],
    resolved: &[ResolvedRoute],
    ages: &[usize],
    listeners: &[Listener],
    warnings: &mut Vec<String>,
) -> (Vec<Attachment>, Vec<RouteNode>) {
    // The listeners of each Gateway (namespace, name), in input order.
    let mut of_gateway: BTreeMap<(&str, &str), Vec<usize>> = BTreeMap::new();
    for (li, l) in listeners.iter().enumerate() {
        of_gateway.entry((&l.id.namespace, &l.id.gateway)).or_default().push(li);
    }
    let mut attachments = Vec::new();
    let mut nodes = Vec::with_capacity(routes.len());
    for ((r, &age), refs) in routes.iter().zip(ages).zip(resolved) {
        let ns = &r.metadata.namespace;
        let kind = RouteKind::of(r.grpc);
        let id = RouteId::of(r);
        let mut parents = Vec::new();
        // Beside `parents`: the listeners each parentRef attaches to.
        let mut attached_to = Vec::new();
        for p in &r.spec.parent_refs {
            if !to_gateway(p) {
                continue;
            }
            let gw_ns = p.namespace.as_deref().unwrap_or(ns);
            let mut missed = Missed::default();
            let mut here = Vec::new();
            let of_parent = of_gateway.get(&(gw_ns, p.name.as_str())).map_or(&[][..], |v| v);
            for &li in of_parent {
                let l = &listeners[li];
                if p.section_name.as_deref().is_some_and(|s| s != l.id.name)
                    || p.port.is_some_and(|port| port != l.port)
                {
                    continue;
                }
                missed.named = true;
                if let Some(why) = refused(&l.allowed, gw_ns, ns, kind.as_str(), inputs) {
                    warnings.push(format!(
                        "{kind} {ns}/{}: listener {} does not accept it: {why}",
                        r.metadata.name, l.id
                    ));
                    missed.refusal = Some(format!("listener {}: {why}", l.id));
                    continue;
                }
                let hostnames = intersect(l.hostname.as_deref(), &r.spec.hostnames);
                if hostnames.is_empty() {
                    missed.hosts = true;
                    continue;
                }
                here.push(l.id.clone());
                attachments.push(Attachment {
                    listener: li,
                    node: nodes.len(),
                    route: id.clone(),
                    age,
                    hostnames,
                });
            }
            let accepted = match here.is_empty() {
                false => Condition::yes(ConditionType::Accepted, Reason::Accepted),
                true => missed.condition(&format!("{gw_ns}/{}", p.name)),
            };
            parents.push((p.clone(), vec![accepted, refs.condition.clone()]));
            here.sort();
            attached_to.push(here);
        }
        let attached = attached_to.iter().any(|h| !h.is_empty());
        nodes.push(RouteNode { id, parents, attached: attached_to });
        if !attached {
            warnings.push(format!(
                "{kind} {ns}/{}: attaches to no listener (parentRefs, sectionName, port or \
                 hostnames do not match); its requests get 404",
                r.metadata.name
            ));
        }
    }
    (attachments, nodes)
}

/// A GRPCRoute and an HTTPRoute attached to one listener with hostnames in common: the spec
/// accepts exactly one of them there, the older (then the first by `"{namespace}/{name}"`).
/// The other is detached from that listener (`Accepted: False, NotAllowedByListeners` for
/// that Gateway, on its node), with one warning naming the oldest route it meets. Decided
/// oldest first, against the routes accepted so far: a route detached there takes no
/// hostname from a newer one.
pub(super) fn reject_kind_conflicts(
    listeners: &[Listener],
    attachments: &mut Vec<Attachment>,
    nodes: &mut [RouteNode],
    warnings: &mut Vec<String>,
) {
    let grpc = |a: &Attachment| a.route.kind == RouteKind::Grpc;
    // By listener index and kind, the accepted attachments by index: the fast hasher.
    let mut tables: rustc_hash::FxHashMap<(usize, bool), Oldest<'_>> = Default::default();
    let mut order: Vec<usize> = (0..attachments.len()).collect();
    order.sort_by_key(|&i| (attachments[i].age, i));
    // Each attachment that meets an older accepted one of the other kind loses there: one
    // warning each.
    let mut losers: Vec<(usize, usize, String)> = Vec::new();
    let mut lost: rustc_hash::FxHashSet<usize> = Default::default();
    for i in order {
        let a = &attachments[i];
        let met = tables.get(&(a.listener, !grpc(a))).and_then(|t| t.meeting(&a.hostnames));
        let Some((_, w)) = met.filter(|(age, _)| *age < a.age) else {
            tables.entry((a.listener, grpc(a))).or_default().add(&a.hostnames, (a.age, i));
            continue;
        };
        let (win_id, lose_id) = (&attachments[w].route, &a.route);
        let why = format!(
            "{} {lose_id} has hostnames in common with the older {} {win_id} on listener {}: \
             only that one is accepted there",
            lose_id.kind, win_id.kind, listeners[a.listener].id
        );
        warnings.push(why.clone());
        losers.push((a.listener, a.node, why));
        lost.insert(i);
    }
    let mut i = 0;
    attachments.retain(|_| {
        i += 1;
        !lost.contains(&(i - 1))
    });
    for (li, node, why) in &losers {
        set_refused(&mut nodes[*node], &listeners[*li].id, why);
    }
}

/// Per (listener, kind), the oldest attachment (age, index) of each way a hostname of the
/// other kind can meet it: any host, this exact name, a name this wildcard covers, a wildcard
/// that covers this name. Found by hashing: each hostname costs its labels, not every other
/// route's hostnames.
#[derive(Default)]
struct Oldest<'h> {
    all: Option<(usize, usize)>,
    any: Option<(usize, usize)>,
    equal: HashMap<&'h str, (usize, usize)>,
    /// A proper dot-suffix of a hostname (`.b.c` of `a.b.c`, of `*.b.c`: `.c`) -> the oldest
    /// with it: a wildcard `*` + suffix covers them.
    covered: HashMap<&'h str, (usize, usize)>,
    /// A wildcard's suffix (`.b.c` of `*.b.c`) -> the oldest wildcard.
    wildcards: HashMap<&'h str, (usize, usize)>,
}

impl<'h> Oldest<'h> {
    /// An attachment `v` with `hostnames` (`None`: any host).
    fn add(&mut self, hostnames: &'h [Option<String>], v: (usize, usize)) {
        older(&mut self.all, v);
        for h in hostnames {
            let Some(h) = h.as_deref() else {
                older(&mut self.any, v);
                continue;
            };
            older_in(&mut self.equal, h, v);
            for s in suffixes(h) {
                older_in(&mut self.covered, s, v);
            }
            if let Some(s) = h.strip_prefix('*') {
                older_in(&mut self.wildcards, s, v);
            }
        }
    }

    /// The oldest attachment that has a hostname in common with `hostnames`.
    fn meeting(&self, hostnames: &[Option<String>]) -> Option<(usize, usize)> {
        let mut oldest = None;
        for h in hostnames {
            let Some(h) = h.as_deref() else {
                // Any host meets every hostname of the other kind.
                if let Some(v) = self.all {
                    older(&mut oldest, v);
                }
                continue;
            };
            let mut found: Vec<Option<(usize, usize)>> = vec![self.any, self.equal.get(h).copied()];
            if let Some(s) = h.strip_prefix('*') {
                found.push(self.covered.get(s).copied());
            }
            found.extend(suffixes(h).map(|s| self.wildcards.get(s).copied()));
            for f in found.into_iter().flatten() {
                older(&mut oldest, f);
            }
        }
        oldest
    }
}

fn older(slot: &mut Option<(usize, usize)>, v: (usize, usize)) {
    if slot.is_none_or(|s| v < s) {
        *slot = Some(v);
    }
}

fn older_in<'h>(m: &mut HashMap<&'h str, (usize, usize)>, k: &'h str, v: (usize, usize)) {
    let e = m.entry(k).or_insert(v);
    if v < *e {
        *e = v;
    }
}

/// The proper suffixes of `h` that start at a dot (what a wildcard may cover it by).
fn suffixes(h: &str) -> impl Iterator<Item = &str> {
    h.match_indices('.').filter(|(i, _)| *i > 0).map(move |(i, _)| &h[i..])
}

/// The route's parentRefs to the Gateway of listener `l`: `Accepted: False,
/// NotAllowedByListeners`, on its node, and `l` no longer among the listeners they attach to.
pub(super) fn set_refused(node: &mut RouteNode, l: &ListenerId, why: &str) {
    for ((p, conditions), attached) in node.parents.iter_mut().zip(&mut node.attached) {
        let pns = p.namespace.as_deref().unwrap_or(&node.id.namespace);
        if pns == l.namespace && p.name == l.gateway {
            attached.retain(|a| a != l);
            conditions[0] = Condition::no(
                ConditionType::Accepted,
                Reason::NotAllowedByListeners,
                why.to_owned(),
            );
        }
    }
}

/// The listeners of one port indexed by hostname: which serves a hostname is a lookup per
/// label of the name, whatever the number of listeners (a scan of the port's listeners per
/// server name was quadratic in listeners with hostnames of their own).
pub(super) struct PortListeners<'a> {
    /// The first listener of each hostname (exact or wildcard, as written).
    by_name: HashMap<&'a str, usize>,
    /// The first wildcard listener of each suffix (`*.example.com`: `.example.com`).
    by_suffix: HashMap<&'a str, usize>,
    /// The first listener without a hostname.
    catch_all: Option<usize>,
}

impl<'a> PortListeners<'a> {
    /// The index of the listeners `on_port` (indexes into `listeners`, in their order).
    pub(super) fn of(listeners: &'a [Listener], on_port: &[usize]) -> Self {
        let mut index =
            PortListeners { by_name: HashMap::new(), by_suffix: HashMap::new(), catch_all: None };
        for &i in on_port {
            match listeners[i].hostname.as_deref() {
                Some(h) => {
                    index.by_name.entry(h).or_insert(i);
                    if let Some(suffix) = h.strip_prefix('*') {
                        index.by_suffix.entry(suffix).or_insert(i);
                    }
                }
                None => {
                    index.catch_all.get_or_insert(i);
                }
            }
        }
        index
    }

    /// The most specific listener of the port for hostname `h` (listener isolation); of
    /// equally specific ones, the first in `listeners`' order (oldest Gateway first, see
    /// `listeners`): the exact name, else the longest wildcard covering it (the suffixes of
    /// `h` from its first dot on, longest first), else the listener without a hostname.
    pub(super) fn best(&self, h: &Option<String>) -> Option<usize> {
        if let Some(h) = h.as_deref() {
            if let Some(&i) = self.by_name.get(h) {
                return Some(i);
            }
            // A wildcard covers a strictly longer name (`wildcard_covers`): suffixes past 0.
            let mut wild = h.match_indices('.').filter(|&(at, _)| at > 0);
            if let Some(&i) = wild.find_map(|(at, _)| self.by_suffix.get(&h[at..])) {
                return Some(i);
            }
        }
        self.catch_all
    }
}
