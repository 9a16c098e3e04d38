//! Raw JSON entries -> compiled entries, once per list.
//!
//! Everything that can be decided without a request is decided here: the string syntax of the
//! source, header-name validity, the split of every header and param string, every regex. A
//! malformed entry becomes [`Body::Invalid`] (it answers an error when reached, as njs did) plus
//! a [`Warning`], so one bad route never blocks the other routes of a reload.

use core::fmt;
use core::ops::Range;
use std::collections::HashMap;
use std::sync::Arc;

use std::collections::HashSet;

use rustc_hash::FxHashMap;
use serde_json::{Map, Value};

use crate::eval::{Body, Bytes, Entry, HeaderCond, MatchList, ParamCond, PathCond, Test};
use crate::parse::{self, ParseError, RawList, Syntax, is_match_type, is_typed_string, key_path};
use crate::pattern::Pattern;

/// A malformed entry, found at compile time. The entry answers an error when a request reaches
/// it; callers log this at load (or refuse the source when they are strict).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// The match key of the list (for `matches.json`), `None` for a single list.
    pub key: Option<String>,
    /// How many other keys of the same file hold an identical list (compiled once).
    pub also: usize,
    /// 0-based index of the entry in its list.
    pub entry: usize,
    /// What is wrong with it.
    pub message: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.key {
            Some(k) => write!(f, "{}[{}]: {}", key_path(Some(k)), self.entry, self.message)?,
            None => write!(f, "$[{}]: {}", self.entry, self.message)?,
        }
        if self.also > 0 {
            write!(f, " (the same list is under {} other key(s))", self.also)?;
        }
        Ok(())
    }
}

/// One compiled list and what was wrong with its entries.
#[derive(Debug)]
pub struct CompiledList {
    /// The list, ready to evaluate.
    pub list: MatchList,
    /// Malformed entries.
    pub warnings: Vec<Warning>,
}

/// A compiled `matches.json`.
#[derive(Debug, Default)]
pub struct CompiledFile {
    lists: FxHashMap<Box<[u8]>, Arc<MatchList>>,
    distinct: usize,
    /// Malformed entries, once per distinct list.
    pub warnings: Vec<Warning>,
}

impl CompiledFile {
    /// The list under `key` (the value of `$match_key`).
    pub fn get(&self, key: &[u8]) -> Option<&MatchList> {
        self.lists.get(key).map(|l| &**l)
    }
    /// Number of keys.
    pub fn len(&self) -> usize {
        self.lists.len()
    }
    /// Whether the file has no keys (`{}`, what NGF writes for an empty configuration).
    pub fn is_empty(&self) -> bool {
        self.lists.is_empty()
    }
    /// Every (key, list); a list shared by several keys comes once per key.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &MatchList)> {
        self.lists.iter().map(|(k, l)| (&**k, &**l))
    }
    /// Number of distinct lists (identical lists under several keys are compiled once).
    pub fn distinct(&self) -> usize {
        self.distinct
    }
}

pub(crate) fn compile_list(json: &[u8], syntax: Syntax) -> Result<CompiledList, ParseError> {
    let raw = parse::parse_list(json)?;
    let typed = resolve_syntax(syntax, std::slice::from_ref(&raw));
    let mut c = Compiler::new(typed);
    let mut warnings = Vec::new();
    let list = c.list(&raw, None, &mut warnings);
    Ok(CompiledList { list, warnings })
}

