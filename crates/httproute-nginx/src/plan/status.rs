//! Status: the conditions a Gateway API controller would set on listeners and on each
//! route's parentRefs, as typed values (`crate::status` writes them as YAML).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::model::ParentRef;

use super::ids::{GatewayId, ListenerId, RouteId, RouteKind, RuleId, Unit};

/// Unit enums whose `as_str` is the variant's name (a condition's `type` or `reason`).
macro_rules! named {
    ($(#[$m:meta])* pub enum $name:ident { $($(#[$vm:meta])* $v:ident,)* }) => {
        $(#[$m])* pub enum $name { $($(#[$vm])* $v,)* }
        impl $name {
            pub fn as_str(self) -> &'static str {
                match self { $($name::$v => stringify!($v),)* }
            }
        }
    };
}

named! {
    /// A condition's `type`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum ConditionType {
        Accepted,
        Programmed,
        ResolvedRefs,
        /// A route some of whose rules are left out (Gateway API's `PartiallyInvalid`, status
        /// True, reason UnsupportedValue, a message starting "Dropped Rule").
        PartiallyInvalid,
        /// A listener another listener's port and hostname already claim (status True, reason
        /// HostnameConflict).
        Conflicted,
    }
}

named! {
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
        HostnameConflict,
        InvalidCertificateRef,
        RefNotPermitted,
        InvalidKind,
        BackendNotFound,
        /// Only a backend's problem, never in a condition: a Service without ready endpoints
        /// resolves (its share answers 503); explain says why.
        NoReadyEndpoints,
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

/// The `Accepted: True` condition among `cs`, if any.
fn accepted_ok(cs: &mut [Condition]) -> Option<&mut Condition> {
    cs.iter_mut().find(|c| c.kind == ConditionType::Accepted && c.ok)
}

/// An input error's "field: message" (or the message alone).
fn field_message(e: &crate::model::InputError) -> String {
    match e.field.as_str() {
        "" => e.message.clone(),
        f => format!("{f}: {}", e.message),
    }
}

impl Condition {
    pub fn yes(kind: ConditionType, reason: Reason) -> Condition {
        Condition::yes_for(kind, reason, String::new())
    }
    /// Status True, with a message (a condition that is True when something is wrong).
    pub fn yes_for(kind: ConditionType, reason: Reason, message: String) -> Condition {
        Condition { kind, ok: true, reason, message }
    }
    pub fn no(kind: ConditionType, reason: Reason, message: String) -> Condition {
        Condition { kind, ok: false, reason, message }
    }
}

/// A unit left out of the configuration (a word NGINX cannot take, a budget, a refusal of
/// `nginx -t`): which (the smallest part of a tenant's object: a match, a backendRef's
/// share, a rule, a route, an attachment, a listener; a location is said as its matches), the
/// reason of its condition and what was wrong (the message names neither the unit nor the
/// route: [`Dropped`]'s `Display` and the status do).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    pub unit: Unit,
    pub reason: Reason,
    pub message: String,
}

impl std::fmt::Display for Dropped {
    /// `ROUTE rule N: [match M: |backendRefs[M]: ]MESSAGE`, or `ROUTE: MESSAGE`,
    /// `LISTENER: MESSAGE`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.unit {
            Unit::Match { rule, index } => write!(f, "{rule}: match {index}: ")?,
            Unit::BackendShare { rule, index } => write!(f, "{rule}: backendRefs[{index}]: ")?,
            Unit::Rule(rule) => write!(f, "{rule}: ")?,
            Unit::Route(route) => write!(f, "{route}: ")?,
            Unit::Attachment { route, gateway } => {
                write!(f, "{route}: through Gateway {gateway}: ")?
            }
            Unit::Listener(l) => write!(f, "{l}: ")?,
            // The writer says a location's matches, not the location.
            Unit::Location(..) => {}
        }
        f.write_str(&self.message)
    }
}

