//! `generate --nginx`: the output checked by a real NGINX (the vendored one), what it refuses
//! of a tenant's object left out with a condition, the innocent routes served.
//!
//! The input NGINX refuses and the generator's own checks miss is made here by leaving one
//! check out: a rule's timeout past what NGINX's time parser takes (`u64::MAX` ms; the CRD's
//! duration pattern bounds real timeouts to 366,096,438,999 ms, which NGINX takes), set in
//! the plan after validation. NGINX refuses its line ("proxy_connect_timeout" directive
//! invalid value); unchecked, that stops every listener; checked, that rule alone is left out.

mod common;

use std::path::Path;

use common::{Prefix, free_port, nginx_binary};
use httproute_nginx::emit::{Output, Tree};
use httproute_nginx::plan::{ConditionType, Plan, Reason};
use httproute_nginx::{BackendMap, Options, nginx_check};

fn gateway(port: u16) -> String {
    format!(
        "kind: Gateway\nmetadata: {{name: gw, namespace: default}}\nspec:\n  listeners: [{{name: http, port: {port}, protocol: HTTP}}]\n---\n"
    )
}

/// A route on `host` whose one rule redirects `path` to /to-NAME: answered without a backend.
fn redirect_route(name: &str, host: &str, path: &str) -> String {
    format!(
        "kind: HTTPRoute\nmetadata: {{name: {name}, namespace: default}}\nspec:\n  parentRefs: [{{name: gw}}]\n  hostnames: [{host}]\n  rules:\n  - matches: [{{path: {{type: PathPrefix, value: \"{path}\"}}}}]\n    filters:\n    - type: RequestRedirect\n      requestRedirect: {{path: {{type: ReplaceFullPath, replaceFullPath: /to-{name}}}, statusCode: 302}}\n---\n"
    )
}

/// A route on `host` whose one rule proxies `path` to Service s with a timeout (which the
/// test then sets past NGINX's limit: [`unchecked_timeouts`]).
fn timed_route(name: &str, host: &str, path: &str) -> String {
    format!(
        "kind: HTTPRoute\nmetadata: {{name: {name}, namespace: default}}\nspec:\n  parentRefs: [{{name: gw}}]\n  hostnames: [{host}]\n  rules:\n  - matches: [{{path: {{type: PathPrefix, value: \"{path}\"}}}}]\n    timeouts: {{request: 10s}}\n    backendRefs: [{{name: s, port: 80}}]\n---\n"
    )
}

fn backends() -> BackendMap {
    let mut b = BackendMap::new();
    b.insert("default/s:80".into(), "127.0.0.1:9".into());
    b
}

/// The plan of `yaml`, with the timeout of every rule that has one set past what NGINX's
/// time parser takes: the check the generator would miss.
fn unchecked_timeouts(yaml: &str) -> Plan {
    let mut inputs = httproute_nginx::model::Inputs::default();
    httproute_nginx::model::load_text(Path::new("a.yaml"), yaml, &mut inputs).unwrap();
    let mut plan = httproute_nginx::plan_for(&inputs, &backends(), &common::generator_options());
    for port in &mut plan.ports {
        for server in &mut port.servers {
            for rule in &mut server.rules {
                // Rule plans are shared by the servers of a route: this server's own copy.
                let rule = std::sync::Arc::make_mut(rule);
                if rule.timeout_ms.is_some() {
                    rule.timeout_ms = Some(u64::MAX);
                }
            }
        }
    }
    plan
}

fn checked(plan: &Plan, opts: &Options, out_dir: &Path) -> Result<Output, String> {
    nginx_check::emit_checked(plan, opts, Tree::Keep, &nginx_binary(), out_dir).map(|c| c.output)
}

fn get(n: &common::Nginx, host: &str, path: &str) -> u16 {
    n.raw(format!("GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n").as_bytes())
        .expect("request")
        .status
}

