//! The plan as NGINX configuration and `matches.json`. Configuration text is written only
//! through the typed writer of [`crate::conf`]: this module builds the tree of directives,
//! with every byte from the manifests or the command line as data ([`Part::Data`]).

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use crate::conf::{
    Arg, Directive, Node, Part, Provenance, Rendered, Stmt, Writer, braced_var, code, data,
    regex_data, var,
};
use crate::model::{HeaderModifier, PathModifier, RequestRedirect};
use crate::plan::{
    Entry, INTERNAL_PREFIX, Loc, PathKind, Plan, PortPlan, RuleId, RulePlan, ServerPlan, Target,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Carrier {
    /// `http_matches_load matches.json` + `set $match_key` (what NGF does today)
    Preload,
    /// `http_matches '<list>'` in each location
    Inline,
    /// `set $http_matches '<list>'` (blog-era NGF)
    Variable,
}

pub struct Options {
    pub module: String,
    pub carrier: Carrier,
    /// `listen ADDRESS:PORT` instead of `listen PORT`.
    pub listen_address: Option<String>,
    /// Certificate and key files of TLS Secrets (`namespace/name`); a Secret not here but
    /// among the inputs is written to `certs/NAMESPACE_NAME.crt` and `.key` next to
    /// nginx.conf (the plan leaves out Secrets that are neither).
    pub certificates: BTreeMap<String, (String, String)>,
    /// `resolver` addresses for backends named by DNS (`--resolver`, else the nameservers of
    /// /etc/resolv.conf); NGINX's syntax: `ADDRESS[:PORT]`, IPv6 in brackets.
    pub resolvers: Vec<String>,
    /// Generate Experimental-channel fields (`retry`); without it they are warned about.
    pub experimental: bool,
    /// The NGINX the configuration is for (major, minor, patch): planning takes its
    /// capabilities (`plan::Capabilities`; before 1.25.1 HTTP/2 is a `listen` parameter).
    pub nginx_version: (u32, u32, u32),
    /// Follow ExternalName Services (`--allow-external-name`; planning's
    /// `PlanOptions::allow_external_name`).
    pub allow_external_name: bool,
}

pub struct Output {
    pub nginx_conf: String,
    /// The directives of `nginx_conf` as NGINX's parser will read them (what the writer
    /// meant to write; tests and the fuzz target read the text back and compare); empty with
    /// [`Tree::Drop`].
    pub tree: Vec<Stmt>,
    pub matches_json: String,
    /// Other files, by path relative to nginx.conf (certificates and keys from Secrets).
    pub files: BTreeMap<String, Vec<u8>>,
    /// What the configuration cannot do (on top of the plan's warnings).
    pub warnings: Vec<String>,
    /// Rules and matches left out because NGINX cannot take a word written from them: the
    /// rule, and why (`match N: ...` for a match). [`crate::plan::Status`] gets a condition
    /// for each ([`crate::plan::dropped_from_configuration`]).
    pub dropped: Vec<(RuleId, String)>,
}

/// A tenant's object that directives are written for: what a word of them NGINX cannot take
/// leaves out (see [`emit_with`]).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Unit {
    /// A rule: its internal locations, and the maps and split_clients written for it.
    Rule(RuleId),
    /// The location of a match path: (port, server, location) in the plan.
    Location(ServerAt, usize),
}

/// What a configuration leaves out.
#[derive(Debug, Default)]
struct Skip {
    rules: BTreeSet<RuleId>,
    locations: BTreeSet<(ServerAt, usize)>,
}

fn d(name: &'static str) -> Directive {
    Directive::new(name)
}

/// A map entry: `KEY VALUE;`.
fn entry_of(key: Arg, value: Arg) -> Node {
    Directive::entry(key).arg(value).into()
}

/// `""` (an empty word).
fn empty() -> Arg {
    Arg::code("").quoted()
}

fn quoted(field: impl Into<Cow<'static, str>>, text: impl Into<String>) -> Arg {
    Arg::data(field, text).quoted()
}

/// Where the path of a location comes from.
const PATH_FIELD: &str = "HTTPRoute spec.rules[].matches[].path.value";
const HOSTNAME_FIELD: &str =
    "hostname (HTTPRoute spec.hostnames[], Gateway spec.listeners[].hostname)";

pub fn emit(plan: &Plan, opts: &Options) -> Result<Output, String> {
    emit_with(plan, opts, Tree::Keep)
}

/// Whether [`Output::tree`] is made (tests and the fuzz target compare it with the text read
/// back; a generator run writes only the text, and the tree costs more memory than it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tree {
    Keep,
    Drop,
}

/// [`emit`], with or without [`Output::tree`].
///
/// A tenant object's failure is confined to it: every directive is written with the object it
/// comes from ([`Provenance`]), and a word NGINX cannot take (a control character, a word past
/// its 4,094 bytes) leaves out that object (the rule, or the match's location), with a warning
/// and [`Output::dropped`], and the configuration is written again without it. Each pass
/// leaves out every object it finds, and at least one more than the pass before, so the
/// passes end; in practice there are two. Only the run's own words (options, the generator's
/// text) are an error.
pub fn emit_with(plan: &Plan, opts: &Options, tree: Tree) -> Result<Output, String> {
    let mut skip = Skip::default();
    let mut dropped: Vec<(RuleId, String)> = Vec::new();
    let mut warnings = Vec::new();
    loop {
        let (out, refused, units) = emit_once(plan, opts, tree, &skip)?;
        let Some(mut out) = out else {
            let before = (skip.rules.len(), skip.locations.len());
            for (o, why) in refused {
                match &units[o as usize] {
                    Unit::Rule(id) => {
                        // The rule's fields are named after it (`field`): said once.
                        let why = match why.strip_prefix(&format!("{id}: ")) {
                            Some(rest) => rest.to_owned(),
                            None => why,
                        };
                        if skip.rules.insert(id.clone()) {
                            warnings.push(format!("{id}: {why}; the rule is not served"));
                            dropped.push((id.clone(), why));
                        }
                    }
                    Unit::Location((pi, si), li) => {
                        if !skip.locations.insert(((*pi, *si), *li)) {
                            continue;
                        }
                        let loc = &plan.ports[*pi].servers[*si].locations[*li];
                        let path = match &loc.loc {
                            Loc::Exact(p) | Loc::Prefix(p) => p.trim_end_matches('/'),
                        };
                        // The matches whose path is the location's.
                        for c in &loc.candidates {
                            if c.path_kind != PathKind::Regex
                                && c.path.trim_end_matches('/') == path
                                && !dropped.iter().any(|(id, w)| {
                                    *id == c.id
                                        && w.starts_with(&format!("match {}:", c.match_index))
                                })
                            {
                                warnings.push(format!(
                                    "{} match {}: {why}; the match is not served",
                                    c.id, c.match_index
                                ));
                                dropped.push((
                                    c.id.clone(),
                                    format!("match {}: {why}", c.match_index),
                                ));
                            }
                        }
                    }
                }
            }
            if before == (skip.rules.len(), skip.locations.len()) {
                return Err(format!(
                    "generator bug: a configuration word NGINX cannot take, again: {warnings:?}"
                ));
            }
            continue;
        };
        warnings.append(&mut out.warnings);
        out.warnings = warnings;
        out.dropped = dropped;
        return Ok(out);
    }
}

