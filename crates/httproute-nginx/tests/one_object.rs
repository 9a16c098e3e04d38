//! One object mutated, structurally or by value: a valid two-tenant input (namespaces `a` and
//! `b`, each a Gateway on a port of its own, routes, Services, EndpointSlices; `b` also a
//! ReferenceGrant and a Namespace) has ONE of tenant b's objects changed at a random node: set
//! to null, `""`, `[]`, `{}`, a number at or past a CRD bound, a hostile string, a reference to
//! nothing, an unknown kind; the node removed; or the object deleted. Then:
//! - the run succeeds (only the operator's own inputs may stop it);
//! - tenant a's servers and the match lists they name are what they were, word for word,
//!   keys and variable names included (keys are content-addressed, variables named by
//!   their rule);
//! - whenever a match of tenant b that was served is served no more, something of b says why:
//!   a condition that is not OK (or `PartiallyInvalid`) on b's routes, listeners or Gateways,
//!   or a refusal warning; except where the change itself asks for less (a list of rules,
//!   matches or parentRefs emptied or removed, the kind, metadata or spec replaced).
//!
//! `HTTPROUTE_ONE_OBJECT_CASES=N` runs N cases (default 64, about a second).

mod common;

use std::collections::BTreeSet;
use std::path::PathBuf;

use httproute_nginx::conf::Stmt;
use httproute_nginx::plan::ConditionType;
use httproute_nginx::{BackendMap, Options};
use manifest_gen::objects::{self, Set};
use proptest::prelude::*;
use serde_json::{Value, json};

fn opts() -> Options {
    Options { listen_address: Some("127.0.0.1".into()), ..common::options() }
}

fn service(ns: &str, name: &str) -> Value {
    objects::service(Some(ns), name, 80, None).set("spec.ports.0.targetPort", 8080)
}

fn slice(ns: &str, name: &str, ip: &str) -> Value {
    let endpoints = json!([objects::endpoint(&[ip.to_owned()], Some(true))]);
    objects::endpoint_slice(Some(ns), &format!("{name}-1"), name, "IPv4", endpoints, 8080)
}

fn gateway(ns: &str, port: u16) -> Value {
    objects::gateway(Some(ns), "gw", vec![objects::listener("http", port, None, None)])
        .set("spec.gatewayClassName", "nginx")
}

/// Tenant a's objects (never mutated), then tenant b's.
fn tenant_objects() -> (Vec<Value>, Vec<Value>) {
    let a = vec![
        gateway("a", 18080),
        json!({"kind": "HTTPRoute", "apiVersion": "gateway.networking.k8s.io/v1",
               "metadata": {"name": "r", "namespace": "a"},
               "spec": {"parentRefs": [{"name": "gw"}], "rules": [
                   {"matches": [{"path": {"type": "PathPrefix", "value": "/a"},
                                 "headers": [{"name": "x-a", "value": "1"}]}],
                    "backendRefs": [{"name": "s", "port": 80}]},
                   {"matches": [{"path": {"type": "Exact", "value": "/r"}}],
                    "filters": [{"type": "RequestRedirect", "requestRedirect":
                        {"path": {"type": "ReplaceFullPath", "replaceFullPath": "/x"}}}]}]}}),
        service("a", "s"),
        slice("a", "s", "10.0.0.1"),
    ];
    let b = vec![
        gateway("b", 18081),
        json!({"kind": "HTTPRoute", "apiVersion": "gateway.networking.k8s.io/v1",
               "metadata": {"name": "r", "namespace": "b"},
               "spec": {"parentRefs": [{"name": "gw", "sectionName": "http"}],
                        "hostnames": ["b.test"], "rules": [
                   {"matches": [{"path": {"type": "PathPrefix", "value": "/b"},
                                 "headers": [{"name": "x-b", "value": "1"}],
                                 "queryParams": [{"name": "q", "value": "v"}], "method": "GET"}],
                    "filters": [{"type": "RequestHeaderModifier", "requestHeaderModifier":
                        {"set": [{"name": "x-set", "value": "b"}]}}],
                    "backendRefs": [{"name": "s", "port": 80, "weight": 3},
                                    {"name": "t", "port": 80, "weight": 1}]},
                   {"matches": [{"path": {"type": "Exact", "value": "/r"}}],
                    "filters": [{"type": "RequestRedirect", "requestRedirect":
                        {"path": {"type": "ReplaceFullPath", "replaceFullPath": "/y"},
                         "statusCode": 301}}]},
                   {"matches": [{"path": {"type": "RegularExpression", "value": "/re/[0-9]+"}}],
                    "timeouts": {"request": "5s"},
                    "backendRefs": [{"name": "s", "port": 80}]}]}}),
        json!({"kind": "GRPCRoute", "apiVersion": "gateway.networking.k8s.io/v1",
               "metadata": {"name": "g", "namespace": "b"},
               "spec": {"parentRefs": [{"name": "gw"}], "hostnames": ["g.test"],
                        "rules": [{"matches": [{"method": {"service": "pkg.S", "method": "M"}}],
                                   "backendRefs": [{"name": "s", "port": 80}]}]}}),
        service("b", "s"),
        service("b", "t"),
        slice("b", "s", "10.0.1.1"),
        slice("b", "t", "10.0.1.2"),
        objects::service_grant(Some("b"), "to-a", "HTTPRoute", "a", None),
        json!({"kind": "Namespace", "apiVersion": "v1",
               "metadata": {"name": "b", "labels": {"team": "b"}}}),
    ];
    (a, b)
}