/// What the generator made of each Gateway, listener and route parentRef.
#[derive(Debug, Default)]
pub struct Status {
    /// Every listener of every Gateway, in input order.
    pub listeners: Vec<ListenerStatus>,
    /// Every route (sorted by namespace/name), each parentRef's conditions.
    pub routes: Vec<RouteStatus>,
    /// The rules of each route the plan serves, by index: how many matches each has and
    /// which planning skipped, with the warning ([`rule_outcomes`]); what
    /// [`dropped_from_configuration`] reads to say what is dropped, and whether anything of
    /// the route is left.
    pub rules: BTreeMap<RouteId, RuleOutcomes>,
    /// The Gateways refused as a whole (their CRD refuses them: `Inputs::refused`), in input
    /// order: `Accepted: False, Invalid` and `Programmed: False, Invalid`, no listeners.
    pub refused_gateways: Vec<RefusedGateway>,
}

/// A Gateway the model refused, and its conditions.
#[derive(Debug)]
pub struct RefusedGateway {
    pub namespace: String,
    pub name: String,
    pub conditions: Vec<Condition>,
}

/// What became of the rules of a served route: (rule index, outcome), by index. A `Vec`, not a
/// map: a route has a few rules, and a map's node would be most of its status's bytes.
pub type RuleOutcomes = Vec<(usize, RuleOutcome)>;

/// What became of one rule of a served route.
#[derive(Debug, Default, Clone)]
pub struct RuleOutcome {
    /// How many matches it has.
    pub matches: usize,
    /// The matches planning skipped: index -> why.
    pub skipped: BTreeMap<usize, String>,
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
    /// Beside `parents`, one list each (sorted, no listener twice): the listeners that
    /// parentRef attached to (its `Accepted: True`), as attachment left them. Empty for a
    /// parentRef attached nowhere. What [`dropped_from_configuration`] reads to tell a
    /// parentRef whose listeners are all left out of the configuration. Lists, not sets: a
    /// set's node of a few listeners would be most of the route's status.
    pub attached: Vec<Vec<ListenerId>>,
}

/// A route's node in the graph: what attachment made of each of its parentRefs (`Accepted`,
/// then `ResolvedRefs` from its resolved references), changed on the node by the steps after
/// (a kind conflict: `attach::reject_kind_conflicts`; the target NGINX: [`grpc_not_served`])
/// and read once, by [`routes`], into the status.
#[derive(Debug)]
pub(super) struct RouteNode {
    pub id: RouteId,
    pub parents: Vec<(ParentRef, Vec<Condition>)>,
    /// Beside `parents`: the listeners each parentRef attached to ([`RouteStatus::attached`]).
    pub attached: Vec<Vec<ListenerId>>,
}

/// What the ports lost to the target NGINX before 1.25.1: (routes not served on some port,
/// and those ports; routes served on some port).
pub(super) type Http2Loss = (BTreeMap<RouteId, BTreeSet<u16>>, BTreeSet<RouteId>);

/// The one place route statuses are made: every route's node as the planning steps left it,
/// then the routes the model refused as a whole (`Inputs::rejected`: every parentRef
/// `Accepted: False, UnsupportedValue`, and a warning each), sorted by namespace/name; and the
/// Gateways it refused (`Inputs::refused`, warned about as they were read):
/// [`Status::refused_gateways`].
pub(super) fn routes(
    nodes: Vec<RouteNode>,
    inputs: &crate::model::Inputs,
    status: &mut Status,
    warnings: &mut Vec<String>,
) {
    status.routes.extend(nodes.into_iter().map(|n| RouteStatus {
        id: n.id,
        parents: n.parents,
        attached: n.attached,
    }));
    for g in inputs.refused.iter().filter(|g| g.kind == "Gateway" && !g.name.is_empty()) {
        let why = field_message(&g.error);
        status.refused_gateways.push(RefusedGateway {
            namespace: g.namespace.clone(),
            name: g.name.clone(),
            conditions: vec![
                Condition::no(ConditionType::Accepted, Reason::Invalid, why),
                Condition::no(
                    ConditionType::Programmed,
                    Reason::Invalid,
                    "the Gateway is not accepted".into(),
                ),
            ],
        });
    }
    for r in &inputs.rejected {
        let kind = RouteKind::of(r.grpc);
        let name = format!("{}/{}", r.namespace.escape_debug(), r.name.escape_debug());
        warnings.push(format!("{kind} {name} is not served: {}", r.error));
        let why = field_message(&r.error);
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
            id: RouteId::new(kind, r.namespace.clone(), r.name.clone()),
            attached: vec![Vec::new(); r.parent_refs.len()],
            parents,
        });
    }
    status.routes.sort_by(|a, b| (&a.id.namespace, &a.id.name).cmp(&(&b.id.namespace, &b.id.name)));
}