/// One pass of [`emit_with`] without the objects of `skip`: the output, or (when a word of some
/// tenant object cannot be written) none, the refused words by object and the objects.
#[allow(clippy::type_complexity)]
fn emit_once(
    plan: &Plan,
    opts: &Options,
    tree: Tree,
    skip: &Skip,
) -> Result<(Option<Output>, Vec<(u32, String)>, Vec<Unit>), String> {
    let render = match tree {
        Tree::Keep => Writer::render,
        Tree::Drop => Writer::render_text,
    };
    // The lists of matches.json, shared where they are the same (a redirect path names a
    // location of the server that runs the list, so the same text means the same in every
    // server).
    let mut lists = crate::lists::Lists::default();
    let mut servers: Vec<Node> = Vec::new();
    let mut http = Http { experimental: opts.experimental, ..Http::default() };

    let merged = Merged::of(plan);
    for (pi, port) in plan.ports.iter().enumerate() {
        // A port whose servers are all written with an earlier port's needs no map of its own.
        if port.tls && merged.writes_any(pi) {
            http.sni_map(port);
        }
        for (si, server) in port.servers.iter().enumerate() {
            // A server that listens on several ports is written once, where its first port
            // would have it.
            let Some(members) = merged.members(pi, si) else { continue };
            let legacy_http2 = !plan.capabilities.http2_directive;
            let mut body: Vec<Node> = Vec::new();
            for &(mp, _) in members {
                let member_port = &plan.ports[mp];
                let address = match &opts.listen_address {
                    Some(a) => Arg::parts(vec![
                        data("--listen-address", a.clone()),
                        code(format!(":{}", member_port.port)),
                    ]),
                    None => Arg::code(member_port.port.to_string()),
                };
                let mut listen = d("listen").arg(address);
                if port.tls {
                    listen = listen.code("ssl");
                }
                if port.http2 && legacy_http2 {
                    // Before 1.25.1 (see `plan::Capabilities`): over TLS, ALPN keeps HTTP/1.1; a
                    // plain port only gets here when it serves GRPCRoutes alone (h2c).
                    listen = listen.code("http2");
                }
                if server.hostname.is_none() {
                    listen = listen.code("default_server");
                }
                body.push(listen.into());
            }
            match &server.hostname {
                None => body.push(d("server_name").arg(empty()).into()),
                Some(h) => body.push(d("server_name").data(HOSTNAME_FIELD, h.clone()).into()),
            }
            if port.http2 && !legacy_http2 {
                // gRPC: HTTP/2 by ALPN over TLS, or with prior knowledge (h2c) on a plain port,
                // where HTTP/1.1 still works (NGINX 1.25.1 and later).
                body.push(d("http2").code("on").into());
            }
            let mut comments: Vec<String> = Vec::new();
            for &(mp, ms) in members {
                let c = match &plan.ports[mp].servers[ms].listener {
                    Some(l) => format!("listener {l}"),
                    None => "no listener serves this host: 404".to_owned(),
                };
                if !comments.contains(&c) {
                    comments.push(c);
                }
            }
            body.extend(comments.into_iter().map(Node::Comment));
            if port.tls {
                tls_server(port.port, server, opts, &mut body);
            }
            for (li, loc) in server.locations.iter().enumerate() {
                if skip.locations.contains(&((pi, si), li)) {
                    continue;
                }
                let from = http.unit(Unit::Location((pi, si), li));
                let head = match &loc.loc {
                    Loc::Exact(p) => d("location").code("=").arg(quoted(PATH_FIELD, p.clone())),
                    Loc::Prefix(p) => d("location").arg(quoted(PATH_FIELD, p.clone())),
                }
                .from(from);
                let served: Vec<_> =
                    loc.candidates.iter().filter(|c| !skip.rules.contains(&c.id)).collect();
                if served.is_empty() {
                    body.push(head.inline(vec![d("return").code("404").into()]).into());
                    continue;
                }
                let text = || {
                    let list: Vec<&Entry> = served.iter().map(|c| &c.entry).collect();
                    serde_json::to_string(&list).map_err(|e| e.to_string())
                };
                let key = format!("{}_{si}_{li}", port.port);
                let list_field = || -> Cow<'static, str> {
                    format!(
                        "the list of location {key} (one configuration token: if it is too long, \
                         use --carrier preload)"
                    )
                    .into()
                };
                let inner: Vec<Node> = match opts.carrier {
                    // Runs shared by locations written once, lists as includes of them.
                    Carrier::Preload => {
                        let key = lists.key(&key, &served)?;
                        vec![d("set").var("match_key").code(key).into(), d("http_matches").into()]
                    }
                    // A list too long for one word is the carrier's (an option), and it holds
                    // every route of the location: the run's error, with the advice.
                    Carrier::Inline => {
                        vec![
                            d("http_matches")
                                .arg(Arg::data(list_field(), text()?).single_quoted())
                                .from(Provenance::Run)
                                .into(),
                        ]
                    }
                    Carrier::Variable => {
                        // `set` would read a `$` of a regex as a variable: the writer spells it
                        // `${httproute_dollar}`.
                        vec![
                            d("set")
                                .var("http_matches")
                                .arg(Arg::data(list_field(), text()?).single_quoted())
                                .from(Provenance::Run)
                                .into(),
                            d("http_matches").into(),
                        ]
                    }
                };
                body.push(head.inline(inner).into());
            }
            let mut mirror_locs = Vec::new();
            let used: BTreeSet<usize> = server
                .locations
                .iter()
                .enumerate()
                .filter(|(li, _)| !skip.locations.contains(&((pi, si), *li)))
                .flat_map(|(_, l)| l.candidates.iter())
                .filter(|c| !skip.rules.contains(&c.id))
                .map(|c| c.rule)
                .collect();
            for ri in used {
                http.rule_location(
                    (port.port, port.tls),
                    ri,
                    &server.rules[ri],
                    &mut body,
                    &mut mirror_locs,
                )?;
            }
            body.append(&mut mirror_locs);
            servers.push(Node::Blank);
            servers.push(d("server").block(body).into());
        }
    }

    let mut warnings = std::mem::take(&mut http.warnings);
    let mut inner: Vec<Node> = vec![
        d("access_log").code("logs/access.log").into(),
        d("client_body_temp_path").code("tmp/client_body").into(),
        d("proxy_temp_path").code("tmp/proxy").into(),
        d("fastcgi_temp_path").code("tmp/fastcgi").into(),
        d("uwsgi_temp_path").code("tmp/uwsgi").into(),
        d("scgi_temp_path").code("tmp/scgi").into(),
    ];
    if opts.carrier == Carrier::Preload {
        inner.push(d("http_matches_load").code("matches.json").into());
    }
    // Server names (and the SNI map's keys) the CRD allows (253 bytes) but NGINX's default
    // hash buckets (64) do not hold.
    let longest_name = plan
        .ports
        .iter()
        .flat_map(|p| &p.servers)
        .filter_map(|s| s.hostname.as_ref().map(String::len))
        .max()
        .unwrap_or(0);
    if longest_name > 32 {
        let size = (longest_name + 32).next_power_of_two().max(128);
        inner.push(d("server_names_hash_bucket_size").code(size.to_string()).into());
        inner.push(d("map_hash_bucket_size").code(size.to_string()).into());
    }
    if http.longest_header > 32 {
        // The CRD allows header names of 256 bytes; NGINX's default bucket (64) holds about 40.
        let size = (http.longest_header + 32).next_power_of_two().max(128);
        inner.push(d("proxy_headers_hash_bucket_size").code(size.to_string()).into());
    }
    // `geo $httproute_dollar` goes here when the writer spelled a `$` of data with it.
    let dollar_at = inner.len();
    inner.append(&mut http.maps);
    if http.raw_path {
        inner.push(raw_path_map());
    }
    if http.upgrade {
        inner.push(upgrade_map());
    }
    if http.preflight {
        inner.push(preflight_map());
    }
    if http.resolve {
        if opts.resolvers.is_empty() {
            warnings.push(
                "no resolver (--resolver, or a nameserver in /etc/resolv.conf): backends named \
                 by DNS answer 502"
                    .to_owned(),
            );
        } else {
            // Names are looked up when requests need them, cached for `valid`: a name that
            // does not resolve costs its own requests (502), never the configuration.
            let mut r = d("resolver");
            for a in &opts.resolvers {
                r = r.data("--resolver", a.clone());
            }
            inner.push(r.code("valid=10s").into());
            inner.push(d("resolver_timeout").code("5s").into());
        }
    }
    for (up, addrs) in &http.upstreams {
        let mut entries = Vec::new();
        for addr in addrs {
            let mut s = d("server").data("backend address", addr.clone());
            if http.no_fail.contains(up) {
                // max_fails=0: a retried answer must not take the address out of the
                // upstream for fail_timeout.
                s = s.code("max_fails=0");
            }
            entries.push(s.into());
        }
        inner.push(Node::Blank);
        inner.push(d("upstream").data("backend upstream name", up.clone()).block(entries).into());
    }
    inner.append(&mut http.splits);
    inner.append(&mut servers);

    let top = |inner: Vec<Node>| -> Vec<Node> {
        vec![
            Node::Comment(
                "Generated by httproute-nginx: do not edit; regenerate from the manifests.".into(),
            ),
            d("load_module").data("--module", opts.module.clone()).into(),
            d("worker_processes").code("auto").into(),
            d("pid").code("logs/nginx.pid").into(),
            d("error_log").code("logs/error.log").code("notice").into(),
            Node::Blank,
            d("events").block(vec![d("worker_connections").code("1024").into()]).into(),
            Node::Blank,
            d("http").block(inner).into(),
        ]
    };
    let mut nodes = top(inner);
    let mut rendered: Rendered = render(&nodes)?;
    if !rendered.refused.is_empty() || !http.refused.is_empty() {
        let mut refused = std::mem::take(&mut http.refused);
        refused.append(&mut rendered.refused);
        return Ok((None, refused, http.units));
    }
    if rendered.dollar {
        drop(rendered);
        if let Some(Node::Directive(http)) = nodes.last_mut()
            && let Some(inner) = http.block_nodes_mut()
        {
            inner.insert(dollar_at, crate::conf::dollar_geo());
        }
        rendered = render(&nodes)?;
    }
    drop(nodes);
    let matches_json = lists.json()?;
    // Secrets that came with the manifests, where tls_server expects them (unless the
    // command line named other files).
    let files = plan
        .secrets
        .iter()
        .filter(|(c, _)| !opts.certificates.contains_key(*c))
        .flat_map(|(c, (crt, key))| {
            let (crt_path, key_path) = certificate_files(c);
            [(crt_path, crt.clone()), (key_path, key.clone())]
        })
        .collect();
    let out = Output {
        nginx_conf: rendered.text,
        tree: rendered.tree,
        matches_json,
        files,
        warnings,
        dropped: Vec::new(),
    };
    Ok((Some(out), Vec::new(), http.units))
}