/// A step into a JSON value.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
}

/// Every node of `v` (the root too), as paths.
fn paths(v: &Value, at: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
    out.push(at.clone());
    match v {
        Value::Object(m) => {
            for (k, c) in m {
                at.push(Step::Key(k.clone()));
                paths(c, at, out);
                at.pop();
            }
        }
        Value::Array(a) => {
            for (i, c) in a.iter().enumerate() {
                at.push(Step::Index(i));
                paths(c, at, out);
                at.pop();
            }
        }
        _ => {}
    }
}

#[derive(Debug, Clone)]
enum Op {
    Set(Value),
    Remove,
    DeleteObject,
}

fn op() -> impl Strategy<Value = Op> {
    let text = prop_oneof![
        Just(String::new()),
        Just("a\tb".to_owned()),
        Just("$x".to_owned()),
        Just("line\nnext".to_owned()),
        Just("\u{85}".to_owned()),
        Just("missing".to_owned()),
        Just("c".to_owned()),
        Just("Foo".to_owned()),
        Just("*".to_owned()),
        Just("/".to_owned()),
        Just("/b".to_owned()),
        Just("10.0.1.9".to_owned()),
        Just("127.0.0.1".to_owned()),
        Just("FQDN".to_owned()),
        Just("ExternalName".to_owned()),
        (1usize..6000).prop_map(|n| "x".repeat(n)),
    ];
    let number = prop_oneof![
        Just(json!(0)),
        Just(json!(1)),
        Just(json!(65535)),
        Just(json!(65536)),
        Just(json!(1_000_000)),
        Just(json!(2_147_483_647)),
        Just(json!(4_294_967_296_u64)),
        Just(json!(-1)),
        Just(json!(1.5)),
    ];
    prop_oneof![
        Just(Op::Set(Value::Null)),
        Just(Op::Set(json!([]))),
        Just(Op::Set(json!({}))),
        Just(Op::Set(json!(true))),
        number.prop_map(Op::Set),
        text.prop_map(|s| Op::Set(Value::String(s))),
        Just(Op::Remove),
        Just(Op::DeleteObject),
    ]
}

/// Applies `op` at `path` of `v`; false when it cannot (the root removed).
fn apply(v: &mut Value, path: &[Step], op: &Op) -> bool {
    let Some((last, parent)) = path.split_last() else {
        if let Op::Set(x) = op {
            *v = x.clone();
        }
        return !matches!(op, Op::Remove);
    };
    let mut node = v;
    for s in parent {
        node = match s {
            Step::Key(k) => &mut node[k.as_str()],
            Step::Index(i) => &mut node[*i],
        };
    }
    match (op, last) {
        (Op::Set(x), Step::Key(k)) => node[k.as_str()] = x.clone(),
        (Op::Set(x), Step::Index(i)) => node[*i] = x.clone(),
        (Op::Remove, Step::Key(k)) => {
            node.as_object_mut().unwrap().remove(k);
        }
        (Op::Remove, Step::Index(i)) => {
            node.as_array_mut().unwrap().remove(*i);
        }
        (Op::DeleteObject, _) => unreachable!(),
    }
    true
}

/// Whether the change itself asks for less to be served: a list of rules, matches or
/// parentRefs emptied, removed or replaced, or the object's kind, metadata or spec, or the
/// route deleted.
fn asks_for_less(kind: &str, path: &[Step], op: &Op) -> bool {
    let keys: Vec<&str> = path
        .iter()
        .filter_map(|s| match s {
            Step::Key(k) => Some(k.as_str()),
            Step::Index(_) => None,
        })
        .collect();
    let last_key = match path.last() {
        Some(Step::Key(k)) => Some(k.as_str()),
        _ => None,
    };
    match op {
        Op::DeleteObject => kind.ends_with("Route") || kind == "Gateway",
        _ => {
            path.is_empty()
                || keys.contains(&"parentRefs")
                || keys.contains(&"hostnames")
                || keys == ["metadata", "namespace"]
                || matches!(
                    last_key,
                    Some("rules" | "matches" | "spec" | "kind" | "metadata" | "listeners")
                )
                // An element of rules or matches removed.
                || (matches!(op, Op::Remove)
                    && matches!(path.last(), Some(Step::Index(_)))
                    && matches!(keys.last(), Some(&"rules" | &"matches" | &"listeners")))
        }
    }
}

