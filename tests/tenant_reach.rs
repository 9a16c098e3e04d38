//! Issue #29's reach and fidelity classes end to end: one cluster state holding tenant a's
//! route beside tenant b's objects that once reached what they should not, or stopped the
//! run, generated into one configuration and served by a real NGINX. Each of b's objects
//! costs only itself (its request answers 404, 500 or 503; the configuration never names
//! the address it pointed at) and a's route answers. Pods are a plain NGINX on loopback
//! named by `--backend`; the slices name addresses no request is sent to.

mod common;

use common::{Nginx, free_ports};
use httproute_nginx::BackendMap;

/// The pods: one server per name, each saying its name.
const PODS: [&str; 5] = ["a/web", "sel/web", "ghost/web", "foo/web", "foo-bar/web"];

fn pods() -> (Nginx, BackendMap, u16) {
    let ports = free_ports(PODS.len() + 2);
    let named: Vec<(String, String)> =
        PODS.iter().map(|name| (format!("{name}:80"), (*name).to_owned())).collect();
    let (n, map) = common::backend_servers("reach-pods", &named, &ports);
    (n, map, ports[PODS.len() + 1])
}

fn get(n: &Nginx, host: &str, path: &str) -> (u16, String) {
    let req = format!("GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n");
    let r = n.raw(req.as_bytes()).expect("request");
    (r.status, r.body)
}

/// An HTTPRoute of namespace `ns` on the gateway (`section`: a listener, or every one).
fn route(
    ns: &str,
    name: &str,
    host: &str,
    path: &str,
    backend: &str,
    extra_parent: bool,
) -> String {
    let parent = "{name: gw, namespace: default}";
    let parents = if extra_parent { format!("{parent}, {parent}") } else { parent.to_owned() };
    format!(
        "kind: HTTPRoute\nmetadata: {{name: {name}, namespace: {ns}, creationTimestamp: \
         '2024-01-01T00:00:00Z'}}\nspec:\n  parentRefs: [{parents}]\n  hostnames: [{host}]\n  \
         rules:\n  - matches: [{{path: {{type: PathPrefix, value: {path}}}}}]\n    \
         backendRefs: [{backend}]\n---\n"
    )
}

fn service(ns: &str, name: &str) -> String {
    format!(
        "kind: Service\nmetadata: {{name: {name}, namespace: {ns}}}\nspec:\n  ports: [{{name: \
         http, port: 80, targetPort: 8080}}]\n---\n"
    )
}

fn slice(ns: &str, service: &str, address_type: &str, endpoints: &str) -> String {
    format!(
        "kind: EndpointSlice\nmetadata:\n  name: {service}-x\n  namespace: {ns}\n  labels: \
         {{kubernetes.io/service-name: {service}}}\naddressType: {address_type}\nports: \
         [{{name: http, port: 8080}}]\nendpoints: {endpoints}\n---\n"
    )
}

