//! Reading manifest files: YAML documents and JSON (`List`s included) into [`Inputs`].

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::types::*;
use super::validate::{
    validate_allowed, validate_gateway, validate_grpc, validate_meta, validate_route,
};
use super::yaml::{Part, is_list_kind};

/// An input problem: where (file, document, field) and what.
#[derive(Debug)]
pub struct InputError {
    pub file: PathBuf,
    /// 0-based index of the YAML document in the file (JSON: the one document).
    pub document: Option<usize>,
    /// 0-based index of the item, when the document is a `List`.
    pub item: Option<usize>,
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
        if let Some(k) = self.item {
            write!(f, ", items[{k}]")?;
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
    /// InferencePools given (`inference.networking.k8s.io/v1`): `namespace/name` -> pool.
    /// One the CRD would refuse is left out with a warning: a backendRef to it does not
    /// resolve (`BackendNotFound`).
    pub inference_pools: BTreeMap<String, super::inference::InferencePool>,
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
    /// Objects other than routes, Services and EndpointSlices that the API server (or their
    /// CRD) would refuse: Gateways, ReferenceGrants, Secrets, Namespaces, objects without a
    /// kind. Each is left out with a warning (a Gateway also with its status), as a cluster
    /// keeps the other objects when one is refused: never the run.
    pub refused: Vec<Refused>,
    /// Other things worth a warning, found while reading.
    pub warnings: Vec<String>,
    pub files: Vec<PathBuf>,
    /// Where each object read was, by (kind, namespace, name): the first of a name is kept,
    /// a later one is refused (a copied document not renamed).
    pub seen: HashMap<(String, String, String), Place>,
}

impl Inputs {
    /// Adds what `other` read (the items of a List, read apart) after what `self` has, as if
    /// read into `self` in that order. Every field is named, so that a new one cannot be
    /// forgotten here.
    fn absorb(&mut self, other: Inputs) {
        let Inputs {
            gateways,
            routes,
            grants,
            namespace_labels,
            secrets,
            services,
            endpoint_slices,
            inference_pools,
            refused_services,
            refused_slices,
            unsupported,
            rejected,
            bad_secrets,
            refused,
            warnings,
            files,
            seen,
        } = other;
        self.gateways.extend(gateways);
        self.routes.extend(routes);
        self.grants.extend(grants);
        self.namespace_labels.extend(namespace_labels);
        self.secrets.extend(secrets);
        self.services.extend(services);
        self.endpoint_slices.extend(endpoint_slices);
        self.inference_pools.extend(inference_pools);
        self.refused_services.extend(refused_services);
        for (k, mut v) in refused_slices {
            self.refused_slices.entry(k).or_default().append(&mut v);
        }
        for (k, v) in unsupported {
            self.unsupported.entry(k).or_insert(v);
        }
        self.rejected.extend(rejected);
        self.bad_secrets.extend(bad_secrets);
        self.refused.extend(refused);
        self.warnings.extend(warnings);
        self.files.extend(files);
        self.seen.extend(seen);
    }
}

/// An object left out as the API server refuses it ([`Inputs::refused`]).
#[derive(Debug)]
pub struct Refused {
    /// Its `kind` (empty: it has none).
    pub kind: String,
    /// `metadata.namespace` (`default` when absent; empty for a Namespace) and `metadata.name`,
    /// as far as they can be read.
    pub namespace: String,
    pub name: String,
    pub error: InputError,
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
        let io = |e: std::io::Error| InputError {
            file: f.clone(),
            document: None,
            item: None,
            field: String::new(),
            message: e.to_string(),
        };
        // Streamed from the file: its text is never held whole.
        let file = std::fs::File::open(&f).map_err(io)?;
        let bytes = file.metadata().map_err(io)?.len();
        let input = std::io::BufReader::with_capacity(super::yaml::INPUT_BUFFER, file);
        load_from(&f, input, bytes, &mut inputs)?;
        inputs.files.push(f);
    }
    // Only reading needs to know where each object was: not held through planning.
    inputs.seen = HashMap::new();
    Ok(inputs)
}

