//! Configurations written by httproute-nginx, run in a real NGINX with the module: requests
//! land on the backend the Gateway API says they should.

mod common;

use std::collections::BTreeMap;

use common::{Headers, Nginx, Prefix, free_ports};
use httproute_nginx::{BackendMap, Carrier, Options};

const BACKENDS: [&str; 19] = [
    "coffee-v1",
    "coffee-v2",
    "tea",
    "tea-post",
    "blue",
    "api",
    "beta",
    "status",
    "w1",
    "w2",
    "wild",
    "getonly",
    "root",
    "items",
    "menu",
    "echo",
    "rw",
    "secure",
    "mirror",
];

fn manifests(port: u16, tls_port: u16) -> String {
    // The HTTPS listener's certificate, as a kubernetes.io/tls Secret among the manifests.
    let secret = common::self_signed_secret("secure-cert", "secure.test", "*.secure.test");
    secret
        + &format!(
            r#"
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {{name: gw, namespace: default}}
spec:
  listeners:
  - {{name: http, port: {port}, protocol: HTTP}}
  - {{name: wild, port: {port}, protocol: HTTP, hostname: "*.wild.test"}}
  - {{name: exact, port: {port}, protocol: HTTP, hostname: "a.wild.test"}}
  - name: https
    port: {tls_port}
    protocol: HTTPS
    hostname: "*.secure.test"
    tls: {{certificateRefs: [{{name: secure-cert}}]}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: coffee, namespace: default, creationTimestamp: "2026-01-01T00:00:00Z"}}
spec:
  parentRefs: [{{name: gw, sectionName: http}}]
  hostnames: [cafe.test]
  rules:
  - matches: [{{path: {{type: PathPrefix, value: /coffee}}}}]
    backendRefs: [{{name: coffee-v1, port: 80}}]
  - matches:
    - path: {{type: PathPrefix, value: /coffee}}
      headers: [{{name: version, value: v2}}]
    - path: {{type: PathPrefix, value: /coffee}}
      queryParams: [{{name: TEST, value: v2}}]
    backendRefs: [{{name: coffee-v2, port: 80}}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: blue, namespace: default, creationTimestamp: "2026-02-01T00:00:00Z"}}
spec:
  parentRefs: [{{name: gw, sectionName: http}}]
  hostnames: [cafe.test]
  rules:
  - matches:
    - path: {{type: PathPrefix, value: /coffee}}
      headers: [{{name: x-team, type: RegularExpression, value: "^bl"}}]
    backendRefs: [{{name: blue, port: 80}}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: tea, namespace: default}}
spec:
  parentRefs: [{{name: gw}}]
  hostnames: [cafe.test]
  rules:
  - matches: [{{path: {{type: Exact, value: /tea}}, method: POST}}]
    backendRefs: [{{name: tea-post, port: 80}}]
  - matches: [{{path: {{type: Exact, value: /tea}}, method: GET}}]
    backendRefs: [{{name: tea, port: 80}}]
  - matches: [{{path: {{type: PathPrefix, value: /get-only}}, method: GET}}]
    backendRefs: [{{name: getonly, port: 80}}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: api, namespace: default}}
spec:
  parentRefs: [{{name: gw, sectionName: http}}]
  hostnames: [cafe.test]
  rules:
  - matches: [{{path: {{type: PathPrefix, value: /api}}}}]
    backendRefs: [{{name: api, port: 80}}]
  - matches:
    - path: {{type: PathPrefix, value: /api/v2/}}
      headers: [{{name: x-beta, value: "1"}}]
    backendRefs: [{{name: beta, port: 80}}]
  - matches: [{{path: {{type: Exact, value: /api/v2/status}}}}]
    backendRefs: [{{name: status, port: 80}}]
  - matches: [{{path: {{type: PathPrefix, value: /split}}}}]
    backendRefs: [{{name: w1, port: 80, weight: 3}}, {{name: w2, port: 80, weight: 1}}, {{name: root, port: 80, weight: 0}}]
  - matches: [{{path: {{type: PathPrefix, value: /broken}}}}]
  - matches: [{{path: {{type: PathPrefix, value: /zero}}}}]
    backendRefs: [{{name: w1, port: 80, weight: 0}}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: regex, namespace: default}}