/// An exact hostname of a route's attachment that another listener of the port serves (a
/// more specific one, or an equally specific one of an older Gateway: listener isolation), so
/// no request for it reaches the route through that listener.
pub(super) struct Shadowed {
    /// The route's node.
    pub node: usize,
    pub listener: ListenerId,
    pub port: u16,
    pub hostname: String,
    pub by: ListenerId,
    /// Which older Gateway's route holds the name, if another Gateway's.
    pub held: Option<String>,
}

/// A name a listener would serve by listener isolation that an older Gateway's routes serve
/// on its port (`servers::Serving`): its server is that Gateway's.
pub(super) struct Taken {
    /// The listener's entry in `Status::listeners`.
    pub status: usize,
    pub listener: ListenerId,
    pub port: u16,
    pub hostname: Option<String>,
    /// Which Gateway's route holds it.
    pub held: String,
}

/// Listeners that lose names to an older Gateway's routes ([`Taken`]): `Conflicted: True,
/// HostnameConflict` naming each name and its holder, and a warning each.
pub(super) fn taken_hostnames(status: &mut Status, taken: &[Taken], warnings: &mut Vec<String>) {
    for t in taken {
        let name = t.hostname.as_deref().unwrap_or("(every host)");
        let what = format!("hostname {name} on port {}: {}", t.port, t.held);
        warnings.push(format!("listener {}: {what}; not served by it", t.listener));
        let c = Condition::yes_for(ConditionType::Conflicted, Reason::HostnameConflict, what);
        add_to(&mut status.listeners[t.status].conditions, c, |_| false);
    }
}

/// Route hostnames another listener serves ([`Shadowed`], found by `servers::shadowed`): a warning each,
/// and the message of the parentRef's `Accepted: True` condition names them (the route stays
/// accepted, as Gateway API has it: its hostname matches the listener's; but no request for
/// that name reaches it there, which the status says rather than leaving it unsaid).
pub(super) fn shadowed_hostnames(
    nodes: &mut [RouteNode],
    shadowed: &[Shadowed],
    warnings: &mut Vec<String>,
) {
    for s in shadowed {
        let route = &mut nodes[s.node];
        let mut what = format!(
            "hostname {} on port {} is served by listener {}, not listener {}: no request for \
             it reaches the route there",
            s.hostname, s.port, s.by, s.listener
        );
        if let Some(held) = &s.held {
            what.push_str(&format!(" ({held})"));
        }
        warnings.push(format!("{} {}: {what}", route.id.kind.as_str(), route.id));
        for ((_, conditions), attached) in route.parents.iter_mut().zip(&route.attached) {
            if !attached.contains(&s.listener) {
                continue;
            }
            if let Some(c) = accepted_ok(conditions) {
                if !c.message.is_empty() {
                    c.message.push_str("; ");
                }
                c.message.push_str(&what);
            }
        }
    }
}