pub(crate) fn compile_file(json: &[u8], syntax: Syntax) -> Result<CompiledFile, ParseError> {
    let typed = match syntax {
        Syntax::Typed => true,
        Syntax::Untyped => false,
        // A first pass that only looks at strings: the lists are then compiled one by one
        // as they are parsed, never all held as JSON trees.
        Syntax::Auto => parse::file_is_typed(json),
    };
    let mut c = Compiler::new(typed);
    // Identical lists (NGF writes one per hostname) are compiled once: keyed by their canonical
    // JSON text (serde_json's map is ordered, so equal lists print equally).
    let mut by_text: HashMap<String, (Arc<MatchList>, Range<usize>)> = HashMap::new();
    let mut out = CompiledFile::default();
    parse::parse_file_with(json, &mut |key, list| {
        let text = serde_json::to_string(&list).unwrap_or_default();
        let shared = match by_text.get(&text) {
            Some((shared, its_warnings)) => {
                for w in &mut out.warnings[its_warnings.clone()] {
                    w.also += 1;
                }
                shared.clone()
            }
            None => {
                let first = out.warnings.len();
                let compiled = Arc::new(c.list(&list, Some(&key), &mut out.warnings));
                by_text.insert(text, (compiled.clone(), first..out.warnings.len()));
                out.distinct += 1;
                compiled
            }
        };
        out.lists.insert(key.into_bytes().into(), shared);
    })?;
    Ok(out)
}

/// Decides typed/untyped for a whole source (contract section 3).
fn resolve_syntax<'a>(syntax: Syntax, lists: impl IntoIterator<Item = &'a RawList>) -> bool {
    match syntax {
        Syntax::Typed => true,
        Syntax::Untyped => false,
        Syntax::Auto => lists.into_iter().flatten().any(|entry| {
            let strings = |field: &str, sep: char| -> bool {
                entry
                    .get(field)
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .any(|s| is_typed_string(s, sep))
            };
            strings("headers", ':') || strings("params", '=')
        }),
    }
}

struct Compiler {
    typed: bool,
    /// One compiled regex per distinct pattern text, shared across the source.
    patterns: HashMap<String, Arc<Pattern>>,
    /// Interned strings and redirect paths, shared across the source.
    strings: HashSet<Bytes>,
    redirects: HashSet<Arc<str>>,
}

impl Compiler {
    fn new(typed: bool) -> Compiler {
        Compiler {
            typed,
            patterns: HashMap::new(),
            strings: HashSet::new(),
            redirects: HashSet::new(),
        }
    }

    fn intern(&mut self, b: &[u8]) -> Bytes {
        intern(&mut self.strings, b)
    }