#[test]
fn a_tenant_line_nginx_refuses_drops_its_rule_and_the_rest_loads() {
    let port = free_port();
    let yaml = format!(
        "{}{}{}{}",
        gateway(port),
        redirect_route("a", "a.test", "/a"),
        timed_route("b", "b.test", "/t"),
        redirect_route("c", "b.test", "/c"),
    );
    let mut plan = unchecked_timeouts(&yaml);
    let opts = common::generator_options();

    // Unchecked, NGINX refuses the whole configuration.
    let plain = httproute_nginx::emit::emit(&plan, &opts).expect("written");
    let unchecked = Prefix::scratch("check-unchecked");
    httproute_nginx::write_dir(&unchecked, &plain).unwrap();
    let (ok, text) = Prefix::existing(unchecked, "nginx.conf", port).test();
    assert!(!ok && text.contains("invalid value"), "{text}");

    let out_dir = Prefix::scratch("check-out");
    let out = checked(&plan, &opts, &out_dir).expect("a configuration that loads");
    let dropped: Vec<String> = out.dropped.iter().map(|(id, w)| format!("{id}: {w}")).collect();
    assert_eq!(dropped.len(), 1, "{dropped:?}");
    assert!(
        dropped[0].contains("\"proxy_connect_timeout\" directive invalid value"),
        "{dropped:?}"
    );
    assert!(out.dropped[0].0.route.name == "b" && out.dropped[0].0.index == 0, "{dropped:?}");
    assert!(out.warnings.iter().any(|w| w.contains("invalid value")), "{:?}", out.warnings);
    // The status says why, on b's parentRef, and only there: its one rule is gone, so it is
    // not accepted (plan/status.rs dropped_from_configuration).
    httproute_nginx::plan::dropped_from_configuration(&mut plan.status, &out.dropped);
    for route in &plan.status.routes {
        let conditions: Vec<_> = route.parents.iter().flat_map(|(_, cs)| cs).collect();
        let accepted: Vec<_> =
            conditions.iter().filter(|c| c.kind == ConditionType::Accepted).collect();
        assert_eq!(accepted.len(), 1, "{}: {conditions:?}", route.id.name);
        let partial = conditions.iter().any(|c| c.kind == ConditionType::PartiallyInvalid);
        assert!(!partial, "{}: {conditions:?}", route.id.name);
        if route.id.name == "b" {
            let a = accepted[0];
            assert!(!a.ok && a.reason == Reason::UnsupportedValue, "{a:?}");
            assert!(
                a.message.starts_with("no rule is left to serve: Dropped Rule 0: nginx -t: "),
                "{a:?}"
            );
        } else {
            assert!(accepted[0].ok, "{}: {conditions:?}", route.id.name);
        }
    }

    httproute_nginx::write_dir(&out_dir, &out).unwrap();
    let p = Prefix::existing(out_dir, "nginx.conf", port);
    let (ok, text) = p.test();
    assert!(ok, "{text}");
    let n = p.start();
    assert_eq!(get(&n, "a.test", "/a"), 302, "the innocent route answers");
    assert_eq!(get(&n, "b.test", "/c"), 302, "the same host's other route answers");
    assert_eq!(get(&n, "b.test", "/t"), 404, "the refused rule is left out");
    n.finish();
}

#[test]
fn a_refusal_of_the_run_s_own_line_or_past_the_bound_leaves_the_output_as_it_was() {
    let port = free_port();
    let out_dir = Prefix::scratch("check-run-out");
    std::fs::create_dir_all(&out_dir).unwrap();
    std::fs::write(out_dir.join("previous"), "kept").unwrap();

    // The run's own line: the module the output's load_module names is not there.
    let plan =
        unchecked_timeouts(&format!("{}{}", gateway(port), redirect_route("a", "a.test", "/a")));
    let opts = Options { module: "/nonexistent/m.so".into(), ..common::generator_options() };
    let e = checked(&plan, &opts, &out_dir).err().expect("refused");
    assert!(e.contains("the run's own") && e.contains("is left as it was"), "{e}");

    // One more refused object than a run leaves out: each is left out in turn, then the run
    // gives up; one fewer: all are left out, and it loads.
    let n = nginx_check::MAX_RETRIES + 1;
    let routes = |k: usize| -> String {
        let mut yaml = gateway(port);
        for i in 0..k {
            yaml += &timed_route(&format!("b{i}"), &format!("b{i}.test"), "/t");
        }
        yaml
    };
    let opts = common::generator_options();
    let e = checked(&unchecked_timeouts(&routes(n)), &opts, &out_dir).err().expect("refused");
    assert!(e.contains(&format!("{} objects are left out", n - 1)), "{e}");
    let out = checked(&unchecked_timeouts(&routes(n - 1)), &opts, &out_dir).expect("loads");
    assert_eq!(out.dropped.len(), n - 1);

    // The output directory is as it was, and no scratch directory is left beside it.
    assert_eq!(std::fs::read_to_string(out_dir.join("previous")).unwrap(), "kept");
    let beside: Vec<String> = std::fs::read_dir(out_dir.parent().unwrap())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.contains(".check-"))
        .collect();
    assert!(beside.is_empty(), "{beside:?}");
}
