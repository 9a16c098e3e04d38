//! Configurations written by httproute-nginx for cluster states the happy path never has: a
//! Service that does not exist, a Service without ready endpoints, a missing TLS Secret, and
//! backends named only by DNS. Each must load in a real NGINX, and only the requests that need
//! the missing piece may fail. As root with `ip`, a pod in a network namespace the test makes
//! (a veth pair, 198.18.0.0/15 addresses) answers through its EndpointSlice; without, that test
//! says it is skipped.

mod common;

use std::net::UdpSocket;

use common::{Nginx, Prefix, free_ports};
use httproute_nginx::BackendMap;

/// Generates `yaml` with `resolvers` and no `--backend`, checks `nginx -t`, starts: the
/// running gateway and the generator's warnings.
fn gateway(name: &str, yaml: &str, port: u16, resolvers: Vec<String>) -> (Nginx, Vec<String>) {
    let opts = httproute_nginx::Options { resolvers, ..common::generator_options() };
    let (p, warnings) = common::generated(name, yaml, port, &BackendMap::new(), &opts);
    (p.start(), warnings)
}

/// A plain NGINX standing in for the pods: one server per (name, port), each saying its name.
fn pods(servers: &[(&str, u16)]) -> Nginx {
    let body: String = servers
        .iter()
        .map(|(name, port)| {
            format!(
                "server {{ listen 127.0.0.1:{port}; return 200 \"{name} $request_uri\\n\"; }}\n"
            )
        })
        .collect();
    let p = Prefix::new_on("pods", &body, &[], servers[0].1);
    p.start()
}

fn status(n: &Nginx, path: &str) -> (u16, String) {
    let req = format!("GET {path} HTTP/1.0\r\nHost: cluster.test\r\n\r\n");
    let r = n.raw(req.as_bytes()).expect("request");
    (r.status, r.body)
}

const GATEWAY: &str = "apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw}
spec:
  gatewayClassName: nginx
  listeners:
  - {name: http, port: PORT, protocol: HTTP}
---
";

fn route(rules: &[(&str, &str)]) -> String {
    let mut r = String::from(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: r}\n\
         spec:\n  parentRefs: [{name: gw}]\n  hostnames: [cluster.test]\n  rules:\n",
    );
    for (path, backends) in rules {
        r.push_str(&format!(
            "  - matches: [{{path: {{type: PathPrefix, value: {path}}}}}]\n    backendRefs: {backends}\n"
        ));
    }
    r + "---\n"
}

fn service(name: &str, port: u16) -> String {
    format!(
        "apiVersion: v1\nkind: Service\nmetadata: {{name: {name}}}\nspec:\n  ports: [{{name: http, port: {port}, targetPort: 8080}}]\n---\n"
    )
}

/// An EndpointSlice of `service`: (address, ready) endpoints on `port` (the pods' port).
fn slice(service: &str, port: u16, endpoints: &[(&str, bool)]) -> String {
    let eps: Vec<String> = endpoints
        .iter()
        .map(|(a, ready)| format!("{{addresses: [\"{a}\"], conditions: {{ready: {ready}}}}}"))
        .collect();
    format!(
        "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: {service}-x\n  \
         labels: {{kubernetes.io/service-name: {service}}}\naddressType: IPv4\n\
         ports: [{{name: http, port: {port}}}]\nendpoints: [{}]\n---\n",
        eps.join(", ")
    )
}