spec:
  parentRefs: [{{name: gw, sectionName: http}}]
  hostnames: [cafe.test]
  rules:
  - matches: [{{path: {{type: RegularExpression, value: "/api/v[0-9]+/items/[0-9]+$"}}}}]
    backendRefs: [{{name: items, port: 80}}]
  - matches:
    - path: {{type: RegularExpression, value: "/menu/[a-z]+\\.json"}}
      headers: [{{name: x-fmt, value: json}}]
    backendRefs: [{{name: menu, port: 80}}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: filters, namespace: default}}
spec:
  parentRefs: [{{name: gw, sectionName: http}}]
  hostnames: [cafe.test]
  rules:
  - matches: [{{path: {{type: PathPrefix, value: /echo}}}}]
    filters:
    - type: RequestHeaderModifier
      requestHeaderModifier:
        set: [{{name: X-Set, value: "s$1\\\"q"}}]
        add: [{{name: X-Add, value: added}}]
        remove: [X-Gone]
    - type: ResponseHeaderModifier
      responseHeaderModifier:
        add: [{{name: X-Resp, value: "r$x"}}]
        remove: [X-Backend-Secret]
    - type: RequestMirror
      requestMirror: {{backendRef: {{name: mirror, port: 80}}}}
    backendRefs: [{{name: echo, port: 80}}]
  - matches: [{{path: {{type: PathPrefix, value: /old}}}}]
    filters:
    - type: RequestRedirect
      requestRedirect:
        hostname: new.test
        statusCode: 301
        path: {{type: ReplacePrefixMatch, replacePrefixMatch: /new}}
  - matches: [{{path: {{type: Exact, value: /moved}}}}]
    filters:
    - type: RequestRedirect
      requestRedirect: {{scheme: https, path: {{type: ReplaceFullPath, replaceFullPath: /here}}}}
  - matches: [{{path: {{type: PathPrefix, value: /rw}}}}]
    filters:
    - type: URLRewrite
      urlRewrite: {{hostname: backend.test, path: {{type: ReplacePrefixMatch, replacePrefixMatch: /api/v1/}}}}
    backendRefs: [{{name: rw, port: 80}}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: secure, namespace: default}}
spec:
  parentRefs: [{{name: gw, sectionName: https}}]
  rules:
  - backendRefs: [{{name: secure, port: 80}}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: wild, namespace: default}}
spec:
  parentRefs: [{{name: gw, sectionName: wild}}]
  rules:
  - backendRefs: [{{name: wild, port: 80}}]
"#
        )
}

/// A plain NGINX whose servers stand in for the Services: each says its name. Ports come from
/// one `free_ports` call: two servers on one port would answer for each other.
fn backends() -> (Nginx, BackendMap, u16, u16) {
    let mut body = String::new();
    let mut map = BackendMap::new();
    // The backends, the backend NGINX's own port and the gateway's: all distinct.
    let ports = free_ports(BACKENDS.len() + 3);
    for (name, &port) in BACKENDS.iter().zip(&ports) {
        let answer = match *name {
            // Records what it is sent; its answers go nowhere.
            "mirror" => "access_log logs/mirror.log; return 200;".to_owned(),
            "rw" => "return 200 \"rw $host $request_uri\\n\";".to_owned(),
            // Shows the request headers it got, and sends one the route's filter removes.
            "echo" => "add_header X-Backend-Secret yes; \
                       return 200 \"echo set=[$http_x_set] add=[$http_x_add] gone=[$http_x_gone]\\n\";"
                .to_owned(),
            _ => format!("return 200 \"{name} $request_uri\\n\";"),
        };
        body.push_str(&format!("server {{ listen 127.0.0.1:{port}; {answer} }}\n"));
        map.insert(format!("default/{name}:80"), format!("127.0.0.1:{port}"));
    }
    body.push_str("server { listen 127.0.0.1:{PORT}; return 404; }\n");
    let p = Prefix::new_on("backends", &body, &[], ports[BACKENDS.len()]);
    let (ok, text) = p.test();
    assert!(ok, "{text}");
    (p.start(), map, ports[BACKENDS.len() + 1], ports[BACKENDS.len() + 2])
}

fn gateway(carrier: Carrier, map: &BackendMap, port: u16, tls_port: u16) -> Nginx {
    let src = Prefix::scratch("manifests");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("all.yaml"), manifests(port, tls_port)).unwrap();
    let out = Prefix::scratch("generated");
    let opts = Options {
        module: common::module_path().display().to_string(),
        carrier,
        listen_address: Some("127.0.0.1".into()),
        certificates: Default::default(),
        resolvers: Vec::new(),
        experimental: false,
        nginx_version: common::nginx_version(),
        allow_external_name: false,
        global: Default::default(),
        port_unavailable: None,
    };
    let (generated, warnings) = httproute_nginx::generate(&[src], map, &opts).expect("generate");
    assert!(warnings.is_empty(), "{warnings:?}");
    httproute_nginx::write_dir(&out, &generated).unwrap();
    let p = Prefix::existing(out, "nginx.conf", port);
    let (ok, text) = p.test();
    assert!(ok, "nginx -t:\n{text}\n{}", generated.nginx_conf);
    p.start()
}

