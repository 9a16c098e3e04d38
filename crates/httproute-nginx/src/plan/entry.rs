//! The match-list entry of a candidate, as the module reads it (`matches.json`, `http_matches`):
//! one type, serialised one way, written by emit and evaluated by explain.

use serde::Serialize;

use crate::model::ValueMatch;
use crate::syntax::{Arg, Pos};

/// One entry of a location's match list. Fields serialise in this order (alphabetical, as the
/// lists have always been written), each left out when empty.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Entry {
    /// Matches every request (no condition).
    #[serde(skip_serializing_if = "is_false")]
    pub any: bool,
    /// `NAME:TYPE:VALUE`
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// `NAME=TYPE=VALUE`
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub params: Vec<String>,
    /// `RegularExpression:^(?:PATTERN)`, for a regex path match.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The rule's slot in its server; written as the rule's internal location,
    /// `redirectPath`: `INTERNAL_PREFIX` and the slot (made as it is written, not held).
    #[serde(rename = "redirectPath", serialize_with = "redirect_path")]
    pub slot: usize,
}

/// Entry `e`'s bytes in a list word at `pos` (its JSON as the writer quotes it, less the
/// quotes); `None` where it cannot be serialized or written.
pub(super) fn word_bytes(e: &Entry, pos: Pos) -> Option<usize> {
    let json = serde_json::to_string(e).ok()?;
    let a = Arg::data("a match list entry", json).single_quoted();
    let (written, _) = crate::syntax::word(&a, pos, &mut false).ok()?;
    Some(written.len() - 2)
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// The engine's `path` condition for a regex path: anchored at the start.
/// The path of a rule's internal location is this and the rule's number.
pub const INTERNAL_PREFIX: &str = "/_httproute-internal/";

/// The internal location of rule slot `slot`: what an entry's `redirectPath` names.
fn redirect_path<S: serde::Serializer>(slot: &usize, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&format_args!("{INTERNAL_PREFIX}{slot}"))
}

pub(super) const REGEX_CONDITION: &str = "RegularExpression:";

/// `NAME`, `TYPE` and `VALUE` of `m` joined by `sep` (one allocation, no formatting).
fn condition(m: &ValueMatch, sep: &str) -> String {
    [&*m.name, sep, &*m.kind, sep, &*m.value].concat()
}

impl Entry {
    /// The entry of a candidate of rule slot `rule` with these conditions; `path`: the
    /// regex path condition, if any.
    pub(super) fn new(
        rule: usize,
        path: Option<String>,
        method: Option<&str>,
        headers: &[&ValueMatch],
        params: &[&ValueMatch],
    ) -> Entry {
        let any = path.is_none() && method.is_none() && headers.is_empty() && params.is_empty();
        Entry {
            any,
            headers: headers.iter().map(|h| condition(h, ":")).collect(),
            method: method.map(str::to_owned),
            params: params.iter().map(|q| condition(q, "=")).collect(),
            path,
            slot: rule,
        }
    }
}