#[test]
fn missing_service_answers_500_and_a_service_without_endpoints_503() {
    let port = free_ports(1)[0];
    // Slices name pod addresses as a cluster does: never loopback (the API server refuses
    // it, and so does the generator). 192.0.2.0/24 (TEST-NET-1) stands for the pods. No
    // request is sent to a route that would proxy there (nothing may leave this machine):
    // which endpoints were taken is read from the configuration, and only the routes that
    // answer without a connection are requested.
    let yaml = format!(
        "{}{}{}{}{}{}{}{}{}",
        GATEWAY.replace("PORT", &port.to_string()),
        route(&[
            ("/ok", "[{name: ok, port: 80}]"),
            ("/missing", "[{name: ghost, port: 80}]"),
            ("/empty", "[{name: empty, port: 80}]"),
            ("/half", "[{name: ok, port: 80}, {name: ghost, port: 80}]"),
            ("/wrong-port", "[{name: ok, port: 81}]"),
            ("/lo", "[{name: lo, port: 80}]"),
            ("/ext", "[{name: ext, port: 80}]"),
        ]),
        service("ok", 80),
        service("empty", 80),
        slice("ok", 8080, &[("192.0.2.10", true), ("192.0.2.254", false)]),
        slice("empty", 8080, &[("192.0.2.11", false)]),
        // Loopback endpoints, which the API server refuses: never proxied to, said on the route.
        service("lo", 80),
        slice("lo", 8080, &[("127.0.0.1", true)]),
        // An ExternalName Service to the gateway's own loopback: not followed by default.
        "kind: Service\nmetadata: {name: ext}\nspec: {type: ExternalName, externalName: 127.0.0.1}\n---\n",
    );
    let opts = common::generator_options();
    let (p, warnings) = common::generated("svc", &yaml, port, &BackendMap::new(), &opts);
    for want in [
        "rules[1].backendRefs[0]: Service default/ghost does not exist; its share of requests answers 500",
        "rules[2].backendRefs[0]: Service empty has no ready endpoints; its share of requests answers 503",
        "rules[4].backendRefs[0]: Service default/ok has no port 81; its share of requests answers 500",
    ] {
        assert!(warnings.iter().any(|w| w.ends_with(want)), "{want}\n{warnings:#?}");
    }
    assert!(
        warnings.iter().any(|w| w.contains("EndpointSlice default/lo-x") && w.contains("loopback"))
    );
    // The ready endpoint only, on the slice's port; nothing of the not-ready one, of the
    // loopback slice or of the ExternalName's target.
    let conf = std::fs::read_to_string(p.dir.join("nginx.conf")).expect("nginx.conf");
    let servers: Vec<&str> =
        conf.lines().map(str::trim).filter(|l| l.starts_with("server ")).collect();
    assert!(servers.contains(&"server 192.0.2.10:8080;"), "{servers:?}\n{conf}");
    for never in ["192.0.2.254", "192.0.2.11", "127.0.0.1:8080", "127.0.0.1:80;"] {
        assert!(!servers.iter().any(|l| l.contains(never)), "{never}: {servers:?}");
    }
    let gw = p.start();
    assert_eq!(status(&gw, "/missing").0, 500);
    assert_eq!(status(&gw, "/empty").0, 503);
    assert_eq!(status(&gw, "/wrong-port").0, 500);
    assert_eq!(status(&gw, "/lo").0, 503);
    assert_eq!(status(&gw, "/ext").0, 500);
}

/// A DNS server on loopback: A queries for `known` names get 127.0.0.1, everything else an
/// empty answer (AAAA) or NXDOMAIN. Runs until the test process ends.
fn dns_server(known: &'static [&'static str]) -> u16 {
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = sock.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut buf = [0u8; 512];
        while let Ok((n, from)) = sock.recv_from(&mut buf) {
            if let Some(reply) = dns_reply(&buf[..n], known) {
                let _ = sock.send_to(&reply, from);
            }
        }
    });
    port
}

fn dns_reply(q: &[u8], known: &[&str]) -> Option<Vec<u8>> {
    if q.len() < 12 {
        return None;
    }
    // The question: labels up to a 0, then type and class.
    let mut at = 12;
    let mut labels = Vec::new();
    loop {
        let len = *q.get(at)? as usize;
        at += 1;
        if len == 0 {
            break;
        }
        labels.push(String::from_utf8_lossy(q.get(at..at + len)?).to_ascii_lowercase());
        at += len;
    }
    let qtype = u16::from_be_bytes([*q.get(at)?, *q.get(at + 1)?]);
    let question = q.get(12..at + 4)?;
    let name = labels.join(".");
    let found = known.contains(&name.as_str());
    let answer = found && qtype == 1;
    let rcode = if found { 0 } else { 3 };
    let mut r = Vec::new();
    r.extend_from_slice(&q[0..2]);
    r.extend_from_slice(&[0x81, 0x80 | rcode]);
    r.extend_from_slice(&[0, 1, 0, u8::from(answer), 0, 0, 0, 0]);
    r.extend_from_slice(question);
    if answer {
        // Name (pointer to the question), A, IN, TTL 30, 4 bytes: 127.0.0.1.
        r.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 30, 0, 4, 127, 0, 0, 1]);
    }
    Some(r)
}

