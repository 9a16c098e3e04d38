//! The routing plan: which routes serve which listener and hostname, which NGINX locations
//! exist, and for each location the ordered candidate list (Gateway API precedence across all
//! routes of the listener, with fallback to shorter prefixes), with the status a controller
//! would write.
//!
//! [`plan`] runs the Gateway API's own steps in order, one file each:
//!
//! | step | file |
//! |------|------|
//! | listeners and their certificates (protocol, TLS mode, one protocol per port, Secrets) | `plan/listeners.rs` |
//! | attachment (parentRefs, sectionName/port, `allowedRoutes`, hostnames, ReferenceGrant, one kind per listener hostname) | `plan/attach.rs` |
//! | backends (backendRef resolution, ready endpoints, `ResolvedRefs`) | `plan/backends.rs` |
//! | rules (filters, timeouts, retry, each backendRef's target and weight) | `plan/rules.rs` |
//! | servers (one per port and hostname, listener isolation, HTTP/2 per the target NGINX) | `plan/servers.rs` |
//! | precedence (candidates and their sort key, locations) | `plan/precedence.rs` |
//! | status (condition types and reasons, listener and route conditions) | `plan/status.rs` |
//! | server merging (servers the same on several ports, written once) | `plan/merge.rs` |
//! | budgets (what tenants share in NGINX: objects over theirs refused, newest first) | `plan/budget.rs`, `plan/list_bytes.rs` (the module's memory: match lists and regex conditions, one walk) |
//!
//! and `plan/ids.rs` (typed listener, route and rule ids), `plan/entry.rs` (the match-list entry
//! emit writes and explain evaluates), `plan/types.rs` (the plan's nodes: ports, servers,
//! locations, candidates, rules, backends, `Loc`/`PathKind`), `plan/grants.rs`
//! (ReferenceGrants). The target NGINX is an input ([`Capabilities`]): nothing patches a plan
//! once made.
//!
//! Imports go one way: `ids`, `entry`, `grants` import no stage; `status` imports `ids`;
//! `types` imports `entry`, `ids`, `status`; `segments` (a location's list as runs of the
//! server's blocks) only `types`; then `listeners`, `backends`, `rules`, `attach`,
//! `precedence`, `servers` each import only those before them, `merge` only `types`, and `budget`
//! `ids`, `entry`, `types`, `status`, `listeners` and `attach`, `list_bytes` `budget`, `ids` and `types`. No file imports this one; this one runs them in order.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::{HttpRoute, Inputs};

mod attach;
mod backends;
mod budget;
mod entry;
mod grants;
mod ids;
mod inference;
mod list_bytes;
mod listeners;
mod merge;
mod precedence;
mod references;
mod rules;
mod segments;
mod servers;
mod status;
mod types;
mod words;

pub use budget::{In, Left, makes};
pub use entry::{Entry, INTERNAL_PREFIX};
pub use ids::{Ages, GatewayId, ListenerId, RouteId, RouteKind, RuleId, Unit};
pub use list_bytes::{Limits as ListLimits, peak as list_peak};
pub use merge::{Merged, ServerAt};
pub use rules::retry_tries;
pub use status::{
    Condition, ConditionType, Dropped, ListenerStatus, Reason, RefusedGateway, RouteStatus, Status,
    dropped_from_configuration,
};
pub(crate) use types::wildcard_covers;
pub use types::{
    Backend, BackendMap, Candidate, Capabilities, HTTP2_DIRECTIVE, Kept, Loc, LocationPlan,
    Modifier, PathKind, Pool, PortPlan, PortProbe, RulePlan, Segment, ServerPlan, SortKey, Target,
    normalize_prefix,
};
pub use words::refusals as word_refusals;