    fn list(&mut self, raw: &RawList, key: Option<&str>, warnings: &mut Vec<Warning>) -> MatchList {
        let entries = raw
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let (entry, problems) = self.entry(v);
                warnings.extend(problems.into_iter().map(|message| Warning {
                    key: key.map(str::to_owned),
                    also: 0,
                    entry: i,
                    message,
                }));
                entry
            })
            .collect();
        MatchList::new(entries)
    }

    /// Compiles one entry. Problems that make it unusable make it `Invalid`; the others (a
    /// missing redirectPath) are only reported, since they matter only if the entry wins.
    fn entry(&mut self, v: &Value) -> (Entry, Vec<String>) {
        let Some(obj) = v.as_object() else {
            let reason = format!("entry is not a JSON object: {v}");
            return (Entry::invalid(reason.clone()), vec![reason]);
        };
        let redirect = match redirect_path(obj) {
            Ok(r) => r,
            Err(reason) => return (Entry::invalid(reason.clone()), vec![reason]),
        };
        let body = match self.body(obj) {
            Ok(b) => b,
            Err(reason) => return (Entry::invalid(reason.clone()), vec![reason]),
        };
        let mut problems = Vec::new();
        if redirect.is_none() {
            problems.push("no redirectPath: the entry answers 500 when it matches".to_owned());
        }
        let redirect = redirect.map(|p| intern(&mut self.redirects, p));
        (Entry { body, redirect }, problems)
    }

    fn body(&mut self, obj: &Map<String, Value>) -> Result<Body, String> {
        match obj.get("any") {
            None | Some(Value::Null) | Some(Value::Bool(false)) => {}
            // Like njs: `any` wins before any other field is looked at.
            Some(Value::Bool(true)) => return Ok(Body::Any),
            Some(other) => return Err(format!("\"any\" must be a boolean, not {other}")),
        }
        let method = match obj.get("method") {
            None | Some(Value::Null) => None,
            Some(Value::String(m)) if m.is_empty() => None,
            Some(Value::String(m)) => Some(self.intern(m.as_bytes())),
            Some(other) => return Err(format!("\"method\" must be a string, not {other}")),
        };
        let path = match obj.get("path") {
            None | Some(Value::Null) => None,
            Some(Value::String(p)) => Some(self.path(p)?),
            Some(other) => return Err(format!("\"path\" must be a string, not {other}")),
        };
        let headers = strings(obj, "headers")?
            .into_iter()
            .map(|s| self.header(s))
            .collect::<Result<Vec<_>, _>>()?;
        let params =
            strings(obj, "params")?.into_iter().map(|s| self.param(s)).collect::<Result<_, _>>()?;
        Ok(Body::When { path, method, headers: headers.into(), params })
    }

    /// `Exact:/p`, `PathPrefix:/p` or `RegularExpression:pattern` (always typed: there was no
    /// untyped form, NGF never wrote this field).
    fn path(&mut self, s: &str) -> Result<PathCond, String> {
        let bad = |why: &str| format!("invalid path match \"{s}\": {why}");
        let (kind, value) = s.split_once(':').ok_or_else(|| {
            bad("expected Exact:/path, PathPrefix:/path or RegularExpression:pattern")
        })?;
        match kind {
            "Exact" | "PathPrefix" if !value.starts_with('/') => {
                Err(bad("the path must start with \"/\""))
            }
            "Exact" => Ok(PathCond::Exact(value.as_bytes().into())),
            "PathPrefix" => Ok(PathCond::Prefix(value.trim_end_matches('/').as_bytes().into())),
            "RegularExpression" if value.is_empty() => Err(bad("empty pattern")),
            "RegularExpression" => Ok(PathCond::Regex(self.pattern(value).map_err(|e| {
                format!("invalid regular expression \"{value}\" in path match \"{s}\": {e}")
            })?)),
            other => Err(bad(&format!(
                "unknown match type \"{other}\" (expected Exact, PathPrefix or RegularExpression)"
            ))),
        }
    }

    fn header(&mut self, s: &str) -> Result<HeaderCond, String> {
        let (name, test) = self.split(s, ':', "header")?;
        if let Some(bad) = name.bytes().find(|b| !is_token(*b)) {
            return Err(format!(
                "invalid header match \"{s}\": header name has the character {:?}",
                char::from(bad)
            ));
        }
        Ok(HeaderCond { name: self.intern(name.as_bytes()), test })
    }

    fn param(&mut self, s: &str) -> Result<ParamCond, String> {
        let (name, test) = self.split(s, '=', "query parameter")?;
        Ok(ParamCond { name: self.intern(name.as_bytes()), test })
    }

    /// Splits `name<sep>Type<sep>value` (typed) or `name<sep>value` (untyped).
    fn split<'s>(&mut self, s: &'s str, sep: char, what: &str) -> Result<(&'s str, Test), String> {
        let form = if self.typed {
            format!("name{sep}Exact{sep}value or name{sep}RegularExpression{sep}value")
        } else {
            format!("name{sep}value")
        };
        let bad = |why: &str| format!("invalid {what} match \"{s}\": {why}");
        let (name, rest) = s.split_once(sep).ok_or_else(|| bad(&format!("expected {form}")))?;
        let (kind, value) = if self.typed {
            let (t, v) = rest.split_once(sep).ok_or_else(|| bad(&format!("expected {form}")))?;
            if !is_match_type(t) {
                return Err(bad(&format!(
                    "unknown match type \"{t}\" (expected Exact or RegularExpression)"
                )));
            }
            (t, v)
        } else {
            ("Exact", rest)
        };
        if name.is_empty() {
            return Err(bad("empty name"));
        }
        if value.is_empty() {
            return Err(bad("empty value"));
        }
        let test = if kind == "Exact" {
            Test::Exact(self.intern(value.as_bytes()))
        } else {
            Test::Regex(self.pattern(value).map_err(|e| {
                format!("invalid regular expression \"{value}\" in {what} match \"{s}\": {e}")
            })?)
        };
        Ok((name, test))
    }

    fn pattern(&mut self, source: &str) -> Result<Arc<Pattern>, String> {
        if let Some(p) = self.patterns.get(source) {
            return Ok(p.clone());
        }
        let p = Arc::new(Pattern::new(source)?);
        self.patterns.insert(source.to_owned(), p.clone());
        Ok(p)
    }
}

