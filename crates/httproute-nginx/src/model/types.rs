//! The Gateway API objects as the generator reads them, with the CRD defaults.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::syntax::path_char;

/// A word of a set the CRD closes (a match type, a method): one the CRD allows is not copied
/// (50,000 routes of three rules held nine copies of `Exact` and the like a route); another
/// is kept as written, for the error that refuses it.
#[derive(Clone, PartialEq, Eq)]
pub struct Word(Cow<'static, str>);

impl Word {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&str> for Word {
    fn from(s: &str) -> Word {
        const KNOWN: [&str; 12] = [
            "Exact",
            "PathPrefix",
            "RegularExpression",
            "GET",
            "HEAD",
            "POST",
            "PUT",
            "DELETE",
            "CONNECT",
            "OPTIONS",
            "TRACE",
            "PATCH",
        ];
        Word(KNOWN.iter().find(|k| **k == s).map_or_else(|| s.to_owned().into(), |k| (*k).into()))
    }
}

impl<'de> Deserialize<'de> for Word {
    /// As a `String` reads (the same errors), without a copy of a known word.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Word, D::Error> {
        struct Text;
        impl serde::de::Visitor<'_> for Text {
            type Value = Word;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E>(self, s: &str) -> Result<Word, E> {
                Ok(Word::from(s))
            }
        }
        d.deserialize_str(Text)
    }
}

