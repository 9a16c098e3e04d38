//! Reading manifest files: YAML documents and JSON (`List`s included) into [`Inputs`].

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::DeserializeSeed as _;
use serde_json::Value;

use super::types::*;
use super::validate::{
    validate_allowed, validate_gateway, validate_grpc, validate_meta, validate_route,
};

/// An input problem: where (file, document, field) and what.
#[derive(Debug)]
pub struct InputError {
    pub file: PathBuf,
    /// 0-based index of the YAML document (or JSON List item) in the file.
    pub document: Option<usize>,
    /// Field path inside the object, e.g. `spec.rules[0].matches[1].path.type`.
    pub field: String,
    pub message: String,
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(d) = self.document {
            write!(f, ", document {d}")?;
        }
        if !self.field.is_empty() {
            write!(f, ", {}", self.field)?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for InputError {}

/// Everything read from the inputs.
#[derive(Debug, Default)]
pub struct Inputs {
    pub gateways: Vec<Gateway>,
    pub routes: Vec<HttpRoute>,
    pub grants: Vec<ReferenceGrant>,
    /// Labels of the `Namespace` objects given (for `allowedRoutes` selectors).
    pub namespace_labels: BTreeMap<String, BTreeMap<String, String>>,
    /// TLS Secrets given: `namespace/name` -> (certificate chain, key), PEM.
    pub secrets: BTreeMap<String, (Vec<u8>, Vec<u8>)>,
    /// Services given: `namespace/name` -> Service. When there are any, a backendRef to a
    /// Service not among them is a reference to a Service that does not exist.
    pub services: BTreeMap<String, Service>,
    /// EndpointSlices given.
    pub endpoint_slices: Vec<EndpointSlice>,
    /// Services the API server would refuse: `namespace/name` -> why. A backendRef to one
    /// does not resolve (`BackendNotFound`).
    pub refused_services: BTreeMap<String, String>,
    /// EndpointSlices the API server would refuse, by (namespace, `kubernetes.io/service-name`):
    /// which slice and why. The Service's other slices still serve; the routes that reference
    /// it say so in `ResolvedRefs`.
    pub refused_slices: BTreeMap<(String, String), Vec<String>>,
    /// Fields we do not support yet, each reported once: (field, where first seen).
    pub unsupported: BTreeMap<String, String>,
    /// HTTPRoutes and GRPCRoutes that the CRDs would refuse: left out, each with its error
    /// (a warning and an `Accepted: False` condition), as a cluster keeps the other objects
    /// when one is refused.
    pub rejected: Vec<RejectedRoute>,
    /// TLS Secrets given whose certificate or key cannot be used: `namespace/name` -> why.
    /// A listener that names one refuses the handshake, as for a missing Secret.
    pub bad_secrets: BTreeMap<String, String>,
    /// Other things worth a warning, found while reading.
    pub warnings: Vec<String>,
    pub files: Vec<PathBuf>,
}

/// A route left out: what it is, where it wanted to attach, and why it was refused.
#[derive(Debug)]
pub struct RejectedRoute {
    pub grpc: bool,
    pub namespace: String,
    pub name: String,
    pub parent_refs: Vec<ParentRef>,
    pub error: InputError,
}

impl RejectedRoute {
    /// What can be read of a route that failed to load.
    fn of(kind: &str, v: &Value, error: InputError) -> RejectedRoute {
        let text = |p: &str| v.pointer(p).and_then(Value::as_str).map(str::to_owned);
        let parent_refs = v
            .pointer("/spec/parentRefs")
            .and_then(|p| serde_json::from_value(p.clone()).ok())
            .unwrap_or_default();
        RejectedRoute {
            grpc: kind == "GRPCRoute",
            namespace: text("/metadata/namespace").unwrap_or_else(|| "default".into()),
            name: text("/metadata/name").unwrap_or_default(),
            parent_refs,
            error,
        }
    }
}

/// Reads files and directories (the `.yaml`, `.yml` and `.json` files directly in them, sorted;
/// like `kubectl apply -f DIR`, subdirectories are not read).
pub fn load(paths: &[PathBuf]) -> Result<Inputs, InputError> {
    let mut files = Vec::new();
    for p in paths {
        collect(p, &mut files)?;
    }
    let mut inputs = Inputs::default();
    for f in files {
        let text = std::fs::read_to_string(&f).map_err(|e| InputError {
            file: f.clone(),
            document: None,
            field: String::new(),
            message: e.to_string(),
        })?;
        load_text(&f, &text, &mut inputs)?;
        inputs.files.push(f);
    }
    Ok(inputs)
}

pub(crate) fn collect(p: &Path, out: &mut Vec<PathBuf>) -> Result<(), InputError> {
    let err = |e: std::io::Error| InputError {
        file: p.to_owned(),
        document: None,
        field: String::new(),
        message: e.to_string(),
    };
    if p.is_dir() {
        let mut entries: Vec<PathBuf> =
            std::fs::read_dir(p).map_err(err)?.filter_map(|e| e.ok().map(|e| e.path())).collect();
        entries.sort();
        for e in entries {
            let ext = e.extension().and_then(|x| x.to_str()).unwrap_or("");
            if e.is_file() && matches!(ext, "yaml" | "yml" | "json") {
                out.push(e);
            }
        }
        Ok(())
    } else if p.exists() {
        out.push(p.to_owned());
        Ok(())
    } else {
        Err(err(std::io::Error::new(std::io::ErrorKind::NotFound, "no such file or directory")))
    }
}

/// Parses one file's text (YAML documents; JSON is YAML) and adds its objects.
pub fn load_text(file: &Path, text: &str, inputs: &mut Inputs) -> Result<(), InputError> {
    // Before the parser: its cost grows with the square of the nesting depth.
    super::depth::check(text).map_err(|(line, column)| InputError {
        file: file.to_owned(),
        document: None,
        field: String::new(),
        message: format!(
            "invalid YAML/JSON: nesting deeper than {} levels at line {line} column {column}",
            super::depth::MAX_DEPTH
        ),
    })?;
    // One document at a time, so that only one is held as a tree. An invalid document is
    // reported before any object's error (as if every document were read first): after an
    // object's error the rest is still parsed, not used.
    let mut refused: Option<InputError> = None;
    for (i, doc) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
        let v = Strict.deserialize(doc).map_err(|e| InputError {
            file: file.to_owned(),
            document: Some(i),
            field: String::new(),
            message: format!("invalid YAML/JSON: {e}"),
        })?;
        if v.is_null() || refused.is_some() {
            continue;
        }
        // A `kubectl get -o json` List: its items are the objects.
        let done = match v {
            Value::Object(mut m) if m.get("kind").and_then(Value::as_str) == Some("List") => {
                let items = match m.remove("items") {
                    Some(Value::Array(items)) => items,
                    _ => Vec::new(),
                };
                items.into_iter().try_for_each(|item| object(file, i, item, inputs))
            }
            v => object(file, i, v, inputs),
        };
        if let Err(e) = done {
            refused = Some(e);
        }
    }
    refused.map_or(Ok(()), Err)
}

/// One object (document `i` of `file`, or an item of its List) into `inputs`.
fn object(file: &Path, i: usize, v: Value, inputs: &mut Inputs) -> Result<(), InputError> {
    let kind = v.get("kind").and_then(Value::as_str).unwrap_or("").to_owned();
    let here = |field: String, message: String| InputError {
        file: file.to_owned(),
        document: Some(i),
        field,
        message,
    };
    match kind.as_str() {
        "Gateway" => {
            let g: Gateway = typed(&v, &here)?;
            validate_gateway(&g).map_err(|(field, msg)| here(field, msg))?;
            // gatewayClassName selects the controller; it does not change routing.
            for f in g.spec.other.keys().filter(|f| *f != "gatewayClassName") {
                note(inputs, format!("Gateway spec.{f}"), file, i);
            }
            for (li, l) in g.spec.listeners.iter().enumerate() {
                validate_allowed(&l.allowed_routes).map_err(|(field, msg)| {
                    here(format!("spec.listeners[{li}].allowedRoutes.{field}"), msg)
                })?;
                for f in l.other.keys() {
                    note(inputs, format!("Gateway spec.listeners[].{f}"), file, i);
                }
            }
            inputs.gateways.push(g);
        }
        "GRPCRoute" => match grpc_route(&v, &here, inputs, file, i) {
            Ok(r) => inputs.routes.push(r),
            Err(e) => inputs.rejected.push(RejectedRoute::of(&kind, &v, e)),
        },
        "HTTPRoute" => match http_route(&v, &here, inputs, file, i) {
            Ok(r) => inputs.routes.push(r),
            Err(e) => inputs.rejected.push(RejectedRoute::of(&kind, &v, e)),
        },
        "ReferenceGrant" => {
            let g: ReferenceGrant = typed(&v, &here)?;
            inputs.grants.push(g);
        }
        "Secret" => {
            let s: Secret = typed(&v, &here)?;
            validate_meta(&s.metadata).map_err(|(f, m)| here(f, m))?;
            if s.kind == "kubernetes.io/tls" {
                let pem = s.tls().map_err(|(f, m)| here(f, m))?;
                let key = format!("{}/{}", s.metadata.namespace, s.metadata.name);
                match super::certificate::check(&pem.0, &pem.1) {
                    Ok(None) => {}
                    Ok(Some(note)) => inputs
                        .warnings
                        .push(format!("Secret {key} ({}, document {i}): {note}", file.display())),
                    Err(why) => {
                        inputs.bad_secrets.insert(key.clone(), why);
                    }
                }
                inputs.secrets.insert(key, pem);
            }
        }
        // Core objects the API server would refuse are left out one by one, each with its
        // reason (a warning, and a condition on the routes that reference it): never the run.
        "Service" => {
            let (ns, name) = names(&v);
            let key = format!("{ns}/{name}");
            let svc = typed::<Service>(&v, &here).map_err(|e| (e.field, e.message)).and_then(|s| {
                validate_meta(&s.metadata)?;
                super::core::check_service(&s)?;
                Ok(s)
            });
            match svc {
                Ok(svc) => {
                    inputs.services.insert(key, svc);
                }
                Err(why) => {
                    let why = refusal(why);
                    inputs.warnings.push(format!(
                        "Service {} ({}, document {i}) is refused as the API server refuses it: {}",
                        key.escape_debug(),
                        file.display(),
                        why.escape_debug()
                    ));
                    inputs.refused_services.insert(key, why);
                }
            }
        }
        "EndpointSlice" => {
            let (ns, name) = names(&v);
            let service = v
                .pointer("/metadata/labels/kubernetes.io~1service-name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            let slice =
                typed::<EndpointSlice>(&v, &here).map_err(|e| (e.field, e.message)).and_then(|s| {
                    validate_meta(&s.metadata)?;
                    super::core::check_slice(&s)?;
                    Ok(s)
                });
            match slice {
                Ok(slice) => inputs.endpoint_slices.push(slice),
                Err(why) => {
                    let why = format!("EndpointSlice {}/{}: {}", ns, name, refusal(why));
                    inputs.warnings.push(format!(
                        "{} ({}, document {i}) is refused as the API server refuses it",
                        why.escape_debug(),
                        file.display()
                    ));
                    inputs.refused_slices.entry((ns, service)).or_default().push(why);
                }
            }
        }
        // The older form of the same data, from `kubectl get endpoints`.
        "Endpoints" => note(inputs, "kind Endpoints (give EndpointSlices)".to_owned(), file, i),
        "Namespace" => {
            let n: Namespace = typed(&v, &here)?;
            inputs.namespace_labels.insert(n.metadata.name, n.metadata.labels);
        }
        "" => return Err(here(String::new(), "object without a kind".to_owned())),
        _ => note(inputs, format!("kind {kind}"), file, i),
    }
    Ok(())
}

/// `metadata.namespace` (default `default`) and `metadata.name` of an object, as far as they
/// can be read.
fn names(v: &Value) -> (String, String) {
    let text = |p: &str| v.pointer(p).and_then(Value::as_str).map(str::to_owned);
    (
        text("/metadata/namespace").unwrap_or_else(|| "default".into()),
        text("/metadata/name").unwrap_or_default(),
    )
}

/// `field: why` (or `why` for the object as a whole).
fn refusal((field, why): (String, String)) -> String {
    if field.is_empty() { why } else { format!("{field}: {why}") }
}

type Here<'a> = dyn Fn(String, String) -> InputError + 'a;

/// A GRPCRoute, checked; its unsupported fields noted.
fn grpc_route(
    v: &Value,
    here: &Here<'_>,
    inputs: &mut Inputs,
    file: &Path,
    i: usize,
) -> Result<HttpRoute, InputError> {
    let g: GrpcRoute = typed(v, here)?;
    validate_grpc(&g).map_err(|(field, msg)| here(field, msg))?;
    for rule in &g.spec.rules {
        for f in &rule.filters {
            if !matches!(
                f.kind.as_str(),
                "RequestHeaderModifier" | "ResponseHeaderModifier" | "RequestMirror"
            ) {
                note(
                    inputs,
                    format!("GRPCRoute spec.rules[].filters[] of type {}", f.kind),
                    file,
                    i,
                );
            }
        }
        for f in rule.other.keys() {
            note(inputs, format!("GRPCRoute spec.rules[].{f}"), file, i);
        }
    }
    let r = g.into_route();
    // Filters (header values, mirrors) and backendRefs are checked as an
    // HTTPRoute's; its paths were made here.
    validate_route(&r).map_err(|(field, msg)| here(field, msg))?;
    super::parent_refs::check(&r.spec.parent_refs).map_err(|(field, msg)| here(field, msg))?;
    Ok(r)
}

/// An HTTPRoute, checked; its unsupported fields noted.
fn http_route(
    v: &Value,
    here: &Here<'_>,
    inputs: &mut Inputs,
    file: &Path,
    i: usize,
) -> Result<HttpRoute, InputError> {
    let r: HttpRoute = typed(v, here)?;
    validate_route(&r).map_err(|(field, msg)| here(field, msg))?;
    super::parent_refs::check(&r.spec.parent_refs).map_err(|(field, msg)| here(field, msg))?;
    for rule in &r.spec.rules {
        for f in &rule.filters {
            if !matches!(
                f.kind.as_str(),
                "RequestHeaderModifier"
                    | "ResponseHeaderModifier"
                    | "RequestRedirect"
                    | "URLRewrite"
                    | "RequestMirror"
                    | "CORS"
            ) {
                note(
                    inputs,
                    format!("HTTPRoute spec.rules[].filters[] of type {}", f.kind),
                    file,
                    i,
                );
            }
        }
        for f in rule.other.keys() {
            note(inputs, format!("HTTPRoute spec.rules[].{f}"), file, i);
        }
        for b in &rule.backend_refs {
            for f in &b.filters {
                if !matches!(f.kind.as_str(), "RequestHeaderModifier" | "ResponseHeaderModifier") {
                    note(
                        inputs,
                        format!(
                            "HTTPRoute spec.rules[].backendRefs[].filters[] of type {}",
                            f.kind
                        ),
                        file,
                        i,
                    );
                }
            }
            for f in b.other.keys() {
                note(inputs, format!("HTTPRoute spec.rules[].backendRefs[].{f}"), file, i);
            }
        }
    }
    Ok(r)
}

/// A document as a JSON value, refusing duplicate keys in any mapping (YAML would keep the
/// last silently: two objects run together without `---` would merge into a wrong one).
struct Strict;

impl<'de> serde::de::DeserializeSeed<'de> for Strict {
    type Value = Value;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(Strict)
    }
}

impl<'de> serde::de::Visitor<'de> for Strict {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a YAML or JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(Strict)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(Strict)? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = serde_json::Map::new();
        while let Some(k) = map.next_key::<String>()? {
            if out.contains_key(&k) {
                return Err(serde::de::Error::custom(format_args!("duplicate key {k:?}")));
            }
            let v = map.next_value_seed(Strict)?;
            out.insert(k, v);
        }
        Ok(Value::Object(out))
    }
}

pub(crate) fn note(inputs: &mut Inputs, what: String, file: &Path, doc: usize) {
    inputs.unsupported.entry(what).or_insert_with(|| format!("{}, document {doc}", file.display()));
}

pub(crate) fn typed<T: serde::de::DeserializeOwned>(
    v: &Value,
    here: &dyn Fn(String, String) -> InputError,
) -> Result<T, InputError> {
    serde_path_to_error::deserialize(v).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." { String::new() } else { path };
        here(field, e.into_inner().to_string())
    })
}
