//! The writer's state while one pass writes the configuration (the `http` block's
//! collections, the tenant objects written for) and the small helpers every block uses.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use crate::conf::{Arg, Directive, Node, Provenance};
use crate::plan::{GatewayId, ListenerId, RouteId, RuleId, RulePlan, ServerAt};

/// A tenant's object that directives are written for: what a word of them NGINX cannot take
/// (or a line of them `nginx -t` refuses) leaves out (see [`emit_with`]), the smallest that
/// holds the line.
///
/// Which unit a line belongs to: the innermost directive on it that has a unit of its own
/// (a directive without one has its block's). A unit given to a directive inside another's
/// block is a part of the outer one (a backendRef's `split_clients` entry inside its rule's
/// `split_clients`, a listener's `listen` inside a server): leaving out the inner unit removes
/// (or, for a share, rewrites) its own lines only, leaving out the outer one removes the block
/// with them. A line that several units bring (an `upstream` that several backendRefs name, a
/// server name that several routes' hostnames bring, or merged servers' listeners, the
/// `listen` of a port's catch-all that every listener left on the port keeps) is recorded for
/// all of them ([`Http::shared`], [`super::Output::units_at_line`]): the line goes when all of
/// them are left out, and stays while one is, so a refusal of it leaves them all out at once
/// and no unit that does not bring it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Unit {
    /// A rule: its internal locations, and the maps and split_clients written for it.
    Rule(RuleId),
    /// The location of a match path: (port, server, location) in the plan.
    Location(ServerAt, usize),
    /// One backendRef of a rule (`index` among its `backendRefs`): the `upstream` written for
    /// it, its `split_clients` entry, its own location (backends with filters of their own).
    /// Left out, its share of the rule's requests answers 500 (the others keep theirs).
    BackendShare { rule: RuleId, index: usize },
    /// A listener: its `listen` lines, its certificates, and the `server_name` and SNI check of
    /// a server named by its hostname. Left out, its servers are not written (its port's
    /// catch-all answers 404 when other listeners keep the port).
    Listener(ListenerId),
    /// A route: the `server_name` (and SNI check) of a server only its hostnames bring. Left
    /// out, none of its rules is served and such servers are not written.
    Route(RouteId),
    /// A route in the servers of one Gateway's listeners: left out, it is not served there
    /// (nor are the servers only it brings there), and is kept in every other server.
    Attachment { route: RouteId, gateway: Box<GatewayId> },
}

impl Unit {
    /// Whether leaving out `other` leaves this unit out too (it is `other`, or a part of it:
    /// a share of a rule left out, a rule or share of a route left out).
    pub fn within(&self, other: &Unit) -> bool {
        if self == other {
            return true;
        }
        match (self, other) {
            (Unit::BackendShare { rule, .. }, Unit::Rule(r)) => rule == r,
            (Unit::BackendShare { rule, .. } | Unit::Rule(rule), Unit::Route(r)) => {
                rule.route == *r
            }
            (Unit::Attachment { route, .. }, Unit::Route(r)) => route == r,
            _ => false,
        }
    }
}

/// What a configuration leaves out: the plan's refusals and NGINX's, read through the plan's
/// one predicate ([`crate::plan::Left`]).
pub(super) type Skip = crate::plan::Left;
pub(super) use crate::plan::In;

pub(super) fn d(name: &'static str) -> Directive {
    Directive::new(name)
}

/// A map entry: `KEY VALUE;`.
pub(super) fn entry_of(key: Arg, value: Arg) -> Node {
    Directive::entry(key).arg(value).into()
}

/// `""` (an empty word).
pub(super) fn empty() -> Arg {
    Arg::code("").quoted()
}

pub(super) fn quoted(field: impl Into<Cow<'static, str>>, text: impl Into<String>) -> Arg {
    Arg::data(field, text).quoted()
}

/// Where the path of a location comes from.
pub(super) const PATH_FIELD: &str = "HTTPRoute spec.rules[].matches[].path.value";
pub(super) const HOSTNAME_FIELD: &str =
    "hostname (HTTPRoute spec.hostnames[], Gateway spec.listeners[].hostname)";