#[test]
fn each_tenant_object_costs_only_itself_and_reaches_nothing_it_may_not() {
    let (pods, map, port) = pods();
    let mut yaml = format!(
        "kind: Gateway\nmetadata: {{name: gw, namespace: default}}\nspec:\n  listeners:\n  \
         - {{name: http, port: {port}, protocol: HTTP, allowedRoutes: {{namespaces: {{from: \
         All}}}}}}\n  - {{name: sel, port: {port}, protocol: HTTP, hostname: sel.test, \
         allowedRoutes: {{namespaces: {{from: Selector, selector: {{matchLabels: {{team: \
         x}}}}}}}}}}\n---\nkind: Namespace\nmetadata: {{name: sel, labels: {{team: x}}}}\n---\n"
    );
    // Tenant a.
    yaml += &route("a", "web", "a.test", "/a", "{name: web, port: 80}", false);
    // A grant to HTTPRoutes' kind is not one to GRPCRoutes, nor the other way round: b's
    // HTTPRoute is granted only as a GRPCRoute.
    yaml += "kind: ReferenceGrant\nmetadata: {name: g, namespace: a}\nspec:\n  from: [{group: \
             gateway.networking.k8s.io, kind: GRPCRoute, namespace: b}]\n  to: [{group: '', \
             kind: Service}]\n---\n";
    yaml += &route("b", "cross", "b.test", "/cross", "{name: web, namespace: a, port: 80}", false);
    // FQDN slices are never addresses; `endpoints: null` (a Service scaled to 0) does not
    // stop the run; link-local endpoints are refused as the API server refuses them.
    yaml += &service("b", "fq");
    yaml += &slice("b", "fq", "FQDN", "[{addresses: [127.0.0.1], conditions: {ready: true}}]");
    yaml += &route("b", "fq", "b.test", "/fq", "{name: fq, port: 80}", false);
    yaml += &service("b", "zero");
    yaml += &slice("b", "zero", "IPv4", "null");
    yaml += &route("b", "zero", "b.test", "/zero", "{name: zero, port: 80}", false);
    yaml += &service("b", "ll");
    yaml +=
        &slice("b", "ll", "IPv4", "[{addresses: [169.254.169.254], conditions: {ready: true}}]");
    yaml += &route("b", "ll", "b.test", "/ll", "{name: ll, port: 80}", false);
    // Duplicate parentRefs, which the CRD refuses: the route is refused.
    yaml += &route("b", "dup", "b.test", "/dup", "{name: fq, port: 80}", true);
    // A newline in a backendRef name (the CRD allows it): its warning stays one line.
    yaml += &route("b", "nl", "b.test", "/nl", "{name: \"x\\ny\", port: 80}", false);
    // U+0085 (NEL) in an Exact path, and an EndpointSlice port the API server does not
    // range-check: neither stops the run.
    yaml += "kind: HTTPRoute\nmetadata: {name: nel, namespace: b}\nspec:\n  parentRefs: [{name: \
             gw, namespace: default}]\n  hostnames: [b.test]\n  rules:\n  - matches: [{path: \
             {type: Exact, value: \"/nel\\u0085\"}}]\n    backendRefs: [{name: zero, port: \
             80}]\n---\n";
    yaml += &service("b", "big");
    yaml += &slice("b", "big", "IPv4", "[{addresses: [192.0.2.7], conditions: {ready: true}}]")
        .replace("port: 8080", "port: 70000");
    yaml += &route("b", "big", "b.test", "/big", "{name: big, port: 80}", false);
    // A CORS list whose word passes NGINX's 4,094 bytes (64 names of 100 bytes, as the CRD
    // allows): that rule alone is left out.
    let names: Vec<String> = (0..64).map(|i| format!("x-{i:02}{}", "h".repeat(96))).collect();
    yaml += &[
        "kind: HTTPRoute",
        "metadata: {name: cors, namespace: b}",
        "spec:",
        "  parentRefs: [{name: gw, namespace: default}]",
        "  hostnames: [b.test]",
        "  rules:",
        "  - matches: [{path: {type: PathPrefix, value: /cors}}]",
        "    filters:",
        "    - type: CORS",
        "      cors:",
        "        allowOrigins: [\"https://o.test\"]",
        &format!("        allowHeaders: [{}]", names.join(", ")),
        "    backendRefs: [{name: zero, port: 80}]",
        "---\n",
    ]
    .join("\n");
    // A selector admits a namespace by its Namespace object's labels: none, none admitted.
    yaml += &route("ghost", "r", "sel.test", "/g", "{name: web, port: 80}", false);
    yaml += &route("sel", "r", "sel.test", "/s", "{name: web, port: 80}", false);
    // Ties broken by "{namespace}/{name}" as one string: "foo-bar/baz" < "foo/bar-baz"
    // ('-' < '/'), though the pair ("foo", ...) sorts first.
    yaml += &route("foo", "bar-baz", "tie.test", "/tie", "{name: web, port: 80}", false);
    yaml += &route("foo-bar", "baz", "tie.test", "/tie", "{name: web, port: 80}", false);

    let opts = common::generator_options();
    let (p, warnings) = common::generated("reach", &yaml, port, &map, &opts);
    let conf = std::fs::read_to_string(p.dir.join("nginx.conf")).expect("nginx.conf");
    for never in ["169.254.169.254", "127.0.0.1:8080", "192.0.2.7"] {
        assert!(!conf.contains(never), "{never} in the configuration:\n{conf}");
    }
    // As the command prints them (`httproute-nginx: warning: ...`, one line each).
    let printed: Vec<String> =
        warnings.iter().map(|w| httproute_nginx::escape_message(w)).collect();
    assert!(printed.iter().all(|w| !w.contains('\n')), "{printed:#?}");
    assert!(printed.iter().any(|w| w.contains("b/x\\ny is not a valid")), "{printed:#?}");
    assert!(warnings.iter().any(|w| w.contains("ghost")), "{warnings:#?}");
    assert!(
        warnings.iter().any(|w| w.starts_with("b/cors rule 0: CORS allowHeaders")),
        "{warnings:#?}"
    );
    let gw = p.start();
    let want: [(&str, &str, u16, &str); 13] = [
        ("b.test", "/cors", 404, ""),
        // Refused as the CRD's path pattern refuses it: this route alone.
        ("b.test", "/nel%C2%85", 404, ""),
        ("b.test", "/big", 503, ""),
        ("a.test", "/a", 200, "a/web\n"),
        ("b.test", "/cross", 500, ""),
        ("b.test", "/fq", 503, ""),
        ("b.test", "/zero", 503, ""),
        ("b.test", "/ll", 503, ""),
        ("b.test", "/dup", 404, ""),
        ("b.test", "/nl", 500, ""),
        ("sel.test", "/g", 404, ""),
        ("sel.test", "/s", 200, "sel/web\n"),
        ("tie.test", "/tie", 200, "foo-bar/web\n"),
    ];
    for (host, path, status, body) in want {
        let (s, b) = get(&gw, host, path);
        assert_eq!(s, status, "{host}{path}: {b}\n{warnings:#?}");
        if !body.is_empty() {
            assert_eq!(b, body, "{host}{path}");
        }
    }
    gw.finish();
    pods.finish();
}

