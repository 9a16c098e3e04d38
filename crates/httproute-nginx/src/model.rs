//! Gateway API input: reading manifests (YAML multi-document or JSON, `List`s included) into
//! typed Gateways and HTTPRoutes, with CRD defaults applied and CRD limits checked.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::DeserializeSeed as _;
use serde_json::Value;

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

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Meta {
    pub name: String,
    #[serde(default = "default_namespace")]
    pub namespace: String,
    #[serde(default)]
    pub creation_timestamp: Option<String>,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

fn default_namespace() -> String {
    "default".to_owned()
}

#[derive(Debug, Clone, Deserialize)]
pub struct Gateway {
    pub metadata: Meta,
    pub spec: GatewaySpec,
}

#[derive(Debug, Clone, Deserialize)]
pub struct GatewaySpec {
    pub listeners: Vec<Listener>,
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Listener {
    pub name: String,
    pub port: u16,
    pub protocol: String,
    #[serde(default)]
    pub hostname: Option<String>,
    #[serde(default)]
    pub allowed_routes: AllowedRoutes,
    #[serde(default)]
    pub tls: Option<ListenerTls>,
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

/// `listeners[].tls` of an HTTPS listener.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListenerTls {
    #[serde(default = "default_tls_mode")]
    pub mode: String,
    #[serde(default)]
    pub certificate_refs: Vec<SecretRef>,
}

fn default_tls_mode() -> String {
    "Terminate".to_owned()
}

#[derive(Debug, Clone, Deserialize)]
pub struct SecretRef {
    pub name: String,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default = "default_secret_kind")]
    pub kind: String,
    #[serde(default)]
    pub group: String,
}

fn default_secret_kind() -> String {
    "Secret".to_owned()
}

/// `listeners[].allowedRoutes`: which routes may attach (CRD default: same namespace, the
/// kinds the protocol supports).
#[derive(Debug, Clone, Deserialize, Default)]
pub struct AllowedRoutes {
    #[serde(default)]
    pub namespaces: RouteNamespaces,
    /// `None`: the protocol's default kinds (HTTPRoute for HTTP).
    #[serde(default)]
    pub kinds: Option<Vec<RouteGroupKind>>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct RouteNamespaces {
    /// `Same`, `All` or `Selector`.
    #[serde(default = "default_from")]
    pub from: String,
    #[serde(default)]
    pub selector: Option<LabelSelector>,
}

impl Default for RouteNamespaces {
    fn default() -> Self {
        RouteNamespaces { from: default_from(), selector: None }
    }
}

fn default_from() -> String {
    "Same".to_owned()
}

#[derive(Debug, Clone, Deserialize)]
pub struct RouteGroupKind {
    #[serde(default = "default_gateway_group")]
    pub group: String,
    pub kind: String,
}

fn default_gateway_group() -> String {
    "gateway.networking.k8s.io".to_owned()
}

/// A Kubernetes label selector: every `matchLabels` pair and every expression must hold.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    #[serde(default)]
    pub match_labels: BTreeMap<String, String>,
    #[serde(default)]
    pub match_expressions: Vec<LabelExpression>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct LabelExpression {
    pub key: String,
    /// `In`, `NotIn`, `Exists` or `DoesNotExist` (checked at load).
    pub operator: String,
    #[serde(default)]
    pub values: Vec<String>,
}

impl LabelSelector {
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.match_labels.iter().all(|(k, v)| labels.get(k) == Some(v))
            && self.match_expressions.iter().all(|e| {
                let have = labels.get(&e.key);
                match e.operator.as_str() {
                    "In" => have.is_some_and(|v| e.values.contains(v)),
                    "NotIn" => have.is_none_or(|v| !e.values.contains(v)),
                    "Exists" => have.is_some(),
                    _ => have.is_none(), // DoesNotExist
                }
            })
    }
}

