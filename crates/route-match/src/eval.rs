//! Per-request evaluation: first satisfied entry wins.
//!
//! The common path (method and header conditions) allocates nothing. The query string is
//! decoded at most once per request, and only when an entry with a param condition is reached.

use core::cell::{Cell, OnceCell};
use core::fmt;
use std::sync::Arc;

use crate::index::{Candidates, Index};
use crate::pattern::Pattern;
use crate::query::Params;

/// What the evaluator needs to know about a request. All of it is raw bytes, as NGINX stored
/// them; nothing needs to be valid UTF-8.
pub trait RequestView {
    /// The method name, e.g. `GET` (compared byte for byte, case-sensitively).
    fn method(&self) -> &[u8];
    /// Every request header line as (name, value), in arrival order, repeated names included.
    fn headers(&self) -> impl Iterator<Item = (&[u8], &[u8])>;
    /// The raw query string (without `?`), still percent-encoded.
    fn query(&self) -> &[u8];
    /// The request path as NGINX matches locations against it (`$uri`: percent-decoded,
    /// dot segments resolved, merged slashes). Only entries with a `path` condition read it.
    fn path(&self) -> &[u8];
    /// Called (at most once per evaluation) when a regex gave up: the match limit or the JIT
    /// stack was exhausted. The condition counts as not matched.
    fn regex_failed(&self, _entry: usize, _pattern: &str, _why: &str) {}
}

/// The result of evaluating a request against a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome<'l> {
    /// Entry `entry` won: internal redirect to `path` (a URI, or `@name`).
    Redirect {
        /// 0-based index of the winning entry.
        entry: usize,
        /// Its redirectPath.
        path: &'l str,
    },
    /// No entry was satisfied.
    NoMatch,
    /// The data was unusable for this request.
    Error(EvalError<'l>),
}

/// Why a list could not answer a request (contract section 4: a 500 with a log line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EvalError<'l> {
    /// A malformed entry was reached before any winner.
    InvalidEntry {
        /// 0-based index of the entry.
        entry: usize,
        /// What is wrong with it (the compile-time warning text).
        reason: &'l str,
    },
    /// The winning entry has no redirectPath.
    NoRedirectPath {
        /// 0-based index of the entry.
        entry: usize,
    },
}

impl fmt::Display for EvalError<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EvalError::InvalidEntry { entry, reason } => {
                write!(f, "entry {entry} is invalid: {reason}")
            }
            EvalError::NoRedirectPath { entry } => {
                write!(f, "entry {entry} matched but has no redirectPath")
            }
        }
    }
}

/// A compiled match list.
#[derive(Debug)]
pub struct MatchList {
    entries: Box<[Entry]>,
    /// For long lists: exact conditions indexed at compile time.
    index: Option<Index>,
}

/// Strings of compiled entries. Interned per source (see `compile`): names, methods, exact
/// values and redirect paths repeat across entries and lists, and each distinct one is stored
/// once.
pub(crate) type Bytes = Arc<[u8]>;

#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) body: Body,
    pub(crate) redirect: Option<Arc<str>>,
}

impl Entry {
    pub(crate) fn invalid(reason: String) -> Entry {
        Entry { body: Body::Invalid(reason.into()), redirect: None }
    }
}

#[derive(Debug)]
pub(crate) enum Body {
    /// `any: true`: satisfied by every request.
    Any,
    /// All present conditions must hold.
    When {
        path: Option<PathCond>,
        method: Option<Bytes>,
        headers: Box<[HeaderCond]>,
        params: Box<[ParamCond]>,
    },
    /// Malformed: an error when reached.
    Invalid(Box<str>),
}

