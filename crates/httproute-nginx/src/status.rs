//! `--status FILE`: the conditions a Gateway API controller would write, for every Gateway,
//! listener and HTTPRoute parentRef, as a YAML `List` of objects with only `metadata` and
//! `status` (the shape `kubectl get -o yaml` shows). No `lastTransitionTime` or
//! `observedGeneration`: the file describes one run, and stays the same for the same input.

use serde_json::{Value, json};

use crate::plan::{Condition, ConditionType, Reason, RouteStatus, Status};

/// The `controllerName` written in route parent statuses.
pub const CONTROLLER: &str = "ngx-http-matches.example/httproute-nginx";

fn conditions(cs: &[Condition]) -> Value {
    cs.iter()
        .map(|c| {
            let mut v = json!({
                "type": c.kind.as_str(),
                "status": if c.ok { "True" } else { "False" },
                "reason": c.reason.as_str(),
            });
            if !c.message.is_empty() {
                v["message"] = json!(crate::message::escape_message(&c.message));
            }
            v
        })
        .collect()
}

/// The status of everything the plan saw, as YAML: the Gateways with listeners (in input
/// order), the Gateways refused as a whole, then the routes.
pub fn yaml(status: &Status) -> String {
    // Gateways in input order, each with its listeners.
    let mut gateways: Vec<(&str, &str)> = Vec::new();
    for l in &status.listeners {
        let g = (l.id.namespace.as_str(), l.id.gateway.as_str());
        if !gateways.contains(&g) {
            gateways.push(g);
        }
    }
    let mut items: Vec<Value> = gateways.into_iter().map(|g| gateway(status, g)).collect();
    for g in &status.refused_gateways {
        items.push(json!({
            "apiVersion": "gateway.networking.k8s.io/v1",
            "kind": "Gateway",
            "metadata": {"name": g.name, "namespace": g.namespace},
            "status": {"conditions": conditions(&g.conditions), "listeners": []},
        }));
    }
    items.extend(status.routes.iter().map(route));
    let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
    serde_yaml_ng::to_string(&list).unwrap_or_default()
}

/// A Gateway with listeners: `Programmed` when one of them is.
fn gateway(status: &Status, (ns, name): (&str, &str)) -> Value {
    let listeners: Vec<_> =
        status.listeners.iter().filter(|l| l.id.namespace == ns && l.id.gateway == name).collect();
    let programmed = listeners
        .iter()
        .any(|l| l.conditions.iter().any(|c| c.kind == ConditionType::Programmed && c.ok));
    let gateway_conditions = [
        Condition::yes(ConditionType::Accepted, Reason::Accepted),
        if programmed {
            Condition::yes(ConditionType::Programmed, Reason::Programmed)
        } else {
            Condition::no(
                ConditionType::Programmed,
                Reason::Invalid,
                "no listener is programmed".into(),
            )
        },
    ];
    let listeners: Vec<Value> = listeners
        .iter()
        .map(|l| {
            json!({
                "name": l.id.name,
                "attachedRoutes": l.attached_routes,
                "supportedKinds": [
                    {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute"},
                    {"group": "gateway.networking.k8s.io", "kind": "GRPCRoute"},
                ],
                "conditions": conditions(&l.conditions),
            })
        })
        .collect();
    json!({
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {"name": name, "namespace": ns},
        "status": {"conditions": conditions(&gateway_conditions), "listeners": listeners},
    })
}

/// A route with the status of each parentRef.
fn route(r: &RouteStatus) -> Value {
    let parents: Vec<Value> = r
        .parents
        .iter()
        .map(|(p, cs)| {
            let mut parent = json!({
                "group": "gateway.networking.k8s.io",
                "kind": "Gateway",
                "name": p.name,
                "namespace": p.namespace.as_deref().unwrap_or(&r.id.namespace),
            });
            if let Some(s) = &p.section_name {
                parent["sectionName"] = json!(s);
            }
            if let Some(port) = p.port {
                parent["port"] = json!(port);
            }
            json!({"parentRef": parent, "controllerName": CONTROLLER, "conditions": conditions(cs)})
        })
        .collect();
    json!({
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": r.id.kind.as_str(),
        "metadata": {"name": r.id.name, "namespace": r.id.namespace},
        "status": {"parents": parents},
    })
}