/// Issue #45 against a real NGINX: tenant b's newer Gateway on a's port, with listeners for
/// a.test, `*.w.test` and y.w.test and a route for z.w.test, does not take those names from
/// a's older routes on a's catch-all listener (a.test, `*.w.test`): a.test, x.w.test,
/// y.w.test and z.w.test still reach a's pod. Before, b's more specific listeners took the
/// names (listener isolation across Gateways) and they answered 404; then, until an older
/// wildcard route held the names under it, y.w.test 404 and z.w.test b's route.
#[test]
fn a_newer_gateway_takes_no_hostname_an_older_route_serves() {
    let (pods, map, port) = pods();
    let a_route = |name: &str, host: &str| {
        format!(
            "kind: HTTPRoute\nmetadata: {{name: {name}, namespace: a, creationTimestamp: \
             '2026-01-01T00:00:01Z'}}\nspec:\n  parentRefs: [{{name: gw}}]\n  hostnames: \
             ['{host}']\n  rules:\n  - matches: [{{path: {{type: PathPrefix, value: /a}}}}]\n    \
             backendRefs: [{{name: web, port: 80}}]\n---\n"
        )
    };
    let mut yaml = format!(
        "kind: Gateway\nmetadata: {{name: gw, namespace: a, creationTimestamp: \
         '2026-01-01T00:00:00Z'}}\nspec:\n  listeners: [{{name: http, port: {port}, protocol: \
         HTTP}}]\n---\n"
    );
    yaml += &a_route("r", "a.test");
    yaml += &a_route("w", "*.w.test");
    yaml += &format!(
        "kind: Gateway\nmetadata: {{name: gw, namespace: b, creationTimestamp: \
         '2026-01-03T00:00:00Z'}}\nspec:\n  listeners:\n  - {{name: l, port: {port}, protocol: \
         HTTP, hostname: a.test}}\n  - {{name: w, port: {port}, protocol: HTTP, hostname: \
         '*.w.test'}}\n  - {{name: y, port: {port}, protocol: HTTP, hostname: y.w.test}}\n---\n"
    );
    yaml += "kind: HTTPRoute\nmetadata: {name: z, namespace: b, creationTimestamp: \
             '2026-01-04T00:00:00Z'}\nspec:\n  parentRefs: [{name: gw}]\n  hostnames: \
             [z.w.test]\n  rules:\n  - backendRefs: [{name: web, port: 80}]\n---\n";
    let opts = common::generator_options();
    let (p, warnings) = common::generated("newer-gateway", &yaml, port, &map, &opts);
    let gw = p.start();
    for host in ["a.test", "x.w.test", "y.w.test", "z.w.test"] {
        let (s, b) = get(&gw, host, "/a");
        assert_eq!((s, b.as_str()), (200, "a/web\n"), "{host}\n{warnings:#?}");
    }
    gw.finish();
    pods.finish();
}