#[test]
fn without_service_objects_backends_are_resolved_per_request() {
    let ports = free_ports(2);
    let (pod_port, port) = (ports[0], ports[1]);
    let _pods = pods(&[("alpha", pod_port)]);
    let dns = dns_server(&["alpha.default.svc.cluster.local"]);
    let backends = format!("[{{name: alpha, port: {pod_port}}}]");
    let nowhere = format!("[{{name: nowhere, port: {pod_port}}}]");
    let yaml = format!(
        "{}{}",
        GATEWAY.replace("PORT", &port.to_string()),
        route(&[("/a", &backends), ("/n", &nowhere)])
    );
    let (gw, warnings) = gateway("dns", &yaml, port, vec![format!("127.0.0.1:{dns}")]);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(status(&gw, "/a/1"), (200, "alpha /a/1\n".to_owned()));
    // A name that does not resolve costs its own requests, and nothing else.
    assert_eq!(status(&gw, "/n").0, 502);
    assert_eq!(status(&gw, "/a/2"), (200, "alpha /a/2\n".to_owned()));
    assert!(gw.error_log().contains("nowhere.default.svc.cluster.local could not be resolved"));
    drop(gw);

    // No resolver at all: the configuration still loads; those backends answer 502.
    let (gw, warnings) = gateway("no-dns", &yaml, port, Vec::new());
    assert!(warnings.iter().any(|w| w.starts_with("no resolver")), "{warnings:?}");
    assert_eq!(status(&gw, "/a").0, 502);
}

#[test]
fn a_listener_whose_secret_is_missing_refuses_handshakes_and_the_others_serve() {
    let ports = free_ports(2);
    let (pod_port, port) = (ports[0], ports[1]);
    let _pods = pods(&[("web", pod_port)]);
    let dns = dns_server(&["web.default.svc.cluster.local"]);
    let yaml = format!(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {{name: gw}}\nspec:\n  \
         gatewayClassName: nginx\n  listeners:\n  \
         - {{name: good, port: {port}, protocol: HTTPS, hostname: good.test, tls: {{certificateRefs: [{{name: good-cert}}]}}}}\n  \
         - {{name: bad, port: {port}, protocol: HTTPS, hostname: bad.test, tls: {{certificateRefs: [{{name: cert-manager-will-make-it}}]}}}}\n---\n\
         apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {{name: r}}\nspec:\n  \
         parentRefs: [{{name: gw}}]\n  rules:\n  - backendRefs: [{{name: web, port: {pod_port}}}]\n---\n{}",
        common::self_signed_secret("good-cert", "good.test", "good.test")
    );
    let (_gw, warnings) = gateway("tls", &yaml, port, vec![format!("127.0.0.1:{dns}")]);
    for want in [
        "listener default/gw/bad: tls.certificateRefs[0]: Secret default/cert-manager-will-make-it \
         is not among the inputs; ignored",
        "listener default/gw/bad: no usable certificate; its hosts refuse the TLS handshake",
    ] {
        assert!(warnings.iter().any(|w| w == want), "{want}\n{warnings:#?}");
    }
    assert_eq!(common::https_status(port, "good.test", "/"), Some(200));
    assert_eq!(common::https_status(port, "bad.test", "/"), None);
    assert_eq!(common::https_status(port, "good.test", "/"), Some(200));
}

/// A network namespace this test makes, with a veth pair to it: the host end
/// `198.18.N.1/30`, the namespace end `198.18.N.2/30` (RFC 2544's benchmarking range, which no
/// network routes), `lo` up inside. Removed (both ends with it) when dropped.
struct Netns {
    name: String,
    pod: String,
}

