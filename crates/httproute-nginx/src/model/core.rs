//! Core objects (Service, EndpointSlice) checked as the Kubernetes API server checks them
//! (`pkg/apis/core/validation` `ValidateService`, `pkg/apis/discovery/validation`
//! `ValidateEndpointSlice`), so that what a cluster could never hold is refused here too:
//! one object at a time, never the run.
//!
//! The rules followed, field by field:
//! - EndpointSlice `addressType`: `IPv4`, `IPv6` or `FQDN`; at most 1,000 endpoints, each with
//!   1 to 100 addresses of that type; an IP address must not be special
//!   (`ValidateNonSpecialIP`: unspecified, loopback 127.0.0.0/8 and ::1, link-local
//!   169.254.0.0/16 and fe80::/10, link-local multicast 224.0.0.0/24 and ff02::/16); an IPv6
//!   slice's addresses are IPv6 text (an IPv4-mapped `::ffff:a.b.c.d` is not); at most 20,000
//!   ports, names unique DNS labels. The port number is *not* range-checked by the API server:
//!   a port outside 1-65535 is accepted there and unusable here (`plan/backends.rs` skips it).
//! - Service `type`: `ClusterIP`, `NodePort`, `LoadBalancer` or `ExternalName` (which needs an
//!   `externalName` that is a DNS-1123 subdomain, a final dot allowed); every port 1-65535,
//!   port names DNS labels, unique, required when there is more than one port; a numeric
//!   `targetPort` 1-65535, a named one an IANA service name (1-15 characters).

use std::net::IpAddr;

use super::types::{EndpointSlice, Service};
use super::validate::{is_dns_label, is_dns_subdomain};

/// The most endpoints and ports an EndpointSlice may have, and addresses per endpoint.
const MAX_ENDPOINTS: usize = 1000;
const MAX_PORTS: usize = 20_000;
const MAX_ADDRESSES: usize = 100;

/// Why the API server refuses `ip` as an endpoint address (`ValidateNonSpecialIP`), if it does.
pub fn special_ip(ip: IpAddr) -> Option<&'static str> {
    let v4_multicast_link = |v4: std::net::Ipv4Addr| v4.octets()[..3] == [224, 0, 0];
    match ip {
        _ if ip.is_unspecified() => Some("may not be unspecified (0.0.0.0, ::)"),
        _ if ip.is_loopback() => Some("may not be in the loopback range (127.0.0.0/8, ::1/128)"),
        IpAddr::V4(v4) if v4.is_link_local() => {
            Some("may not be in the link-local range (169.254.0.0/16, fe80::/10)")
        }
        IpAddr::V4(v4) if v4_multicast_link(v4) => {
            Some("may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)")
        }
        IpAddr::V6(v6) if v6.segments()[0] & 0xffc0 == 0xfe80 => {
            Some("may not be in the link-local range (169.254.0.0/16, fe80::/10)")
        }
        IpAddr::V6(v6) if v6.segments()[0] & 0xff0f == 0xff02 => {
            Some("may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)")
        }
        _ => None,
    }
}

/// Why an address the API server accepts still cannot be a backend (multicast, broadcast:
/// no TCP peer lives there), if it cannot.
pub fn unusable_ip(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) if v4.is_broadcast() => Some("is the broadcast address"),
        _ if ip.is_multicast() => Some("is a multicast address"),
        _ => None,
    }
}

