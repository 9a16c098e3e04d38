//! GRPCRoute through a configuration written by httproute-nginx, with real gRPC servers and a
//! real gRPC client (grpcio, Debian's python3-grpcio; `tests/grpc/echo.py`): calls over h2c
//! with prior knowledge reach the backend their method and headers select, and HTTP/1.1 keeps
//! working on the same port (NGINX 1.25.1 and later; before, such a port keeps HTTP/1.1 only,
//! and a port of GRPCRoutes alone speaks h2c).

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use common::{Prefix, free_ports};
use httproute_nginx::BackendMap;

const PYTHON: &str = "/usr/bin/python3";

fn script() -> String {
    format!("{}/tests/grpc/echo.py", env!("CARGO_MANIFEST_DIR"))
}

/// `nginx -v` says 1.25.1 or later (`http2 on`, h2c beside HTTP/1.1 on one port).
fn nginx_has_http2_directive() -> bool {
    common::nginx_version() >= (1, 25, 1)
}

struct Servers(Child);

impl Drop for Servers {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn grpc_servers(specs: &[(&str, u16)]) -> Servers {
    let mut c = Command::new(PYTHON);
    c.arg(script()).arg("serve");
    for (name, port) in specs {
        c.arg(format!("{name}={port}"));
    }
    let mut child = c.stdout(Stdio::piped()).spawn().expect("start the gRPC servers");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert_eq!(
        line.trim(),
        "ready",
        "the gRPC servers did not start (is python3-grpcio installed?)"
    );
    Servers(child)
}

fn call(port: u16, method: &str, authority: &str, meta: &[&str]) -> String {
    let out = Command::new(PYTHON)
        .arg(script())
        .arg("call")
        .arg(format!("127.0.0.1:{port}"))
        .arg(method)
        .arg(authority)
        .args(meta)
        .output()
        .expect("run the gRPC client");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[test]
fn grpc_calls_route_by_service_method_and_headers() {
    let ports = free_ports(5);
    let (port, blue, green, regex, web) = (ports[0], ports[1], ports[2], ports[3], ports[4]);
    let _servers = grpc_servers(&[("blue", blue), ("green", green), ("regex", regex)]);
    let _web = Prefix::new_on(
        "web",
        "server { listen 127.0.0.1:{PORT}; return 200 \"web\\n\"; }",
        &[],
        web,
    )
    .start();
    let yaml = format!(
        r#"apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {{name: gw}}
spec:
  gatewayClassName: nginx
  listeners: [{{name: h, port: {port}, protocol: HTTP}}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {{name: echo}}
spec:
  parentRefs: [{{name: gw}}]
  hostnames: [grpc.test]
  rules:
  - matches: [{{method: {{service: echo.Echo, method: Say}}, headers: [{{name: x-tag, value: blue}}]}}]
    backendRefs: [{{name: blue, port: 80}}]
  - matches: [{{method: {{service: echo.Echo}}}}]
    filters:
    - {{type: RequestHeaderModifier, requestHeaderModifier: {{set: [{{name: x-added, value: "yes"}}]}}}}
    backendRefs: [{{name: green, port: 80}}]
  - matches: [{{method: {{type: RegularExpression, service: "echo\\..*", method: "Sh.*"}}}}]
    backendRefs: [{{name: regex, port: 80}}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: web, creationTimestamp: "2020-01-01T00:00:00Z"}}
spec:
  parentRefs: [{{name: gw}}]
  hostnames: [web.test]
  rules:
  - backendRefs: [{{name: web, port: 80}}]
"#
    );
    let mut backends = BackendMap::new();
    for (name, p) in [("blue", blue), ("green", green), ("regex", regex), ("web", web)] {
        backends.insert(format!("default/{name}:80"), format!("127.0.0.1:{p}"));
    }
    let (p, warnings) =
        common::generated("grpc", &yaml, port, &backends, &common::generator_options());
    if !nginx_has_http2_directive() {
        // One port cannot carry both before 1.25.1: HTTP/1.1 stays, the GRPCRoute is refused.
        assert!(
            warnings.len() == 1
                && warnings[0].contains("cannot serve HTTP/1.1 and cleartext HTTP/2")
                && warnings[0].contains("default/echo"),
            "{warnings:?}"
        );
        let gw = p.start();
        assert!(call(port, "/echo.Echo/Say", "grpc.test", &["x-tag=blue"]).starts_with("ERROR"));
        let r = gw.raw(b"GET / HTTP/1.1\r\nHost: web.test\r\nConnection: close\r\n\r\n").unwrap();
        assert_eq!((r.status, r.body.as_str()), (200, "web\n"));
        return;
    }
    assert!(warnings.is_empty(), "{warnings:?}");
    let gw = p.start();

    assert_eq!(
        call(port, "/echo.Echo/Say", "grpc.test", &["x-tag=blue"]),
        "blue /echo.Echo/Say x-tag=blue"
    );
    assert_eq!(
        call(port, "/echo.Echo/Say", "grpc.test", &["x-tag=red"]),
        "green /echo.Echo/Say x-added=yes x-tag=red"
    );
    assert_eq!(call(port, "/echo.Echo/Shout", "grpc.test", &[]), "regex /echo.Echo/Shout");
    assert_eq!(call(port, "/echo.EchoV2/Say", "grpc.test", &[]), "ERROR UNIMPLEMENTED");
    assert_eq!(call(port, "/other.Svc/Do", "grpc.test", &[]), "ERROR UNIMPLEMENTED");
    // Another host: no route serves it (404, which gRPC reads as UNIMPLEMENTED); on
    // web.test the HTTPRoute answers, with something that is not gRPC.
    assert_eq!(call(port, "/echo.Echo/Say", "other.test", &["x-tag=blue"]), "ERROR UNIMPLEMENTED");
    assert_eq!(call(port, "/echo.Echo/Say", "web.test", &["x-tag=blue"]), "ERROR UNKNOWN");
    // HTTP/1.1 on the same port still works.
    let r = gw.raw(b"GET / HTTP/1.1\r\nHost: web.test\r\nConnection: close\r\n\r\n").unwrap();
    assert_eq!((r.status, r.body.as_str()), (200, "web\n"));
}

#[test]
fn grpc_on_a_listener_of_its_own_works_on_every_nginx() {
    // A port for GRPCRoutes only: h2c with `http2 on` (1.25.1 and later) or `listen ... http2`
    // (before); HTTP/1.1 routes on another port are untouched either way. GRPCRoute
    // precedence: a match naming the service beats one naming only the method, whatever
    // the rule order (as paths, a method alone is a regex, which would rank above a prefix).
    let ports = free_ports(6);
    let (port, web_port, blue, svc, mo, web) =
        (ports[0], ports[1], ports[2], ports[3], ports[4], ports[5]);
    let _servers = grpc_servers(&[("blue", blue), ("svc", svc), ("mo", mo)]);
    let _web = Prefix::new_on(
        "web-own",
        "server { listen 127.0.0.1:{PORT}; return 200 \"web\\n\"; }",
        &[],
        web,
    )
    .start();
    let yaml = format!(
        r#"kind: Gateway
metadata: {{name: gw}}
spec:
  gatewayClassName: nginx
  listeners:
  - {{name: g, port: {port}, protocol: HTTP}}
  - {{name: h, port: {web_port}, protocol: HTTP}}
---
kind: GRPCRoute
metadata: {{name: echo}}
spec:
  parentRefs: [{{name: gw, sectionName: g}}]
  rules:
  - matches: [{{method: {{method: Say}}}}]
    backendRefs: [{{name: mo, port: 80}}]
  - matches: [{{method: {{service: echo.Echo}}}}]
    backendRefs: [{{name: svc, port: 80}}]
  - matches: [{{method: {{service: echo.Echo, method: Hello}}}}]
    backendRefs: [{{name: blue, port: 80}}]
---
kind: HTTPRoute
metadata: {{name: web, creationTimestamp: "2020-01-01T00:00:00Z"}}
spec:
  parentRefs: [{{name: gw, sectionName: h}}]
  rules:
  - backendRefs: [{{name: web, port: 80}}]
"#
    );
    let mut backends = BackendMap::new();
    for (name, p) in [("blue", blue), ("svc", svc), ("mo", mo), ("web", web)] {
        backends.insert(format!("default/{name}:80"), format!("127.0.0.1:{p}"));
    }
    let (p, warnings) =
        common::generated("grpc-own", &yaml, port, &backends, &common::generator_options());
    assert!(warnings.is_empty(), "{warnings:?}");
    let legacy = !nginx_has_http2_directive();
    let conf = std::fs::read_to_string(p.dir.join(&p.conf)).unwrap();
    assert_eq!(conf.contains(&format!("listen 127.0.0.1:{port} http2")), legacy, "{conf}");
    let _gw = p.start();
    assert_eq!(call(port, "/echo.Echo/Hello", "any.test", &[]), "blue /echo.Echo/Hello");
    assert_eq!(call(port, "/echo.Echo/Say", "any.test", &[]), "svc /echo.Echo/Say");
    assert_eq!(call(port, "/echo.Echo/Other", "any.test", &[]), "svc /echo.Echo/Other");
    assert_eq!(call(port, "/other.Svc/Say", "any.test", &[]), "mo /other.Svc/Say");
    assert_eq!(call(port, "/other.Svc/Hello", "any.test", &[]), "ERROR UNIMPLEMENTED");
    let mut s = std::net::TcpStream::connect(("127.0.0.1", web_port)).unwrap();
    std::io::Write::write_all(&mut s, b"GET / HTTP/1.1\r\nHost: w\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut text = String::new();
    std::io::Read::read_to_string(&mut s, &mut text).unwrap();
    assert!(text.starts_with("HTTP/1.1 200") && text.ends_with("web\n"), "{text}");
}