/// The match list of `key`, its includes (`{"include": KEY}`) replaced by what they name.
fn resolved(lists: &serde_json::Map<String, Value>, key: &str) -> Value {
    match lists.get(key) {
        Some(Value::Array(items)) => Value::Array(
            items
                .iter()
                .map(|i| match i.get("include").and_then(Value::as_str) {
                    Some(k) if i.as_object().is_some_and(|o| o.len() == 1) => resolved(lists, k),
                    _ => i.clone(),
                })
                .collect(),
        ),
        Some(v) => v.clone(),
        None => Value::Null,
    }
}

/// The servers as written, names and keys included (keys are content-addressed and the
/// generator's variables are named by their rule, so no other tenant's objects move them),
/// each `set $match_key KEY` with the list KEY names added, so the lists are compared too.
fn normalized(stmts: &[Stmt], lists: &serde_json::Map<String, Value>) -> Vec<Stmt> {
    stmts
        .iter()
        .map(|s| Stmt {
            words: match &s.words[..] {
                [set, var, key] if set == "set" && var == "$match_key" => {
                    vec![set.clone(), var.clone(), key.clone(), resolved(lists, key).to_string()]
                }
                words => words.to_vec(),
            },
            block: s.block.as_deref().map(|b| normalized(b, lists)),
        })
        .collect()
}

/// Tenant a's servers (listening on 18080, that port's `listen` only) with the match lists
/// they name.
fn tenant_a(out: &httproute_nginx::Output) -> Vec<Stmt> {
    let tree = httproute_nginx::conf_reader::read(&out.nginx_conf).unwrap();
    let http = tree.iter().find(|s| s.words == ["http"]).unwrap();
    let on_a = |d: &Stmt| {
        d.words.first().is_some_and(|w| w == "listen")
            && d.words.get(1).is_some_and(|w| w.ends_with(":18080"))
    };
    let servers: Vec<Stmt> = http
        .block
        .iter()
        .flatten()
        .filter(|s| s.words == ["server"] && s.block.iter().flatten().any(on_a))
        .map(|s| {
            let mut s = s.clone();
            if let Some(b) = s.block.as_mut() {
                b.retain(|d| d.words.first().is_none_or(|w| w != "listen") || on_a(d));
            }
            s
        })
        .collect();
    assert!(!servers.is_empty(), "{}", out.nginx_conf);
    let lists: serde_json::Map<String, Value> = serde_json::from_str(&out.matches_json).unwrap();
    normalized(&servers, &lists)
}

/// What a run makes of `objects`: its output, the matches of tenants other than a that are
/// served ((route kind, rule, match) as the configuration serves them), and whether
/// something not of tenant a says why something is not served.
struct Run {
    out: httproute_nginx::Output,
    served: BTreeSet<(String, usize, usize)>,
    said: Vec<String>,
}

