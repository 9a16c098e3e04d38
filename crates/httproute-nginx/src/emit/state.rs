//! The writer's state while one pass writes the configuration (the `http` block's
//! collections) and the small helpers every block uses.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use crate::conf::{Arg, Directive, Node};
use crate::plan::{RuleId, RulePlan};

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

pub(super) use crate::syntax::{HOSTNAME_FIELD, PATH_FIELD};

/// What the `http` block collects while the servers are written.
#[derive(Default)]
pub(super) struct Http {
    pub(super) upstreams: BTreeMap<String, std::sync::Arc<[String]>>,
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
    /// The rule being written ([`Http::begin_rule`]), its tag ([`rule_tag`]) once made (when
    /// it first names a variable: most rules name none) and how many variables it has named.
    pub(super) var_rule: Option<RuleId>,
    pub(super) var_tag: Option<String>,
    /// A tag that was already another rule's, found while the rule was written: an error of
    /// the run once the rule is written ([`Http::tag`]).
    pub(super) collision: Option<String>,
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
    /// given to another rule's variables (two names with one SHA-256, cut to 128 bits) is an
    /// error of the run ([`Http::collision`]).
    pub(super) fn tag(&mut self) -> String {
        if let Some(t) = &self.var_tag {
            return t.clone();
        }
        let Some(id) = &self.var_rule else { return String::new() };
        let (text, tag, rest) = rule_tag(id);
        if *self.tags.entry(tag).or_insert(rest) != rest {
            self.collision = Some(format!(
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
}