/// The shared copy of `v` in `set`, made on first sight.
fn intern<T: ?Sized + Eq + core::hash::Hash>(set: &mut HashSet<Arc<T>>, v: &T) -> Arc<T>
where
    Arc<T>: for<'a> From<&'a T>,
{
    if let Some(s) = set.get(v) {
        return s.clone();
    }
    let s: Arc<T> = v.into();
    set.insert(s.clone());
    s
}

fn redirect_path(obj: &Map<String, Value>) -> Result<Option<&str>, String> {
    match obj.get("redirectPath") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(p)) if p.is_empty() => Ok(None),
        Some(Value::String(p)) => {
            if !(p.starts_with('/') || (p.starts_with('@') && p.len() > 1)) {
                return Err(format!(
                    "redirectPath \"{p}\" must start with \"/\" (a URI) or \"@\" (a named location)"
                ));
            }
            if p.contains('?') {
                return Err(format!(
                    "redirectPath \"{p}\" has a \"?\": the request's own query string is kept"
                ));
            }
            Ok(Some(p.as_str()))
        }
        Some(other) => Err(format!("\"redirectPath\" must be a string, not {other}")),
    }
}

/// An optional array of strings; `null` counts as absent.
fn strings<'v>(obj: &'v Map<String, Value>, field: &str) -> Result<Vec<&'v str>, String> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().ok_or_else(|| format!("\"{field}\" has a non-string item {v}")))
            .collect(),
        Some(other) => Err(format!("\"{field}\" must be an array of strings, not {other}")),
    }
}

/// RFC 9110 token characters: what a header name can be made of.
fn is_token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn field() -> impl Strategy<Value = String> {
        let strings = prop::sample::select(vec![
            "\"a:Exact:b\"",
            "\"a=RegularExpression=b\"",
            "\"a:b\"",
            "\"a=b=c\"",
            "\"x:Bogus:y\"",
            "7",
            "[\"a:Exact:b\"]",
            "{\"h\":\"a:Exact:b\"}",
        ]);
        (
            prop::sample::select(vec!["headers", "params", "method", "other"]),
            proptest::collection::vec(strings, 0..3),
            any::<bool>(),
        )
            .prop_map(|(name, items, array)| {
                if array {
                    format!("\"{name}\":[{}]", items.join(","))
                } else {
                    format!("\"{name}\":{}", items.first().copied().unwrap_or("null"))
                }
            })
    }

    proptest! {
        /// The streaming first pass decides typed/untyped exactly as the whole-tree rule does.
        #[test]
        fn streaming_detection_agrees_with_the_tree(
            lists in proptest::collection::vec(
                proptest::collection::vec(proptest::collection::vec(field(), 0..3), 1..3), 1..4),
        ) {
            let body: Vec<String> = lists.iter().enumerate().map(|(k, entries)| {
                let es: Vec<String> = entries.iter().map(|fs| format!("{{{}}}", fs.join(","))).collect();
                format!("\"k{k}\":[{}]", es.join(","))
            }).collect();
            let json = format!("{{{}}}", body.join(","));
            let tree = parse::parse_file(json.as_bytes()).unwrap();
            let want = resolve_syntax(Syntax::Auto, tree.iter().map(|(_, l)| l));
            let got = parse::file_is_typed(json.as_bytes());
            prop_assert_eq!(got, want, "{}", json);
        }
    }
}