/// The `path` condition (an extension of the NGF format, written by `httproute-nginx` for
/// Gateway API paths that one NGINX location cannot express).
#[derive(Debug)]
pub(crate) enum PathCond {
    /// The whole path, byte for byte.
    Exact(Box<[u8]>),
    /// Whole segments: `/a` (or `/a/`) holds for `/a`, `/a/` and `/a/b`, not `/ab`. Stored
    /// without its trailing `/`; empty for `/`, which holds for every path.
    Prefix(Box<[u8]>),
    /// An unanchored search, like the other regex conditions.
    Regex(Arc<Pattern>),
}

#[derive(Debug)]
pub(crate) struct HeaderCond {
    /// As written; compared ASCII-case-insensitively over the whole name.
    pub(crate) name: Bytes,
    pub(crate) test: Test,
}

#[derive(Debug)]
pub(crate) struct ParamCond {
    /// Compared byte for byte with the decoded request name.
    pub(crate) name: Bytes,
    pub(crate) test: Test,
}

#[derive(Debug)]
pub(crate) enum Test {
    Exact(Bytes),
    Regex(Arc<Pattern>),
}

/// Per-evaluation state: the lazily decoded query, and whether a regex failure was reported.
struct Ctx<'r, R: ?Sized> {
    req: &'r R,
    params: OnceCell<Params<'r>>,
    reported: Cell<bool>,
}

impl<R: RequestView + ?Sized> Ctx<'_, R> {
    fn regex(&self, p: &Pattern, subject: &[u8], entry: usize) -> bool {
        match p.is_match(subject) {
            Ok(m) => m,
            Err(e) => {
                if !self.reported.replace(true) {
                    self.req.regex_failed(entry, p.as_str(), &e.0);
                }
                false
            }
        }
    }

    /// Exact: the value equals the whole line or one OWS-trimmed comma element of it.
    /// Regex: the pattern is found in the whole line or in one such element.
    fn line_holds(&self, test: &Test, line: &[u8], entry: usize) -> bool {
        match test {
            Test::Exact(v) => {
                if line.len() < v.len() {
                    return false;
                }
                **v == *line
                    || (memchr::memchr(b',', line).is_some()
                        && line.split(|&b| b == b',').any(|el| trim_ows(el) == &**v))
            }
            Test::Regex(p) => {
                self.regex(p, line, entry)
                    || (memchr::memchr(b',', line).is_some()
                        && line.split(|&b| b == b',').map(trim_ows).any(|el| {
                            !el.is_empty() && el.len() < line.len() && self.regex(p, el, entry)
                        }))
            }
        }
    }

    fn path_holds(&self, c: &PathCond, entry: usize) -> bool {
        let path = self.req.path();
        match c {
            PathCond::Exact(p) => **p == *path,
            PathCond::Prefix(p) => {
                path.starts_with(p) && (path.len() == p.len() || path[p.len()] == b'/')
            }
            PathCond::Regex(p) => self.regex(p, path, entry),
        }
    }

    fn header_holds(&self, c: &HeaderCond, entry: usize) -> bool {
        self.req.headers().any(|(name, value)| {
            !value.is_empty()
                && name.len() == c.name.len()
                && name.eq_ignore_ascii_case(&c.name)
                && self.line_holds(&c.test, value, entry)
        })
    }

    fn param_holds(&self, c: &ParamCond, entry: usize) -> bool {
        let params = self.params.get_or_init(|| Params::parse(self.req.query()));
        match params.first(&c.name) {
            None | Some([]) => false,
            Some(v) => match &c.test {
                Test::Exact(want) => **want == *v,
                Test::Regex(p) => self.regex(p, v, entry),
            },
        }
    }
}

fn trim_ows(s: &[u8]) -> &[u8] {
    let is_ows = |b: &u8| *b == b' ' || *b == b'\t';
    let start = s.iter().position(|b| !is_ows(b)).unwrap_or(s.len());
    let end = s.iter().rposition(|b| !is_ows(b)).map_or(start, |i| i + 1);
    &s[start..end]
}