/// Servers that are the same on several ports, written once with a `listen` per port.
///
/// Two servers of different ports are one when everything written in them is the same: the
/// host name, the certificates, the locations with their lists and the rules. Their ports
/// must also be alike: both HTTP or both HTTPS, the same HTTP/2 setting, and, over TLS, the
/// same host names (the SNI check of [`tls_server`] reads the map of the first port). A server
/// with a RequestRedirect to the listener's own port (no port, no scheme) stays on its port.
/// Each server is hashed once and compared with the first server of its bucket, so the cost
/// grows with the servers, not with their pairs.
struct Merged {
    /// Per port, per server: the (port, server) indexes it stands for, when it is the first of
    /// them; `None` for one written with an earlier port.
    members: Vec<Vec<Option<Vec<ServerAt>>>>,
}

/// A server of the plan: (index of its port, index in the port's servers).
type ServerAt = (usize, usize);

impl Merged {
    fn of(plan: &Plan) -> Merged {
        use std::collections::HashMap;
        use std::hash::{Hash as _, Hasher as _};
        // Over TLS: ports with the same host names (their SNI maps are the same).
        let mut host_sets: HashMap<Vec<Option<&str>>, usize> = HashMap::new();
        let hosts: Vec<usize> = plan
            .ports
            .iter()
            .map(|p| {
                let set: Vec<Option<&str>> =
                    p.servers.iter().map(|s| s.hostname.as_deref()).collect();
                let n = host_sets.len();
                *host_sets.entry(set).or_insert(n)
            })
            .collect();
        // A redirect whose port is the listener's: the server is written for its port.
        let pinned = |p: &PortPlan, s: &ServerPlan| -> Option<u16> {
            s.rules
                .iter()
                .any(|r| {
                    r.redirect.as_ref().is_some_and(|r| r.port.is_none() && r.scheme.is_none())
                })
                .then_some(p.port)
        };
        let alike = |(ap, a): (usize, &ServerPlan), (bp, b): (usize, &ServerPlan)| {
            let (pa, pb) = (&plan.ports[ap], &plan.ports[bp]);
            pa.tls == pb.tls
                && pa.http2 == pb.http2
                && (!pa.tls || hosts[ap] == hosts[bp])
                && pinned(pa, a) == pinned(pb, b)
                && a.hostname == b.hostname
                && a.certificates == b.certificates
                && a.locations == b.locations
                && a.rules == b.rules
        };
        let mut buckets: HashMap<u64, Vec<ServerAt>> = HashMap::new();
        let mut members: Vec<Vec<Option<Vec<ServerAt>>>> =
            plan.ports.iter().map(|p| p.servers.iter().map(|_| None).collect()).collect();
        for (pi, port) in plan.ports.iter().enumerate() {
            for (si, server) in port.servers.iter().enumerate() {
                // What tells servers apart cheaply; `alike` decides.
                let mut h = std::collections::hash_map::DefaultHasher::new();
                (port.tls, port.http2, port.tls.then_some(hosts[pi]), pinned(port, server))
                    .hash(&mut h);
                (&server.hostname, &server.certificates).hash(&mut h);
                (server.locations.len(), server.rules.len()).hash(&mut h);
                for l in &server.locations {
                    match &l.loc {
                        Loc::Exact(p) => (0u8, p).hash(&mut h),
                        Loc::Prefix(p) => (1u8, p).hash(&mut h),
                    }
                    l.candidates.len().hash(&mut h);
                }
                for r in &server.rules {
                    (&r.id, r.backends.len()).hash(&mut h);
                }
                let bucket = buckets.entry(h.finish()).or_default();
                let first = bucket
                    .iter()
                    .copied()
                    .find(|&(fp, fs)| alike((fp, &plan.ports[fp].servers[fs]), (pi, server)));
                match first {
                    Some((fp, fs)) => {
                        members[fp][fs].as_mut().expect("the first of its group").push((pi, si))
                    }
                    None => {
                        bucket.push((pi, si));
                        members[pi][si] = Some(vec![(pi, si)]);
                    }
                }
            }
        }
        Merged { members }
    }

    /// The servers (port, server) that server `si` of port `pi` is written for, or `None` when
    /// it is written with an earlier port.
    fn members(&self, pi: usize, si: usize) -> Option<&[ServerAt]> {
        self.members[pi][si].as_deref()
    }

    /// Whether some server is written for port `pi` (first of its group).
    fn writes_any(&self, pi: usize) -> bool {
        self.members[pi].iter().any(Option::is_some)
    }
}

/// What the `http` block collects while the servers are written.
#[derive(Default)]
struct Http {
    upstreams: BTreeMap<String, Vec<String>>,
    /// Upstreams of retried rules: `max_fails=0` on each server.
    no_fail: BTreeSet<String>,
    /// `--experimental`.
    experimental: bool,
    /// What the configuration cannot do, found while writing it.
    warnings: Vec<String>,
    /// CORS filters written so far (`$httproute_cors_N`).
    cors_n: usize,
    /// `$httproute_preflight` is used.
    preflight: bool,
    /// `$httproute_connection` is used (upgrades passed through).
    upgrade: bool,
    /// Some backend is a name resolved per request.
    resolve: bool,
    /// `split_clients` blocks.
    splits: Vec<Node>,
    /// `map`s: header filters, SNI.
    maps: Vec<Node>,
    /// How many `map`s `maps` holds.
    map_n: usize,
    split_n: usize,
    /// `$httproute_raw_path` is used.
    raw_path: bool,
    /// The longest header name of a `proxy_set_header`.
    longest_header: usize,
    /// The tenant objects directives are written for, by their [`Provenance::Object`] number.
    units: Vec<Unit>,
    /// Limits of NGINX the rule being written passes (no directive can raise them): why.
    over_limit: Vec<String>,
    /// Such rules: (their provenance number, why).
    refused: Vec<(u32, String)>,
}