/// Everything besides the manifests that decides a plan: generate and explain pass the same.
#[derive(Debug, Clone)]
pub struct PlanOptions<'a> {
    /// `--backend` / `--backends`.
    pub backends: &'a BackendMap,
    /// Units one namespace's InferencePools may take (`inference::admit`: a slice looked at,
    /// an address written; `--pool-units-per-tenant`).
    pub pool_units_per_tenant: usize,
    /// Ports another process holds (`apply`): their listeners are refused, `PortUnavailable`;
    /// `None`: every port is taken as free (`generate` may run on another machine).
    pub port_unavailable: Option<PortProbe>,
    /// TLS Secrets (`namespace/name`) with files of their own (`--certificate`) besides those
    /// among the inputs; a listener's certificate that is neither is left out (its hosts
    /// refuse the handshake if it has no other), with a warning.
    pub given_certificates: BTreeSet<String>,
    /// The NGINX that runs the configuration (`--nginx-version`).
    pub capabilities: Capabilities,
    /// Experimental-channel fields (`retry`) are used (`--experimental`); without it they are
    /// warned about and left out.
    pub experimental: bool,
    /// ExternalName Services are followed (`--allow-external-name`); without it a backendRef
    /// to one is `ResolvedRefs: False, UnsupportedValue` (as NGF: the operator opts in).
    pub allow_external_name: bool,
    /// `worker_connections` the configuration is written with: the listening sockets budget
    /// (`budget::listening_sockets`) is half of it.
    pub worker_connections: u32,
    /// The master's open-file limit (`--open-files`): the budget is half of the smaller.
    pub open_files: u32,
    /// Bytes of `http_matches_max_memory` one namespace's regex conditions may take
    /// (`list_bytes::memory`; inline, `budget::inline_regex_memory`).
    pub regex_memory_per_tenant: usize,
    /// Bytes all namespaces' regex conditions may take together.
    pub regex_memory_total: usize,
    /// The module's `http_matches_max_memory` (`--module-max-memory`, else the module's
    /// 128 MiB): the regex total, the lists and one list's parse share it
    /// (`plan/list_bytes.rs`).
    pub module_max_memory: usize,
    /// Bytes of it one namespace's match lists may hold (`--list-memory-per-tenant`;
    /// `list_bytes::memory`).
    pub list_memory_per_tenant: usize,
    /// Each location compiles the patterns of its own list (`--carrier inline`): the regex
    /// budget charges a pattern once per location that holds it, not once per namespace.
    pub regex_per_location: bool,
    /// The routes' status is made ([`Plan::status`]: `--status`, `apply`, explain, tests);
    /// without it the routes' nodes are freed before the servers are planned and
    /// `Plan::status` holds the listeners alone (the warnings are the same).
    pub status: bool,
    /// Each location's list is one word of nginx.conf, at this place (`--carrier inline`:
    /// `http_matches '...'`, [`crate::syntax::Pos::Literal`]; `variable`: `set $http_matches
    /// '...'`, [`crate::syntax::Pos::Variables`]): judged by `words::lists`. `None`: preloaded.
    pub list_word: Option<crate::syntax::Pos>,
}

impl<'a> PlanOptions<'a> {
    /// These backends; no certificate files, the default NGINX, no Experimental fields.
    pub fn new(backends: &'a BackendMap) -> PlanOptions<'a> {
        PlanOptions {
            backends,
            pool_units_per_tenant: crate::limits::POOL_UNITS_PER_TENANT,
            port_unavailable: None,
            given_certificates: BTreeSet::new(),
            capabilities: Capabilities::default(),
            experimental: false,
            allow_external_name: false,
            worker_connections: crate::emit_global::Global::default().worker_connections,
            open_files: crate::emit_global::DEFAULT_OPEN_FILES,
            regex_memory_per_tenant: crate::limits::DEFAULT_REGEX_MEMORY_PER_TENANT,
            regex_memory_total: crate::limits::DEFAULT_REGEX_MEMORY_TOTAL,
            module_max_memory: crate::limits::MODULE_MAX_MEMORY,
            list_memory_per_tenant: crate::limits::DEFAULT_LIST_MEMORY_PER_TENANT,
            regex_per_location: false,
            status: true,
            list_word: None,
        }
    }
}

#[derive(Debug)]
pub struct Plan {
    pub ports: Vec<PortPlan>,
    pub warnings: Vec<String>,
    /// The TLS Secrets listeners use that came with the manifests (written next to
    /// nginx.conf): `namespace/name` -> (certificate chain, key).
    pub secrets: BTreeMap<String, (Vec<u8>, Vec<u8>)>,
    /// The conditions a controller would set (see `crate::status`).
    pub status: Status,
    /// The NGINX the plan is for.
    pub capabilities: Capabilities,
    /// Which servers are written once for several ports ([`Plan::remerge`]; a caller that
    /// changes `ports` calls it again).
    pub merged: Merged,
    /// The Gateways' and routes' conflict order (the `nginx -t` net's victims, newest first).
    pub ages: Ages,
    /// The objects over a budget of what tenants share in NGINX (`plan/budget.rs`), with why:
    /// left out of the configuration from the start.
    pub refused: Vec<(Unit, String)>,
    /// What planning took (tests bound it against the input: no timing).
    pub work: Work,
}

impl Plan {
    /// [`Plan::merged`] again, after a caller changed `ports`: servers that leave out a
    /// route's attachment still kept apart.
    pub fn remerge(&mut self) {
        self.merged = merged(&self.ports, &self.refused);
    }
}

/// The work of [`plan`], counted.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Work {
    /// Endpoint addresses resolved: each Service port's and InferencePool's once, however
    /// many references name it (`backends::Endpoints`).
    pub endpoints: usize,
}

