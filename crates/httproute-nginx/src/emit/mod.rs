//! The plan as NGINX configuration and `matches.json`. Configuration text is written only
//! through the typed writer of [`crate::conf`]: this module builds the tree of directives,
//! with every byte from the manifests or the command line as data ([`Part::Data`]).
//!
//! One file per NGINX block:
//! - this file: the options, the output, and the passes of [`emit_with`] (a tenant object whose
//!   words NGINX cannot take is left out and the configuration written again);
//! - `http`: one pass: the main context and the `http` block around the servers;
//! - `location`: a rule's internal locations (redirect, proxy, filters, backends, mirrors);
//! - `upstream`: `split_clients` shares;
//! - `maps`: the `map` blocks (SNI, raw path, upgrade, preflight);
//! - `cors`: a rule's CORS filter (its maps and headers);
//! - `tls`: an HTTPS server's certificates and SNI check.

mod cors;
mod http;
mod location;
mod maps;
mod tls;
mod upstream;

pub use upstream::basis_points;

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashSet};

use crate::conf::{Arg, Directive, Node, Provenance, Stmt};
use crate::plan::{Loc, PathKind, Plan, RuleId, RulePlan, ServerAt};

use http::emit_once;

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
    /// What writing it took (tests bound it against the input: no timing).
    pub work: Work,
}

/// The work of [`emit_with`], counted: each pass writes every object again.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Work {
    /// Passes of the writer (one, and one more after each pass that left objects out).
    pub passes: usize,
    /// Tenant objects written for, summed over the passes ([`Provenance::Object`]s).
    pub units: usize,
    /// Candidates of left-out locations looked at to find their matches.
    pub candidates: usize,
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
    // The matches among `dropped` (`match N: ...`): looked up per candidate of a dropped
    // location, so a hash set, not a scan of `dropped` with a string per comparison.
    let mut dropped_matches: HashSet<(RuleId, usize)> = HashSet::new();
    let mut warnings = Vec::new();
    let mut work = Work::default();
    loop {
        let (out, refused, units) = emit_once(plan, opts, tree, &skip)?;
        work.passes += 1;
        work.units += units.len();
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
                        work.candidates += loc.candidates.len();
                        for c in &loc.candidates {
                            if c.path_kind != PathKind::Regex
                                && c.path.trim_end_matches('/') == path
                                && dropped_matches.insert((c.id.clone(), c.match_index))
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
        out.work = work;
        return Ok(out);
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
}