impl std::ops::Deref for Word {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl PartialEq<&str> for Word {
    fn eq(&self, other: &&str) -> bool {
        *self.0 == **other
    }
}

impl std::fmt::Debug for Word {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::fmt::Display for Word {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Meta {
    pub name: String,
    #[serde(default = "default_namespace")]
    pub namespace: String,
    /// Empty or `null`: none (then the object counts as newer than every dated one).
    #[serde(default, deserialize_with = "timestamp")]
    pub creation_timestamp: Option<Timestamp>,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

/// `metadata.creationTimestamp`: an RFC 3339 date and time, compared as an instant (an
/// offset or fractional seconds do not change the order).
#[derive(Debug, Clone)]
pub struct Timestamp {
    /// Nanoseconds since the Unix epoch.
    pub nanos: i128,
    /// As written.
    pub text: String,
}

impl Timestamp {
    pub fn parse(text: &str) -> Result<Timestamp, String> {
        let t = time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
            .map_err(|e| {
            format!("{text:?} is not an RFC 3339 timestamp like 2026-01-31T12:00:00Z ({e})")
        })?;
        Ok(Timestamp { nanos: t.unix_timestamp_nanos(), text: text.to_owned() })
    }
}

impl PartialEq for Timestamp {
    fn eq(&self, other: &Self) -> bool {
        self.nanos == other.nanos
    }
}

impl Eq for Timestamp {}

impl PartialOrd for Timestamp {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Timestamp {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.nanos.cmp(&other.nanos)
    }
}

fn timestamp<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Timestamp>, D::Error> {
    match Option::<String>::deserialize(d)? {
        None => Ok(None),
        Some(t) if t.is_empty() => Ok(None),
        Some(t) => Timestamp::parse(&t).map(Some).map_err(serde::de::Error::custom),
    }
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
    pub hostname: Option<String>,
    #[serde(default)]
    pub allowed_routes: AllowedRoutes,
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
    pub kinds: Option<Vec<RouteGroupKind>>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct RouteNamespaces {
    /// `Same`, `All` or `Selector`.
    #[serde(default = "default_from")]
    pub from: String,
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
#[serde(default)]
pub struct LabelSelector {
    pub match_labels: BTreeMap<String, String>,
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
    pub name: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Namespace {
    pub(crate) metadata: Meta,
}

/// A `Secret` of type `kubernetes.io/tls`: `data` (base64) or `stringData`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Secret {
    pub(crate) metadata: Meta,
    #[serde(rename = "type", default)]
    pub(crate) kind: String,
    #[serde(default)]
    pub(crate) data: BTreeMap<String, String>,
    #[serde(default)]
    pub(crate) string_data: BTreeMap<String, String>,
}

impl Secret {
    /// (certificate chain, private key) as PEM bytes.
    pub(crate) fn tls(&self) -> Result<(Vec<u8>, Vec<u8>), (String, String)> {
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
    pub external_name: Option<String>,
    #[serde(default, deserialize_with = "null_default")]
    pub ports: Vec<ServicePort>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServicePort {
    pub name: Option<String>,
    pub port: u16,
    /// A number or the name of a container port; defaults to `port`.
    pub target_port: Option<Value>,
    /// What the backend speaks on this port: `kubernetes.io/ws`, `kubernetes.io/wss`,
    /// `kubernetes.io/h2c`, ... (GEP-1911).
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
    /// `null` (a Service scaled to 0) reads as none.
    #[serde(default, deserialize_with = "null_default")]
    pub endpoints: Vec<Endpoint>,
    /// `null` (not empty) means "all ports" in the API; no port then.
    pub ports: Option<Vec<EndpointPort>>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Endpoint {
    #[serde(default, deserialize_with = "null_default")]
    pub addresses: Vec<String>,
    #[serde(default, deserialize_with = "null_default")]
    pub conditions: EndpointConditions,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct EndpointConditions {
    /// `None`: unknown, which consumers are to read as ready.
    pub ready: Option<bool>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct EndpointPort {
    pub name: Option<String>,
    /// An int32 the API server does not range-check: only 1-65535 is usable.
    pub port: Option<i64>,
}

/// A field the API server stores as `null` when empty: `null` reads as the default.
fn null_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
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
#[serde(default)]
pub struct GrpcRouteSpec {
    pub parent_refs: Vec<ParentRef>,
    pub hostnames: Vec<String>,
    pub rules: Vec<GrpcRule>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GrpcRule {
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
    pub method: Option<GrpcMethodMatch>,
    #[serde(default)]
    pub headers: Vec<ValueMatch>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct GrpcMethodMatch {
    #[serde(rename = "type", default = "default_value_type")]
    pub kind: Word,
    pub service: Option<String>,
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
                                grpc_names: Some(m.method.as_ref().map_or((false, false), |mm| {
                                    let named = |v: &Option<String>| {
                                        v.as_ref().is_some_and(|s| !s.is_empty())
                                    };
                                    (named(&mm.service), named(&mm.method))
                                })),
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

pub(crate) fn default_rules() -> Vec<Rule> {
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
    pub namespace: Option<String>,
    pub section_name: Option<String>,
    pub port: Option<u16>,
    pub kind: Option<String>,
    pub group: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Rule {
    pub name: Option<String>,
    #[serde(default = "default_matches")]
    pub matches: Vec<Match>,
    #[serde(default)]
    pub backend_refs: Vec<BackendRef>,
    #[serde(default)]
    pub filters: Vec<Filter>,
    // Boxed, as seldom given: each rule of the model holds a pointer, not their fields.
    pub timeouts: Option<Box<Timeouts>>,
    /// Experimental: used only with `--experimental`.
    pub retry: Option<Box<Retry>>,
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

/// `rules[].retry` (Experimental channel).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct Retry {
    #[serde(default)]
    pub codes: Vec<u16>,
    pub attempts: Option<u32>,
    pub backoff: Option<String>,
}

/// `rules[].timeouts`: Gateway API durations (`1h30m`, `500ms`; `0s` disables).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Timeouts {
    pub request: Option<String>,
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
    pub request_header_modifier: Option<HeaderModifier>,
    pub response_header_modifier: Option<HeaderModifier>,
    pub request_redirect: Option<RequestRedirect>,
    #[serde(default, rename = "urlRewrite")]
    pub url_rewrite: Option<UrlRewrite>,
    pub request_mirror: Option<RequestMirror>,
    pub cors: Option<Cors>,
}

/// The `CORS` filter: preflight requests answered at the gateway, CORS response headers on
/// the others.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
#[serde(default)]
pub struct Cors {
    pub allow_origins: Vec<String>,
    pub allow_credentials: Option<bool>,
    pub allow_methods: Vec<String>,
    pub allow_headers: Vec<String>,
    pub expose_headers: Vec<String>,
    /// Seconds a browser may cache a preflight answer (default 5).
    pub max_age: Option<u32>,
}

/// `RequestMirror`: a copy of each request (or of a share of them) goes to another backend;
/// its answers are ignored.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestMirror {
    pub backend_ref: ObjectRef,
    pub percent: Option<u32>,
    pub fraction: Option<Fraction>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ObjectRef {
    pub name: String,
    pub namespace: Option<String>,
    pub port: Option<u16>,
    pub kind: Option<String>,
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

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RequestRedirect {
    pub scheme: Option<String>,
    pub hostname: Option<String>,
    pub path: Option<PathModifier>,
    pub port: Option<u16>,
    #[serde(default = "default_redirect_status")]
    pub status_code: u16,
}

fn default_redirect_status() -> u16 {
    302
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct UrlRewrite {
    pub hostname: Option<String>,
    pub path: Option<PathModifier>,
}

/// `ReplaceFullPath` or `ReplacePrefixMatch`, as validated at load.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PathModifier {
    #[serde(rename = "type")]
    pub kind: String,
    pub replace_full_path: Option<String>,
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

#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(default)]
pub struct HeaderModifier {
    pub set: Vec<HeaderValue>,
    pub add: Vec<HeaderValue>,
    pub remove: Vec<String>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct HeaderValue {
    pub name: String,
    pub value: String,
}

pub(crate) fn default_matches() -> Vec<Match> {
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
    pub method: Option<Word>,
    /// A GRPCRoute's match: whether it names a service, a method. GRPCRoute precedence counts
    /// the characters of the service, then of the method, a match matches; every match that
    /// names a service and matches a request matched the same service (the request's), so
    /// among the matches of one request naming it is what counts.
    #[serde(skip)]
    pub grpc_names: Option<(bool, bool)>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PathMatch {
    #[serde(rename = "type", default = "default_path_type")]
    pub kind: Word,
    #[serde(default = "default_path_value")]
    pub value: String,
}

impl Default for PathMatch {
    fn default() -> Self {
        PathMatch { kind: default_path_type(), value: default_path_value() }
    }
}

fn default_path_type() -> Word {
    Word::from("PathPrefix")
}

fn default_path_value() -> String {
    "/".to_owned()
}

#[derive(Debug, Clone, Deserialize)]
pub struct ValueMatch {
    #[serde(rename = "type", default = "default_value_type")]
    pub kind: Word,
    pub name: String,
    pub value: String,
}

pub(crate) fn default_value_type() -> Word {
    Word::from("Exact")
}

#[derive(Debug, Clone, Deserialize)]
pub struct BackendRef {
    pub name: String,
    pub namespace: Option<String>,
    pub port: Option<u16>,
    #[serde(default = "default_weight")]
    pub weight: u32,
    pub kind: Option<String>,
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