pub(crate) fn collect(p: &Path, out: &mut Vec<PathBuf>) -> Result<(), InputError> {
    let err = |e: std::io::Error| InputError {
        file: p.to_owned(),
        document: None,
        item: None,
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

/// Parses one file's text (YAML documents; JSON is YAML, read by [`super::json`]'s fast path
/// when it reads alike) and adds its objects.
///
/// One document at a time, so that only one is held as a tree, and the items of a `List` one
/// at a time (see [`super::yaml`]). An invalid document is reported before any object's error
/// (as if every document were read first): after an object's error the rest is still parsed,
/// not used.
pub fn load_text(file: &Path, text: &str, inputs: &mut Inputs) -> Result<(), InputError> {
    let input = std::io::Cursor::new(text.as_bytes());
    let input = std::io::BufReader::with_capacity(super::yaml::INPUT_BUFFER, input);
    load_from(file, input, text.len() as u64, inputs)
}

/// [`load_text`] from a reader of `bytes` bytes.
fn load_from(
    file: &Path,
    input: impl std::io::BufRead + std::io::Seek,
    bytes: u64,
    inputs: &mut Inputs,
) -> Result<(), InputError> {
    // The items of the document being read, kept apart until its `kind` (which kubectl writes
    // after `items`) says whether it is a List, or until the JSON path gives up (`None`) and
    // the file is read again.
    let mut staged: Option<Inputs> = None;
    let read = super::json::read_from(input, bytes, |part| match part {
        None => staged = None,
        Some(Part::Item { document, index, value }) => {
            let stage = staged.get_or_insert_with(Default::default);
            let here = Place::item(file, document, index);
            if first(&here, &value, stage, Some(&inputs.seen)) {
                object(&here, value, stage);
            }
        }
        Some(Part::Document { document, mut value, streamed }) => {
            let stage = staged.take();
            if value.is_null() {
                return;
            }
            let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
            if is_list_kind(kind) {
                // A `kubectl get -o json` List: its items are the objects.
                if let Some(stage) = stage {
                    inputs.absorb(stage);
                } else if let Some(Value::Array(items)) =
                    value.as_object_mut().and_then(|m| m.remove("items"))
                {
                    // Items not streamed (an anchored sequence): read one by one all the same.
                    for (k, item) in items.into_iter().enumerate() {
                        let here = Place::item(file, document, k);
                        if first(&here, &item, inputs, None) {
                            object(&here, item, inputs);
                        }
                    }
                }
                return;
            }
            let here = Place::document(file, document);
            if let (Some(n), Some(m)) = (streamed, value.as_object_mut()) {
                m.remove("items");
                inputs.warnings.push(format!(
                    "{here}: the {n} top-level items of a kind {:?} object (not a List) are ignored",
                    m.get("kind").and_then(Value::as_str).unwrap_or("")
                ));
            }
            if first(&here, &value, inputs, None) {
                object(&here, value, inputs);
            }
        }
    });
    read.map_err(|e| InputError {
        file: file.to_owned(),
        document: e.document,
        item: None,
        field: String::new(),
        message: e.message,
    })?;
    Ok(())
}

/// Whether the object `v` at `here` is the first of its kind, namespace and name (in `inputs`,
/// or in `outer` when `inputs` holds a List's items read apart); records it if so. A later one
/// is refused with a warning naming both places: it does not serve and has no status.
fn first(
    here: &Place,
    v: &Value,
    inputs: &mut Inputs,
    outer: Option<&HashMap<(String, String, String), Place>>,
) -> bool {
    let kind = v.get("kind").and_then(Value::as_str).unwrap_or("");
    let (ns, name) = names(v);
    let ns = if kind == "Namespace" { String::new() } else { ns };
    let named = matches!(
        kind,
        "Gateway"
            | "HTTPRoute"
            | "GRPCRoute"
            | "ReferenceGrant"
            | "Secret"
            | "Service"
            | "EndpointSlice"
            | "InferencePool"
            | "Namespace"
    );
    if !named || name.is_empty() {
        return true;
    }
    let key = (kind.to_owned(), ns, name);
    let Some(before) = outer.and_then(|o| o.get(&key)).or_else(|| inputs.seen.get(&key)) else {
        inputs.seen.insert(key, here.clone());
        return true;
    };
    let (kind, ns, name) = key;
    let id = if ns.is_empty() { name } else { format!("{ns}/{name}") };
    inputs.warnings.push(format!(
        "{kind} {} ({here}) is refused: the same {kind} is at {before}, which is kept",
        id.escape_debug()
    ));
    false
}

/// Where an object was read: its file, document (0-based, as every message numbers them) and,
/// in a List, its item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub file: PathBuf,
    pub document: usize,
    pub item: Option<usize>,
}

impl Place {
    fn document(file: &Path, document: usize) -> Place {
        Place { file: file.to_owned(), document, item: None }
    }
    fn item(file: &Path, document: usize, item: usize) -> Place {
        Place { file: file.to_owned(), document, item: Some(item) }
    }
    /// An error about this object's `field` (empty: the object as a whole).
    fn error(&self, field: String, message: String) -> InputError {
        InputError {
            file: self.file.clone(),
            document: Some(self.document),
            item: self.item,
            field,
            message,
        }
    }
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}, document {}", self.file.display(), self.document)?;
        if let Some(k) = self.item {
            write!(f, ", items[{k}]")?;
        }
        Ok(())
    }
}