/// Listener isolation over TLS is per listener, not per server (red team, issue #45): tenant
/// b's newer Gateway with an HTTPS listener for foo.a.test, a name a's older `*.a.test`
/// listener and route hold on a's port, brings a server of that name onto a's listener. A
/// connection whose SNI chose it may still carry any host of a's listener (a browser
/// coalesces HTTP/2 connections of one certificate): SNI foo.a.test with Host bar.a.test
/// reaches a's pod, as it did without b's Gateway. Before, each server checked the SNI
/// against its own name and answered 421. A host of no listener of a's is still refused.
#[test]
fn a_newer_gateway_s_listener_does_not_split_my_tls_connections() {
    let (pods, map, port) = pods();
    let gateway = |name: &str, day: u8, host: &str| {
        format!(
            "kind: Gateway\nmetadata: {{name: {name}, namespace: default, creationTimestamp: \
             '2026-01-0{day}T00:00:00Z'}}\nspec:\n  listeners:\n  - {{name: tls, port: {port}, \
             protocol: HTTPS, hostname: '{host}', allowedRoutes: {{namespaces: {{from: All}}}}, \
             tls: {{certificateRefs: [{{name: {name}-cert}}]}}}}\n---\n"
        )
    };
    let mut yaml = common::self_signed_secret("ga-cert", "a.test", "*.a.test");
    yaml += &common::self_signed_secret("gb-cert", "foo.a.test", "foo.a.test");
    yaml += &gateway("ga", 1, "*.a.test");
    yaml += "kind: HTTPRoute\nmetadata: {name: w, namespace: a, creationTimestamp: \
             '2026-01-02T00:00:00Z'}\nspec:\n  parentRefs: [{name: ga, namespace: default}]\n  \
             hostnames: ['*.a.test']\n  rules:\n  - backendRefs: [{name: web, port: 80}]\n---\n";
    let (p, _) = common::generated("tls-alone", &yaml, port, &map, &common::generator_options());
    let alone = p.start();
    let a_pod = Some((200, "a/web\n".to_owned()));
    assert_eq!(common::https(port, "foo.a.test", Some("bar.a.test"), "/"), a_pod);
    alone.finish();
    yaml += &gateway("gb", 3, "foo.a.test");
    let (p, warnings) = common::generated("tls-b", &yaml, port, &map, &common::generator_options());
    let gw = p.start();
    for (sni, host) in
        [("foo.a.test", "bar.a.test"), ("foo.a.test", "foo.a.test"), ("bar.a.test", "foo.a.test")]
    {
        assert_eq!(common::https(port, sni, Some(host), "/"), a_pod, "{sni} {host}\n{warnings:#?}");
    }
    // No listener of a's serves other.test: the catch-all's check still holds.
    assert_eq!(common::https(port, "foo.a.test", Some("other.test"), "/").map(|r| r.0), Some(421));
    gw.finish();
    pods.finish();
}