/// The longest header name a hash with NGINX's fixed 64-byte buckets holds (the grpc module's
/// headers and hidden headers: no `grpc_headers_hash_bucket_size` exists): an element is a
/// pointer and the name with 2 bytes, aligned to 8, and a bucket ends with a pointer.
pub const FIXED_BUCKET_HEADER: usize = 64 - 8 - 8 - 2;

/// A rule's fields, for errors: "HTTPRoute default/r rule 0: FIELD".
fn field(rule: &RulePlan, f: &str) -> Cow<'static, str> {
    Cow::Owned(format!("{}: {f}", rule.id))
}

impl Http {
    /// The provenance of directives written for `u`.
    fn unit(&mut self, u: Unit) -> Provenance {
        self.units.push(u);
        Provenance::Object((self.units.len() - 1) as u32)
    }

    /// [`Http::rule_location_of`], with every directive it writes (in the server, its
    /// mirrors' locations, its maps and split_clients) written for the rule.
    fn rule_location(
        &mut self,
        listener: (u16, bool),
        ri: usize,
        rule: &RulePlan,
        out: &mut Vec<Node>,
        mirror_locs: &mut Vec<Node>,
    ) -> Result<(), String> {
        let from = self.unit(Unit::Rule(rule.id.clone()));
        let at = (out.len(), mirror_locs.len(), self.maps.len(), self.splits.len());
        self.rule_location_of(listener, ri, rule, out, mirror_locs)?;
        if let Provenance::Object(o) = from {
            for why in std::mem::take(&mut self.over_limit) {
                self.refused.push((o, why));
            }
        }
        for n in out[at.0..]
            .iter_mut()
            .chain(&mut mirror_locs[at.1..])
            .chain(&mut self.maps[at.2..])
            .chain(&mut self.splits[at.3..])
        {
            if let Node::Directive(d) = n {
                d.set_provenance_if_none(from);
            }
        }
        Ok(())
    }

    fn split_var(&mut self) -> String {
        self.split_n += 1;
        format!("httproute_split_{}", self.split_n - 1)
    }

    fn push_map(&mut self, m: Directive) {
        self.map_n += 1;
        self.maps.push(Node::Blank);
        self.maps.push(m.into());
    }

    /// The internal location of rule `ri` (a redirect, a 500, or a proxy with its filters and
    /// weights), and its mirrors' locations into `mirror_locs`.
    fn rule_location_of(
        &mut self,
        listener: (u16, bool),
        ri: usize,
        rule: &RulePlan,
        out: &mut Vec<Node>,
        mirror_locs: &mut Vec<Node>,
    ) -> Result<(), String> {
        let name = rule.rule_name.as_deref().map(|n| format!(" ({n})")).unwrap_or_default();
        out.push(Node::Comment(format!("{}{name}", rule.id)));
        let retried;
        let (rule, retry) = match &rule.retry {
            Some(r) if self.experimental && !rule.grpc => {
                let (directives, tries) = self.retry(rule, r);
                // NGINX retries on the next server of the upstream: each fixed address is
                // listed once per try, so a backend with one endpoint is retried too.
                retried = RulePlan {
                    backends: rule
                        .backends
                        .iter()
                        .map(|b| {
                            let mut b = b.clone();
                            if let Target::Upstream { name, servers } = &b.target {
                                let name = format!("{name}_r{tries}");
                                self.no_fail.insert(name.clone());
                                b.target = Target::Upstream {
                                    name,
                                    servers: servers
                                        .iter()
                                        .flat_map(|s| {
                                            std::iter::repeat_n(s.clone(), tries as usize)
                                        })
                                        .collect(),
                                };
                            }
                            b
                        })
                        .collect(),
                    ..rule.clone()
                };
                (&retried, directives)
            }
            Some(_) => {
                self.warnings.push(format!(
                    "{}: retry is an Experimental field; generated only with --experimental",
                    rule.id
                ));
                (rule, Vec::new())
            }
            None => (rule, Vec::new()),
        };
        let loc = || d("location").code("=").code(format!("{INTERNAL_PREFIX}{ri}"));
        let path_field = if rule.redirect.as_ref().is_some_and(|r| r.path.is_some()) {
            "RequestRedirect path"
        } else {
            "URLRewrite path"
        };
        let path = rule
            .redirect
            .as_ref()
            .and_then(|r| r.path.as_ref())
            .or_else(|| rule.rewrite.as_ref().and_then(|r| r.path.as_ref()))
            .map(|p| self.set_path(p, &rule.match_prefix, field(rule, path_field)));
        if let Some(r) = &rule.redirect {
            // A redirect answers by itself: backendRefs are not used.
            let url = redirect_url(r, listener, path.is_some(), rule);
            let mut inner: Vec<Node> = vec![d("internal").into()];
            inner.extend(path.unwrap_or_default());
            inner.push(d("return").code(r.status_code.to_string()).arg(url).into());
            out.push(loc().inline(inner).into());
            return Ok(());
        }
        // The URI sent upstream: the client's own, or the rewritten path.
        let (set, uri): (Vec<Node>, Vec<Part>) = match path {
            Some(set) => (set, vec![var("httproute_path"), var("is_args"), var("args")]),
            // grpc_pass sends the request's current URI, which the internal redirect changed:
            // give it back the client's path.
            None if rule.grpc => {
                self.raw_path = true;
                (
                    vec![d("rewrite").code("^").var("httproute_raw_path").code("break").into()],
                    vec![],
                )
            }
            None => (vec![], vec![var("request_uri")]),
        };
        let total: u64 = rule.backends.iter().map(|b| u64::from(b.weight)).sum();
        if total == 0 {
            out.push(
                loc().inline(vec![d("internal").into(), d("return").code("500").into()]).into(),
            );
            return Ok(());
        }
        let mut mirrors = retry;
        if let Some(c) = &rule.cors {
            // Answered or decorated in every location that proxies for the rule.
            let cors = self.cors(c, rule);
            mirrors.extend(cors);
        }
        for (k, (target, share)) in rule.mirrors.iter().enumerate() {
            if *share <= 0.0 {
                continue;
            }
            let Some((set_backend, host)) = self.destination(target) else { continue };
            let path = format!("{INTERNAL_PREFIX}mirror-{ri}-{k}");
            mirrors.push(d("mirror").code(path.clone()).into());
            let mut inner: Vec<Node> = vec![d("internal").into()];
            // A share below 1 is drawn per request; the others' mirror subrequest ends
            // at once, with no upstream.
            if *share < 1.0 {
                let v = self.split_var();
                // NGINX refuses 0.00%: a share below 0.005% is mirrored at 0.01%.
                let pct = percent(((share * 10000.0).round() as u64).clamp(1, 10000));
                self.splits.push(Node::Blank);
                self.splits.push(
                    d("split_clients")
                        .arg(Arg::parts(vec![var("request_id"), code("m")]).quoted())
                        .var(v.clone())
                        .block(vec![
                            entry_of(Arg::code(pct), Arg::code("1")),
                            entry_of(Arg::code("*"), empty()),
                        ])
                        .into(),
                );
                inner.push(
                    Directive::if_(v, Some(("=", empty())))
                        .inline(vec![d("return").code("204").into()])
                        .into(),
                );
            }
            inner.extend(set_backend);
            if rule.grpc {
                self.raw_path = true;
                inner.push(d("rewrite").code("^").var("httproute_raw_path").code("break").into());
                inner.push(d("grpc_set_header").code("Host").var("host").into());
                inner.push(d("grpc_pass").arg(Arg::parts(vec![code("grpc://"), host])).into());
            } else {
                inner.push(d("proxy_http_version").code("1.1").into());
                inner.push(d("proxy_set_header").code("Host").var("host").into());
                inner.push(d("proxy_set_header").code("Connection").arg(empty()).into());
                inner.push(
                    d("proxy_pass")
                        .arg(Arg::parts(vec![code("http://"), host, var("request_uri")]))
                        .into(),
                );
            }
            mirror_locs.push(d("location").code("=").code(path).inline(inner).into());
        }
        // Backends that need locations of their own: their own filters, or not all speaking
        // the same scheme (one proxy_pass takes one).
        let own_filters = rule
            .backends
            .iter()
            .any(|b| modifies(&b.request_headers) || modifies(&b.response_headers))
            || rule.backends.iter().any(|b| b.tls) && !rule.backends.iter().all(|b| b.tls);
        if own_filters && rule.backends.len() > 1 {
            // Filters of their own: one location per backend, picked per request by
            // split_clients and reached with an internal rewrite.
            let shares: Vec<(Arg, u32)> = rule
                .backends
                .iter()
                .enumerate()
                .map(|(k, b)| (Arg::code(format!("b{k}")), b.weight))
                .collect();
            let v = self.split(shares);
            out.push(
                loc()
                    .inline(vec![
                        d("internal").into(),
                        d("rewrite")
                            .code("^")
                            .arg(Arg::parts(vec![code(format!("{INTERNAL_PREFIX}{ri}-")), var(v)]))
                            .code("last")
                            .into(),
                    ])
                    .into(),
            );
            for (k, b) in rule.backends.iter().enumerate() {
                let loc = d("location").code("=").code(format!("{INTERNAL_PREFIX}{ri}-b{k}"));
                self.backend_location(out, loc, rule, b, &set, &uri, &mirrors)?;
            }
            return Ok(());
        }
        if let [only] = &rule.backends[..] {
            self.backend_location(out, loc(), rule, only, &set, &uri, &mirrors)?;
            return Ok(());
        }
        let mut proxy = self.proxy(rule, &rule.request_headers, &rule.response_headers)?;
        proxy.extend(mirrors);
        // Several backends: split_clients picks one per request. Its value is an upstream
        // name, a "host:port" to resolve, "" for a 500 share or "503" for a 503 share.
        let mut unavailable = false;
        let shares: Vec<(Arg, u32)> = rule
            .backends
            .iter()
            .map(|b| {
                let value = match &b.target {
                    Target::Upstream { name, servers } => {
                        self.upstreams.insert(name.clone(), servers.clone());
                        Arg::data("backend upstream name", name.clone())
                    }
                    Target::Resolve(addr) => {
                        self.resolve = true;
                        quoted("backend address", addr.clone())
                    }
                    Target::Status(503) => {
                        unavailable = true;
                        Arg::code("503")
                    }
                    Target::Status(_) => empty(),
                };
                (value, b.weight)
            })
            .collect();
        let v = self.split(shares);
        let mut inner: Vec<Node> = vec![
            d("internal").into(),
            Directive::if_(v.clone(), Some(("=", empty())))
                .inline(vec![d("return").code("500").into()])
                .into(),
        ];
        if unavailable {
            inner.push(
                Directive::if_(v.clone(), Some(("=", Arg::code("503"))))
                    .inline(vec![d("return").code("503").into()])
                    .into(),
            );
        }
        inner.extend(set);
        inner.extend(proxy);
        inner.push(pass(rule, var(v), &uri, rule.backends.iter().any(|b| b.tls)));
        out.push(loc().inline(inner).into());
        Ok(())
    }