impl MatchList {
    pub(crate) fn new(entries: Vec<Entry>) -> MatchList {
        let index = Index::build(&entries);
        MatchList { entries: entries.into(), index }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the list has no entries (never true for a parsed list).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Evaluates `req`: the first satisfied entry wins; entries after it are never looked at.
    /// A malformed entry reached before a winner is an error.
    pub fn evaluate<R: RequestView + ?Sized>(&self, req: &R) -> Outcome<'_> {
        let cx = Ctx { req, params: OnceCell::new(), reported: Cell::new(false) };
        if let Some(index) = &self.index {
            if let Some(candidates) = self.candidates(index, &cx) {
                return self.first_of(candidates, &cx);
            }
        }
        self.first_of(0..self.entries.len(), &cx)
    }

    /// [`MatchList::evaluate`] without the index: every entry in order. For tests that check
    /// the index changes no outcome.
    #[doc(hidden)]
    pub fn evaluate_linear<R: RequestView + ?Sized>(&self, req: &R) -> Outcome<'_> {
        let cx = Ctx { req, params: OnceCell::new(), reported: Cell::new(false) };
        self.first_of(0..self.entries.len(), &cx)
    }

    /// Whether the list is long enough to be indexed.
    #[doc(hidden)]
    pub fn is_indexed(&self) -> bool {
        self.index.is_some()
    }

    /// Evaluates the given entries in the order given (ascending) until one decides.
    fn first_of<R: RequestView + ?Sized>(
        &self,
        order: impl Iterator<Item = usize>,
        cx: &Ctx<'_, R>,
    ) -> Outcome<'_> {
        for i in order {
            let Some(e) = self.entries.get(i) else { break };
            let satisfied = match &e.body {
                Body::Any => true,
                Body::Invalid(reason) => {
                    return Outcome::Error(EvalError::InvalidEntry { entry: i, reason });
                }
                Body::When { path, method, headers, params } => {
                    method.as_deref().is_none_or(|m| m == cx.req.method())
                        && path.as_ref().is_none_or(|p| cx.path_holds(p, i))
                        && headers.iter().all(|h| cx.header_holds(h, i))
                        && params.iter().all(|p| cx.param_holds(p, i))
                }
            };
            if satisfied {
                return match &e.redirect {
                    Some(path) => Outcome::Redirect { entry: i, path },
                    None => Outcome::Error(EvalError::NoRedirectPath { entry: i }),
                };
            }
        }
        Outcome::NoMatch
    }

    /// The entries whose index key holds for this request, plus the unkeyed ones; `None` when
    /// the request hits more posting lists than `Candidates` holds.
    fn candidates<'s, R: RequestView + ?Sized>(
        &self,
        index: &'s Index,
        cx: &'s Ctx<'_, R>,
    ) -> Option<Candidates<'s>> {
        let mut c = Candidates::new();
        let mut ok = c.push(&index.rest);
        let method = cx.req.method();
        if let Some((_, list)) = index.methods.iter().find(|(m, _)| **m == *method) {
            ok &= c.push(list);
        }
        if !index.headers.is_empty() {
            for (name, value) in cx.req.headers() {
                let Some((_, postings)) =
                    index.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name))
                else {
                    continue;
                };
                if value.is_empty() {
                    continue;
                }
                if let Some(list) = postings.get(value) {
                    ok &= c.push(list);
                }
                if memchr::memchr(b',', value).is_some() {
                    for el in value.split(|&b| b == b',').map(trim_ows) {
                        if let Some(list) = postings.get(el) {
                            ok &= c.push(list);
                        }
                    }
                }
            }
        }
        if !index.params.is_empty() {
            let params = cx.params.get_or_init(|| Params::parse(cx.req.query()));
            for (name, postings) in &index.params {
                if let Some(list) = params.first(name).and_then(|v| postings.get(v)) {
                    ok &= c.push(list);
                }
            }
        }
        ok.then_some(c)
    }
}