/// What the `http` block collects while the servers are written.
#[derive(Default)]
pub(super) struct Http {
    pub(super) upstreams: BTreeMap<String, std::sync::Arc<[String]>>,
    /// The backendRef shares each upstream is written for: every one that named it, in the
    /// order met (a share written in several servers appears once per server).
    pub(super) upstream_owner: HashMap<String, Vec<Provenance>>,
    /// Upstreams of retried rules: `max_fails=0` on each server.
    pub(super) no_fail: BTreeSet<String>,
    /// Upstreams of FailOpen InferencePools: `http_matches_epp_endpoints;` first.
    pub(super) epp_pools: BTreeSet<String>,
    /// `--experimental`.
    pub(super) experimental: bool,
    /// `--epp-shim URL`: InferencePool pickers are asked through NGF's shim at URL.
    pub(super) epp_shim: Option<String>,
    /// What the configuration cannot do, found while writing it.
    pub(super) warnings: Vec<String>,
    /// CORS filters written so far (`$httproute_cors_TAG`).
    pub(super) cors_n: usize,
    /// `$httproute_preflight` is used.
    pub(super) preflight: bool,
    /// `$httproute_connection` is used (upgrades passed through).
    pub(super) upgrade: bool,
    /// Some backend is a name resolved per request.
    pub(super) resolve: bool,
    /// `split_clients` blocks.
    pub(super) splits: Vec<Node>,
    /// `map`s: header filters, SNI.
    pub(super) maps: Vec<Node>,
    /// How many `map`s `maps` holds.
    pub(super) map_n: usize,
    pub(super) split_n: usize,
    /// `$httproute_raw_path` is used.
    pub(super) raw_path: bool,
    /// The longest header name of a `proxy_set_header`.
    pub(super) longest_header: usize,
    /// The tenant objects directives are written for, by their [`Provenance::Object`] number
    /// (empty when not [`Http::keep_units`]).
    pub(super) units: Vec<Unit>,
    /// The object numbers given so far.
    pub(super) unit_n: u32,
    /// Keep [`Http::units`] and [`Http::sharers`]: what a line or a word refused is looked up
    /// in (a streamed configuration is not: its objects are only numbered).
    pub(super) keep_units: bool,
    /// For an object number whose lines several units bring ([`Http::shared`]): the units
    /// after the first (`units[o]`).
    pub(super) sharers: BTreeMap<u32, Vec<Unit>>,
    /// Limits of NGINX the rule being written passes (no directive can raise them): why.
    pub(super) over_limit: Vec<String>,
    /// Such rules: (their provenance number, why).
    pub(super) refused: Vec<(u32, String)>,
    /// The rule being written ([`Http::begin_rule`]), its tag ([`rule_tag`]) once made (when
    /// it first names a variable: most rules name none) and how many variables it has named.
    pub(super) var_rule: Option<RuleId>,
    pub(super) var_tag: Option<String>,
    pub(super) var_n: usize,
    /// The tags given ([`rule_tag`]'s first 128 bits of a rule's SHA-256), each with the last
    /// 128 bits of its rule's: two rules with one tag differ there (or have one SHA-256).
    pub(super) tags: HashMap<u128, u128>,
    /// The variables a `map` or `split_clients` defines so far: a rule written in several
    /// servers defines its own once.
    pub(super) defined: HashSet<String>,
}

/// The tag of a rule in the names of the variables written for it: the first 128 bits of the
/// SHA-256 of `KIND namespace/name rule N`, in base 36 (25 characters: NGINX compares variable
/// names without case). So a variable's name depends only on its rule, never on the other rules
/// of the configuration or the order they are written in (issue #29, the innocent tenant), and
/// the longest, `httproute_cors_TAG_m`, is 42 bytes: NGINX's default variables hash buckets
/// (64 bytes) hold names of up to 46.
/// Also the SHA-256's first and last 128 bits (two rules of one tag differ in the last).
pub(super) fn rule_tag(id: &RuleId) -> (String, u128, u128) {
    tag_parts(&format!("{} {id}", id.route.kind))
}