/// Routes the target NGINX cannot serve on some port (a GRPCRoute beside an older HTTPRoute,
/// or the other way round, on a plain port before 1.25.1: `servers::Speaks`) and serves on no
/// other: their nodes' `Accepted` conditions become `False, UnsupportedValue`.
pub(super) fn grpc_not_served(nodes: &mut [RouteNode], loss: &Http2Loss, version: (u32, u32, u32)) {
    let (lost, kept) = loss;
    if lost.is_empty() {
        return;
    }
    for route in nodes {
        let Some(ports) = lost.get(&route.id).filter(|_| !kept.contains(&route.id)) else {
            continue;
        };
        let (speaks, beside) = match route.id.kind {
            RouteKind::Grpc => ("cleartext HTTP/2", "HTTP/1.1"),
            RouteKind::Http => ("HTTP/1.1", "cleartext HTTP/2 (an older GRPCRoute's)"),
        };
        for (_, conditions) in &mut route.parents {
            if let Some(c) = accepted_ok(conditions) {
                *c = Condition::no(
                    ConditionType::Accepted,
                    Reason::UnsupportedValue,
                    format!(
                        "NGINX {}.{}.{} cannot serve {speaks} beside {beside} on port {}",
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

/// The route parentRefs all of whose listeners ([`RouteStatus::attached`]) `dropped` leaves
/// out: `Accepted: False, NoMatchingParent`, naming each listener and why. Why that reason:
/// as served, the parent has no listener the parentRef matches (the route is not at fault, as
/// UnsupportedValue would say; NGF's `InvalidListener` is not in the spec). A parentRef that
/// keeps a listener, and every other condition, stay as they are. A listener whose Secret
/// NGINX refuses (`nginx_check::drop_secret`) is not left out: it refuses the handshake and
/// its routes stay accepted, as when the generator's own certificate check refuses it.
fn parents_without_listeners(status: &mut Status, dropped: &[Dropped]) {
    let gone: BTreeMap<&ListenerId, &Dropped> = dropped
        .iter()
        .filter_map(|d| match &d.unit {
            Unit::Listener(id) => Some((id, d)),
            _ => None,
        })
        .collect();
    if gone.is_empty() {
        return;
    }
    for route in &mut status.routes {
        for ((_, conditions), attached) in route.parents.iter_mut().zip(&route.attached) {
            if attached.is_empty() || !attached.iter().all(|l| gone.contains_key(l)) {
                continue;
            }
            let Some(c) = accepted_ok(conditions) else { continue };
            let why = attached
                .iter()
                .map(|l| format!("listener {l}: {}", gone[l].message))
                .collect::<Vec<_>>()
                .join("; ");
            *c = Condition::no(
                ConditionType::Accepted,
                Reason::NoMatchingParent,
                format!("no listener it attached to is in the configuration: {why}"),
            );
        }
    }
}

/// The route parentRefs to a Gateway whose attachment is left out ([`Unit::Attachment`]:
/// the inline regex budget): `Accepted: False` with the unit's reason and why, as a budget
/// refuses a route on a listener before the configuration is made (`budget::http2_ports`),
/// and the route no longer counted in those listeners' `attachedRoutes`. A parentRef that
/// attached to no listener keeps its own condition (`NoMatchingParent`, ...); the route's
/// other parentRefs are as they were. One walk of the routes, the refusals looked up by route.
fn parents_refused(status: &mut Status, dropped: &[Dropped]) {
    let mut refused: BTreeMap<&RouteId, Vec<(&GatewayId, &Dropped)>> = BTreeMap::new();
    for d in dropped {
        if let Unit::Attachment { route, gateway } = &d.unit {
            refused.entry(route).or_default().push((gateway, d));
        }
    }
    if refused.is_empty() {
        return;
    }
    let mut detached: BTreeMap<ListenerId, usize> = BTreeMap::new();
    for r in &mut status.routes {
        let Some(gateways) = refused.get(&r.id) else { continue };
        let mut off: BTreeSet<ListenerId> = BTreeSet::new();
        for ((p, conditions), attached) in r.parents.iter_mut().zip(&mut r.attached) {
            let pns = p.namespace.as_deref().unwrap_or(&r.id.namespace);
            let kind = p.kind.as_deref().unwrap_or("Gateway");
            let to = |g: &&(&GatewayId, &Dropped)| g.0.namespace == pns && g.0.name == p.name;
            let Some((_, d)) = gateways.iter().find(to).filter(|_| kind == "Gateway") else {
                continue;
            };
            if attached.is_empty() {
                continue;
            }
            off.extend(attached.drain(..));
            let c = Condition::no(ConditionType::Accepted, d.reason, d.message.clone());
            match conditions.iter_mut().find(|c| c.kind == ConditionType::Accepted) {
                Some(o) => *o = c,
                None => conditions.insert(0, c),
            }
        }
        for l in off {
            *detached.entry(l).or_default() += 1;
        }
    }
    for l in &mut status.listeners {
        if let Some(n) = detached.get(&l.id) {
            l.attached_routes = l.attached_routes.saturating_sub(*n);
        }
    }
}

/// The rules of every server of the plan, for [`dropped_from_configuration`]: each rule's
/// match count and the matches planning skipped (`RulePlan::skipped_matches`).
pub(super) fn rule_outcomes<'a>(
    status: &mut Status,
    rules: impl Iterator<Item = (&'a RuleId, usize, &'a [(usize, String)])>,
) {
    for (id, match_count, skipped_matches) in rules {
        let rules = status.rules.entry(id.route.clone()).or_default();
        let at = rules.binary_search_by_key(&id.index, |(i, _)| *i).unwrap_or_else(|at| {
            rules.insert(at, (id.index, RuleOutcome::default()));
            at
        });
        let o = &mut rules[at].1;
        o.matches = match_count;
        for (mi, why) in skipped_matches {
            o.skipped.entry(*mi).or_insert_with(|| skipped_reason(id, *mi, why));
        }
    }
}

/// A skipped match's warning without the route and match it names (the condition is on the
/// route and says "match N") and without "; match skipped".
fn skipped_reason(rule: &RuleId, mi: usize, warning: &str) -> String {
    let at = format!("rules[{}].matches[{mi}]", rule.index);
    let rest = match warning.find(&at) {
        Some(i) => &warning[i + at.len()..],
        None => warning,
    };
    let rest = rest.trim_start_matches(['.', ':', ' ']);
    rest.strip_suffix("; match skipped").unwrap_or(rest).to_owned()
}

/// The conditions of what is left out of each route after the configuration is written
/// (`dropped`: `crate::emit::Output::dropped`) and of the matches planning skipped
/// ([`Status::rules`]), in Gateway API's words:
/// - a backendRef share left out (it answers 500): `ResolvedRefs: False` on each parentRef;
/// - rules or matches left out, a rule left that serves: `PartiallyInvalid: True,
///   UnsupportedValue`, "Dropped Rule N: [match M: ]why" ("Accepted" stays);
/// - no rule left that serves: `Accepted: False` with the unit's reason and message;
/// - a listener left out: its `Programmed: False`, and first the parentRefs it leaves with no
///   listener ([`parents_without_listeners`]), which get no `PartiallyInvalid`.
pub fn dropped_from_configuration(status: &mut Status, dropped: &[Dropped]) {
    for d in dropped {
        let Unit::Listener(id) = &d.unit else { continue };
        for l in status.listeners.iter_mut().filter(|l| l.id == *id) {
            for c in &mut l.conditions {
                if c.kind == ConditionType::Programmed && c.ok {
                    *c = Condition::no(ConditionType::Programmed, d.reason, d.message.clone());
                }
            }
        }
    }
    parents_without_listeners(status, dropped);
    parents_refused(status, dropped);
    // Each route's units, in the order left out: one pass, not one per route.
    let mut by_route: HashMap<&RouteId, Vec<&Dropped>> = HashMap::new();
    for d in dropped {
        if let Some(route) = d.unit.route() {
            by_route.entry(route).or_default().push(d);
        }
    }
    for route in &mut status.routes {
        let outcomes = status.rules.get(&route.id);
        let own = by_route.get(&route.id).map_or(&[][..], Vec::as_slice);
        let lost = Lost::of(outcomes, own);
        if let Some((share_reason, _)) = lost.shares.first() {
            let message = lost.shares.iter().map(|(_, m)| m.as_str()).collect::<Vec<_>>();
            shares_unresolved(route, *share_reason, &message.join("; "));
        }
        if lost.messages.is_empty() && lost.route.is_none() {
            continue;
        }
        let serves = lost.route.is_none()
            && outcomes.is_none_or(|rules| {
                rules.iter().any(|(ri, o)| {
                    !lost.rules.contains(ri)
                        && lost.matches.get(ri).map_or(0, BTreeSet::len) < o.matches.max(1)
                })
            });
        let (reason, message) = lost.condition();
        for (_, conditions) in &mut route.parents {
            let Some(i) = conditions.iter().position(|c| c.kind == ConditionType::Accepted && c.ok)
            else {
                continue;
            };
            if !serves {
                // The route left out says why itself; a route whose rules all are says so.
                let message = match lost.route {
                    Some(_) => message.clone(),
                    None => format!("no rule is left to serve: {message}"),
                };
                conditions[i] = Condition::no(ConditionType::Accepted, reason, message);
                continue;
            }
            let partially = Condition::yes_for(
                ConditionType::PartiallyInvalid,
                Reason::UnsupportedValue,
                message.clone(),
            );
            add_to(conditions, partially, |_| false);
        }
    }
}

/// `c` among `conditions`, or its message after that of the one of its kind there (replaced
/// instead when `replace` says so of it).
fn add_to(conditions: &mut Vec<Condition>, c: Condition, replace: impl Fn(&Condition) -> bool) {
    match conditions.iter_mut().find(|o| o.kind == c.kind) {
        Some(o) if replace(o) => *o = c,
        Some(o) => {
            o.message.push_str("; ");
            o.message.push_str(&c.message);
        }
        None => conditions.push(c),
    }
}

/// BackendRef shares left out (they answer 500): `ResolvedRefs: False` on each parentRef.
fn shares_unresolved(route: &mut RouteStatus, reason: Reason, message: &str) {
    for (_, conditions) in &mut route.parents {
        let c = Condition::no(ConditionType::ResolvedRefs, reason, message.to_owned());
        add_to(conditions, c, |o| o.ok);
    }
}

/// What of one route is left out: by planning and by writing.
struct Lost<'d> {
    /// "Dropped Rule N: ..." by rule.
    messages: Vec<(usize, String)>,
    /// Rule -> its matches left out.
    matches: BTreeMap<usize, BTreeSet<usize>>,
    /// Rules left out whole.
    rules: BTreeSet<usize>,
    /// The route left out whole.
    route: Option<&'d Dropped>,
    /// The reason of the first unit dropped that leaves the route nothing to serve.
    reason: Reason,
    /// BackendRef shares left out: their reason and "rules[N].backendRefs[M]: why".
    shares: Vec<(Reason, String)>,
}

impl<'d> Lost<'d> {
    /// The route's rule outcomes and its own units left out (`dropped`).
    fn of(outcomes: Option<&RuleOutcomes>, dropped: &[&'d Dropped]) -> Self {
        let mut lost = Lost {
            messages: Vec::new(),
            matches: BTreeMap::new(),
            rules: BTreeSet::new(),
            route: None,
            reason: Reason::UnsupportedValue,
            shares: Vec::new(),
        };
        for (ri, o) in outcomes.into_iter().flatten() {
            for (mi, why) in &o.skipped {
                lost.messages.push((*ri, format!("Dropped Rule {ri}: match {mi}: {why}")));
                lost.matches.entry(*ri).or_default().insert(*mi);
            }
        }
        for &d in dropped {
            let why = &d.message;
            match &d.unit {
                Unit::Match { rule, index } => {
                    let ri = rule.index;
                    lost.messages.push((ri, format!("Dropped Rule {ri}: match {index}: {why}")));
                    lost.matches.entry(ri).or_default().insert(*index);
                }
                Unit::BackendShare { rule, index } => {
                    let share = format!("rules[{}].backendRefs[{index}]: {why}", rule.index);
                    lost.shares.push((d.reason, share));
                }
                Unit::Rule(rule) => {
                    lost.messages.push((rule.index, format!("Dropped Rule {}: {why}", rule.index)));
                    if lost.rules.insert(rule.index) && lost.rules.len() == 1 {
                        lost.reason = d.reason;
                    }
                }
                Unit::Route(_) => {
                    lost.route.get_or_insert(d);
                }
                Unit::Attachment { .. } | Unit::Listener(_) | Unit::Location(..) => {}
            }
        }
        lost
    }

    /// The reason and message of the route's condition: the route's own first, then by rule,
    /// planning's before writing's within one.
    fn condition(&self) -> (Reason, String) {
        let mut messages: Vec<&(usize, String)> = self.messages.iter().collect();
        messages.sort_by_key(|(ri, _)| *ri);
        let message = messages.iter().map(|(_, m)| m.as_str()).collect::<Vec<_>>().join("; ");
        match self.route {
            Some(d) if message.is_empty() => (d.reason, d.message.clone()),
            Some(d) => (d.reason, format!("{}; {message}", d.message)),
            None => (self.reason, message),
        }
    }
}