/// `Err((field, why))` when the API server would refuse this EndpointSlice.
pub fn check_slice(s: &EndpointSlice) -> Result<(), (String, String)> {
    let fail = |f: String, m: String| Err((f, m));
    let v4 = match s.address_type.as_str() {
        "IPv4" => Some(true),
        "IPv6" => Some(false),
        "FQDN" => None,
        other => {
            return fail(
                "addressType".into(),
                format!("{:?}: supported values are IPv4, IPv6, FQDN", other.escape_debug()),
            );
        }
    };
    if s.endpoints.len() > MAX_ENDPOINTS {
        return fail("endpoints".into(), format!("more than {MAX_ENDPOINTS} endpoints"));
    }
    for (ei, e) in s.endpoints.iter().enumerate() {
        if e.addresses.is_empty() || e.addresses.len() > MAX_ADDRESSES {
            return fail(
                format!("endpoints[{ei}].addresses"),
                format!("must have 1 to {MAX_ADDRESSES} addresses"),
            );
        }
        for (ai, a) in e.addresses.iter().enumerate() {
            let at = || format!("endpoints[{ei}].addresses[{ai}]");
            let shown = a.escape_debug();
            match v4 {
                None if is_dns_subdomain(a) && a.contains('.') => {}
                None => return fail(at(), format!("\"{shown}\" is not a fully qualified name")),
                Some(v4) => {
                    let ip = if v4 {
                        a.parse::<std::net::Ipv4Addr>().ok().map(IpAddr::V4)
                    } else {
                        // IPv6 text that is not an IPv4-mapped address (Go's To4() == nil).
                        a.parse::<std::net::Ipv6Addr>()
                            .ok()
                            .filter(|v6| v6.to_ipv4_mapped().is_none())
                            .map(IpAddr::V6)
                    };
                    let Some(ip) = ip else {
                        let kind = if v4 { "IPv4" } else { "IPv6" };
                        return fail(at(), format!("\"{shown}\" is not a valid {kind} address"));
                    };
                    if let Some(why) = special_ip(ip) {
                        return fail(at(), format!("\"{shown}\" {why}"));
                    }
                }
            }
        }
    }
    let ports = s.ports.as_deref().unwrap_or(&[]);
    if ports.len() > MAX_PORTS {
        return fail("ports".into(), format!("more than {MAX_PORTS} ports"));
    }
    let mut names = std::collections::BTreeSet::new();
    for (pi, p) in ports.iter().enumerate() {
        let name = p.name.as_deref().unwrap_or("");
        if !name.is_empty() && !is_dns_label(name) {
            return fail(format!("ports[{pi}].name"), "not a DNS label".into());
        }
        if !names.insert(name) {
            return fail(format!("ports[{pi}].name"), format!("duplicate name \"{name}\""));
        }
    }
    Ok(())
}

/// `Err((field, why))` when the API server would refuse this Service.
pub fn check_service(s: &Service) -> Result<(), (String, String)> {
    let fail = |f: &str, m: String| Err((f.to_owned(), m));
    match s.spec.kind.as_deref() {
        None | Some("ClusterIP" | "NodePort" | "LoadBalancer") => {}
        Some("ExternalName") => {
            let name = s.spec.external_name.as_deref().unwrap_or("");
            if !is_dns_subdomain(name.strip_suffix('.').unwrap_or(name)) {
                return fail(
                    "spec.externalName",
                    format!("\"{}\" is not a DNS-1123 subdomain", name.escape_debug()),
                );
            }
        }
        Some(other) => {
            return fail(
                "spec.type",
                format!(
                    "\"{}\": supported values are ClusterIP, NodePort, LoadBalancer, ExternalName",
                    other.escape_debug()
                ),
            );
        }
    }
    let many = s.spec.ports.len() > 1;
    let mut names = std::collections::BTreeSet::new();
    for (pi, p) in s.spec.ports.iter().enumerate() {
        let at = |f: &str| format!("spec.ports[{pi}].{f}");
        if p.port == 0 {
            return Err((at("port"), "must be between 1 and 65535".into()));
        }
        match p.name.as_deref() {
            None | Some("") if many => {
                return Err((at("name"), "required when a Service has more than one port".into()));
            }
            Some(n) if !n.is_empty() && !is_dns_label(n) => {
                return Err((at("name"), "not a DNS label".into()));
            }
            _ => {}
        }
        if !names.insert(p.name.as_deref().unwrap_or("")) {
            return Err((at("name"), "duplicate name".into()));
        }
        match &p.target_port {
            None => {}
            Some(serde_json::Value::Number(n))
                if n.as_u64().is_some_and(|n| (1..=65535).contains(&n)) => {}
            Some(serde_json::Value::String(n)) if is_iana_service_name(n) => {}
            Some(_) => {
                return Err((
                    at("targetPort"),
                    "must be a number 1-65535 or a port name (IANA service name)".into(),
                ));
            }
        }
    }
    Ok(())
}

/// An IANA service name (`IsValidPortName`): 1-15 lowercase letters, digits and `-`, with a
/// letter, no `-` at either end and no `--`.
fn is_iana_service_name(n: &str) -> bool {
    (1..=15).contains(&n.len())
        && n.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && n.bytes().any(|b| b.is_ascii_lowercase())
        && !n.starts_with('-')
        && !n.ends_with('-')
        && !n.contains("--")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_addresses_are_those_kubernetes_refuses() {
        for a in [
            "0.0.0.0",
            "127.0.0.1",
            "127.255.0.9",
            "169.254.169.254",
            "224.0.0.251",
            "::",
            "::1",
            "fe80::1",
            "febf::1",
            "ff02::1",
            "ff12::1",
        ] {
            assert!(special_ip(a.parse().unwrap()).is_some(), "{a}");
        }
        for a in ["10.0.0.1", "128.0.0.1", "169.253.1.1", "224.0.1.1", "2001:db8::1", "fec0::1"] {
            assert!(special_ip(a.parse().unwrap()).is_none(), "{a}");
        }
    }
}