/// One object (a document, or an item of a List) into `inputs`. An object the API server
/// would refuse is left out with a warning and recorded ([`Inputs::refused`],
/// [`Inputs::rejected`], `refused_services`, `refused_slices`): one object's error is never
/// the run's.
fn object(at: &Place, v: Value, inputs: &mut Inputs) {
    let Err(error) = object_of(at, &v, inputs) else { return };
    let kind = v.get("kind").and_then(Value::as_str).unwrap_or("").to_owned();
    let (namespace, name) = names(&v);
    let namespace = if kind == "Namespace" { String::new() } else { namespace };
    let id = match (namespace.as_str(), name.as_str()) {
        (_, "") => String::new(),
        ("", n) => format!(" {}", n.escape_debug()),
        (ns, n) => format!(" {}/{}", ns.escape_debug(), n.escape_debug()),
    };
    let what =
        if kind.is_empty() { "An object".to_owned() } else { kind.escape_debug().to_string() };
    // `error` says where (`at`) and which field.
    inputs.warnings.push(format!("{what}{id} is refused as the API server refuses it: {error}"));
    let why = refusal((error.field.clone(), error.message.clone()));
    if kind == "Secret" && !name.is_empty() {
        // A listener that names it says why it cannot use it.
        inputs.bad_secrets.insert(format!("{namespace}/{name}"), why);
    }
    inputs.refused.push(Refused { kind, namespace, name, error });
}

/// [`object`]: `Err` is the refusal of an object that is not a route, a Service or an
/// EndpointSlice (those are recorded here, each with its reason).
fn object_of(at: &Place, v: &Value, inputs: &mut Inputs) -> Result<(), InputError> {
    let kind = v.get("kind").and_then(Value::as_str).unwrap_or("").to_owned();
    let here = |field: String, message: String| at.error(field, message);
    match kind.as_str() {
        "Gateway" => gateway(v, at, inputs)?,
        "GRPCRoute" => match grpc_route(v, at, inputs) {
            Ok(r) => inputs.routes.push(r),
            Err(e) => inputs.rejected.push(RejectedRoute::of(&kind, v, e)),
        },
        "HTTPRoute" => match http_route(v, at, inputs) {
            Ok(r) => inputs.routes.push(r),
            Err(e) => inputs.rejected.push(RejectedRoute::of(&kind, v, e)),
        },
        "ReferenceGrant" => inputs.grants.push(typed(v, &here)?),
        "Secret" => secret(v, at, inputs)?,
        // Core objects the API server would refuse are left out one by one, each with its
        // reason (a warning, and a condition on the routes that reference it): never the run.
        "Service" => service(v, at, inputs),
        "EndpointSlice" => endpoint_slice(v, at, inputs),
        "InferencePool" => inference_pool(v, at, inputs)?,
        // The older form of the same data, from `kubectl get endpoints`.
        "Endpoints" => note(inputs, "kind Endpoints (give EndpointSlices)".to_owned(), at),
        "Namespace" => {
            let n: Namespace = typed(v, &here)?;
            inputs.namespace_labels.insert(n.metadata.name, n.metadata.labels);
        }
        "" => return Err(here(String::new(), "object without a kind".to_owned())),
        _ => note(inputs, format!("kind {kind}"), at),
    }
    Ok(())
}