fn run(objects: &[Value]) -> Result<Run, String> {
    // A directory per run: tests run in parallel.
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("hr-one-object-{n}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let text: String = objects.iter().map(|o| format!("{o}\n---\n")).collect();
    std::fs::write(dir.join("all.yaml"), &text).unwrap();
    let inputs: Vec<PathBuf> = vec![dir.clone()];
    let backends = BackendMap::new();
    let g = httproute_nginx::generate_all(&inputs, &backends, &opts())?;
    let model = httproute_nginx::model::load(&inputs).map_err(|e| e.to_string())?;
    let plan = httproute_nginx::explain::plan_as_served(&model, &backends, &opts())?;
    let _ = std::fs::remove_dir_all(&dir);
    let mut served = BTreeSet::new();
    for c in plan
        .ports
        .iter()
        .flat_map(|p| &p.servers)
        .flat_map(|s| &s.locations)
        .flat_map(|l| l.candidates())
    {
        if c.id.route.namespace != "a" {
            // By kind, not name: b has one route of each, and a rename serves it the same.
            served.insert((c.id.route.kind.to_string(), c.id.index, c.match_index));
        }
    }
    let mut said = Vec::new();
    for r in g.status.routes.iter().filter(|r| r.id.namespace != "a") {
        for (_, cs) in &r.parents {
            for c in cs.iter().filter(|c| !c.ok || c.kind == ConditionType::PartiallyInvalid) {
                said.push(format!("{} {}: {}", r.id.kind, r.id, c.message));
            }
        }
    }
    for l in g.status.listeners.iter().filter(|l| l.id.namespace != "a") {
        for c in l.conditions.iter().filter(|c| !c.ok) {
            said.push(format!("listener {}: {}", l.id, c.message));
        }
    }
    for gw in &g.status.refused_gateways {
        said.push(format!("Gateway {}/{} refused", gw.namespace, gw.name));
    }
    said.extend(
        g.warnings
            .iter()
            .filter(|w| w.contains("is refused as the API server") || w.contains("is not served"))
            .cloned(),
    );
    Ok(Run { out: g.output, served, said })
}

fn cases() -> u32 {
    std::env::var("HTTPROUTE_ONE_OBJECT_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(64)
}

#[test]
fn the_base_input_serves_every_match_of_both_tenants() {
    let (a, b) = tenant_objects();
    let base = run(&[a, b].concat()).unwrap();
    assert!(base.said.is_empty(), "{:?}", base.said);
    let want: BTreeSet<(String, usize, usize)> =
        [("HTTPRoute", 0, 0), ("HTTPRoute", 1, 0), ("HTTPRoute", 2, 0), ("GRPCRoute", 0, 0)]
            .into_iter()
            .map(|(r, i, m)| (r.to_owned(), i, m))
            .collect();
    assert_eq!(base.served, want);
    assert!(base.out.nginx_conf.contains("10.0.1.2:8080"), "{}", base.out.nginx_conf);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn one_object_changed_costs_only_itself_and_says_why(
        which in any::<prop::sample::Index>(),
        node in any::<prop::sample::Index>(),
        op in op(),
    ) {
        let (a, b) = tenant_objects();
        static BASE: std::sync::OnceLock<Run> = std::sync::OnceLock::new();
        let base = BASE.get_or_init(|| run(&[a.clone(), b.clone()].concat()).unwrap());
        let oi = which.index(b.len());
        let kind = b[oi]["kind"].as_str().unwrap_or("").to_owned();
        let mut all_paths = Vec::new();
        paths(&b[oi], &mut Vec::new(), &mut all_paths);
        let path = all_paths[node.index(all_paths.len())].clone();
        let mut mutated = b.clone();
        match &op {
            Op::DeleteObject => {
                mutated.remove(oi);
            }
            op => {
                if !apply(&mut mutated[oi], &path, op) {
                    mutated.remove(oi);
                }
            }
        }
        let what = format!("{kind} object {oi}, at {path:?}: {op:?}");
        let m = run(&[a, mutated].concat())
            .map_err(|e| TestCaseError::fail(format!("{what}: the run failed: {e}")))?;
        prop_assert_eq!(tenant_a(&base.out), tenant_a(&m.out), "{}", what);
        let lost: Vec<_> = base.served.difference(&m.served).collect();
        if !lost.is_empty() && !asks_for_less(&kind, &path, &op) {
            prop_assert!(
                !m.said.is_empty(),
                "{}: {:?} no longer served, and nothing says why",
                what,
                lost
            );
        }
    }
}

/// Whether Services and EndpointSlices are given is decided per namespace: tenant a gives
/// none (its backendRef is its Service's cluster DNS name, resolved per request), and b
/// giving a Service, a slice, or a Service the API server refuses changes nothing of a's
/// (before, any Service anywhere made a's reference `BackendNotFound`, a 500).
#[test]
fn a_namespace_without_services_resolves_the_same_whatever_another_gives() {
    let (a, b) = tenant_objects();
    let a: Vec<Value> = a
        .into_iter()
        .filter(|o| !matches!(o["kind"].as_str(), Some("Service" | "EndpointSlice")))
        .collect();
    let (gw_b, route_b) = (b[0].clone(), b[1].clone());
    let alone = run(&[a.clone(), vec![gw_b.clone(), route_b.clone()]].concat()).unwrap();
    assert!(alone.out.nginx_conf.contains("s.a.svc.cluster.local:80"), "{}", alone.out.nginx_conf);
    let mut refused = service("b", "u");
    refused["spec"]["ports"][0]["port"] = json!(0);
    for extra in [
        vec![service("b", "s")],
        vec![slice("b", "s", "10.0.1.1")],
        vec![service("b", "s"), slice("b", "s", "10.0.1.1")],
        vec![refused],
    ] {
        let with =
            run(&[a.clone(), vec![gw_b.clone(), route_b.clone()], extra.clone()].concat()).unwrap();
        assert_eq!(tenant_a(&alone.out), tenant_a(&with.out), "{extra:?}");
    }
}