    /// A `split_clients` on `$request_id` giving each value its share of the weights: its
    /// variable. Shares are written in NGINX's steps of 0.01% ([`basis_points`]).
    fn split(&mut self, shares: Vec<(Arg, u32)>) -> String {
        let v = self.split_var();
        // A zero weight gets no requests (the plan leaves such backendRefs out already).
        let shares: Vec<(Arg, u32)> = shares.into_iter().filter(|(_, w)| *w > 0).collect();
        let last = shares.len().saturating_sub(1);
        let weights: Vec<u32> = shares.iter().map(|(_, w)| *w).collect();
        let bp = basis_points(&weights);
        let mut entries = Vec::new();
        for (i, (value, _)) in shares.into_iter().enumerate() {
            if i == last {
                entries.push(entry_of(Arg::code("*"), value));
            } else if bp[i] > 0 {
                entries.push(entry_of(Arg::code(percent(bp[i])), value));
            }
        }
        self.splits.push(Node::Blank);
        self.splits.push(d("split_clients").var("request_id").var(v.clone()).block(entries).into());
        v
    }

    /// The location `loc` of one backend of a rule: its status, or a proxy with the rule's
    /// header filters followed by the backend's own, `set` (the new path) and `mirrors`.
    #[allow(clippy::too_many_arguments)]
    fn backend_location(
        &mut self,
        out: &mut Vec<Node>,
        loc: Directive,
        rule: &RulePlan,
        b: &crate::plan::Backend,
        set: &[Node],
        uri: &[Part],
        mirrors: &[Node],
    ) -> Result<(), String> {
        match self.destination(&b.target) {
            Some((set_backend, host)) => {
                let req = merge(&rule.request_headers, &b.request_headers);
                let resp = merge(&rule.response_headers, &b.response_headers);
                let mut inner: Vec<Node> = vec![d("internal").into()];
                inner.extend(set.iter().cloned());
                inner.extend(set_backend);
                inner.extend(self.proxy(rule, &req, &resp)?);
                inner.extend(mirrors.iter().cloned());
                inner.push(pass(rule, host, uri, b.tls));
                out.push(loc.inline(inner).into());
            }
            None => {
                let code = match b.target {
                    Target::Status(code) => code,
                    _ => 500,
                };
                out.push(
                    loc.inline(vec![
                        d("internal").into(),
                        d("return").code(code.to_string()).into(),
                    ])
                    .into(),
                );
            }
        }
        Ok(())
    }

    /// `retry`: `proxy_next_upstream` on the codes NGINX can retry on, with `tries` attempts
    /// in all (1 + `attempts`, default 2). What NGINX cannot honour is a warning.
    fn retry(&mut self, rule: &RulePlan, r: &crate::model::Retry) -> (Vec<Node>, u32) {
        const CODES: [u16; 7] = [500, 502, 503, 504, 403, 404, 429];
        let at = format!("{}: retry", rule.id);
        let mut when = d("proxy_next_upstream").code("error").code("timeout");
        let mut unsupported = Vec::new();
        for c in &r.codes {
            if CODES.contains(c) {
                when = when.code(format!("http_{c}"));
            } else {
                unsupported.push(c.to_string());
            }
        }
        if !unsupported.is_empty() {
            self.warnings.push(format!(
                "{at}: NGINX retries only on 403, 404, 429, 500, 502, 503 and 504, not on {}",
                unsupported.join(", ")
            ));
        }
        if r.backoff.is_some() {
            self.warnings.push(format!(
                "{at}: backoff is not honoured: NGINX tries the next attempt at once"
            ));
        }
        let tries = r.attempts.map_or(2, |a| a.saturating_add(1)).min(100);
        let mut out =
            vec![when.into(), d("proxy_next_upstream_tries").code(tries.to_string()).into()];
        if let Some(ms) = rule.timeout_ms.filter(|ms| *ms > 0) {
            out.push(d("proxy_next_upstream_timeout").code(format!("{ms}ms")).into());
        }
        (out, tries)
    }