/// The manifests a plan is made from: owned, their routes are freed once the routes' rules
/// are planned, before the servers (the command's run: memory is the plan, not the plan and
/// the model); borrowed, the caller keeps them.
pub enum Model<'a> {
    Owned(Box<Inputs>),
    Borrowed(&'a Inputs),
}

impl From<Inputs> for Model<'_> {
    fn from(inputs: Inputs) -> Self {
        Model::Owned(Box::new(inputs))
    }
}

impl<'a> From<&'a Inputs> for Model<'a> {
    fn from(inputs: &'a Inputs) -> Self {
        Model::Borrowed(inputs)
    }
}

/// The plan of `model`: the one planning generate, explain and status share.
pub fn plan<'a>(model: impl Into<Model<'a>>, opts: &PlanOptions<'_>) -> Plan {
    match model.into() {
        Model::Owned(mut inputs) => {
            let ages = Ages::of(&inputs);
            // The routes apart from the rest (what listeners, status and secrets read).
            let routes = std::mem::take(&mut inputs.routes);
            plan_from(&inputs, ages, Some(routes), opts)
        }
        Model::Borrowed(inputs) => plan_from(inputs, Ages::of(inputs), None, opts),
    }
}

/// [`plan`] of `inputs` with their routes: `owned` (freed once every route's rules are
/// planned, before the servers) or else `inputs.routes`.
fn plan_from(
    inputs: &Inputs,
    ages: Ages,
    mut owned: Option<Vec<HttpRoute>>,
    opts: &PlanOptions<'_>,
) -> Plan {
    // Owned routes in the order planning takes them, so that each is freed once planned.
    if let Some(owned) = &mut owned {
        owned.sort_by(by_name);
    }
    let mut warnings = input_warnings(inputs);
    let mut status = Status::default();
    let grants = grants::Grants::of(&inputs.grants);
    // 1. Listeners and their certificates.
    let (given, probe) = (&opts.given_certificates, opts.port_unavailable.as_ref());
    let listeners =
        listeners::listeners(inputs, &grants, (given, probe), &mut status, &mut warnings);
    // 2. Routes in order: by namespace/name, and their places by age.
    let all = owned.as_deref().unwrap_or(&inputs.routes);
    let (order, route_ages) = routes_by_age(all);
    let routes: Vec<&HttpRoute> = order.iter().map(|&i| &all[i]).collect();
    // 3. Every reference of every route, resolved once for the route's own kind; then
    // attachment, with each route's ResolvedRefs read from its resolved node.
    let (resolved, endpoints) = resolve_all(inputs, &routes, &grants, opts);
    // Each route's outcome is carried on its node until the status is made from it.
    let (mut attachments, mut nodes) =
        attach::attach(inputs, &routes, &resolved, &route_ages, &listeners, &mut warnings);
    attach::reject_kind_conflicts(&listeners, &mut attachments, &mut nodes, &mut warnings);
    budget::http2_ports(&listeners, &mut attachments, &mut nodes, &ages, &mut warnings);
    for a in &attachments {
        status.listeners[listeners[a.listener].status].attached_routes += 1;
    }
    // Which listener serves each name of each port, decided once for both.
    let serving = servers::Serving::of(&listeners, &attachments, &ages);
    let (shadowed, taken, served) = servers::shadowed(&listeners, &attachments, &serving);
    status::shadowed_hostnames(&mut nodes, &shadowed, &mut warnings);
    status::taken_hostnames(&mut status, &taken, &mut warnings);
    // The routes' status in the making: not kept through the servers unless asked.
    drop((!opts.status).then(|| std::mem::take(&mut nodes)));
    // 4. The rules of each route a server takes, once; then the model's routes and their
    // references are no longer read (an owned model's are freed here).
    let mut ids = vec![None; routes.len()];
    for (a, _) in attachments.iter().zip(served).filter(|(_, served)| *served) {
        ids[a.node].get_or_insert_with(|| a.route.clone());
    }
    let rules = (ids, resolved, opts.experimental);
    let planned = match owned {
        // Sorted already: `order` is the identity.
        Some(owned) => rules_of(owned, rules, &mut warnings),
        None => rules_of(order.iter().map(|&i| &inputs.routes[i]), rules, &mut warnings),
    };
    // 5.-6. Servers and their locations in precedence order, on the target NGINX.
    let (ports, loss) = servers::ports(
        &listeners,
        &attachments,
        &serving,
        planned,
        &opts.capabilities,
        &mut warnings,
    );
    status::grpc_not_served(&mut nodes, &loss, opts.capabilities.version);
    status::routes(nodes, inputs, &mut status, &mut warnings);
    drop(serving);
    drop(attachments); // nor are the attachments kept through the budgets
    status::rule_outcomes(&mut status, rule_outcomes(&ports).filter(|_| opts.status));
    warnings.sort();
    warnings.dedup();
    let secrets = listeners::secrets(inputs, &listeners);
    // 7. What NGINX cannot take or tenants cannot share; 8. servers the same on several ports.
    let (refused, merged) = refusals(&ports, &ages, opts);
    Plan {
        ports,
        warnings,
        secrets,
        status,
        capabilities: opts.capabilities,
        merged,
        ages,
        refused,
        work: Work { endpoints },
    }
}