impl Netns {
    /// `None` (said on stderr) when not root, without `ip`, or when the kernel refuses.
    fn new() -> Option<Netns> {
        let root = std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| s.lines().find_map(|l| l.strip_prefix("Uid:").map(str::to_owned)))
            .and_then(|u| u.split_whitespace().next().map(|u| u == "0"))
            .unwrap_or(false);
        let pid = std::process::id();
        let name = format!("hr-cluster-{pid}");
        let n = pid % 250 + 1;
        let ns = Netns { name: name.clone(), pod: format!("198.18.{n}.2") };
        let ip = |args: &[&str]| {
            std::process::Command::new("ip")
                .args(args)
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        };
        if !root || !ip(&["netns", "add", &name]) {
            eprintln!(
                "cluster_states: skipped the EndpointSlice-in-a-namespace test: it needs root and \
                 `ip` (iproute2) to make a network namespace"
            );
            return None;
        }
        let (host_end, ns_end) = (format!("hr{pid}a"), format!("hr{pid}b"));
        let host_addr = format!("198.18.{n}.1/30");
        let pod_addr = format!("{}/30", ns.pod);
        let steps: [&[&str]; 7] = [
            &["link", "add", &host_end, "type", "veth", "peer", "name", &ns_end],
            &["link", "set", &ns_end, "netns", &name],
            &["addr", "add", &host_addr, "dev", &host_end],
            &["link", "set", &host_end, "up"],
            &["-n", &name, "addr", "add", &pod_addr, "dev", &ns_end],
            &["-n", &name, "link", "set", &ns_end, "up"],
            &["-n", &name, "link", "set", "lo", "up"],
        ];
        for step in steps {
            assert!(ip(step), "ip {}", step.join(" "));
        }
        Some(ns)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        // Deleting the namespace deletes its veth end, and with it the host end.
        let _ = std::process::Command::new("ip").args(["netns", "del", &self.name]).status();
    }
}

/// A pod NGINX run inside `ns`, listening on its address; stopped when dropped.
struct Pod(std::process::Child);

impl Drop for Pod {
    fn drop(&mut self) {
        let _ =
            std::process::Command::new("kill").arg("-QUIT").arg(self.0.id().to_string()).status();
        let _ = self.0.wait();
    }
}

#[test]
fn slice_endpoints_answer_from_a_network_namespace() {
    let Some(ns) = Netns::new() else { return };
    let port = free_ports(1)[0];
    let body =
        format!("server {{ listen {}:8080; return 200 \"pod-in-ns $request_uri\\n\"; }}\n", ns.pod);
    let p = Prefix::new_on("ns-pod", &body, &[], port);
    // nginx -p DIR/ -c CONF inside the namespace (its address is there only).
    let in_ns = || {
        let mut c = std::process::Command::new("ip");
        c.args(["netns", "exec", &ns.name])
            .arg(common::nginx_binary())
            .arg("-p")
            .arg(format!("{}/", p.dir.display()))
            .arg("-c")
            .arg(&p.conf);
        c
    };
    let t = in_ns().arg("-t").output().expect("nginx -t in the namespace");
    assert!(t.status.success(), "{}", String::from_utf8_lossy(&t.stderr));
    let pod = Pod(in_ns()
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start the pod's nginx in the namespace"));
    // Reachable over the veth pair (the namespace's address, nothing beyond it).
    common::wait_until(format!("the pod in {} to listen", ns.name), || {
        std::net::TcpStream::connect((ns.pod.as_str(), 8080)).is_ok()
    });
    let yaml = format!(
        "{}{}{}{}",
        GATEWAY.replace("PORT", &port.to_string()),
        route(&[("/ok", "[{name: ok, port: 80}]")]),
        service("ok", 80),
        slice("ok", 8080, &[(&ns.pod, true), ("198.18.255.254", false)]),
    );
    let (gw, warnings) = gateway("ns-gw", &yaml, port, Vec::new());
    assert!(warnings.is_empty(), "{warnings:?}");
    // The slice's ready endpoint answers, through an upstream of it alone.
    for i in 0..5 {
        let (code, body) = status(&gw, &format!("/ok/{i}"));
        assert_eq!((code, body.as_str()), (200, format!("pod-in-ns /ok/{i}\n").as_str()));
    }
    gw.finish();
    drop(pod);
    drop(ns);
}