    /// The CORS filter of a rule: `$httproute_cors_N` is the request's Origin when
    /// `allowOrigins` allows it, else empty; every CORS header comes from a `map` on it, so an
    /// origin that is not allowed gets none (NGINX leaves out a header whose value is empty).
    /// A preflight (OPTIONS with Access-Control-Request-Method) is answered here with 204; other
    /// requests get Allow-Origin, Allow-Credentials and Expose-Headers on the backend's answer,
    /// whose own Access-Control-* headers are hidden.
    fn cors(&mut self, c: &crate::model::Cors, rule: &RulePlan) -> Vec<Node> {
        let n = self.cors_n;
        self.cors_n += 1;
        self.preflight = true;
        let origin = format!("httproute_cors_{n}");
        let mut entries = vec![entry_of(Arg::code("default"), empty())];
        for o in &c.allow_origins {
            let key = if o == "*" {
                Arg::code("~.").quoted()
            } else {
                let mut parts = vec![code("~*^")];
                parts.extend(origin_regex(o, field(rule, "CORS allowOrigins[]")));
                parts.push(code("$"));
                Arg::parts(parts).quoted()
            };
            entries.push(entry_of(key, Arg::var("http_origin")));
        }
        self.push_map(d("map").var("http_origin").var(origin.clone()).block(entries));
        let creds = c.allow_credentials == Some(true);
        let mut gated =
            |name: &str, value: Arg| -> String {
                let v = format!("httproute_cors_{n}_{name}");
                self.push_map(d("map").var(origin.clone()).var(v.clone()).block(vec![
                    entry_of(empty(), empty()),
                    entry_of(Arg::code("default"), value),
                ]));
                v
            };
        // "*" means any; with credentials a browser takes no "*", so the request's own value
        // is echoed instead.
        let list = |l: &[String], echo: Option<&'static str>, f: &str| -> Option<Arg> {
            match l {
                [] => None,
                [star] if star == "*" => Some(match echo {
                    Some(echo) if creds => Arg::var(echo),
                    _ => Arg::code("*").quoted(),
                }),
                _ => Some(quoted(field(rule, f), l.join(", "))),
            }
        };
        let methods =
            list(&c.allow_methods, Some("http_access_control_request_method"), "CORS allowMethods")
                .map(|v| gated("methods", v));
        let headers = list(
            &c.allow_headers,
            Some("http_access_control_request_headers"),
            "CORS allowHeaders",
        )
        .map(|v| gated("headers", v));
        let expose =
            list(&c.expose_headers, None, "CORS exposeHeaders").map(|v| gated("expose", v));
        let max_age = gated("max_age", Arg::code(c.max_age.unwrap_or(5).to_string()));
        let credentials = creds.then(|| gated("credentials", Arg::code("true")));
        let header = |name: &'static str, v: &Option<String>| -> Option<Node> {
            v.as_ref().map(|v| d("add_header").code(name).var(v.clone()).code("always").into())
        };
        let common = || -> Vec<Node> {
            let mut c: Vec<Node> = vec![
                d("add_header")
                    .code("Access-Control-Allow-Origin")
                    .var(origin.clone())
                    .code("always")
                    .into(),
            ];
            c.extend(header("Access-Control-Allow-Credentials", &credentials));
            c.extend(header("Access-Control-Expose-Headers", &expose));
            c.push(d("add_header").code("Vary").code("Origin").code("always").into());
            c
        };
        let mut preflight = common();
        preflight.extend(header("Access-Control-Allow-Methods", &methods));
        preflight.extend(header("Access-Control-Allow-Headers", &headers));
        preflight.push(
            d("add_header").code("Access-Control-Max-Age").var(max_age).code("always").into(),
        );
        preflight.push(d("return").code("204").into());
        let mut out: Vec<Node> =
            vec![Directive::if_("httproute_preflight", None).inline(preflight).into()];
        out.extend(common());
        for h in [
            "Access-Control-Allow-Origin",
            "Access-Control-Allow-Credentials",
            "Access-Control-Expose-Headers",
        ] {
            out.push(d("proxy_hide_header").code(h).into());
        }
        out
    }

    /// Where `proxy_pass` sends a target, and the `set` it needs first: an upstream's name, or
    /// for a name resolved per request a variable holding it (NGINX resolves a `proxy_pass`
    /// host given through a variable when a request needs it, with `resolver`). `None` for a
    /// status.
    fn destination(&mut self, t: &Target) -> Option<(Option<Node>, Part)> {
        match t {
            Target::Upstream { name, servers } => {
                self.upstreams.insert(name.clone(), servers.clone());
                Some((None, data("backend upstream name", name.clone())))
            }
            Target::Resolve(addr) => {
                self.resolve = true;
                let set =
                    d("set").var("httproute_backend").arg(quoted("backend address", addr.clone()));
                Some((Some(set.into()), var("httproute_backend")))
            }
            Target::Status(_) => None,
        }
    }

    /// Directives that leave the new path (no query) in `$httproute_path`. ReplacePrefixMatch
    /// swaps the matched prefix of the client's raw `$request_uri` path on a segment boundary;
    /// when the raw path does not start with the prefix as written (the client percent-encoded a
    /// character of it), the path stays as the client sent it (`$httproute_raw_path`, a `map`).
    fn set_path(&mut self, p: &PathModifier, prefix: &str, f: Cow<'static, str>) -> Vec<Node> {
        let (replacement, prefix_only) = p.replacement();
        let set = |value: Arg| -> Node { d("set").var("httproute_path").arg(value).into() };
        if !prefix_only {
            return vec![set(quoted(f, replacement))];
        }
        self.raw_path = true;
        let prefix = prefix.trim_end_matches('/').to_owned();
        let match_field = || "HTTPRoute spec.rules[].matches[].path.value (the prefix replaced)";
        // The prefix alone becomes the replacement as written; the prefix and more segments
        // become the replacement (without its trailing `/`) and those segments.
        let whole = quoted(f.clone(), replacement.clone());
        let more = Arg::parts(vec![
            data(f, replacement.trim_end_matches('/').to_owned()),
            braced_var("httproute_rest"),
        ])
        .quoted();
        let re = |tail: &'static str| {
            Arg::parts(vec![code("^"), regex_data(match_field(), prefix.clone()), code(tail)])
                .quoted()
        };
        vec![
            set(Arg::var("httproute_raw_path")),
            Directive::if_("request_uri", Some(("~", re("(\\?|$)"))))
                .inline(vec![set(whole)])
                .into(),
            Directive::if_("request_uri", Some(("~", re("(?<httproute_rest>/[^?]*)"))))
                .inline(vec![set(more)])
                .into(),
        ]
    }

    /// The proxy directives of a rule's internal location, with its header filters.
    fn proxy(
        &mut self,
        rule: &RulePlan,
        req: &HeaderModifier,
        resp: &HeaderModifier,
    ) -> Result<Vec<Node>, String> {
        let touched = |n: &str| {
            req.set
                .iter()
                .map(|h| &h.name)
                .chain(req.add.iter().map(|h| &h.name))
                .chain(&req.remove)
                .any(|x| x.eq_ignore_ascii_case(n))
        };
        // gRPC: the same directives of the grpc module, HTTP/2 to the backend.
        let g = rule.grpc;
        let set_header = if g { "grpc_set_header" } else { "proxy_set_header" };
        let hide_header = if g { "grpc_hide_header" } else { "proxy_hide_header" };
        let mut out: Vec<Node> = Vec::new();
        if !g {
            out.push(d("proxy_http_version").code("1.1").into());
        }
        if !touched("host") {
            match rule.rewrite.as_ref().and_then(|r| r.hostname.as_deref()) {
                Some(h) => out.push(
                    d(set_header)
                        .code("Host")
                        .arg(quoted(field(rule, "URLRewrite hostname"), h))
                        .into(),
                ),
                None => out.push(d(set_header).code("Host").var("host").into()),
            }
        }
        if !touched("connection") && !g {
            // WebSocket and other upgrades pass through (NGINX tunnels after a 101); every
            // other request keeps an empty Connection (keepalive to the backend).
            self.upgrade = true;
            if !touched("upgrade") {
                out.push(d("proxy_set_header").code("Upgrade").var("http_upgrade").into());
            }
            out.push(d("proxy_set_header").code("Connection").var("httproute_connection").into());
        }
        let (connect, send, read) = if g {
            ("grpc_connect_timeout", "grpc_send_timeout", "grpc_read_timeout")
        } else {
            ("proxy_connect_timeout", "proxy_send_timeout", "proxy_read_timeout")
        };
        match rule.timeout_ms {
            None => {}
            // 0s disables the timeout: NGINX has no "never", a day is the stand-in.
            Some(0) => {
                out.push(d(send).code("1d").into());
                out.push(d(read).code("1d").into());
            }
            Some(ms) => {
                for t in [connect, send, read] {
                    out.push(d(t).code(format!("{ms}ms")).into());
                }
            }
        }
        let req_name = || field(rule, "RequestHeaderModifier header name");
        let req_value = || field(rule, "RequestHeaderModifier header value");
        // Header names NGINX puts in a hash: those set (request) and hidden (response).
        let names = req.set.iter().chain(&req.add).map(|h| &h.name).chain(&req.remove);
        let hidden = resp.set.iter().map(|h| &h.name).chain(&resp.remove);
        let longest = names.chain(hidden).max_by_key(|n| n.len());
        if !g {
            // proxy_headers_hash_bucket_size is raised to hold it.
            self.longest_header = self.longest_header.max(longest.map_or(0, String::len));
        } else if let Some(n) = longest.filter(|n| n.len() > FIXED_BUCKET_HEADER) {
            self.over_limit.push(format!(
                "header name {:?} of a GRPCRoute filter: {} bytes; the grpc module's header hash \
                 holds names of at most {FIXED_BUCKET_HEADER}",
                n,
                n.len()
            ));
        }
        for h in &req.set {
            out.push(
                d(set_header)
                    .data(req_name(), h.name.clone())
                    .arg(quoted(req_value(), h.value.clone()))
                    .into(),
            );
        }
        for h in &req.add {
            // Gateway API "add" appends to what the client sent: `name: sent,value`, or `value`
            // when the client sent nothing. $http_NAME is the client's value (lines joined).
            let sent = format!("http_{}", h.name.to_ascii_lowercase().replace('-', "_"));
            if !crate::conf::is_var_name(&sent) {
                // NGINX names a request header's variable by letters, digits and `_` only.
                self.warnings.push(format!(
                    "{}: RequestHeaderModifier add {:?}: NGINX has no variable for this \
                     header name, so the client's value cannot be kept: the header is set to the \
                     value alone",
                    rule.id, h.name
                ));
                out.push(
                    d(set_header)
                        .data(req_name(), h.name.clone())
                        .arg(quoted(req_value(), h.value.clone()))
                        .into(),
                );
                continue;
            }
            let v = format!("httproute_add_{}", self.map_n);
            self.push_map(d("map").var(sent.clone()).var(v.clone()).block(vec![
                        entry_of(empty(), quoted(req_value(), h.value.clone())),
                        entry_of(
                            Arg::code("default"),
                            Arg::parts(vec![
                                braced_var(sent),
                                code(","),
                                data(req_value(), h.value.clone()),
                            ])
                            .quoted(),
                        ),
                    ]));
            out.push(d(set_header).data(req_name(), h.name.clone()).var(v).into());
        }
        for n in &req.remove {
            out.push(d(set_header).data(req_name(), n.clone()).arg(empty()).into());
        }
        let resp_name = || field(rule, "ResponseHeaderModifier header name");
        let resp_value = || field(rule, "ResponseHeaderModifier header value");
        let add_header = |h: &crate::model::HeaderValue| {
            d("add_header")
                .data(resp_name(), h.name.clone())
                .arg(quoted(resp_value(), h.value.clone()))
                .code("always")
                .into()
        };
        for h in &resp.set {
            out.push(d(hide_header).data(resp_name(), h.name.clone()).into());
            out.push(add_header(h));
        }
        for h in &resp.add {
            out.push(add_header(h));
        }
        for n in &resp.remove {
            out.push(d(hide_header).data(resp_name(), n.clone()).into());
        }
        Ok(out)
    }

    /// `$httproute_sni_PORT`: the `server_name` NGINX picks for the TLS handshake's SNI on an
    /// HTTPS port (`hostnames` gives NGINX's own order: exact, then the longest wildcard), `-` for
    /// an SNI no server names, empty without SNI.
    fn sni_map(&mut self, port: &PortPlan) {
        let mut entries: Vec<Node> = vec![
            d("hostnames").into(),
            entry_of(Arg::code("default"), Arg::code("-").quoted()),
            entry_of(empty(), empty()),
        ];
        for h in port.servers.iter().filter_map(|s| s.hostname.as_deref()) {
            entries.push(entry_of(Arg::data(HOSTNAME_FIELD, h), quoted(HOSTNAME_FIELD, h)));
        }
        self.push_map(
            d("map")
                .var("ssl_server_name")
                .var(format!("httproute_sni_{}", port.port))
                .block(entries),
        );
    }
}