fn answer(n: &Nginx, method: &str, host: &str, target: &str, headers: Headers) -> String {
    let mut h: Vec<(&str, &str)> = vec![("Host", host)];
    h.extend_from_slice(headers);
    let mut req = format!("{method} {target} HTTP/1.0\r\n");
    for (k, v) in &h {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    let r = n.raw(req.as_bytes()).expect("request");
    if r.status == 200 {
        if method == "HEAD" {
            "200".to_owned()
        } else {
            r.body.split(' ').next().unwrap_or("").to_owned()
        }
    } else {
        r.status.to_string()
    }
}

#[test]
fn generated_configurations_route_as_the_gateway_api_says() {
    let (backend, map, port, tls_port) = backends();
    for carrier in [Carrier::Preload, Carrier::Inline, Carrier::Variable] {
        let n = gateway(carrier, &map, port, tls_port);
        let cafe = "cafe.test";
        let cases: &[(&str, &str, &str, Headers, &str)] = &[
            // the NGF blog example
            ("GET", cafe, "/coffee", &[], "coffee-v1"),
            ("GET", cafe, "/coffee", &[("version", "v2")], "coffee-v2"),
            ("GET", cafe, "/coffee/latte?TEST=v2", &[], "coffee-v2"),
            // across routes: equal precedence, the older route wins; regex header
            ("GET", cafe, "/coffee", &[("x-team", "blue")], "blue"),
            ("GET", cafe, "/coffee", &[("x-team", "blue"), ("version", "v2")], "coffee-v2"),
            // segments: /coffee matches /coffee/x, not /coffeex
            ("GET", cafe, "/coffeex", &[], "404"),
            // methods; HEAD is not GET
            ("POST", cafe, "/tea", &[], "tea-post"),
            ("GET", cafe, "/tea", &[], "tea"),
            ("PUT", cafe, "/tea", &[], "404"),
            ("GET", cafe, "/get-only/x", &[], "getonly"),
            ("HEAD", cafe, "/get-only/x", &[], "404"),
            // exact beats prefix; longer prefix with conditions; fallback to a shorter prefix
            ("GET", cafe, "/api/v2/status", &[("x-beta", "1")], "status"),
            ("GET", cafe, "/api/v2/x", &[("x-beta", "1")], "beta"),
            ("GET", cafe, "/api/v2", &[("x-beta", "1")], "beta"),
            ("GET", cafe, "/api/v2/x", &[], "api"),
            ("GET", cafe, "/api", &[], "api"),
            ("GET", cafe, "/apix", &[], "404"),
            // regex paths: above prefixes, below exact paths, anchored at the start, matched
            // against the decoded URI like `location ~`, fallback when their conditions fail
            ("GET", cafe, "/api/v2/items/42?x=1", &[("x-beta", "1")], "items"),
            ("GET", cafe, "/api/v2/items/%34%32", &[], "items"),
            ("GET", cafe, "/api/v2/items/42/more", &[], "api"),
            ("GET", cafe, "/x/api/v2/items/42", &[], "404"),
            ("GET", cafe, "/menu/today.json", &[("x-fmt", "json")], "menu"),
            ("GET", cafe, "/menu/today.json", &[], "404"),
            ("GET", cafe, "/menu/todayXjson", &[("x-fmt", "json")], "404"),
            // no backend, all weights zero: 500
            ("GET", cafe, "/broken", &[], "500"),
            ("GET", cafe, "/zero/1", &[], "500"),
            // hostnames: unknown host 404; wildcard listener; listener isolation
            ("GET", "other.test", "/coffee", &[], "404"),
            ("GET", "x.wild.test", "/anything", &[], "wild"),
            ("GET", "deep.x.wild.test", "/", &[], "wild"),
            ("GET", "a.wild.test", "/anything", &[], "404"),
            ("GET", "wild.test", "/", &[], "404"),
        ];
        for (method, host, target, headers, want) in cases {
            assert_eq!(
                answer(&n, method, host, target, headers),
                *want,
                "{carrier:?}: {method} {host}{target} {headers:?}"
            );
        }
        // header filters: set (a value with $, a backslash and a quote), add (appended to the
        // client's value, or alone), remove; response add and remove
        let echo = |headers: &str| {
            let req = format!("GET /echo HTTP/1.0\r\nHost: cafe.test\r\n{headers}\r\n");
            n.raw(req.as_bytes()).expect("echo")
        };
        let r = echo("X-Set: client\r\nX-Add: client\r\nX-Gone: bye\r\n");
        assert_eq!(r.body, "echo set=[s$1\\\"q] add=[client,added] gone=[]\n", "{carrier:?} {r:?}");
        assert!(r.head.contains("\r\nX-Resp: r$x"), "{carrier:?} {r:?}");
        assert!(!r.head.contains("X-Backend-Secret"), "{carrier:?} {r:?}");
        assert_eq!(echo("").body, "echo set=[s$1\\\"q] add=[added] gone=[]\n", "{carrier:?}");
        // RequestMirror: the mirror backend gets a copy, the client the echo backend's answer.
        let tag = format!("/echo?mirror={carrier:?}");
        let r = n.raw(format!("GET {tag} HTTP/1.0\r\nHost: cafe.test\r\n\r\n").as_bytes()).unwrap();
        assert!(r.body.starts_with("echo "), "{r:?}");
        let log = backend.prefix.dir.join("logs/mirror.log");
        common::wait_until(format!("a mirrored {tag} in {log:?}"), || {
            std::fs::read_to_string(&log).unwrap_or_default().contains(&format!("GET {tag} "))
        });
        // RequestRedirect: prefix replaced on a segment boundary, query kept, the listener's
        // port (not 80) kept when the filter names neither scheme nor port; a scheme alone
        // drops it. URLRewrite: host and path prefix rewritten on the way to the backend.
        let location = |target: &str| {
            let req = format!("GET {target} HTTP/1.0\r\nHost: cafe.test\r\n\r\n");
            let r = n.raw(req.as_bytes()).expect("redirect");
            let loc = r.head.lines().find_map(|l| l.strip_prefix("Location: ")).map(str::to_owned);
            (r.status, loc.unwrap_or_default())
        };
        assert_eq!(location("/old/a/b?x=1"), (301, format!("http://new.test:{port}/new/a/b?x=1")));
        assert_eq!(location("/old"), (301, format!("http://new.test:{port}/new")));
        assert_eq!(location("/oldx"), (404, String::new()));
        assert_eq!(location("/moved?q=1"), (302, "https://cafe.test/here?q=1".to_owned()));
        let rw = |target: &str| {
            let req = format!("GET {target} HTTP/1.0\r\nHost: cafe.test\r\n\r\n");
            n.raw(req.as_bytes()).expect("rewrite").body
        };
        assert_eq!(rw("/rw/x/y?z=%20"), "rw backend.test /api/v1/x/y?z=%20\n", "{carrier:?}");
        assert_eq!(rw("/rw"), "rw backend.test /api/v1/\n", "{carrier:?}");
        // HTTPS listener: routed by SNI and Host; a Host that selects another server than the
        // SNI did is 421; a name no HTTPS listener serves gets no TLS handshake.
        assert_eq!(
            common::https(tls_port, "a.secure.test", None, "/x?y=1"),
            Some((200, "secure /x?y=1\n".into()))
        );
        assert_eq!(
            common::https(tls_port, "a.secure.test", Some("b.secure.test"), "/").map(|r| r.0),
            Some(200)
        );
        assert_eq!(
            common::https(tls_port, "a.secure.test", Some("cafe.test"), "/coffee").map(|r| r.0),
            Some(421)
        );
        assert_eq!(common::https(tls_port, "other.test", None, "/"), None);
        // weights 3:1 (and 0): 1,000 requests, each share within 5 points of its target.
        let mut seen: BTreeMap<String, u32> = BTreeMap::new();
        for _ in 0..1000 {
            *seen.entry(answer(&n, "GET", cafe, "/split", &[])).or_default() += 1;
        }
        let w1 = seen.get("w1").copied().unwrap_or(0);
        let w2 = seen.get("w2").copied().unwrap_or(0);
        assert_eq!(w1 + w2, 1000, "{seen:?}");
        assert!((700..=800).contains(&w1), "{carrier:?}: 3:1 split gave {seen:?}");
        n.finish();
    }
    backend.finish();
}
