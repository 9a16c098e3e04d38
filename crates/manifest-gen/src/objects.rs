//! One builder per kind of object. Each returns the object as JSON (which YAML reads as it
//! is); a test sets any other field with [`Set::set`] and joins documents with [`file`].
//! `ns: None` leaves `metadata.namespace` out (the loader's `default`).

use base64::Engine as _;
use serde_json::{Map, Value, json};

/// The documents as one file: each a JSON line, `---` between them.
pub fn file<'a>(docs: impl IntoIterator<Item = &'a Value>) -> String {
    docs.into_iter().map(|d| format!("{d}\n---\n")).collect()
}

/// `field = value` at a dotted path (`"spec.ports.0.targetPort"`: a number is an index into an
/// array), the objects on the way created.
pub trait Set {
    fn set(self, path: &str, value: impl Into<Value>) -> Value;
    /// [`Set::set`] when `value` is `Some`; the object unchanged otherwise.
    fn set_some<T: Into<Value>>(self, path: &str, value: Option<T>) -> Value;
}

impl Set for Value {
    fn set(mut self, path: &str, value: impl Into<Value>) -> Value {
        let mut at = &mut self;
        for key in path.split('.') {
            at = match key.parse::<usize>() {
                Ok(i) if at.is_array() => &mut at[i],
                _ => {
                    if !at.is_object() {
                        *at = Value::Object(Map::new());
                    }
                    at.as_object_mut().unwrap().entry(key).or_insert(Value::Null)
                }
            };
        }
        *at = value.into();
        self
    }

    fn set_some<T: Into<Value>>(self, path: &str, value: Option<T>) -> Value {
        match value {
            Some(v) => self.set(path, v),
            None => self,
        }
    }
}

fn object(api: &str, kind: &str, ns: Option<&str>, name: &str) -> Value {
    json!({"apiVersion": api, "kind": kind, "metadata": {"name": name}})
        .set_some("metadata.namespace", ns)
}

const GATEWAY_API: &str = "gateway.networking.k8s.io/v1";

/// A Gateway with these listeners.
pub fn gateway(ns: Option<&str>, name: &str, listeners: Vec<Value>) -> Value {
    object(GATEWAY_API, "Gateway", ns, name).set("spec.listeners", listeners)
}

/// A listener: `HTTP` or `HTTPS` (`certificate`: the Secret its `tls.certificateRefs` names).
pub fn listener(name: &str, port: u16, hostname: Option<&str>, certificate: Option<&str>) -> Value {
    let protocol = if certificate.is_some() { "HTTPS" } else { "HTTP" };
    json!({"name": name, "port": port, "protocol": protocol})
        .set_some("hostname", hostname)
        .set_some("tls", certificate.map(|c| json!({"certificateRefs": [{"name": c}]})))
}

/// A parentRef: the Gateway's name, its namespace, the listener's `sectionName`.
pub fn parent(name: &str, ns: Option<&str>, section: Option<&str>) -> Value {
    json!({"name": name}).set_some("namespace", ns).set_some("sectionName", section)
}

/// An HTTPRoute (no `hostnames` field when there are none).
pub fn http_route(
    ns: Option<&str>,
    name: &str,
    parents: Vec<Value>,
    hostnames: &[String],
    rules: Vec<Value>,
) -> Value {
    let route = object(GATEWAY_API, "HTTPRoute", ns, name)
        .set("spec.parentRefs", parents)
        .set("spec.rules", rules);
    if hostnames.is_empty() { route } else { route.set("spec.hostnames", hostnames) }
}

/// A rule.
pub fn rule(matches: Vec<Value>, filters: Vec<Value>, backends: Vec<Value>) -> Value {
    json!({"matches": matches, "filters": filters, "backendRefs": backends})
}

/// A match of a path (`PathPrefix`, `Exact`, `RegularExpression`) alone; headers, query
/// parameters and a method with [`Set::set`] or [`header`].
pub fn path_match(kind: &str, value: &str) -> Value {
    json!({"path": {"type": kind, "value": value}})
}