/// `bp` basis points (hundredths of a percent) as split_clients writes a share: `12.34%`.
fn percent(bp: u64) -> String {
    format!("{}.{:02}%", bp / 100, bp % 100)
}

/// The shares of `weights` in basis points, as a `split_clients` block takes them: every share
/// but the last nonzero one is written (rounded down), that last one is `*` (the rest). NGINX
/// refuses a share of `0.00%`, so a nonzero weight whose share rounds down to nothing gets the
/// smallest step, 0.01%, taken from the largest share; the last is left at least 0.01% too.
/// The shares add up to 10,000 when some weight is nonzero (and at most 10,000 weights are:
/// the CRD allows 16 backendRefs).
pub fn basis_points(weights: &[u32]) -> Vec<u64> {
    let total: u64 = weights.iter().map(|&w| u64::from(w)).sum();
    // The rest goes to the last nonzero weight (a zero weight gets nothing).
    let Some(last) = weights.iter().rposition(|&w| w > 0) else {
        return vec![0; weights.len()];
    };
    let mut bp: Vec<u64> = weights
        .iter()
        .map(|&w| match u64::from(w) * 10000 / total {
            0 if w > 0 => 1,
            b => b,
        })
        .collect();
    let mut given: u64 = bp[..last].iter().sum();
    while given + 1 > 10000 {
        // The largest share that can give a step (the first of equals).
        let Some(i) = (0..last).filter(|&i| bp[i] > 1).max_by_key(|&i| (bp[i], usize::MAX - i))
        else {
            break;
        };
        bp[i] -= 1;
        given -= 1;
    }
    bp[last] = 10000u64.saturating_sub(given);
    bp
}

/// `$httproute_raw_path`: the client's raw path, `$request_uri` without its query.
fn raw_path_map() -> Node {
    d("map")
        .var("request_uri")
        .var("httproute_raw_path")
        .block(vec![entry_of(
            Arg::code("~^(?<httproute_p>[^?]*)").quoted(),
            Arg::var("httproute_p"),
        )])
        .into()
}

/// `Connection` to the backend: `upgrade` when the client asks for one (WebSocket), else
/// empty, so backend connections can be kept alive.
fn upgrade_map() -> Node {
    d("map")
        .var("http_upgrade")
        .var("httproute_connection")
        .block(vec![
            entry_of(Arg::code("default"), Arg::code("upgrade")),
            entry_of(empty(), empty()),
        ])
        .into()
}

/// A CORS preflight: OPTIONS with Access-Control-Request-Method.
fn preflight_map() -> Node {
    d("map")
        .arg(
            Arg::parts(vec![
                var("request_method"),
                code(":"),
                var("http_access_control_request_method"),
            ])
            .quoted(),
        )
        .var("httproute_preflight")
        .block(vec![
            entry_of(Arg::code("default"), empty()),
            entry_of(Arg::code("~^OPTIONS:.").quoted(), Arg::code("1")),
        ])
        .into()
}