/// Every reference of every route, resolved once for the route's own kind, and the endpoint
/// addresses that took ([`Work::endpoints`]).
fn resolve_all(
    inputs: &Inputs,
    routes: &[&HttpRoute],
    grants: &grants::Grants<'_>,
    opts: &PlanOptions<'_>,
) -> (Vec<references::ResolvedRoute>, usize) {
    let slices = backends::slices_by_service(inputs);
    let given = backends::given(inputs);
    let labeled = backends::slices_by_label(inputs);
    let endpoints = backends::Endpoints::default();
    let none = BTreeMap::new();
    let refs = backends::Refs {
        grpc: false,
        backends: opts.backends,
        grants,
        services: &inputs.services,
        given: &given,
        slices: &slices,
        refused_services: &inputs.refused_services,
        refused_slices: &inputs.refused_slices,
        allow_external_name: opts.allow_external_name,
        pools: &inputs.inference_pools,
        labeled: &labeled,
        refused_pools: &none,
        endpoints: &endpoints,
    };
    let refused_pools = inference::admit(inputs, &refs, opts.pool_units_per_tenant);
    let refs = backends::Refs { refused_pools: &refused_pools, ..refs };
    let resolved = routes.iter().map(|r| references::resolve_route(r, &refs)).collect();
    (resolved, endpoints.made())
}

/// The rules and matches of each route with an id (by node; another route's are empty), each
/// planned once, whatever the servers it serves; each route and its references are dropped
/// once planned (an owned route is freed).
fn rules_of<R: std::borrow::Borrow<HttpRoute>>(
    routes: impl IntoIterator<Item = R>,
    (ids, resolved, experimental): (Vec<Option<RouteId>>, Vec<references::ResolvedRoute>, bool),
    warnings: &mut Vec<String>,
) -> Vec<precedence::RouteRules> {
    let mut compiled = precedence::Compiled::default();
    let routes = routes.into_iter().zip(resolved).zip(ids);
    let rules = routes.map(|((r, refs), id)| {
        let Some(id) = id else { return precedence::RouteRules::default() };
        precedence::route_rules(r.borrow(), &id, &refs, experimental, &mut compiled, warnings)
    });
    rules.collect()
}

/// The loader's warnings, after one for each kind of thing it met but does not support.
fn input_warnings(inputs: &Inputs) -> Vec<String> {
    let unsupported = inputs
        .unsupported
        .iter()
        .map(|(what, at)| format!("{what} is not supported yet and was ignored (first in {at})"));
    unsupported.chain(inputs.warnings.iter().cloned()).collect()
}

/// Each written rule's id, its match count and the matches it skipped (for its status).
fn rule_outcomes(ports: &[PortPlan]) -> impl Iterator<Item = (&RuleId, usize, &[(usize, String)])> {
    let rules = ports.iter().flat_map(|p| &p.servers).flat_map(|s| &s.rules);
    rules.map(|r| (&r.id, r.match_count, r.skipped_matches.as_slice()))
}