/// `ReferenceGrant` (gateway.networking.k8s.io v1beta1): lets objects of the `from`
/// namespaces refer to objects of its own namespace.
#[derive(Debug, Clone, Deserialize)]
pub struct ReferenceGrant {
    pub metadata: Meta,
    pub spec: ReferenceGrantSpec,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ReferenceGrantSpec {
    pub from: Vec<GrantFrom>,
    pub to: Vec<GrantTo>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct GrantFrom {
    pub group: String,
    pub kind: String,
    pub namespace: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct GrantTo {
    pub group: String,
    pub kind: String,
    #[serde(default)]
    pub name: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
struct Namespace {
    metadata: Meta,
}

/// A `Secret` of type `kubernetes.io/tls`: `data` (base64) or `stringData`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Secret {
    metadata: Meta,
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    data: BTreeMap<String, String>,
    #[serde(default)]
    string_data: BTreeMap<String, String>,
}

impl Secret {
    /// (certificate chain, private key) as PEM bytes.
    fn tls(&self) -> Result<(Vec<u8>, Vec<u8>), (String, String)> {
        use base64::Engine as _;
        let field = |k: &str| -> Result<Vec<u8>, (String, String)> {
            if let Some(v) = self.string_data.get(k) {
                return Ok(v.as_bytes().to_vec());
            }
            let v = self.data.get(k).ok_or_else(|| (format!("data.{k}"), "missing".to_owned()))?;
            let clean: String = v.chars().filter(|c| !c.is_whitespace()).collect();
            base64::engine::general_purpose::STANDARD
                .decode(clean)
                .map_err(|e| (format!("data.{k}"), format!("not base64: {e}")))
        };
        Ok((field("tls.crt")?, field("tls.key")?))
    }
}

/// A `Service` (core/v1): what a backendRef names.
#[derive(Debug, Clone, Deserialize)]
pub struct Service {
    pub metadata: Meta,
    #[serde(default)]
    pub spec: ServiceSpec,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceSpec {
    /// `ClusterIP` (default), `NodePort`, `LoadBalancer` or `ExternalName`.
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub external_name: Option<String>,
    #[serde(default)]
    pub ports: Vec<ServicePort>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServicePort {
    #[serde(default)]
    pub name: Option<String>,
    pub port: u16,
    /// A number or the name of a container port; defaults to `port`.
    #[serde(default)]
    pub target_port: Option<Value>,
    /// What the backend speaks on this port: `kubernetes.io/ws`, `kubernetes.io/wss`,
    /// `kubernetes.io/h2c`, ... (GEP-1911).
    #[serde(default)]
    pub app_protocol: Option<String>,
}

/// An `EndpointSlice` (discovery.k8s.io/v1): the endpoints of a Service (label
/// `kubernetes.io/service-name`).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointSlice {
    pub metadata: Meta,
    #[serde(default)]
    pub address_type: String,
    #[serde(default)]
    pub endpoints: Vec<Endpoint>,
    /// `null` (not empty) means "all ports" in the API; no port then.
    #[serde(default)]
    pub ports: Option<Vec<EndpointPort>>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Endpoint {
    #[serde(default)]
    pub addresses: Vec<String>,
    #[serde(default)]
    pub conditions: EndpointConditions,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct EndpointConditions {
    /// `None`: unknown, which consumers are to read as ready.
    #[serde(default)]
    pub ready: Option<bool>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct EndpointPort {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub port: Option<u16>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct HttpRoute {
    pub metadata: Meta,
    pub spec: RouteSpec,
    /// Made from a `GRPCRoute` (see [`GrpcRoute::into_route`]): proxied with `grpc_pass`.
    #[serde(skip)]
    pub grpc: bool,
}

/// A `GRPCRoute` (v1). It is planned as an HTTPRoute whose matches are paths: a gRPC call is
/// an HTTP/2 POST to `/SERVICE/METHOD`.
#[derive(Debug, Clone, Deserialize)]
pub struct GrpcRoute {
    pub metadata: Meta,
    #[serde(default)]
    pub spec: GrpcRouteSpec,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GrpcRouteSpec {
    #[serde(default)]
    pub parent_refs: Vec<ParentRef>,
    #[serde(default)]
    pub hostnames: Vec<String>,
    #[serde(default)]
    pub rules: Vec<GrpcRule>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GrpcRule {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub matches: Vec<GrpcMatch>,
    #[serde(default)]
    pub filters: Vec<Filter>,
    #[serde(default)]
    pub backend_refs: Vec<BackendRef>,
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct GrpcMatch {
    #[serde(default)]
    pub method: Option<GrpcMethodMatch>,
    #[serde(default)]
    pub headers: Vec<ValueMatch>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct GrpcMethodMatch {
    #[serde(rename = "type", default = "default_value_type")]
    pub kind: String,
    #[serde(default)]
    pub service: Option<String>,
    #[serde(default)]
    pub method: Option<String>,
}

/// `s` as a PCRE literal.
fn pcre_literal(s: &str) -> String {
    s.chars()
        .map(
            |c| {
                if c.is_ascii_alphanumeric() || c == '_' { c.to_string() } else { format!("\\{c}") }
            },
        )
        .collect()
}

impl GrpcMethodMatch {
    /// The path match of a method match: `/S/M` exactly, `/S` as a prefix, or a regular
    /// expression anchored at both ends (a regex path is matched from the start; the `$` ends
    /// it) where a part is a regex or left out.
    fn path(&self) -> PathMatch {
        fn part(v: &Option<String>) -> Option<&str> {
            v.as_deref().filter(|s| !s.is_empty())
        }
        let (service, method) = (part(&self.service), part(&self.method));
        let regex = |v: Option<&str>, exact: bool| match v {
            None => "[^/]+".to_owned(),
            Some(v) if exact => pcre_literal(v),
            Some(v) => format!("(?:{v})"),
        };
        match (self.kind.as_str(), service, method) {
            ("Exact", Some(s), Some(m)) => {
                PathMatch { kind: "Exact".into(), value: format!("/{s}/{m}") }
            }
            ("Exact", Some(s), None) => {
                PathMatch { kind: "PathPrefix".into(), value: format!("/{s}") }
            }
            (kind, s, m) => {
                let exact = kind == "Exact";
                PathMatch {
                    kind: "RegularExpression".into(),
                    value: format!("/{}/{}$", regex(s, exact), regex(m, exact)),
                }
            }
        }
    }
}

impl GrpcRoute {
    /// The route as the planner takes it: each method match a path, headers as they are.
    pub fn into_route(self) -> HttpRoute {
        let rules = if self.spec.rules.is_empty() {
            default_rules()
        } else {
            self.spec
                .rules
                .into_iter()
                .map(|r| Rule {
                    name: r.name,
                    matches: if r.matches.is_empty() {
                        default_matches()
                    } else {
                        r.matches
                            .into_iter()
                            .map(|m| Match {
                                path: m.method.map(|mm| mm.path()).unwrap_or_default(),
                                headers: m.headers,
                                query_params: Vec::new(),
                                method: None,
                            })
                            .collect()
                    },
                    backend_refs: r.backend_refs,
                    filters: r.filters,
                    timeouts: None,
                    retry: None,
                    other: r.other,
                })
                .collect()
        };
        HttpRoute {
            metadata: self.metadata,
            spec: RouteSpec {
                parent_refs: self.spec.parent_refs,
                hostnames: self.spec.hostnames,
                rules,
            },
            grpc: true,
        }
    }
}

/// CRD checks of a GRPCRoute that its conversion does not make as HTTPRoute checks.
fn validate_grpc(r: &GrpcRoute) -> Result<(), (String, String)> {
    if r.spec.rules.len() > 16 {
        return Err(("spec.rules".into(), "at most 16 rules".into()));
    }
    if r.spec.hostnames.len() > 16 {
        return Err(("spec.hostnames".into(), "at most 16 hostnames".into()));
    }
    for (i, h) in r.spec.hostnames.iter().enumerate() {
        if !valid_hostname(h) {
            return Err((format!("spec.hostnames[{i}]"), format!("invalid hostname {h:?}")));
        }
    }
    for (ri, rule) in r.spec.rules.iter().enumerate() {
        if rule.matches.len() > 64 {
            return Err((format!("spec.rules[{ri}].matches"), "at most 64 matches".into()));
        }
        for (mi, m) in rule.matches.iter().enumerate() {
            let at = format!("spec.rules[{ri}].matches[{mi}]");
            if let Some(mm) = &m.method {
                if !matches!(mm.kind.as_str(), "Exact" | "RegularExpression") {
                    return Err((
                        format!("{at}.method.type"),
                        format!("unknown type {:?}", mm.kind),
                    ));
                }
                let given = |v: &Option<String>| v.as_deref().is_some_and(|s| !s.is_empty());
                if !given(&mm.service) && !given(&mm.method) {
                    return Err((
                        format!("{at}.method"),
                        "one of service and method must be set".into(),
                    ));
                }
                for (field, v) in [("service", &mm.service), ("method", &mm.method)] {
                    let Some(v) = v else { continue };
                    if v.len() > 1024 {
                        return Err((
                            format!("{at}.method.{field}"),
                            "longer than 1024 characters".into(),
                        ));
                    }
                    if mm.kind == "Exact"
                        && let Some(c) = v.chars().find(|c| *c == '/' || !path_char(*c))
                    {
                        return Err((
                            format!("{at}.method.{field}"),
                            format!("{v:?} has the character {c:?}"),
                        ));
                    }
                }
            }
            if m.headers.len() > 16 {
                return Err((format!("{at}.headers"), "at most 16 entries".into()));
            }
            for (hi, h) in m.headers.iter().enumerate() {
                header_name(&h.name).map_err(|e| (format!("{at}.headers[{hi}].name"), e))?;
                if h.value.is_empty() || h.value.len() > 4096 {
                    return Err((
                        format!("{at}.headers[{hi}].value"),
                        "length must be 1-4096".into(),
                    ));
                }
                if !matches!(h.kind.as_str(), "Exact" | "RegularExpression") {
                    return Err((
                        format!("{at}.headers[{hi}].type"),
                        format!("unknown match type {:?}", h.kind),
                    ));
                }
            }
        }
    }
    Ok(())
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RouteSpec {
    #[serde(default)]
    pub parent_refs: Vec<ParentRef>,
    #[serde(default)]
    pub hostnames: Vec<String>,
    #[serde(default = "default_rules")]
    pub rules: Vec<Rule>,
}

fn default_rules() -> Vec<Rule> {
    vec![Rule {
        name: None,
        matches: default_matches(),
        backend_refs: Vec::new(),
        filters: Vec::new(),
        timeouts: None,
        retry: None,
        other: BTreeMap::new(),
    }]
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParentRef {
    pub name: String,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub section_name: Option<String>,
    #[serde(default)]
    pub port: Option<u16>,
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub group: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Rule {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default = "default_matches")]
    pub matches: Vec<Match>,
    #[serde(default)]
    pub backend_refs: Vec<BackendRef>,
    #[serde(default)]
    pub filters: Vec<Filter>,
    #[serde(default)]
    pub timeouts: Option<Timeouts>,
    /// Experimental: used only with `--experimental`.
    #[serde(default)]
    pub retry: Option<Retry>,
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

/// `rules[].retry` (Experimental channel).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Retry {
    #[serde(default)]
    pub codes: Vec<u16>,
    #[serde(default)]
    pub attempts: Option<u32>,
    #[serde(default)]
    pub backoff: Option<String>,
}

/// `rules[].timeouts`: Gateway API durations (`1h30m`, `500ms`; `0s` disables).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Timeouts {
    #[serde(default)]
    pub request: Option<String>,
    #[serde(default)]
    pub backend_request: Option<String>,
}

/// A Gateway API duration (`^([0-9]{1,5}(h|m|s|ms)){1,4}$`) in milliseconds.
pub fn duration_ms(v: &str) -> Option<u64> {
    let (mut total, mut parts, mut rest) = (0u64, 0, v);
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 || digits > 5 {
            return None;
        }
        let n: u64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let (unit, len) = if rest.starts_with("ms") {
            (1, 2)
        } else if rest.starts_with('h') {
            (3_600_000, 1)
        } else if rest.starts_with('m') {
            (60_000, 1)
        } else if rest.starts_with('s') {
            (1_000, 1)
        } else {
            return None;
        };
        rest = &rest[len..];
        total += n * unit;
        parts += 1;
    }
    (parts > 0 && parts <= 4).then_some(total)
}

/// `rules[].filters[]`. Header modifiers are applied; other types are reported (see plan).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Filter {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub request_header_modifier: Option<HeaderModifier>,
    #[serde(default)]
    pub response_header_modifier: Option<HeaderModifier>,
    #[serde(default)]
    pub request_redirect: Option<RequestRedirect>,
    #[serde(default, rename = "urlRewrite")]
    pub url_rewrite: Option<UrlRewrite>,
    #[serde(default)]
    pub request_mirror: Option<RequestMirror>,
    #[serde(default)]
    pub cors: Option<Cors>,
}

/// The `CORS` filter: preflight requests answered at the gateway, CORS response headers on
/// the others.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cors {
    #[serde(default)]
    pub allow_origins: Vec<String>,
    #[serde(default)]
    pub allow_credentials: Option<bool>,
    #[serde(default)]
    pub allow_methods: Vec<String>,
    #[serde(default)]
    pub allow_headers: Vec<String>,
    #[serde(default)]
    pub expose_headers: Vec<String>,
    /// Seconds a browser may cache a preflight answer (default 5).
    #[serde(default)]
    pub max_age: Option<u32>,
}

/// Whether `o` is an origin the CRD allows in `allowOrigins`: `*`, or
/// `http(s)://HOST[:PORT]` where HOST is `*`, `*.name` or a name.
fn valid_origin(o: &str) -> bool {
    if o == "*" {
        return true;
    }
    let Some(rest) = o.strip_prefix("https://").or_else(|| o.strip_prefix("http://")) else {
        return false;
    };
    let (host, port) = match rest.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (rest, None),
    };
    let port_ok =
        port.is_none_or(|p| !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()));
    let name = host.strip_prefix("*.").unwrap_or(host);
    let label =
        |l: &str| !l.is_empty() && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    port_ok && (host == "*" || name.split('.').all(label))
}

fn validate_cors(c: &Cors) -> Result<(), (String, String)> {
    for (field, list, max) in [
        ("allowOrigins", &c.allow_origins, 64),
        ("allowMethods", &c.allow_methods, 9),
        ("allowHeaders", &c.allow_headers, 64),
        ("exposeHeaders", &c.expose_headers, 64),
    ] {
        if list.len() > max {
            return Err((field.into(), format!("at most {max} entries")));
        }
        if field != "exposeHeaders" && list.len() > 1 && list.iter().any(|v| v == "*") {
            return Err((field.into(), "\"*\" must be the only entry".into()));
        }
        for (i, v) in list.iter().enumerate() {
            let ok = match field {
                "allowOrigins" => valid_origin(v),
                "allowMethods" => matches!(
                    v.as_str(),
                    "GET"
                        | "HEAD"
                        | "POST"
                        | "PUT"
                        | "DELETE"
                        | "CONNECT"
                        | "OPTIONS"
                        | "TRACE"
                        | "PATCH"
                        | "*"
                ),
                _ => header_name(v).is_ok(),
            };
            if !ok {
                return Err((format!("{field}[{i}]"), format!("invalid value {v:?}")));
            }
        }
    }
    if c.max_age == Some(0) {
        return Err(("maxAge".into(), "must be at least 1".into()));
    }
    Ok(())
}

/// `RequestMirror`: a copy of each request (or of a share of them) goes to another backend;
/// its answers are ignored.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestMirror {
    pub backend_ref: ObjectRef,
    #[serde(default)]
    pub percent: Option<u32>,
    #[serde(default)]
    pub fraction: Option<Fraction>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ObjectRef {
    pub name: String,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub port: Option<u16>,
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub group: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Fraction {
    pub numerator: u32,
    #[serde(default = "default_denominator")]
    pub denominator: u32,
}

fn default_denominator() -> u32 {
    100
}

impl RequestMirror {
    /// The share of requests mirrored, 0.0 to 1.0.
    pub fn share(&self) -> f64 {
        match (&self.fraction, self.percent) {
            (Some(f), _) if f.denominator > 0 => f64::from(f.numerator) / f64::from(f.denominator),
            (_, Some(p)) => f64::from(p) / 100.0,
            _ => 1.0,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestRedirect {
    #[serde(default)]
    pub scheme: Option<String>,
    #[serde(default)]
    pub hostname: Option<String>,
    #[serde(default)]
    pub path: Option<PathModifier>,
    #[serde(default)]
    pub port: Option<u16>,
    #[serde(default = "default_redirect_status")]
    pub status_code: u16,
}

fn default_redirect_status() -> u16 {
    302
}

#[derive(Debug, Clone, Deserialize)]
pub struct UrlRewrite {
    #[serde(default)]
    pub hostname: Option<String>,
    #[serde(default)]
    pub path: Option<PathModifier>,
}

/// `ReplaceFullPath` or `ReplacePrefixMatch`, as validated at load.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PathModifier {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub replace_full_path: Option<String>,
    #[serde(default)]
    pub replace_prefix_match: Option<String>,
}

impl PathModifier {
    /// The replacement, and whether it replaces only the matched prefix. The CRD bounds only
    /// its length; what goes on the wire is made a path: a leading `/` (an empty value is
    /// `/`), and every byte that is not a path character (RFC 3986 pchar and `/`, or an
    /// existing `%XX`) percent-encoded, so no value can split the request line.
    pub fn replacement(&self) -> (String, bool) {
        let (v, prefix) = match self.kind.as_str() {
            "ReplacePrefixMatch" => (self.replace_prefix_match.as_deref().unwrap_or("/"), true),
            _ => (self.replace_full_path.as_deref().unwrap_or("/"), false),
        };
        let mut out = String::with_capacity(v.len() + 1);
        if !v.starts_with('/') {
            out.push('/');
        }
        let b = v.as_bytes();
        for (i, &c) in b.iter().enumerate() {
            let escape = c == b'%'
                && b.get(i + 1..i + 3).is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit));
            if escape || (c.is_ascii() && path_char(c as char)) {
                out.push(c as char);
            } else {
                out.push_str(&format!("%{c:02X}"));
            }
        }
        (out, prefix)
    }
}

#[derive(Debug, Clone, Deserialize, Default)]
pub struct HeaderModifier {
    #[serde(default)]
    pub set: Vec<HeaderValue>,
    #[serde(default)]
    pub add: Vec<HeaderValue>,
    #[serde(default)]
    pub remove: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct HeaderValue {
    pub name: String,
    pub value: String,
}

fn default_matches() -> Vec<Match> {
    vec![Match::default()]
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Match {
    #[serde(default)]
    pub path: PathMatch,
    #[serde(default)]
    pub headers: Vec<ValueMatch>,
    #[serde(default)]
    pub query_params: Vec<ValueMatch>,
    #[serde(default)]
    pub method: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PathMatch {
    #[serde(rename = "type", default = "default_path_type")]
    pub kind: String,
    #[serde(default = "default_path_value")]
    pub value: String,
}

impl Default for PathMatch {
    fn default() -> Self {
        PathMatch { kind: default_path_type(), value: default_path_value() }
    }
}

fn default_path_type() -> String {
    "PathPrefix".to_owned()
}
fn default_path_value() -> String {
    "/".to_owned()
}

#[derive(Debug, Clone, Deserialize)]
pub struct ValueMatch {
    #[serde(rename = "type", default = "default_value_type")]
    pub kind: String,
    pub name: String,
    pub value: String,
}

fn default_value_type() -> String {
    "Exact".to_owned()
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BackendRef {
    pub name: String,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub port: Option<u16>,
    #[serde(default = "default_weight")]
    pub weight: u32,
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub group: Option<String>,
    /// Filters for this backend's share only (header modifiers are supported).
    #[serde(default)]
    pub filters: Vec<Filter>,
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

impl BackendRef {
    /// The object it names, as a filter's backendRef would.
    pub fn object(&self) -> ObjectRef {
        ObjectRef {
            name: self.name.clone(),
            namespace: self.namespace.clone(),
            port: self.port,
            kind: self.kind.clone(),
            group: self.group.clone(),
        }
    }
}

fn default_weight() -> u32 {
    1
}

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
    /// Fields we do not support yet, each reported once: (field, where first seen).
    pub unsupported: BTreeMap<String, String>,
    pub files: Vec<PathBuf>,
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

fn collect(p: &Path, out: &mut Vec<PathBuf>) -> Result<(), InputError> {
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
    let mut docs = Vec::new();
    for (i, doc) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
        let v = Strict.deserialize(doc).map_err(|e| InputError {
            file: file.to_owned(),
            document: Some(i),
            field: String::new(),
            message: format!("invalid YAML/JSON: {e}"),
        })?;
        if v.is_null() {
            continue;
        }
        // A `kubectl get -o json` List: its items are the objects.
        if v.get("kind").and_then(Value::as_str) == Some("List") {
            for item in v.get("items").and_then(Value::as_array).cloned().unwrap_or_default() {
                docs.push((i, item));
            }
        } else {
            docs.push((i, v));
        }
    }
    for (i, v) in docs {
        let kind = v.get("kind").and_then(Value::as_str).unwrap_or("").to_owned();
        let here = |field: String, message: String| InputError {
            file: file.to_owned(),
            document: Some(i),
            field,
            message,
        };
        match kind.as_str() {
            "Gateway" => {
                let g: Gateway = typed(v, &here)?;
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
            "GRPCRoute" => {
                let g: GrpcRoute = typed(v, &here)?;
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
                inputs.routes.push(r);
            }
            "HTTPRoute" => {
                let r: HttpRoute = typed(v, &here)?;
                validate_route(&r).map_err(|(field, msg)| here(field, msg))?;
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
                            if !matches!(
                                f.kind.as_str(),
                                "RequestHeaderModifier" | "ResponseHeaderModifier"
                            ) {
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
                            note(
                                inputs,
                                format!("HTTPRoute spec.rules[].backendRefs[].{f}"),
                                file,
                                i,
                            );
                        }
                    }
                }
                inputs.routes.push(r);
            }
            "ReferenceGrant" => {
                let g: ReferenceGrant = typed(v, &here)?;
                inputs.grants.push(g);
            }
            "Secret" => {
                let s: Secret = typed(v, &here)?;
                if s.kind == "kubernetes.io/tls" {
                    let pem = s.tls().map_err(|(f, m)| here(f, m))?;
                    inputs
                        .secrets
                        .insert(format!("{}/{}", s.metadata.namespace, s.metadata.name), pem);
                }
            }
            "Service" => {
                let svc: Service = typed(v, &here)?;
                let key = format!("{}/{}", svc.metadata.namespace, svc.metadata.name);
                inputs.services.insert(key, svc);
            }
            "EndpointSlice" => {
                let slice: EndpointSlice = typed(v, &here)?;
                inputs.endpoint_slices.push(slice);
            }
            // The older form of the same data, from `kubectl get endpoints`.
            "Endpoints" => note(inputs, "kind Endpoints (give EndpointSlices)".to_owned(), file, i),
            "Namespace" => {
                let n: Namespace = typed(v, &here)?;
                inputs.namespace_labels.insert(n.metadata.name, n.metadata.labels);
            }
            "" => return Err(here(String::new(), "object without a kind".to_owned())),
            _ => note(inputs, format!("kind {kind}"), file, i),
        }
    }
    Ok(())
}

fn validate_allowed(a: &AllowedRoutes) -> Result<(), (String, String)> {
    match a.namespaces.from.as_str() {
        "Same" | "All" => {}
        "Selector" if a.namespaces.selector.is_none() => {
            return Err(("namespaces.selector".into(), "from: Selector needs a selector".into()));
        }
        "Selector" => {}
        f => return Err(("namespaces.from".into(), format!("unknown value {f:?}"))),
    }
    let exprs = a.namespaces.selector.iter().flat_map(|s| s.match_expressions.iter());
    for (i, e) in exprs.enumerate() {
        let field = format!("namespaces.selector.matchExpressions[{i}]");
        match e.operator.as_str() {
            "In" | "NotIn" if e.values.is_empty() => {
                return Err((field + ".values", format!("{} needs values", e.operator)));
            }
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            op => return Err((field + ".operator", format!("unknown operator {op:?}"))),
        }
    }
    Ok(())
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

fn note(inputs: &mut Inputs, what: String, file: &Path, doc: usize) {
    inputs.unsupported.entry(what).or_insert_with(|| format!("{}, document {doc}", file.display()));
}

fn typed<T: serde::de::DeserializeOwned>(
    v: Value,
    here: &dyn Fn(String, String) -> InputError,
) -> Result<T, InputError> {
    serde_path_to_error::deserialize(v).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." { String::new() } else { path };
        here(field, e.into_inner().to_string())
    })
}

/// CRD validation we rely on: enums, required shapes and the CRD's length limits.
fn validate_route(r: &HttpRoute) -> Result<(), (String, String)> {
    let s = &r.spec;
    if s.rules.len() > 16 {
        return Err(("spec.rules".into(), format!("{} rules; at most 16", s.rules.len())));
    }
    if s.hostnames.len() > 16 {
        return Err(("spec.hostnames".into(), "at most 16 hostnames".into()));
    }
    for (i, h) in s.hostnames.iter().enumerate() {
        if !valid_hostname(h) {
            return Err((format!("spec.hostnames[{i}]"), format!("invalid hostname {h:?}")));
        }
    }
    for (ri, rule) in s.rules.iter().enumerate() {
        if rule.filters.len() > 16 {
            return Err((format!("spec.rules[{ri}].filters"), "at most 16 filters".into()));
        }
        let redirects = rule.filters.iter().filter(|f| f.kind == "RequestRedirect").count();
        let rewrites = rule.filters.iter().filter(|f| f.kind == "URLRewrite").count();
        if redirects > 0 && rewrites > 0 {
            return Err((
                format!("spec.rules[{ri}].filters"),
                "RequestRedirect and URLRewrite cannot both be used in one rule".into(),
            ));
        }
        if rule.filters.iter().filter(|f| f.kind == "CORS").count() > 1 {
            return Err((format!("spec.rules[{ri}].filters"), "at most one CORS filter".into()));
        }
        for (fi, f) in rule.filters.iter().enumerate() {
            let at = format!("spec.rules[{ri}].filters[{fi}]");
            if f.kind == "CORS" {
                let Some(c) = &f.cors else {
                    return Err((format!("{at}.cors"), "required for type CORS".into()));
                };
                validate_cors(c).map_err(|(field, msg)| (format!("{at}.cors.{field}"), msg))?;
            }
            let path = match f.kind.as_str() {
                "RequestRedirect" => {
                    let Some(r) = &f.request_redirect else {
                        return Err((
                            format!("{at}.requestRedirect"),
                            "required for type RequestRedirect".into(),
                        ));
                    };
                    if let Some(sc) =
                        r.scheme.as_deref().filter(|s| !matches!(*s, "http" | "https"))
                    {
                        return Err((
                            format!("{at}.requestRedirect.scheme"),
                            format!("{sc:?}: use http or https"),
                        ));
                    }
                    if !matches!(r.status_code, 301 | 302 | 303 | 307 | 308) {
                        return Err((
                            format!("{at}.requestRedirect.statusCode"),
                            format!("{} is not a redirect status", r.status_code),
                        ));
                    }
                    precise_hostname(r.hostname.as_deref(), || format!("{at}.requestRedirect"))?;
                    r.path.as_ref().map(|p| (p, format!("{at}.requestRedirect.path")))
                }
                "URLRewrite" => {
                    let Some(r) = &f.url_rewrite else {
                        return Err((
                            format!("{at}.urlRewrite"),
                            "required for type URLRewrite".into(),
                        ));
                    };
                    precise_hostname(r.hostname.as_deref(), || format!("{at}.urlRewrite"))?;
                    r.path.as_ref().map(|p| (p, format!("{at}.urlRewrite.path")))
                }
                "RequestMirror" => {
                    let Some(m) = &f.request_mirror else {
                        return Err((
                            format!("{at}.requestMirror"),
                            "required for type RequestMirror".into(),
                        ));
                    };
                    if m.percent.is_some_and(|p| p > 100)
                        || m.fraction
                            .as_ref()
                            .is_some_and(|f| f.denominator == 0 || f.numerator > f.denominator)
                    {
                        return Err((
                            format!("{at}.requestMirror"),
                            "percent must be 0-100, a fraction at most 1".into(),
                        ));
                    }
                    None
                }
                _ => None,
            };
            if let Some((p, field)) = path {
                let (value, field) = match p.kind.as_str() {
                    "ReplaceFullPath" => (&p.replace_full_path, format!("{field}.replaceFullPath")),
                    "ReplacePrefixMatch" => {
                        // The CRD's own rule: the prefix to replace must be unambiguous.
                        let one_prefix =
                            rule.matches.len() == 1 && rule.matches[0].path.kind == "PathPrefix";
                        if !one_prefix {
                            return Err((
                                field,
                                "ReplacePrefixMatch needs exactly one match, of type PathPrefix"
                                    .into(),
                            ));
                        }
                        (&p.replace_prefix_match, format!("{field}.replacePrefixMatch"))
                    }
                    k => {
                        return Err((
                            format!("{field}.type"),
                            format!("unknown path modifier {k:?}"),
                        ));
                    }
                };
                let Some(v) = value else { return Err((field, "required".into())) };
                if v.len() > 1024 {
                    return Err((field, "longer than 1024 characters".into()));
                }
            }
            let (field, m) = match f.kind.as_str() {
                "RequestHeaderModifier" => ("requestHeaderModifier", &f.request_header_modifier),
                "ResponseHeaderModifier" => ("responseHeaderModifier", &f.response_header_modifier),
                _ => continue,
            };
            let Some(m) = m else {
                return Err((format!("{at}.{field}"), format!("required for type {}", f.kind)));
            };
            validate_modifier(m).map_err(|(f, msg)| (format!("{at}.{field}.{f}"), msg))?;
        }
        if rule.matches.len() > 64 {
            return Err((format!("spec.rules[{ri}].matches"), "at most 64 matches".into()));
        }
        for (mi, m) in rule.matches.iter().enumerate() {
            let at = format!("spec.rules[{ri}].matches[{mi}]");
            match m.path.kind.as_str() {
                "Exact" | "PathPrefix" | "RegularExpression" => {}
                k => return Err((format!("{at}.path.type"), format!("unknown path type {k:?}"))),
            }
            let v = &m.path.value;
            if v.len() > 1024 {
                return Err((format!("{at}.path.value"), "longer than 1024 characters".into()));
            }
            if m.path.kind != "RegularExpression" {
                if !v.starts_with('/') {
                    return Err((format!("{at}.path.value"), format!("{v:?} must start with /")));
                }
                if let Some(why) = path_problem(v) {
                    return Err((format!("{at}.path.value"), format!("{v:?} {why}")));
                }
            }
            for (kind, list, name_max, value_max) in
                [("headers", &m.headers, 256, 4096), ("queryParams", &m.query_params, 256, 1024)]
            {
                if list.len() > 16 {
                    return Err((format!("{at}.{kind}"), "at most 16 entries".into()));
                }
                for (i, h) in list.iter().enumerate() {
                    let f = format!("{at}.{kind}[{i}]");
                    if !matches!(h.kind.as_str(), "Exact" | "RegularExpression") {
                        return Err((
                            format!("{f}.type"),
                            format!("unknown match type {:?}", h.kind),
                        ));
                    }
                    if h.name.is_empty() || h.name.len() > name_max {
                        return Err((format!("{f}.name"), format!("length must be 1-{name_max}")));
                    }
                    if kind == "headers" && !h.name.bytes().all(header_token) {
                        return Err((
                            format!("{f}.name"),
                            format!("invalid header name {:?}", h.name),
                        ));
                    }
                    if h.value.is_empty() || h.value.len() > value_max {
                        return Err((
                            format!("{f}.value"),
                            format!("length must be 1-{value_max}"),
                        ));
                    }
                }
            }
            if let Some(method) = &m.method {
                if !matches!(
                    method.as_str(),
                    "GET"
                        | "HEAD"
                        | "POST"
                        | "PUT"
                        | "DELETE"
                        | "CONNECT"
                        | "OPTIONS"
                        | "TRACE"
                        | "PATCH"
                ) {
                    return Err((format!("{at}.method"), format!("unknown method {method:?}")));
                }
            }
        }
        if let Some(r) = &rule.retry {
            let at = format!("spec.rules[{ri}].retry");
            if let Some(c) = r.codes.iter().find(|c| !(400..=599).contains(*c)) {
                return Err((format!("{at}.codes"), format!("{c} is not a status code 400-599")));
            }
            if r.attempts == Some(0) {
                return Err((format!("{at}.attempts"), "must be at least 1".into()));
            }
            if let Some(b) = &r.backoff
                && duration_ms(b).is_none()
            {
                return Err((format!("{at}.backoff"), format!("{b:?} is not a duration")));
            }
        }
        if let Some(t) = &rule.timeouts {
            let at = format!("spec.rules[{ri}].timeouts");
            let mut ms = [None, None];
            for (i, (field, v)) in
                [("request", &t.request), ("backendRequest", &t.backend_request)].iter().enumerate()
            {
                if let Some(v) = v {
                    ms[i] = Some(duration_ms(v).ok_or_else(|| {
                        (
                            format!("{at}.{field}"),
                            format!("{v:?} is not a duration like 1h30m or 500ms"),
                        )
                    })?);
                }
            }
            // The CRD's rule: a backend request cannot outlast the whole request.
            if let [Some(request), Some(backend)] = ms
                && request != 0
                && (backend == 0 || backend > request)
            {
                return Err((
                    format!("{at}.backendRequest"),
                    "must not be greater than timeouts.request".into(),
                ));
            }
        }
        for (bi, b) in rule.backend_refs.iter().enumerate() {
            if b.filters.len() > 16 {
                return Err((
                    format!("spec.rules[{ri}].backendRefs[{bi}].filters"),
                    "at most 16 filters".into(),
                ));
            }
            for (fi, f) in b.filters.iter().enumerate() {
                let at = format!("spec.rules[{ri}].backendRefs[{bi}].filters[{fi}]");
                let (field, m) = match f.kind.as_str() {
                    "RequestHeaderModifier" => {
                        ("requestHeaderModifier", &f.request_header_modifier)
                    }
                    "ResponseHeaderModifier" => {
                        ("responseHeaderModifier", &f.response_header_modifier)
                    }
                    _ => continue,
                };
                let Some(m) = m else {
                    return Err((format!("{at}.{field}"), format!("required for type {}", f.kind)));
                };
                if b.filters[..fi].iter().any(|o| o.kind == f.kind) {
                    return Err((at, format!("at most one {} per backendRef", f.kind)));
                }
                validate_modifier(m).map_err(|(f, msg)| (format!("{at}.{field}.{f}"), msg))?;
            }
            if b.weight > 1_000_000 {
                return Err((
                    format!("spec.rules[{ri}].backendRefs[{bi}].weight"),
                    "at most 1000000".into(),
                ));
            }
        }
    }
    Ok(())
}

fn header_token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// A filter's `hostname`, if any: a hostname without wildcard.
fn precise_hostname(h: Option<&str>, at: impl Fn() -> String) -> Result<(), (String, String)> {
    match h {
        Some(h) if !valid_hostname(h) || h.starts_with('*') => {
            Err((format!("{}.hostname", at()), format!("invalid hostname {h:?}")))
        }
        _ => Ok(()),
    }
}

fn validate_modifier(m: &HeaderModifier) -> Result<(), (String, String)> {
    for (kind, list) in [("set", &m.set), ("add", &m.add)] {
        if list.len() > 16 {
            return Err((kind.into(), "at most 16 entries".into()));
        }
        for (i, h) in list.iter().enumerate() {
            header_name(&h.name).map_err(|e| (format!("{kind}[{i}].name"), e))?;
            if h.value.len() > 4096 {
                return Err((format!("{kind}[{i}].value"), "longer than 4096 characters".into()));
            }
            if list[..i].iter().any(|o| o.name.eq_ignore_ascii_case(&h.name)) {
                return Err((format!("{kind}[{i}].name"), format!("{:?} appears twice", h.name)));
            }
        }
    }
    if m.remove.len() > 16 {
        return Err(("remove".into(), "at most 16 entries".into()));
    }
    for (i, n) in m.remove.iter().enumerate() {
        header_name(n).map_err(|e| (format!("remove[{i}]"), e))?;
    }
    Ok(())
}

/// An HTTP header name as the CRD allows it (RFC 9110 token, 1-256 characters).
fn header_name(n: &str) -> Result<(), String> {
    if n.is_empty() || n.len() > 256 {
        return Err("length must be 1-256".into());
    }
    match n.chars().find(|c| !(c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(*c))) {
        Some(c) => Err(format!("{n:?} has the character {c:?}")),
        None => Ok(()),
    }
}

fn path_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-._~!$&'()*+,;=:@/".contains(c)
}

/// What the HTTPRoute CRD (v1.2 and later, standard channel) refuses in an `Exact` or
/// `PathPrefix` value, besides its length and leading `/`: characters outside RFC 3986
/// pchar and `/` other than `%XX` escapes, an escaped `/` (`%2F`), and `//`, `/./`, `/../`,
/// `#`, or a final `/.` or `/..`.
fn path_problem(v: &str) -> Option<String> {
    let b = v.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i] as char;
        if c == '%' {
            let hex = b.get(i + 1..i + 3).filter(|h| h.iter().all(u8::is_ascii_hexdigit));
            let Some(hex) = hex else {
                return Some("has a \"%\" that is not followed by two hexadecimal digits".into());
            };
            if hex.eq_ignore_ascii_case(b"2f") {
                return Some("has an escaped \"/\" (%2F)".into());
            }
            i += 3;
            continue;
        }
        if !path_char(c) {
            let c = v[i..].chars().next().unwrap_or(c);
            return Some(format!("has the character {c:?}"));
        }
        i += 1;
    }
    for (bad, what) in [("//", "\"//\""), ("/./", "\"/./\""), ("/../", "\"/../\"")] {
        if v.contains(bad) {
            return Some(format!("has {what}"));
        }
    }
    if v.ends_with("/.") || v.ends_with("/..") {
        return Some("ends with a \".\" or \"..\" segment".into());
    }
    None
}

/// A path value as NGINX matches it (`$uri`): `%XX` escapes decoded. `Err` when the decoded
/// path is not something NGINX ever matches a location against (a NUL or other control
/// byte, or bytes that are not UTF-8, which nginx.conf text here cannot carry).
pub fn decoded_path(v: &str) -> Result<String, String> {
    if !v.contains('%') {
        return Ok(v.to_owned());
    }
    let b = v.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = (b[i] == b'%')
            .then(|| b.get(i + 1..i + 3))
            .flatten()
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match hex {
            Some(byte) => {
                out.push(byte);
                i += 3;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    if let Some(c) = out.iter().find(|c| c.is_ascii_control()) {
        return Err(format!("decodes to the control character 0x{c:02x}"));
    }
    String::from_utf8(out).map_err(|_| "does not decode to UTF-8".to_owned())
}

pub fn valid_hostname(h: &str) -> bool {
    let rest = h.strip_prefix("*.").unwrap_or(h);
    !rest.is_empty()
        && h.len() <= 253
        && rest.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        })
}