/// A Gateway, checked as its CRD checks it; the fields that do not change routing noted.
fn gateway(v: &Value, at: &Place, inputs: &mut Inputs) -> Result<(), InputError> {
    let here = |field: String, message: String| at.error(field, message);
    let g: Gateway = typed(v, &here)?;
    validate_gateway(&g).map_err(|(field, msg)| here(field, msg))?;
    // gatewayClassName selects the controller; it does not change routing.
    for f in g.spec.other.keys().filter(|f| *f != "gatewayClassName") {
        note(inputs, format!("Gateway spec.{f}"), at);
    }
    for (li, l) in g.spec.listeners.iter().enumerate() {
        validate_allowed(&l.allowed_routes).map_err(|(field, msg)| {
            here(format!("spec.listeners[{li}].allowedRoutes.{field}"), msg)
        })?;
        for f in l.other.keys() {
            note(inputs, format!("Gateway spec.listeners[].{f}"), at);
        }
    }
    inputs.gateways.push(g);
    Ok(())
}

/// A Secret: a TLS one's certificate and key, as the check read them (so they load in
/// NGINX), or why they cannot be used (`bad_secrets`).
fn secret(v: &Value, at: &Place, inputs: &mut Inputs) -> Result<(), InputError> {
    let here = |field: String, message: String| at.error(field, message);
    let s: Secret = typed(v, &here)?;
    validate_meta(&s.metadata).map_err(|(f, m)| here(f, m))?;
    if s.kind == "kubernetes.io/tls" {
        let mut pem = s.tls().map_err(|(f, m)| here(f, m))?;
        let key = format!("{}/{}", s.metadata.namespace, s.metadata.name);
        match super::certificate::check(&pem.0, &pem.1) {
            Ok(read) => pem = read,
            Err(why) => {
                inputs.bad_secrets.insert(key.clone(), why);
            }
        }
        inputs.secrets.insert(key, pem);
    }
    Ok(())
}

/// A Service, or the reason the API server would refuse it (`refused_services`).
fn service(v: &Value, at: &Place, inputs: &mut Inputs) {
    let (ns, name) = names(v);
    let key = format!("{ns}/{name}");
    match checked(v, at, |s: &Service| &s.metadata, super::core::check_service) {
        Ok(svc) => {
            inputs.services.insert(key, svc);
        }
        Err(why) => {
            let why = refusal(why);
            inputs.warnings.push(format!(
                "Service {} ({at}) is refused as the API server refuses it: {}",
                key.escape_debug(),
                why.escape_debug()
            ));
            inputs.refused_services.insert(key, why);
        }
    }
}

/// An EndpointSlice, or the reason the API server would refuse it (`refused_slices`, by
/// namespace and Service).
fn endpoint_slice(v: &Value, at: &Place, inputs: &mut Inputs) {
    let (ns, name) = names(v);
    let service = v
        .pointer("/metadata/labels/kubernetes.io~1service-name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    match checked(v, at, |s: &EndpointSlice| &s.metadata, super::core::check_slice) {
        Ok(slice) => inputs.endpoint_slices.push(slice),
        Err(why) => {
            let why = format!("EndpointSlice {}/{}: {}", ns, name, refusal(why));
            inputs.warnings.push(format!(
                "{} ({at}) is refused as the API server refuses it",
                why.escape_debug(),
            ));
            inputs.refused_slices.entry((ns, service)).or_default().push(why);
        }
    }
}

/// A core object read, its metadata and then `check` passed, or the field and why not.
fn checked<T: serde::de::DeserializeOwned>(
    v: &Value,
    at: &Place,
    meta: impl Fn(&T) -> &Meta,
    check: impl Fn(&T) -> Result<(), (String, String)>,
) -> Result<T, (String, String)> {
    let here = |field: String, message: String| at.error(field, message);
    let t = typed::<T>(v, &here).map_err(|e| (e.field, e.message))?;
    validate_meta(meta(&t))?;
    check(&t)?;
    Ok(t)
}