/// The Location of a RequestRedirect: scheme, host, port and path, each the filter's or the
/// request's. A port is written only when it is not the scheme's own (80, 443); with no port
/// and no scheme in the filter, it is the listener's.
fn redirect_url(
    r: &RequestRedirect,
    (listener, tls): (u16, bool),
    new_path: bool,
    rule: &RulePlan,
) -> Arg {
    // No scheme: the request's, which is the listener's (HTTPS when it terminates TLS).
    let scheme = r.scheme.as_deref().unwrap_or(if tls { "https" } else { "http" });
    let port = match (r.port, &r.scheme) {
        (Some(p), _) => Some(p),
        (None, Some(_)) => None,
        (None, None) => Some(listener),
    }
    .filter(|p| !matches!((scheme, p), ("http", 80) | ("https", 443)));
    let mut parts = vec![match &r.scheme {
        Some(s) => data(field(rule, "RequestRedirect scheme"), s.clone()),
        None => var("scheme"),
    }];
    parts.push(code("://"));
    parts.push(match &r.hostname {
        Some(h) => data(field(rule, "RequestRedirect hostname"), h.clone()),
        None => var("host"),
    });
    if let Some(p) = port {
        parts.push(code(format!(":{p}")));
    }
    if new_path {
        parts.extend([var("httproute_path"), var("is_args"), var("args")]);
    } else {
        parts.push(var("request_uri"));
    }
    Arg::parts(parts).quoted()
}

/// Certificates of an HTTPS server, and the Gateway API's listener isolation for TLS: a
/// request whose Host selects another server than its SNI did answers 421 (Misdirected
/// Request).
fn tls_server(port: u16, server: &ServerPlan, opts: &Options, out: &mut Vec<Node>) {
    if server.certificates.is_empty() {
        out.push(d("ssl_reject_handshake").code("on").into());
    }
    for c in &server.certificates {
        let (crt, key) = opts.certificates.get(c).cloned().unwrap_or_else(|| certificate_files(c));
        out.push(
            d("ssl_certificate")
                .arg(quoted("certificate file (--certificate, Secret)", crt))
                .into(),
        );
        out.push(
            d("ssl_certificate_key").arg(quoted("key file (--certificate, Secret)", key)).into(),
        );
    }
    // This server's own SNI value(s): its name, or for the catch-all, none or an unknown one.
    let own = match &server.hostname {
        Some(h) => regex_data(HOSTNAME_FIELD, h.clone()),
        None => code("-"),
    };
    let re = Arg::parts(vec![code("^(|"), own, code(")$")]).quoted();
    out.push(
        Directive::if_(format!("httproute_sni_{port}"), Some(("!~", re)))
            .inline(vec![d("return").code("421").into()])
            .into(),
    );
}

/// Where a Secret's certificate and key are expected, relative to nginx.conf.
fn certificate_files(secret: &str) -> (String, String) {
    let file = secret.replace('/', "_");
    (format!("certs/{file}.crt"), format!("certs/{file}.key"))
}

/// An `allowOrigins` entry as a PCRE (matched case-insensitively against the whole Origin):
/// `*` as the host is any host, `*.name` one or more labels before `name`.
fn origin_regex(o: &str, f: Cow<'static, str>) -> Vec<Part> {
    let (scheme, rest) = o.split_once("://").unwrap_or(("https", o));
    let (host, port) = match rest.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (rest, None),
    };
    // Scheme and port as they are when they are what they should be (letters; digits).
    let plain = |s: &str, ok: fn(char) -> bool| !s.is_empty() && s.chars().all(ok);
    let mut parts = vec![if plain(scheme, |c| c.is_ascii_alphanumeric()) {
        data(f.clone(), scheme.to_owned())
    } else {
        regex_data(f.clone(), scheme.to_owned())
    }];
    parts.push(code("://"));
    let any = "[^/:]+";
    match host.strip_prefix('*') {
        Some("") => parts.push(code(any)),
        Some(suffix) => {
            parts.push(code(any));
            parts.push(regex_data(f.clone(), suffix.to_owned()));
        }
        None => parts.push(regex_data(f.clone(), host.to_owned())),
    }
    if let Some(p) = port {
        parts.push(code(":"));
        parts.push(if plain(p, |c| c.is_ascii_digit()) {
            data(f, p.to_owned())
        } else {
            regex_data(f, p.to_owned())
        });
    }
    parts
}

/// The directive that sends a rule's request to `host` (an upstream, a variable).
fn pass(rule: &RulePlan, host: Part, uri: &[Part], tls: bool) -> Node {
    let s = if tls { "s" } else { "" };
    if rule.grpc {
        // gRPC keeps the request's own path (/service/method).
        d("grpc_pass").arg(Arg::parts(vec![code(format!("grpc{s}://")), host])).into()
    } else {
        let mut parts = vec![code(format!("http{s}://")), host];
        parts.extend(uri.iter().cloned());
        d("proxy_pass").arg(Arg::parts(parts)).into()
    }
}
/// Whether a header filter does anything.
fn modifies(m: &HeaderModifier) -> bool {
    !(m.set.is_empty() && m.add.is_empty() && m.remove.is_empty())
}

/// A rule's header filter followed by a backendRef's: the backend's `set` and `remove` win
/// over the rule's for the same name; `add`s of both are kept.
fn merge(rule: &HeaderModifier, own: &HeaderModifier) -> HeaderModifier {
    if !modifies(own) {
        return rule.clone();
    }
    let overridden = |name: &str| {
        own.set
            .iter()
            .map(|h| h.name.as_str())
            .chain(own.remove.iter().map(String::as_str))
            .any(|n| n.eq_ignore_ascii_case(name))
    };
    let mut m = HeaderModifier::default();
    m.set.extend(rule.set.iter().filter(|h| !overridden(&h.name)).cloned());
    m.set.extend(own.set.iter().cloned());
    m.add.extend(rule.add.iter().filter(|h| !overridden(&h.name)).cloned());
    m.add.extend(own.add.iter().cloned());
    m.remove.extend(rule.remove.iter().cloned());
    m.remove.extend(
        own.remove
            .iter()
            .filter(|n| !rule.remove.iter().any(|r| r.eq_ignore_ascii_case(n)))
            .cloned(),
    );
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every combination of small, equal, huge and zero weights: the shares add up to 100%, a
    /// nonzero weight never gets 0.00% (NGINX refuses it), a zero weight gets nothing, and no
    /// share is off its exact value by more than the steps given to tiny shares.
    #[test]
    fn split_shares_are_representable_and_add_up() {
        let values = [0u32, 1, 2, 3, 7, 100, 9999, 20001, 1_000_000, u32::MAX / 16];
        let mut tried = 0;
        for n in 1..=4usize {
            let mut idx = vec![0usize; n];
            loop {
                let w: Vec<u32> = idx.iter().map(|&i| values[i]).collect();
                let bp = basis_points(&w);
                let total: u64 = w.iter().map(|&x| u64::from(x)).sum();
                if total > 0 {
                    assert_eq!(bp.iter().sum::<u64>(), 10000, "{w:?}: {bp:?}");
                    let tiny = w.iter().filter(|&&x| x > 0).count() as f64;
                    for (x, b) in w.iter().zip(&bp) {
                        assert_eq!(*x > 0, *b > 0, "{w:?}: {bp:?}");
                        let exact = f64::from(*x) * 10000.0 / total as f64;
                        assert!((exact - *b as f64).abs() <= tiny + 1.0, "{w:?}: {bp:?}");
                    }
                } else {
                    assert!(bp.iter().all(|&b| b == 0), "{w:?}: {bp:?}");
                }
                tried += 1;
                let mut k = 0;
                while k < n && idx[k] + 1 == values.len() {
                    idx[k] = 0;
                    k += 1;
                }
                if k == n {
                    break;
                }
                idx[k] += 1;
            }
        }
        assert_eq!(tried, 10 + 100 + 1000 + 10000);
        assert_eq!(basis_points(&[1, 20001]), [1, 9999]);
        assert_eq!(basis_points(&[20001, 1]), [9999, 1]);
        assert_eq!(percent(1), "0.01%");
        assert_eq!(percent(9999), "99.99%");
    }
}