/// The words NGINX cannot take (`plan/words.rs`), then the budgets: what does not fit of
/// what tenants share, newest first; and the servers merged as they will be written.
fn refusals(
    ports: &[PortPlan],
    ages: &Ages,
    opts: &PlanOptions<'_>,
) -> (Vec<(Unit, String)>, Merged) {
    let mut refused = budget::Refusals::default();
    refused.extend(words::refusals(ports));
    if let Some(pos) = opts.list_word {
        refused.extend(words::lists(ports, ages, &refused.list, pos));
    }
    budget::listening_sockets(ports, ages, opts.worker_connections, opts.open_files, &mut refused);
    budget::server_names(ports, ages, &mut refused);
    let regex = (opts.regex_memory_per_tenant, opts.regex_memory_total);
    if opts.regex_per_location {
        budget::inline_regex_memory(ports, ages, &mut refused, regex);
    }
    // Servers the same on several ports as they will be written: the budgets above keep
    // servers apart (an attachment refused); the memory walk refuses routes and locations
    // alone, which [`merged`] does not read, so this is the plan's merging.
    let merged = merged(ports, &refused.list);
    let lists = list_bytes::Limits::of(
        opts.module_max_memory,
        opts.regex_memory_total,
        opts.list_memory_per_tenant,
    );
    // `--carrier variable` compiles each list per request (`set $http_matches`): no list at
    // load, no matches.json; its patterns are charged all the same.
    let carrier = match (opts.regex_per_location, opts.list_word) {
        (true, _) => list_bytes::Carrier::Inline,
        (false, None) => list_bytes::Carrier::Preload,
        (false, Some(_)) => list_bytes::Carrier::Variable,
    };
    let memory = (lists, regex);
    let listed = list_bytes::memory((ports, &merged), ages, &refused.left, memory, carrier);
    debug_assert!(listed.iter().all(|(u, _)| matches!(u, Unit::Route(_) | Unit::Location(..))));
    refused.extend(listed);
    (refused.list, merged)
}

/// Servers the same on several ports, written once ([`Merged`]); but a server of a Gateway
/// that leaves out a route's attachment ([`Unit::Attachment`]) and that holds that route
/// (its rules or the names it brings) is written for its own port (a server alike of another
/// Gateway keeps the route). Every other server merges as it would without the refusal, so
/// a newer tenant's refused attachment never changes another tenant's server blocks.
fn merged(ports: &[PortPlan], refused: &[(Unit, String)]) -> Merged {
    let mut detached: BTreeMap<(&str, &str), BTreeSet<&RouteId>> = BTreeMap::new();
    for (r, _) in refused {
        if let Unit::Attachment { route, gateway } = r {
            detached.entry((&*gateway.namespace, &*gateway.name)).or_default().insert(route);
        }
    }
    if detached.is_empty() {
        return Merged::of(ports);
    }
    Merged::keeping_apart(ports, |s| {
        let Some(routes) =
            s.listener.as_ref().and_then(|l| detached.get(&(&*l.namespace, &*l.gateway)))
        else {
            return false;
        };
        s.brought_by.iter().any(|r| routes.contains(r))
            || s.rules.iter().any(|rule| routes.contains(&rule.id.route))
    })
}

/// The routes by namespace/name (indexes of `all`), and each one's place by age: older first,
/// then "alphabetical order by {namespace}/{name}" (the last tie-breakers of precedence).
fn routes_by_age(all: &[HttpRoute]) -> (Vec<usize>, Vec<usize>) {
    let mut order: Vec<usize> = (0..all.len()).collect();
    order.sort_by(|&a, &b| by_name(&all[a], &all[b]));
    let metas: Vec<_> = order.iter().map(|&i| &all[i].metadata).collect();
    let mut ages = vec![0; order.len()];
    for (age, i) in ids::oldest_first(&metas).into_iter().enumerate() {
        ages[i] = age;
    }
    (order, ages)
}

/// Routes by namespace/name.
fn by_name(a: &HttpRoute, b: &HttpRoute) -> std::cmp::Ordering {
    (&a.metadata.namespace, &a.metadata.name).cmp(&(&b.metadata.namespace, &b.metadata.name))
}

/// The plan of manifests `yaml` with the default options changed by `edit` (unit tests).
#[cfg(test)]
pub(crate) fn plan_yaml(yaml: &str, edit: impl FnOnce(&mut PlanOptions<'_>)) -> Plan {
    let mut inputs = Inputs::default();
    crate::model::load_text(std::path::Path::new("t.yaml"), yaml, &mut inputs).unwrap();
    let backends = BackendMap::new();
    let mut opts = PlanOptions::new(&backends);
    edit(&mut opts);
    plan(&inputs, &opts)
}