/// `metadata.namespace` (default `default`) and `metadata.name` of an object, as far as they
/// can be read.
fn names(v: &Value) -> (String, String) {
    // Looked up by key: `Value::pointer` splits and unescapes its path into new strings on
    // every call (2.5% of a run of 10,000 objects read).
    let meta = v.get("metadata");
    let text = |k: &str| meta.and_then(|m| m.get(k)).and_then(Value::as_str).map(str::to_owned);
    (text("namespace").unwrap_or_else(|| "default".into()), text("name").unwrap_or_default())
}

/// An InferencePool: `inference.networking.k8s.io/v1` is read and checked as its CRD checks
/// it; another version (the `v1alpha2` of other fields) is noted as not supported.
fn inference_pool(v: &Value, at: &Place, inputs: &mut Inputs) -> Result<(), InputError> {
    let here = |field: String, message: String| at.error(field, message);
    let version = api_version(v);
    if version != "inference.networking.k8s.io/v1" {
        note(inputs, format!("InferencePool of apiVersion {version:?}"), at);
        return Ok(());
    }
    let p: super::inference::InferencePool = typed(v, &here)?;
    validate_meta(&p.metadata).map_err(|(f, m)| here(f, m))?;
    super::inference::check_pool(&p).map_err(|(f, m)| here(f, m))?;
    let key = format!("{}/{}", p.metadata.namespace, p.metadata.name);
    inputs.inference_pools.insert(key, p);
    Ok(())
}

/// The object's `apiVersion`, empty when it has none.
fn api_version(v: &Value) -> &str {
    v.get("apiVersion").and_then(Value::as_str).unwrap_or("")
}

/// `field: why` (or `why` for the object as a whole).
fn refusal((field, why): (String, String)) -> String {
    if field.is_empty() { why } else { format!("{field}: {why}") }
}

/// A GRPCRoute, checked; its unsupported fields noted.
fn grpc_route(v: &Value, at: &Place, inputs: &mut Inputs) -> Result<HttpRoute, InputError> {
    let here = |field: String, message: String| at.error(field, message);
    let here = &here;
    let g: GrpcRoute = typed(v, here)?;
    validate_grpc(&g).map_err(|(field, msg)| here(field, msg))?;
    for rule in &g.spec.rules {
        for f in &rule.filters {
            if !matches!(
                f.kind.as_str(),
                "RequestHeaderModifier" | "ResponseHeaderModifier" | "RequestMirror"
            ) {
                note(inputs, format!("GRPCRoute spec.rules[].filters[] of type {}", f.kind), at);
            }
        }
        for f in rule.other.keys() {
            note(inputs, format!("GRPCRoute spec.rules[].{f}"), at);
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
fn http_route(v: &Value, at: &Place, inputs: &mut Inputs) -> Result<HttpRoute, InputError> {
    let here = |field: String, message: String| at.error(field, message);
    let here = &here;
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
                note(inputs, format!("HTTPRoute spec.rules[].filters[] of type {}", f.kind), at);
            }
        }
        for f in rule.other.keys() {
            note(inputs, format!("HTTPRoute spec.rules[].{f}"), at);
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
                        at,
                    );
                }
            }
            for f in b.other.keys() {
                note(inputs, format!("HTTPRoute spec.rules[].backendRefs[].{f}"), at);
            }
        }
    }
    Ok(r)
}

pub(crate) fn note(inputs: &mut Inputs, what: String, at: &Place) {
    inputs.unsupported.entry(what).or_insert_with(|| at.to_string());
}

pub(crate) fn typed<T: serde::de::DeserializeOwned>(
    v: &Value,
    here: &dyn Fn(String, String) -> InputError,
) -> Result<T, InputError> {
    // The path of an error is tracked only once there is one: the same value read again.
    if let Ok(t) = T::deserialize(v) {
        return Ok(t);
    }
    serde_path_to_error::deserialize(v).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." { String::new() } else { path };
        here(field, e.into_inner().to_string())
    })
}