/// A header (or query parameter) match: `Exact` or `RegularExpression`.
pub fn header(kind: &str, name: &str, value: &str) -> Value {
    json!({"type": kind, "name": name, "value": value})
}

/// A backendRef to a Service (`weight`: the default when `None`).
pub fn backend(name: &str, port: u16, weight: Option<u32>) -> Value {
    json!({"name": name, "port": port}).set_some("weight", weight)
}

/// A filter: `{"type": KIND, "kindInCamelCase": body}` (`URLRewrite`: `urlRewrite`, `CORS`:
/// `cors`).
pub fn filter(kind: &str, body: Value) -> Value {
    let upper = kind.chars().take_while(char::is_ascii_uppercase).count();
    let lower = match upper {
        n if n == kind.len() => n,
        0 | 1 => 1,
        n => n - 1,
    };
    let field = kind[..lower].to_ascii_lowercase() + &kind[lower..];
    json!({"type": kind, field: body})
}

/// A Service of one port, or an ExternalName Service to `external`.
pub fn service(ns: Option<&str>, name: &str, port: u16, external: Option<&str>) -> Value {
    let s = object("v1", "Service", ns, name).set("spec.ports", json!([{"port": port}]));
    match external {
        Some(e) => s.set("spec.type", "ExternalName").set("spec.externalName", e),
        None => s,
    }
}

/// An EndpointSlice of Service `service`: `endpoints` as given (a list of [`endpoint`]s, or
/// `null`), one port.
pub fn endpoint_slice(
    ns: Option<&str>,
    name: &str,
    service: &str,
    address_type: &str,
    endpoints: Value,
    port: i64,
) -> Value {
    object("discovery.k8s.io/v1", "EndpointSlice", ns, name)
        .set("metadata.labels", json!({"kubernetes.io/service-name": service}))
        .set("addressType", address_type)
        .set("endpoints", endpoints)
        .set("ports", json!([{"port": port}]))
}

/// An endpoint of an EndpointSlice; `ready: None` leaves its conditions out.
pub fn endpoint(addresses: &[String], ready: Option<bool>) -> Value {
    json!({"addresses": addresses}).set_some("conditions", ready.map(|r| json!({"ready": r})))
}

/// A `kubernetes.io/tls` Secret of these bytes.
pub fn tls_secret(ns: Option<&str>, name: &str, crt: &[u8], key: &[u8]) -> Value {
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    object("v1", "Secret", ns, name)
        .set("type", "kubernetes.io/tls")
        .set("data", json!({"tls.crt": b64(crt), "tls.key": b64(key)}))
}

/// A ReferenceGrant letting `from_kind`s of namespace `from_ns` use the Services of its
/// namespace (`to`: one of them by name).
pub fn service_grant(
    ns: Option<&str>,
    name: &str,
    from_kind: &str,
    from_ns: &str,
    to: Option<&str>,
) -> Value {
    object("gateway.networking.k8s.io/v1beta1", "ReferenceGrant", ns, name)
        .set(
            "spec.from",
            json!([{"group": "gateway.networking.k8s.io", "kind": from_kind, "namespace": from_ns}]),
        )
        .set("spec.to", json!([json!({"group": "", "kind": "Service"}).set_some("name", to)]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_makes_the_objects_on_the_way_and_indexes_arrays() {
        let v = json!({"spec": {"ports": [{"port": 80}]}})
            .set("spec.ports.0.targetPort", 8080)
            .set("metadata.labels.a", "b");
        assert_eq!(
            v,
            json!({"spec": {"ports": [{"port": 80, "targetPort": 8080}]},
                "metadata": {"labels": {"a": "b"}}})
        );
    }

    #[test]
    fn filter_fields_are_the_kind_in_camel_case() {
        for (kind, field) in [
            ("RequestHeaderModifier", "requestHeaderModifier"),
            ("URLRewrite", "urlRewrite"),
            ("CORS", "cors"),
            ("RequestMirror", "requestMirror"),
        ] {
            assert_eq!(filter(kind, json!({}))[field], json!({}), "{kind}");
        }
    }
}
