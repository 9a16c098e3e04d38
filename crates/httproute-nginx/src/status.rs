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
use std::io::Write as _;

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
    let items = items(status);
    if items.is_empty() {
        let list = List { api_version: "v1", items, kind: "List" };
        return serde_yaml_ng::to_writer(out, &list).map_err(|e| e.to_string());
    }
    write_items(items, out)
}

/// The items of the status file: the Gateways with listeners (in input order), the Gateways
/// refused as a whole, then the routes.
fn items(status: &Status) -> Vec<Item<'_>> {
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
    items
}

/// [`write`] through serde_yaml_ng alone, for the tests: the text [`write`] must equal.
#[cfg(test)]
fn whole(status: &Status) -> String {
    let list = List { api_version: "v1", items: items(status), kind: "List" };
    serde_yaml_ng::to_string(&list).unwrap_or_default()
}

/// The items, written one by one.
fn write_items(items: Vec<Item<'_>>, out: &mut dyn std::io::Write) -> Result<(), String> {
    // Item by item, as serde_yaml_ng writes a List of them: a route's item of plain words
    // (most of a large file) written here, ~10 times cheaper than through libyaml's emitter;
    // any other item by serde_yaml_ng, alone in a List whose first and last lines are cut.
    let mut w = std::io::BufWriter::with_capacity(64 << 10, out);
    let io = |e: std::io::Error| e.to_string();
    w.write_all(LIST_START.as_bytes()).map_err(io)?;
    let mut text = String::new();
    for item in items {
        text.clear();
        let written = match &item {
            Item::Route(o) => route_item(o, &mut text),
            Item::Gateway(_) => false,
        };
        if !written {
            text.clear();
            text.push_str(&one_item(item)?);
        }
        w.write_all(text.as_bytes()).map_err(io)?;
    }
    w.write_all(LIST_END.as_bytes()).map_err(io)?;
    w.flush().map_err(io)
}

/// The lines serde_yaml_ng writes before a List's items, and after them.
const LIST_START: &str = "apiVersion: v1\nitems:\n";
const LIST_END: &str = "kind: List\n";

/// `item` as serde_yaml_ng writes it among a List's items: its lines in a List of one. An
/// item's lines do not depend on the items around it (block style, no line width, no
/// anchors).
fn one_item(item: Item<'_>) -> Result<String, String> {
    let list = List { api_version: "v1", items: vec![item], kind: "List" };
    let text = serde_yaml_ng::to_string(&list).map_err(|e| e.to_string())?;
    text.strip_prefix(LIST_START)
        .and_then(|t| t.strip_suffix(LIST_END))
        .map(str::to_owned)
        .ok_or_else(|| "generator bug: a status item not written as a List's".to_owned())
}

/// Whether serde_yaml_ng writes `s` as it is (a plain scalar): an ASCII letter, then letters,
/// digits and `-._/`, and not a word YAML reads as null or a boolean (those it quotes). No
/// such word is a number, has a space (where a line could fold) or a character libyaml
/// quotes.
fn plain(s: &str) -> bool {
    let b = s.as_bytes();
    b.first().is_some_and(u8::is_ascii_alphabetic)
        && b.iter().all(|c| c.is_ascii_alphanumeric() || b"-._/".contains(c))
        && !matches!(
            s,
            "null" | "Null" | "NULL" | "true" | "True" | "TRUE" | "false" | "False" | "FALSE"
        )
}

/// Appends `key: value` after `indent` (its spaces, ending in `- ` for a sequence item's first
/// key).
fn line(out: &mut String, indent: &str, key: &str, value: &str) {
    out.push_str(indent);
    out.push_str(key);
    out.push_str(": ");
    out.push_str(value);
    out.push('\n');
}

/// A route's item as serde_yaml_ng writes it, into `out`: false (`out` partly written) when
/// one of its words is not [`plain`], or a condition has a message (text of any kind).
fn route_item(o: &Object<'_, RouteParents<'_>>, out: &mut String) -> bool {
    let r = o.status.parents.0;
    let words = [o.api_version, o.kind, o.metadata.name, o.metadata.namespace, CONTROLLER];
    if !words.into_iter().all(plain) {
        return false;
    }
    line(out, "- ", "apiVersion", o.api_version);
    line(out, "  ", "kind", o.kind);
    out.push_str("  metadata:\n");
    line(out, "    ", "name", o.metadata.name);
    line(out, "    ", "namespace", o.metadata.namespace);
    out.push_str("  status:\n");
    if r.parents.is_empty() {
        out.push_str("    parents: []\n");
        return true;
    }
    out.push_str("    parents:\n");
    r.parents.iter().all(|(p, cs)| parent_item(&Ref::of(p, &r.id.namespace), cs, out))
}