/// SHA-256 of `text` in base 36, 25 characters, with the digest's first and last 128 bits.
fn tag_parts(text: &str) -> (String, u128, u128) {
    let digest = crate::lists::sha256(text.as_bytes());
    let half = |b: &[u8]| u128::from_be_bytes(b.try_into().expect("16 bytes"));
    let (first, last) = (half(&digest[..16]), half(&digest[16..]));
    let mut n = first;
    let mut tag = [b'0'; 25];
    for c in tag.iter_mut().rev() {
        *c = b"0123456789abcdefghijklmnopqrstuvwxyz"[(n % 36) as usize];
        n /= 36;
    }
    (String::from_utf8(tag.to_vec()).expect("ASCII"), first, last)
}

/// A rule's fields, for errors: "HTTPRoute default/r rule 0: FIELD".
pub(super) fn field(rule: &RulePlan, f: &str) -> Cow<'static, str> {
    Cow::Owned(format!("{}: {f}", rule.id))
}

impl Http {
    /// Rule `id`'s variables are named from here on ([`Http::var`]).
    pub(super) fn begin_rule(&mut self, id: &RuleId) {
        self.var_rule = Some(id.clone());
        self.var_tag = None;
        self.var_n = 0;
    }

    /// The tag of the rule being written, made when it first names a variable. A tag already
    /// given to another rule's variables (two names with one SHA-256, cut to 128 bits) refuses
    /// this rule.
    pub(super) fn tag(&mut self) -> String {
        if let Some(t) = &self.var_tag {
            return t.clone();
        }
        let Some(id) = &self.var_rule else { return String::new() };
        let (text, tag, rest) = rule_tag(id);
        if *self.tags.entry(tag).or_insert(rest) != rest {
            self.over_limit.push(format!(
                "{id}: the names of its variables would be another rule's (a SHA-256 collision)"
            ));
        }
        self.var_tag = Some(text.clone());
        text
    }

    /// The next variable of kind `what` of the rule being written: `httproute_WHAT_TAG_N`.
    pub(super) fn var(&mut self, what: &str) -> String {
        let tag = self.tag();
        self.var_n += 1;
        format!("httproute_{what}_{tag}_{}", self.var_n - 1)
    }

    /// The provenance of directives written for `u`.
    pub(super) fn unit(&mut self, u: Unit) -> Provenance {
        if self.keep_units {
            self.units.push(u);
        }
        self.unit_n += 1;
        Provenance::Object(self.unit_n - 1)
    }

    /// The provenance of directives that all of `us` bring (a line that goes only when every
    /// one of them is left out): a new object number, its unit the first of `us`, the others
    /// its [`Http::sharers`] (repeats removed, the order kept). `None` when `us` is empty.
    pub(super) fn shared(&mut self, us: impl IntoIterator<Item = Unit>) -> Option<Provenance> {
        // Repeats found by hashing: a line many units bring (one host's location shared by
        // every route) would otherwise cost the square of their number.
        let mut us = us.into_iter();
        if !self.keep_units {
            return us.next().map(|u| self.unit(u));
        }
        let mut seen: HashSet<Unit> = HashSet::new();
        let mut all: Vec<Unit> = Vec::new();
        for u in us {
            if seen.insert(u.clone()) {
                all.push(u);
            }
        }
        let mut all = all.into_iter();
        let p = self.unit(all.next()?);
        let rest: Vec<Unit> = all.collect();
        if let (Provenance::Object(o), false) = (p, rest.is_empty()) {
            self.sharers.insert(o, rest);
        }
        Some(p)
    }

    /// The units of provenance `p`: its unit and its sharers ([`Http::shared`]).
    pub(super) fn units_of(&self, p: Provenance) -> Vec<Unit> {
        let Provenance::Object(o) = p else { return Vec::new() };
        let first = self.units.get(o as usize).cloned();
        first.into_iter().chain(self.sharers.get(&o).into_iter().flatten().cloned()).collect()
    }
}
