//! JSON -> raw entries, with positions for everything that makes a source unusable.
//!
//! The shape (an array of entries, or an object of key -> array) is checked while
//! deserializing, so serde_json attaches the line and column of the offending token to the
//! error. Entries themselves are kept as `serde_json::Value`: a malformed entry is not a parse
//! error but an entry that fails when reached (see `compile`).

use core::fmt;
use std::collections::HashSet;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// How the header and param strings of a source are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Syntax {
    /// Typed when any string of the source has `Exact` or `RegularExpression` between its
    /// first two separators, else untyped (NGF never mixed them in one source).
    #[default]
    Auto,
    /// `name:Type:value` and `name=Type=value` (NGF 2.0 and later).
    Typed,
    /// `name:value` and `name=value` (blog-era NGF, before 2.0).
    Untyped,
}

impl Syntax {
    /// Parses the value of a `syntax=` directive parameter.
    pub fn from_name(name: &str) -> Option<Syntax> {
        match name {
            "auto" => Some(Syntax::Auto),
            "typed" => Some(Syntax::Typed),
            "untyped" => Some(Syntax::Untyped),
            _ => None,
        }
    }
}

/// A source that cannot be used at all: bad JSON or a wrong top-level shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    message: String,
    line: usize,
    column: usize,
}

impl ParseError {
    /// 1-based line of the problem (0 when unknown).
    pub fn line(&self) -> usize {
        self.line
    }
    /// 1-based column of the problem (0 when unknown).
    pub fn column(&self) -> usize {
        self.column
    }
    /// The problem, without its position.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(f, "{} at line {} column {}", self.message, self.line, self.column)
        } else {
            f.write_str(&self.message)
        }
    }
}

impl std::error::Error for ParseError {}

impl From<serde_json::Error> for ParseError {
    fn from(e: serde_json::Error) -> Self {
        // serde_json's Display appends " at line L column C"; keep the message bare and the
        // position separate so callers can format it their way.
        let full = e.to_string();
        let message = match full.rfind(" at line ") {
            Some(i) if e.line() > 0 => full[..i].to_owned(),
            _ => full,
        };
        // serde_json says column 0 for an error at the very start of a line.
        ParseError { message, line: e.line(), column: e.column().max(usize::from(e.line() > 0)) }
    }
}

/// Writes a JSON path like `$["1_0"][3].headers[1]`.
pub(crate) fn key_path(key: Option<&str>) -> String {
    match key {
        Some(k) => format!("$[{}]", Value::String(k.to_owned())),
        None => "$".to_owned(),
    }
}

/// One list's entries, still as JSON values.
pub(crate) type RawList = Vec<Value>;

pub(crate) fn parse_list(json: &[u8]) -> Result<RawList, ParseError> {
    let mut de = serde_json::Deserializer::from_slice(json);
    let list = ListSeed { key: None }.deserialize(&mut de)?;
    de.end()?;
    Ok(list)
}

pub(crate) fn parse_file(json: &[u8]) -> Result<Vec<(String, RawList)>, ParseError> {
    let mut de = serde_json::Deserializer::from_slice(json);
    let file = de.deserialize_map(FileVisitor)?;
    de.end()?;
    Ok(file)
}

struct ListSeed<'a> {
    key: Option<&'a str>,
}

impl<'de> DeserializeSeed<'de> for ListSeed<'_> {
    type Value = RawList;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<RawList, D::Error> {
        d.deserialize_any(ListVisitor { key: self.key })
    }
}

struct ListVisitor<'a> {
    key: Option<&'a str>,
}

impl<'de> Visitor<'de> for ListVisitor<'_> {
    type Value = RawList;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an array of match entries at {}", key_path(self.key))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawList, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(4));
        while let Some(v) = seq.next_element::<Value>()? {
            out.push(v);
        }
        if out.is_empty() {
            return Err(de::Error::custom(format_args!(
                "the match list at {} is empty",
                key_path(self.key)
            )));
        }
        Ok(out)
    }
}

struct FileVisitor;

impl<'de> Visitor<'de> for FileVisitor {
    type Value = Vec<(String, RawList)>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object of match key -> match list at $")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                return Err(de::Error::custom(format_args!(
                    "duplicate match key at {}",
                    key_path(Some(&key))
                )));
            }
            let list = map.next_value_seed(ListSeed { key: Some(&key) })?;
            out.push((key, list));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_error_has_position() {
        let e = parse_list(b"[\n {\"any\": true},\n]").unwrap_err();
        assert_eq!((e.line(), e.column()), (3, 1));
        assert_eq!(e.message(), "trailing comma");
    }

    #[test]
    fn list_must_be_an_array() {
        let e = parse_list(br#"{"a": 1}"#).unwrap_err();
        assert_eq!(e.message(), "invalid type: map, expected an array of match entries at $");
        assert_eq!(e.line(), 1);
    }

    #[test]
    fn file_value_must_be_an_array_and_names_the_key() {
        let e = parse_file(b"{\"1_0\": [{\"any\":true}],\n \"1_1\": {}}").unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid type: map, expected an array of match entries at $[\"1_1\"] at line 2 column 10"
        );
    }

    #[test]
    fn file_must_be_an_object() {
        let e = parse_file(b"[]").unwrap_err();
        assert!(e.message().contains("expected a JSON object of match key"), "{e}");
    }

    #[test]
    fn empty_list_and_duplicate_key_are_errors() {
        let e = parse_file(br#"{"k": []}"#).unwrap_err();
        assert_eq!(e.message(), "the match list at $[\"k\"] is empty");
        let e = parse_file(br#"{"k": [{}], "k": [{}]}"#).unwrap_err();
        assert_eq!(e.message(), "duplicate match key at $[\"k\"]");
    }

    #[test]
    fn trailing_garbage_is_an_error() {
        assert!(parse_list(b"[{}] x").is_err());
        assert!(parse_file(b"{} {}").is_err());
    }
}
