//! `--status FILE`: the conditions a Gateway API controller would write, for every Gateway,
//! listener and HTTPRoute parentRef, as a YAML `List` of objects with only `metadata` and
//! `status` (the shape `kubectl get -o yaml` shows). No `lastTransitionTime` or
//! `observedGeneration`: the file describes one run, and stays the same for the same input.
//!
//! Serialized straight from the plan's [`Status`] (views that borrow it, keys in sorted order,
//! as a JSON object's would be): no tree of the whole file is built, and the listeners are
//! grouped by Gateway in one pass, so the work and memory are linear in the objects.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::{Serialize, Serializer};

use crate::model::ParentRef;
use crate::plan::{Condition, ConditionType, ListenerStatus, Reason, RouteStatus, Status};

/// The `controllerName` written in route parent statuses.
pub const CONTROLLER: &str = "ngx-http-matches.example/httproute-nginx";

const GROUP: &str = "gateway.networking.k8s.io";
const KINDS: [Kind; 2] =
    [Kind { group: GROUP, kind: "HTTPRoute" }, Kind { group: GROUP, kind: "GRPCRoute" }];

/// The status of everything the plan saw, as YAML ([`write`]).
pub fn yaml(status: &Status) -> String {
    let mut text = Vec::new();
    write(status, &mut text).map_or(String::new(), |()| String::from_utf8(text).unwrap_or_default())
}

/// Writes the status of everything the plan saw to `out` as YAML, as it is serialized (no
/// text of the whole file is held): the Gateways with listeners (in input order), the Gateways
/// refused as a whole, then the routes.
pub fn write(status: &Status, out: &mut dyn std::io::Write) -> Result<(), String> {
    let mut index: HashMap<(&str, &str), usize> = HashMap::new();
    let mut gateways: Vec<Object<GatewayStatus>> = Vec::new();
    for l in &status.listeners {
        let (ns, name) = (l.id.namespace.as_str(), l.id.gateway.as_str());
        let i = *index.entry((ns, name)).or_insert_with(|| {
            gateways.push(Object::new("Gateway", name, ns, GatewayStatus::of(Cow::Owned(vec![]))));
            gateways.len() - 1
        });
        gateways[i].status.listeners.push(Listener::of(l));
    }
    let mut items: Vec<Item> = gateways
        .into_iter()
        .map(|mut g| {
            g.status.conditions = programmed(&g.status.listeners);
            Item::Gateway(g)
        })
        .collect();
    items.extend(status.refused_gateways.iter().map(|g| {
        let status = GatewayStatus::of(Cow::Borrowed(&g.conditions));
        Item::Gateway(Object::new("Gateway", &g.name, &g.namespace, status))
    }));
    items.extend(status.routes.iter().map(|r| {
        let status = RouteParents { parents: Parents(r) };
        Item::Route(Object::new(r.id.kind.as_str(), &r.id.name, &r.id.namespace, status))
    }));
    let list = List { api_version: "v1", items, kind: "List" };
    serde_yaml_ng::to_writer(out, &list).map_err(|e| e.to_string())
}

/// A Gateway's conditions: `Programmed` when one of its listeners is.
fn programmed(listeners: &[Listener]) -> Conditions<'static> {
    let ok = listeners
        .iter()
        .any(|l| l.conditions.0.iter().any(|c| c.kind == ConditionType::Programmed && c.ok));
    let accepted = Condition::yes(ConditionType::Accepted, Reason::Accepted);
    let programmed = if ok {
        Condition::yes(ConditionType::Programmed, Reason::Programmed)
    } else {
        let why = "no listener is programmed".into();
        Condition::no(ConditionType::Programmed, Reason::Invalid, why)
    };
    Conditions(Cow::Owned(vec![accepted, programmed]))
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct List<'a> {
    api_version: &'static str,
    items: Vec<Item<'a>>,
    kind: &'static str,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Item<'a> {
    Gateway(Object<'a, GatewayStatus<'a>>),
    Route(Object<'a, RouteParents<'a>>),
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Object<'a, T> {
    api_version: &'static str,
    kind: &'a str,
    metadata: Metadata<'a>,
    status: T,
}

impl<'a, T> Object<'a, T> {
    fn new(kind: &'a str, name: &'a str, namespace: &'a str, status: T) -> Self {
        let metadata = Metadata { name, namespace };
        Object { api_version: "gateway.networking.k8s.io/v1", kind, metadata, status }
    }
}

#[derive(Serialize)]
struct Metadata<'a> {
    name: &'a str,
    namespace: &'a str,
}

#[derive(Serialize)]
struct GatewayStatus<'a> {
    conditions: Conditions<'a>,
    listeners: Vec<Listener<'a>>,
}

impl<'a> GatewayStatus<'a> {
    fn of(conditions: Cow<'a, [Condition]>) -> Self {
        GatewayStatus { conditions: Conditions(conditions), listeners: Vec::new() }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Listener<'a> {
    attached_routes: usize,
    conditions: Conditions<'a>,
    name: &'a str,
    supported_kinds: [Kind; 2],
}

impl<'a> Listener<'a> {
    fn of(l: &'a ListenerStatus) -> Self {
        Listener {
            attached_routes: l.attached_routes,
            conditions: Conditions(Cow::Borrowed(&l.conditions)),
            name: &l.id.name,
            supported_kinds: KINDS,
        }
    }
}

#[derive(Serialize, Clone, Copy)]
struct Kind {
    group: &'static str,
    kind: &'static str,
}

/// A route with the status of each parentRef.
#[derive(Serialize)]
struct RouteParents<'a> {
    parents: Parents<'a>,
}

struct Parents<'a>(&'a RouteStatus);

impl Serialize for Parents<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = self.0;
        s.collect_seq(r.parents.iter().map(|(p, cs)| Parent {
            conditions: Conditions(Cow::Borrowed(cs)),
            controller_name: CONTROLLER,
            parent_ref: Ref::of(p, &r.id.namespace),
        }))
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Parent<'a> {
    conditions: Conditions<'a>,
    controller_name: &'static str,
    parent_ref: Ref<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Ref<'a> {
    group: &'static str,
    kind: &'static str,
    name: &'a str,
    namespace: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    port: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    section_name: Option<&'a str>,
}

impl<'a> Ref<'a> {
    fn of(p: &'a ParentRef, route_namespace: &'a str) -> Self {
        Ref {
            group: GROUP,
            kind: "Gateway",
            name: &p.name,
            namespace: p.namespace.as_deref().unwrap_or(route_namespace),
            port: p.port,
            section_name: p.section_name.as_deref(),
        }
    }
}

struct Conditions<'a>(Cow<'a, [Condition]>);

impl Serialize for Conditions<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|c| ConditionView {
            message: (!c.message.is_empty()).then(|| crate::message::escape_message(&c.message)),
            reason: c.reason.as_str(),
            status: if c.ok { "True" } else { "False" },
            kind: c.kind.as_str(),
        }))
    }
}

#[derive(Serialize)]
struct ConditionView {
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<String>,
    reason: &'static str,
    status: &'static str,
    #[serde(rename = "type")]
    kind: &'static str,
}