/// One parentRef's item of a route's `parents` ([`route_item`]).
fn parent_item(p: &Ref<'_>, conditions: &[Condition], out: &mut String) -> bool {
    let names = [Some(p.group), Some(p.kind), Some(p.name), Some(p.namespace), p.section_name];
    if !names.into_iter().flatten().all(plain) {
        return false;
    }
    if conditions.is_empty() {
        out.push_str("    - conditions: []\n");
    } else {
        out.push_str("    - conditions:\n");
    }
    for c in conditions {
        let (reason, kind) = (c.reason.as_str(), c.kind.as_str());
        if !c.message.is_empty() || !plain(reason) || !plain(kind) {
            return false;
        }
        line(out, "      - ", "reason", reason);
        line(out, "        ", "status", if c.ok { "'True'" } else { "'False'" });
        line(out, "        ", "type", kind);
    }
    line(out, "      ", "controllerName", CONTROLLER);
    out.push_str("      parentRef:\n");
    line(out, "        ", "group", p.group);
    line(out, "        ", "kind", p.kind);
    line(out, "        ", "name", p.name);
    line(out, "        ", "namespace", p.namespace);
    if let Some(port) = p.port {
        line(out, "        ", "port", &port.to_string());
    }
    if let Some(s) = p.section_name {
        line(out, "        ", "sectionName", s);
    }
    true
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{ListenerId, RouteId, RouteKind};

    fn parent(
        name: &str,
        namespace: Option<&str>,
        port: Option<u16>,
        section: Option<&str>,
    ) -> ParentRef {
        ParentRef {
            name: name.into(),
            namespace: namespace.map(Into::into),
            section_name: section.map(Into::into),
            port,
            kind: None,
            group: None,
        }
    }

    /// Every route's item written here or by serde_yaml_ng reads as serde_yaml_ng writes the
    /// whole List: words it writes plain or quotes, messages, empty lists, ports, sections.
    #[test]
    fn items_are_written_as_serde_yaml_ng_writes_the_list() {
        let ok = vec![
            Condition::yes(ConditionType::Accepted, Reason::Accepted),
            Condition::no(ConditionType::ResolvedRefs, Reason::BackendNotFound, String::new()),
        ];
        let why = "a: b\n'c' \"d\" #e \u{e9} \u{2028}".to_owned();
        let told = vec![Condition::no(ConditionType::Accepted, Reason::Invalid, why)];
        let names = [
            "route-0", "true", "True", "null", "123", "0x1f", "a b", "a:b", "-a", "\u{e9}",
            "a.b/c_d", "y", "off", "",
        ];
        let mut routes = Vec::new();
        for (i, name) in names.iter().enumerate() {
            let parents = match i % 4 {
                0 => vec![(parent("gw", None, None, None), ok.clone())],
                1 => vec![(parent(name, Some("other"), Some(8080), Some(name)), ok.clone())],
                2 => vec![
                    (parent("gw", None, None, None), told.clone()),
                    (parent("gw", None, Some(1), None), vec![]),
                ],
                _ => vec![],
            };
            let kind = if i % 2 == 0 { RouteKind::Http } else { RouteKind::Grpc };
            let id = RouteId::new(kind, (*name).into(), (*name).into());
            routes.push(RouteStatus { id: id.clone(), parents, attached: vec![] });
            let id = RouteId::new(kind, "default".into(), (*name).into());
            routes.push(RouteStatus {
                id,
                parents: vec![(parent("gw", None, None, None), ok.clone())],
                attached: vec![],
            });
        }
        let listeners = vec![ListenerStatus {
            id: ListenerId {
                namespace: "default".into(),
                gateway: "gw".into(),
                name: "http".into(),
            },
            attached_routes: 3,
            conditions: ok.clone(),
        }];
        for listeners in [vec![], listeners] {
            let status =
                Status { listeners, routes: std::mem::take(&mut routes), ..Status::default() };
            assert_eq!(yaml(&status), whole(&status));
            routes = status.routes;
        }
        assert_eq!(yaml(&Status::default()), whole(&Status::default()));
    }
}
