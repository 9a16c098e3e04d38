//! JSON -> raw entries, with positions for everything that makes a source unusable.
//!
//! The shape (an array of entries, or an object of key -> array) is checked while
//! deserializing, so serde_json attaches the line and column of the offending token to the
//! error. Each entry is parsed into the fields the compile reads ([`RawEntry`]: unknown fields
//! skipped, a value of the wrong type only shown) and handed over at once, never as a JSON tree
//! of its list: a malformed entry is not a parse error but an entry that fails when reached
//! (see `compile`).

use core::cell::Cell;
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
    memory: bool,
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
    /// Whether the source was refused for memory (the system's, or the bound given), not for
    /// what it says.
    pub fn is_memory(&self) -> bool {
        self.memory
    }
}

impl ParseError {
    pub(crate) fn io(e: &std::io::Error) -> ParseError {
        ParseError { message: e.to_string(), line: 0, column: 0, memory: false }
    }

    pub(crate) fn memory(message: String) -> ParseError {
        ParseError { message, line: 0, column: 0, memory: true }
    }

    pub(crate) fn include(message: String) -> ParseError {
        ParseError { message, line: 0, column: 0, memory: false }
    }

    pub(crate) fn too_large() -> ParseError {
        ParseError {
            message: "the compiled source would need more than 4 GiB (u32 offsets)".to_owned(),
            line: 0,
            column: 0,
            memory: false,
        }
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
        let column = e.column().max(usize::from(e.line() > 0));
        ParseError { message, line: e.line(), column, memory: false }
    }
}

/// Writes a JSON path like `$["1_0"][3].headers[1]`.
pub(crate) fn key_path(key: Option<&str>) -> String {
    match key {
        Some(k) => format!("$[{}]", key_shown(k)),
        None => "$".to_owned(),
    }
}

/// A key as messages show it: a JSON string, cut after [`KEY_SHOWN`] bytes (`"kkk"...+N
/// bytes`) at a character boundary, so that a message (made when the limit is reached, in the
/// room kept for it) never copies a long key whole.
pub(crate) fn key_shown(k: &str) -> String {
    if k.len() <= KEY_SHOWN {
        return Value::String(k.to_owned()).to_string();
    }
    let end = (0..=KEY_SHOWN).rev().find(|&i| k.is_char_boundary(i)).unwrap_or(0);
    let (shown, rest) = k.split_at(end);
    format!("{}...+{} bytes", Value::String(shown.to_owned()), rest.len())
}

/// The most bytes of a key a message shows.
pub(crate) const KEY_SHOWN: usize = 64;

/// Parses one list (a JSON array), handing each match entry to `entry` as soon as it is read
/// (`false` stops the parse: the compile ran out of memory); the number of entries.
pub(crate) fn parse_list(
    json: &[u8],
    entry: &mut dyn FnMut(Option<&str>, usize, RawEntry) -> bool,
) -> Result<usize, ParseError> {
    let mut de = serde_json::Deserializer::from_slice(json);
    let list = ListSeed { key: None, keys: None, entry }.deserialize(&mut de)?;
    de.end()?;
    match list {
        Parsed::Entries(n) => Ok(n),
        // The seed refuses includes without the keys of a file.
        Parsed::Includes(_) => Err(ParseError::io(&std::io::Error::other("include in a list"))),
    }
}

/// The first pass over one list: what a file's [`survey`] finds, from the list's depth (its
/// syntax, entries, conditions and bytes of strings), so that its entries are compiled as
/// they are parsed, into arrays sized once. Allocates nothing (strings are borrowed from
/// `json`, or copied one at a time when escaped). Syntax errors count as untyped: the real
/// parse reports them.
pub(crate) fn list_survey(json: &[u8]) -> Survey {
    let (pos, room) = (|| 0, |_| true);
    let counts = Counts::new(&pos, &room);
    let mut de = serde_json::Deserializer::from_slice(json);
    let typed = Detect { depth: 1, sep: None, counts: &counts }.deserialize(&mut de);
    Survey {
        typed: typed.unwrap_or(false),
        entries: counts.entries.get(),
        conditions: counts.conditions.get(),
        bytes: counts.bytes.get(),
        ..Survey::default()
    }
}

/// What the second pass of a file tells its compile, list by list.
pub(crate) trait Lists {
    /// Asked before the list under `key` is parsed: `None` stops the parse there (an error,
    /// which the caller replaces by its own reason); else the most bytes the list may take,
    /// which the fence (the reader's, for a stream) holds the read to while it is parsed.
    fn before(&mut self, key: &str) -> Option<u64>;
    /// The `i`th element of the list under `key`, a match entry, as soon as it is read:
    /// `false` stops the parse (out of memory).
    fn entry(&mut self, key: &str, i: usize, entry: RawEntry) -> bool;
    /// The list under `key` was read whole.
    fn list(&mut self, key: String, list: Parsed);
}

/// Parses a whole file, handing each entry of each list to `lists` as soon as it is read, so
/// that no more than one entry is alive as parsed (a list is never held as a JSON tree: a
/// tree took up to ~143 bytes per byte of its JSON).
///
/// `keys` (from the [`survey`] of the same file) is what an include is checked against: the
/// position of a bad include is then the parser's own.
///
/// `room(n)` is asked before the set of keys read (for duplicates) grows by up to `n` bytes:
/// `false` stops the parse (an error; the caller reports its memory).
pub(crate) fn parse_file_with<'de, R: serde_json::de::Read<'de>>(
    mut de: serde_json::Deserializer<R>,
    keys: &Keys,
    room: &dyn Fn(usize) -> bool,
    fence: Option<&Fence>,
    lists: &mut dyn Lists,
) -> Result<(), ParseError> {
    (&mut de).deserialize_map(FileVisitor { keys, room, fence, lists })?;
    de.end()?;
    Ok(())
}

/// One list of a file as parsed: match entries, or includes of other lists (never both).
#[derive(Debug)]
pub(crate) enum Parsed {
    /// This many match entries (each handed over as it was read).
    Entries(usize),
    /// `{"include": KEY}` elements: the keys, in order. Each is a key of the same file whose
    /// list has no includes of its own (checked while parsing, when the survey was complete).
    Includes(Vec<String>),
}

#[cfg(test)]
pub(crate) fn parse_file(json: &[u8]) -> Result<Vec<(String, Parsed)>, ParseError> {
    struct All(Vec<(String, Parsed)>);
    impl Lists for All {
        fn before(&mut self, _: &str) -> Option<u64> {
            Some(u64::MAX)
        }
        fn entry(&mut self, _: &str, _: usize, _: RawEntry) -> bool {
            true
        }
        fn list(&mut self, key: String, list: Parsed) {
            self.0.push((key, list));
        }
    }
    let mut all = All(Vec::new());
    let keys = survey(serde_json::Deserializer::from_slice(json), &|| 0, &|_| true).names;
    let de = serde_json::Deserializer::from_slice(json);
    parse_file_with(de, &keys, &|_| true, None, &mut all)?;
    Ok(all.0)
}

/// One element of a list as parsed: an object's fields the compile reads (each as its last
/// occurrence left it, as in a JSON object; other fields skipped, unallocated), or any other
/// value, as messages show it.
#[derive(Debug)]
pub(crate) enum RawEntry {
    /// A JSON object.
    Object(Box<Fields>),
    /// Anything else, shown (see [`Got`]).
    Other(String),
}

/// The fields of an entry the compile reads; absent is `null`.
#[derive(Debug, Default)]
pub(crate) struct Fields {
    pub(crate) any: Got,
    pub(crate) method: Got,
    pub(crate) path: Got,
    pub(crate) redirect: Got,
    /// [`Got::Strings`] when an array of strings.
    pub(crate) headers: Got,
    pub(crate) params: Got,
    /// `include` (absent: `None`, unlike `null`).
    pub(crate) include: Option<Got>,
    /// A field other than `include` (an include element has none).
    pub(crate) others: bool,
}

/// A field's value as parsed: what the compile accepts, kept; anything else only as
/// `serde_json::Value`'s `Display` shows it (for the entry's warning), written while it is
/// parsed ([`Show`]), never built as a tree.
#[derive(Debug, Default, PartialEq)]
pub(crate) enum Got {
    /// `null` (or absent).
    #[default]
    Null,
    Bool(bool),
    Str(String),
    /// An array of strings (`headers`, `params`).
    Strings(Vec<String>),
    /// An array (`headers`, `params`) with a non-string item: the first, shown.
    BadItem(String),
    /// Any other value, shown.
    Shown(String),
}

impl fmt::Display for Got {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Got::Null => f.write_str("null"),
            Got::Bool(b) => write!(f, "{b}"),
            Got::Str(s) => f.write_str(&serde_json::to_string(s).unwrap_or_default()),
            Got::Strings(v) => f.write_str(&serde_json::to_string(v).unwrap_or_default()),
            Got::BadItem(s) | Got::Shown(s) => f.write_str(s),
        }
    }
}

/// Parses an element of a list.
struct EntrySeed;

impl<'de> DeserializeSeed<'de> for EntrySeed {
    type Value = RawEntry;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<RawEntry, D::Error> {
        d.deserialize_any(EntryVisitor)
    }
}

struct EntryVisitor;

/// The fields the compile reads.
#[derive(Clone, Copy)]
enum Name {
    Any,
    Method,
    Path,
    Redirect,
    Headers,
    Params,
    Include,
    Other,
}

impl<'de> de::Deserialize<'de> for Name {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Name, D::Error> {
        d.deserialize_identifier(NameVisitor)
    }
}

struct NameVisitor;

impl Visitor<'_> for NameVisitor {
    type Value = Name;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }
    fn visit_str<E>(self, v: &str) -> Result<Name, E> {
        Ok(match v {
            "any" => Name::Any,
            "method" => Name::Method,
            "path" => Name::Path,
            "redirectPath" => Name::Redirect,
            "headers" => Name::Headers,
            "params" => Name::Params,
            INCLUDE => Name::Include,
            _ => Name::Other,
        })
    }
}

/// Forwards a visitor's scalars to [`GotVisitor`] (`$v`), the value being `$wrap`ped.
macro_rules! scalars {
    ($v:expr, $wrap:expr) => {
        fn visit_bool<E: de::Error>(self, b: bool) -> Result<Self::Value, E> {
            $v.visit_bool(b).map($wrap)
        }
        fn visit_i64<E: de::Error>(self, n: i64) -> Result<Self::Value, E> {
            $v.visit_i64(n).map($wrap)
        }
        fn visit_u64<E: de::Error>(self, n: u64) -> Result<Self::Value, E> {
            $v.visit_u64(n).map($wrap)
        }
        fn visit_f64<E: de::Error>(self, n: f64) -> Result<Self::Value, E> {
            $v.visit_f64(n).map($wrap)
        }
        fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
            $v.visit_str(s).map($wrap)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            $v.visit_unit().map($wrap)
        }
    };
}

impl<'de> Visitor<'de> for EntryVisitor {
    type Value = RawEntry;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a match entry")
    }

    scalars!(GotVisitor { strings: false }, |g: Got| RawEntry::Other(g.to_string()));

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<RawEntry, A::Error> {
        GotVisitor { strings: false }.visit_seq(seq).map(|g| RawEntry::Other(g.to_string()))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawEntry, A::Error> {
        let mut f = Box::<Fields>::default();
        let any = GotVisitor { strings: false };
        while let Some(name) = map.next_key::<Name>()? {
            f.others |= !matches!(name, Name::Include);
            let strings = GotVisitor { strings: true };
            match name {
                Name::Any => f.any = map.next_value_seed(any)?,
                Name::Method => f.method = map.next_value_seed(any)?,
                Name::Path => f.path = map.next_value_seed(any)?,
                Name::Redirect => f.redirect = map.next_value_seed(any)?,
                Name::Headers => f.headers = map.next_value_seed(strings)?,
                Name::Params => f.params = map.next_value_seed(strings)?,
                Name::Include => f.include = Some(map.next_value_seed(any)?),
                Name::Other => _ = map.next_value::<de::IgnoredAny>()?,
            }
        }
        Ok(RawEntry::Object(f))
    }
}

/// Parses a field's value into a [`Got`]: arrays of strings kept when `strings`.
#[derive(Clone, Copy)]
struct GotVisitor {
    strings: bool,
}

impl<'de> DeserializeSeed<'de> for GotVisitor {
    type Value = Got;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Got, D::Error> {
        d.deserialize_any(self)
    }
}

/// `value` shown, as `Value`'s `Display` would.
fn shown(value: &impl serde::Serialize) -> Got {
    Got::Shown(serde_json::to_string(value).unwrap_or_default())
}

impl<'de> Visitor<'de> for GotVisitor {
    type Value = Got;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON")
    }
    fn visit_bool<E>(self, b: bool) -> Result<Got, E> {
        Ok(Got::Bool(b))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Got, E> {
        Ok(shown(&n))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Got, E> {
        Ok(shown(&n))
    }
    fn visit_f64<E>(self, n: f64) -> Result<Got, E> {
        // As `Value` keeps it (a float JSON cannot hold is `null`).
        Ok(shown(&serde_json::Number::from_f64(n)))
    }
    fn visit_str<E>(self, s: &str) -> Result<Got, E> {
        Ok(Got::Str(s.to_owned()))
    }
    fn visit_string<E>(self, s: String) -> Result<Got, E> {
        Ok(Got::Str(s))
    }
    fn visit_unit<E>(self) -> Result<Got, E> {
        Ok(Got::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Got, A::Error> {
        if !self.strings {
            let mut out = Vec::new();
            Show { out: &mut out }.visit_seq(seq)?;
            return Ok(Got::Shown(String::from_utf8(out).unwrap_or_default()));
        }
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(GotVisitor { strings: false })? {
            match item {
                Got::Str(s) => items.push(s),
                // The first item that is not a string is what the warning shows; the rest is
                // only read.
                other => {
                    while seq.next_element::<de::IgnoredAny>()?.is_some() {}
                    return Ok(Got::BadItem(other.to_string()));
                }
            }
        }
        Ok(Got::Strings(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Got, A::Error> {
        let mut out = Vec::new();
        Show { out: &mut out }.visit_map(map)?;
        Ok(Got::Shown(String::from_utf8(out).unwrap_or_default()))
    }
}

/// Writes a value as `serde_json::Value`'s `Display` shows it (compact; an object's keys in
/// byte order, a key written twice with its last value) while it is parsed: a few words per
/// object member besides the text, where a tree took up to ~143 bytes per byte of JSON.
struct Show<'o> {
    out: &'o mut Vec<u8>,
}

impl<'de> DeserializeSeed<'de> for Show<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl Show<'_> {
    fn write(self, value: &impl serde::Serialize) {
        // Writing into a `Vec` cannot fail.
        let _ = serde_json::to_writer(&mut *self.out, value);
    }
}

impl<'de> Visitor<'de> for Show<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON")
    }
    fn visit_bool<E>(self, b: bool) -> Result<(), E> {
        self.write(&b);
        Ok(())
    }
    fn visit_i64<E>(self, n: i64) -> Result<(), E> {
        self.write(&n);
        Ok(())
    }
    fn visit_u64<E>(self, n: u64) -> Result<(), E> {
        self.write(&n);
        Ok(())
    }
    fn visit_f64<E>(self, n: f64) -> Result<(), E> {
        self.write(&serde_json::Number::from_f64(n));
        Ok(())
    }
    fn visit_str<E>(self, s: &str) -> Result<(), E> {
        self.write(&s);
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        self.out.extend_from_slice(b"null");
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.out.push(b'[');
        for n in 0usize.. {
            let at = self.out.len();
            if n > 0 {
                self.out.push(b',');
            }
            if seq.next_element_seed(Show { out: self.out })?.is_none() {
                self.out.truncate(at);
                break;
            }
        }
        self.out.push(b']');
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        // Each member written as read (`"key":value`), its raw key apart; then the members
        // sorted by raw key (stable: of a key written twice the last is kept) and written
        // again in that order over the first writing.
        let start = self.out.len();
        let (mut raw, mut members) = (Vec::new(), Vec::new());
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            let at = self.out.len();
            let _ = serde_json::to_writer(&mut *self.out, &key);
            self.out.push(b':');
            map.next_value_seed(Show { out: self.out })?;
            members.push((raw.len()..raw.len() + key.len(), at..self.out.len()));
            raw.extend_from_slice(key.as_bytes());
        }
        let key = |r: &core::ops::Range<usize>| raw.get(r.clone()).unwrap_or_default();
        members.sort_by(|a, b| key(&a.0).cmp(key(&b.0)));
        let mut sorted = vec![b'{'];
        for (i, (k, text)) in members.iter().enumerate() {
            if members.get(i + 1).is_some_and(|(next, _)| key(next) == key(k)) {
                continue;
            }
            if sorted.len() > 1 {
                sorted.push(b',');
            }
            sorted.extend_from_slice(self.out.get(text.clone()).unwrap_or_default());
        }
        sorted.push(b'}');
        self.out.truncate(start);
        self.out.extend_from_slice(&sorted);
        Ok(())
    }
}

/// The field of an include element: `{"include": "KEY"}` stands for the entries of the list
/// under KEY (an extension of NGF's format; see the README's "Shared lists").
pub const INCLUDE: &str = "include";

/// The keys of a file and which of their lists have includes, from the [`survey`].
#[derive(Debug, Default)]
pub(crate) struct Keys {
    /// Every key of the file.
    all: HashSet<String>,
    /// Keys whose list has at least one include element.
    including: HashSet<String>,
    /// The survey read the whole file (no syntax error ended it): only then are includes
    /// checked against the keys (else the parse stops at that syntax error anyway).
    complete: bool,
}

impl Keys {
    /// Why `target`, included at `at`, cannot be included; `None` when it can.
    fn refuse(&self, target: &str, at: &str) -> Option<String> {
        if !self.complete {
            return None;
        }
        let name = key_shown(target);
        if !self.all.contains(target) {
            return Some(format!(
                "{at}: unknown key {name}: an include names a list of the same file"
            ));
        }
        if self.including.contains(target) {
            return Some(format!(
                "{at}: the list {} has includes of its own: includes are one level deep (a \
                 list of match entries only)",
                key_path(Some(target))
            ));
        }
        None
    }
}

pub(crate) fn is_match_type(t: &str) -> bool {
    t == "Exact" || t == "RegularExpression"
}

/// Whether a header (`sep` `:`) or param (`=`) string is written typed: `Exact` or
/// `RegularExpression` between its first two separators.
pub(crate) fn is_typed_string(s: &str, sep: char) -> bool {
    let mut it = s.splitn(3, sep);
    it.next();
    matches!((it.next(), it.next()), (Some(t), Some(_)) if is_match_type(t))
}

/// Whether any header or param string of the file is typed (contract section 3), found
/// without building JSON trees. Syntax errors count as "no": the real parse reports them.
#[cfg(test)]
pub(crate) fn file_is_typed<'de, R: serde_json::de::Read<'de>>(
    de: serde_json::Deserializer<R>,
) -> bool {
    survey(de, &|| 0, &|_| true).typed
}

/// What a first pass over a file finds: the syntax, and how much there is to compile (so the
/// compiled form's arrays are sized once, not grown by copying).
#[derive(Debug, Default)]
pub(crate) struct Survey {
    /// Some header or param string is typed.
    pub(crate) typed: bool,
    /// Items of the lists.
    pub(crate) entries: usize,
    /// Strings in `headers` and `params` arrays.
    pub(crate) conditions: usize,
    /// Keys of the file.
    pub(crate) keys: usize,
    /// Bytes of every string and key.
    pub(crate) bytes: usize,
    /// The keys, for the checks of includes.
    pub(crate) names: Keys,
    /// The bytes of each list's JSON (from the `:` after its key to its `]`, saturated at
    /// `u32::MAX`), in the file's order: what the compile estimates a list by before it parses
    /// it. Shorter than `keys` only if the memory for it was refused (those lists are then
    /// not compiled).
    pub(crate) lengths: Vec<u32>,
    /// The elements of each list (entries or includes; as long as `lengths`): what the compile
    /// estimates a list by besides its bytes.
    pub(crate) elements: Vec<u32>,
    /// The walk ended because the set of keys would not fit in what is left (see [`survey`]).
    pub(crate) out_of_memory: bool,
    /// ... and it was the system that refused the memory (an address-space limit), not the
    /// limit: set by the caller, whose `room` knows (or here, when a reservation failed).
    pub(crate) system_refused: bool,
    /// The longest key of the file, in bytes: the parse allocates the next key (and its copy
    /// for the duplicate check) before it can ask whether the list under it fits.
    pub(crate) longest_key: usize,
    /// Bytes taken before the top-level value was visited (its `{` included), or all the
    /// walk took when it never got to one: the second pass over a stream reads no further
    /// before its map begins ([`Fence`]).
    pub(crate) lead: u64,
    /// The file is one JSON string: refused here, with a short message at the parser's place
    /// (serde_json's own refusal copies the string into its message, unchecked, ~5x it).
    pub(crate) string_file: Option<ParseError>,
}

/// Bytes a hash set of `len` strings at `capacity` allocates to take one more: its new table
/// when it is full (buckets are at most ~2.3x the length after growing; 4x is an upper bound),
/// else nothing. Asked before the growth, which holds the old table and the new one at once.
pub(crate) fn set_growth(len: usize, capacity: usize) -> usize {
    table_growth(len, capacity, core::mem::size_of::<String>())
}

/// [`set_growth`] for a hash table of elements of `size` bytes.
pub(crate) fn table_growth(len: usize, capacity: usize, size: usize) -> usize {
    if len < capacity {
        return 0;
    }
    len.max(4).saturating_mul(4 * (size + 1))
}

/// Bytes a `Vec` (or `String`) of `len` elements of `size` bytes at `capacity` allocates to
/// take `additional` more: its new buffer (its own doubling, or what is asked), else nothing.
pub(crate) fn vec_growth(len: usize, capacity: usize, additional: usize, size: usize) -> usize {
    let need = len.saturating_add(additional);
    if need <= capacity {
        return 0;
    }
    need.max(capacity.saturating_mul(2)).max(4).saturating_mul(size)
}

/// A reader that counts the bytes taken from it into `pos`. serde_json's stream reader takes
/// them one at a time (and peeks at most one ahead), so between two of its calls `pos` moves by
/// the bytes it parsed: the survey reads each list's length off it.
///
/// It also follows the JSON's strings (serde_json's stream reader copies each string and key
/// into a scratch buffer, which grows by doubling with no checkpoint inside one string): when
/// a string reaches a power of two of bytes from 4 KiB on, `room(4 x its length)` is asked (the
/// scratch's next buffer while it holds the old one, and the key's copy), and the read fails
/// (`refused` set) when it says no.
pub(crate) struct Counted<'p, R> {
    pub(crate) inner: R,
    pub(crate) pos: &'p Cell<u64>,
    pub(crate) strings: Strings<'p>,
}

/// What [`Counted`] knows of the string being read.
pub(crate) struct Strings<'p> {
    /// Bytes of the string so far (`None` outside a string).
    pub(crate) len: Option<usize>,
    /// The byte before was a backslash inside a string.
    pub(crate) escaped: bool,
    pub(crate) room: &'p dyn Fn(usize) -> bool,
    pub(crate) refused: &'p Cell<bool>,
}

impl<'p> Strings<'p> {
    pub(crate) fn new(room: &'p dyn Fn(usize) -> bool, refused: &'p Cell<bool>) -> Self {
        Strings { len: None, escaped: false, room, refused }
    }

    /// Follows `bytes`; `false` when a string outgrew what is left.
    fn follow(&mut self, bytes: &[u8]) -> bool {
        for &c in bytes {
            match self.len {
                None => {
                    if c == b'"' {
                        self.len = Some(0);
                    }
                }
                Some(n) => {
                    if self.escaped {
                        self.escaped = false;
                    } else if c == b'\\' {
                        self.escaped = true;
                    } else if c == b'"' {
                        self.len = None;
                        continue;
                    }
                    let n = n + 1;
                    self.len = Some(n);
                    if n >= STRING_CHECKED_FROM && n.is_power_of_two() && !(self.room)(4 * n) {
                        self.refused.set(true);
                        return false;
                    }
                }
            }
        }
        true
    }
}

/// Strings shorter than this are not checked as they are read (their scratch is small).
const STRING_CHECKED_FROM: usize = 4096;

impl<R: std::io::Read> std::io::Read for Counted<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.pos.set(self.pos.get().saturating_add(n as u64));
        if !self.strings.follow(&buf[..n]) {
            return Err(std::io::Error::other("out of memory for a string in the first pass"));
        }
        Ok(n)
    }
}

/// How far the second pass over a file may read ([`Fenced`]): each list only as far as the
/// first pass found it long, so a file whose text changed between the two passes cannot make a
/// list's tree bigger than what it was estimated by before it was parsed.
#[derive(Debug)]
pub(crate) struct Fence {
    /// Bytes the deserializer has taken (kept by the [`Counted`] under the fence).
    pub(crate) pos: Cell<u64>,
    /// The read fails at this position (`u64::MAX`: between lists, no fence).
    pub(crate) end: Cell<u64>,
    /// A read failed at `end`: the text read is not the text the first pass read.
    pub(crate) passed: Cell<bool>,
    /// A string outgrew what is left (the [`Strings`] of the reader).
    pub(crate) string_refused: Cell<bool>,
    /// ... or some room was refused by the system (an address-space limit), not the limit.
    pub(crate) system_refused: Cell<bool>,
}

impl Fence {
    pub(crate) fn new() -> Self {
        Fence {
            pos: Cell::new(0),
            end: Cell::new(u64::MAX),
            passed: Cell::new(false),
            string_refused: Cell::new(false),
            system_refused: Cell::new(false),
        }
    }

    /// The next `len` bytes are the most the list about to be parsed may take.
    pub(crate) fn set(&self, len: u64) {
        self.end.set(self.pos.get().saturating_add(len));
    }

    /// Between two lists.
    pub(crate) fn lift(&self) {
        self.end.set(u64::MAX);
    }
}

/// The reader of both passes over a file: a [`Counted`] (its position, its strings followed)
/// that fails the read at the [`Fence`]'s end (the first pass sets none). serde_json reads the
/// same text in both passes at the same parser events (one byte at a time, one peeked), so a
/// list of an unchanged file takes exactly its first-pass length and never reaches its fence.
pub(crate) struct Fenced<'p, R> {
    pub(crate) inner: Counted<'p, R>,
    pub(crate) fence: &'p Fence,
}

impl<'p, R> Fenced<'p, R> {
    /// The reader of a pass over `inner`: its position and string refusals kept in `fence`,
    /// a string's growth asked of `room`.
    pub(crate) fn new(inner: R, fence: &'p Fence, room: &'p dyn Fn(usize) -> bool) -> Self {
        let strings = Strings::new(room, &fence.string_refused);
        Fenced { inner: Counted { inner, pos: &fence.pos, strings }, fence }
    }
}

impl<R: std::io::Read> std::io::Read for Fenced<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.fence.end.get().saturating_sub(self.fence.pos.get());
        if left == 0 && !buf.is_empty() {
            // At the end of what the first pass read: the end of the text (a text cut inside a
            // list, where the first pass stopped too), or more than it read.
            if self.inner.read(&mut [0])? == 0 {
                return Ok(0);
            }
            self.fence.passed.set(true);
            return Err(std::io::Error::other("the file changed while it was read"));
        }
        let n = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        self.inner.read(&mut buf[..n])
    }
}

/// The first pass: walks the file without building JSON trees. Syntax errors end it early
/// (the real parse reports them). `pos` tells how many bytes the deserializer has taken so
/// far (see [`Counted`]; a constant gives lengths of 0). `room(n)` is asked at every key of
/// the file, before the set of keys (what the first pass allocates: ~50 bytes a key beyond the
/// key itself) grows by up to `n` bytes: `false` ends the walk there, as a syntax error would
/// (the compile then reports the memory its scope ran out of). So the set never grows past
/// what is left, its rehash (which holds the old and the new table at once) included.
pub(crate) fn survey<'de, R: serde_json::de::Read<'de>>(
    mut de: serde_json::Deserializer<R>,
    pos: &dyn Fn() -> u64,
    room: &dyn Fn(usize) -> bool,
) -> Survey {
    let counts = Counts::new(pos, room);
    let walked = Detect { depth: 0, sep: None, counts: &counts }.deserialize(&mut de);
    let lead = counts.lead.get().unwrap_or_else(pos);
    let out_of_memory = counts.out_of_memory.get();
    let complete = walked.is_ok() && de.end().is_ok();
    let (typed, string_file) = match walked {
        Ok(typed) => (typed, None),
        Err(e) => (false, counts.string_file.get().then(|| ParseError::from(e))),
    };
    let mut names = counts.keys_seen.into_inner();
    names.complete = complete;
    Survey {
        typed,
        names,
        entries: counts.entries.get(),
        conditions: counts.conditions.get(),
        keys: counts.keys.get(),
        bytes: counts.bytes.get(),
        lengths: counts.lengths.into_inner(),
        elements: counts.elements.into_inner(),
        out_of_memory,
        system_refused: counts.system_refused.get(),
        longest_key: counts.longest_key.get(),
        lead,
        string_file,
    }
}

struct Counts<'p> {
    entries: Cell<usize>,
    conditions: Cell<usize>,
    keys: Cell<usize>,
    bytes: Cell<usize>,
    keys_seen: core::cell::RefCell<Keys>,
    /// The key whose list is being walked.
    current: core::cell::RefCell<String>,
    /// See [`Survey::lengths`].
    lengths: core::cell::RefCell<Vec<u32>>,
    /// See [`Survey::elements`].
    elements: core::cell::RefCell<Vec<u32>>,
    pos: &'p dyn Fn() -> u64,
    room: &'p dyn Fn(usize) -> bool,
    out_of_memory: Cell<bool>,
    system_refused: Cell<bool>,
    longest_key: Cell<usize>,
    /// See [`Survey::lead`].
    lead: Cell<Option<u64>>,
    /// The top-level value is a string (refused, see [`Survey::string_file`]).
    string_file: Cell<bool>,
}

impl<'p> Counts<'p> {
    fn new(pos: &'p dyn Fn() -> u64, room: &'p dyn Fn(usize) -> bool) -> Self {
        Counts {
            entries: Cell::new(0),
            conditions: Cell::new(0),
            keys: Cell::new(0),
            bytes: Cell::new(0),
            keys_seen: Default::default(),
            current: Default::default(),
            lengths: Default::default(),
            elements: Default::default(),
            pos,
            room,
            out_of_memory: Cell::new(false),
            system_refused: Cell::new(false),
            longest_key: Cell::new(0),
            lead: Cell::new(None),
            string_file: Cell::new(false),
        }
    }
}

/// Walks any JSON; at depth 3 (file -> list -> entry -> field), the strings of a `headers` or
/// `params` array are tested.
struct Detect<'c, 'p> {
    depth: u8,
    /// The separator of the field being walked (`:` for headers, `=` for params).
    sep: Option<char>,
    counts: &'c Counts<'p>,
}

impl Detect<'_, '_> {
    /// At the top-level value: where it was found (see [`Survey::lead`]).
    fn top(&self) {
        if self.depth == 0 {
            self.counts.lead.set(Some((self.counts.pos)()));
        }
    }
}

fn add(c: &Cell<usize>, n: usize) {
    c.set(c.get().saturating_add(n));
}

impl<'de> DeserializeSeed<'de> for Detect<'_, '_> {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Detect<'_, '_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        self.top();
        // In an entry, a repeated field counts as its last occurrence (as in the JSON tree).
        let (mut headers, mut params, mut found) = (false, false, false);
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            add(&self.counts.bytes, key.len());
            if self.depth == 0 {
                let mut seen = self.counts.keys_seen.borrow_mut();
                let all = &mut seen.all;
                // The key's copy, and the set's new table when it is full.
                let grow = set_growth(all.len(), all.capacity()).saturating_add(key.len());
                let fits = (self.counts.room)(grow);
                if !fits || all.try_reserve(1).is_err() {
                    self.counts.out_of_memory.set(true);
                    self.counts.system_refused.set(fits);
                    return Err(de::Error::custom("out of memory in the first pass"));
                }
                all.insert(key.to_string());
                drop(seen);
                self.counts.longest_key.set(self.counts.longest_key.get().max(key.len()));
                add(&self.counts.keys, 1);
                *self.counts.current.borrow_mut() = key.to_string();
            }
            if self.depth == 2 && key == INCLUDE {
                let current = self.counts.current.borrow().clone();
                self.counts.keys_seen.borrow_mut().including.insert(current);
            }
            let sep = match (self.depth, &*key) {
                (2, "headers") => Some(':'),
                (2, "params") => Some('='),
                _ => None,
            };
            let next = Detect { depth: self.depth.saturating_add(1), sep, counts: self.counts };
            let (start, first) = ((self.counts.pos)(), self.counts.entries.get());
            let f = map.next_value_seed(next);
            if self.depth == 0 {
                // Recorded before a syntax error inside the list ends the walk, too: the real
                // parse stops at the same byte, so its tree of this list is no bigger than
                // what was read up to the error, and it can report the error's position.
                let len = (self.counts.pos)().saturating_sub(start);
                let mut lengths = self.counts.lengths.borrow_mut();
                let mut elements = self.counts.elements.borrow_mut();
                let n = self.counts.entries.get().saturating_sub(first);
                // Fallible: without the room, this list and those after it have no length
                // (and are refused unparsed).
                if lengths.len() + 1 == self.counts.keys.get()
                    && lengths.try_reserve(1).is_ok()
                    && elements.try_reserve(1).is_ok()
                {
                    lengths.push(u32::try_from(len).unwrap_or(u32::MAX));
                    elements.push(u32::try_from(n).unwrap_or(u32::MAX));
                }
            }
            let f = f?;
            match sep {
                Some(':') => headers = f,
                Some(_) => params = f,
                None => found |= f,
            }
        }
        Ok(found || headers || params)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        self.top();
        let mut found = false;
        let depth = self.depth.saturating_add(1);
        let counts = self.counts;
        while let Some(f) = seq.next_element_seed(Detect { depth, sep: self.sep, counts })? {
            match (self.depth, self.sep) {
                (1, _) => add(&counts.entries, 1),
                (3, Some(_)) => add(&counts.conditions, 1),
                _ => {}
            }
            found |= f;
        }
        Ok(found)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<bool, E> {
        if self.depth == 0 {
            self.top();
            self.counts.string_file.set(true);
            return Err(E::invalid_type(de::Unexpected::Other("string"), &FILE_EXPECTED));
        }
        add(&self.counts.bytes, v.len());
        Ok(self.depth == 4 && self.sep.is_some_and(|sep| is_typed_string(v, sep)))
    }

    fn visit_bool<E>(self, _: bool) -> Result<bool, E> {
        self.top();
        Ok(false)
    }
    fn visit_i64<E>(self, _: i64) -> Result<bool, E> {
        self.top();
        Ok(false)
    }
    fn visit_u64<E>(self, _: u64) -> Result<bool, E> {
        self.top();
        Ok(false)
    }
    fn visit_f64<E>(self, _: f64) -> Result<bool, E> {
        self.top();
        Ok(false)
    }
    fn visit_unit<E>(self) -> Result<bool, E> {
        self.top();
        Ok(false)
    }
}

struct ListSeed<'a> {
    key: Option<&'a str>,
    /// The file's keys (`None`: a single list, where includes are refused).
    keys: Option<&'a Keys>,
    /// Each match entry, as it is read (see [`Lists::entry`]).
    entry: &'a mut dyn FnMut(Option<&str>, usize, RawEntry) -> bool,
}

impl<'de> DeserializeSeed<'de> for ListSeed<'_> {
    type Value = Parsed;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Parsed, D::Error> {
        d.deserialize_any(self)
    }
}

impl ListSeed<'_> {
    /// The key of an include element, or why it is not one that can be (`Ok(None)`: `v` is a
    /// match entry).
    fn include(&self, v: &RawEntry, i: usize) -> Result<Option<String>, String> {
        let RawEntry::Object(fields) = v else { return Ok(None) };
        let Some(target) = &fields.include else { return Ok(None) };
        let at = format!("{}[{i}]", key_path(self.key));
        let Some(keys) = self.keys else {
            return Err(format!(
                "{at}: an include is only for the lists of an http_matches_load file (it names \
                 another list of that file)"
            ));
        };
        if fields.others {
            return Err(format!(
                "{at}: an include element has one field, \"{INCLUDE}\", and no other"
            ));
        }
        let Got::Str(target) = target else {
            return Err(format!(
                "{at}.{INCLUDE} must be a string (a key of this file), not {target}"
            ));
        };
        match keys.refuse(target, &format!("{at}.{INCLUDE}")) {
            Some(why) => Err(why),
            None => Ok(Some(target.to_owned())),
        }
    }
}

impl<'de> Visitor<'de> for ListSeed<'_> {
    type Value = Parsed;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an array of match entries at {}", key_path(self.key))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Parsed, A::Error> {
        let mut entries = 0;
        let mut includes: Vec<String> = Vec::new();
        while let Some(v) = seq.next_element_seed(EntrySeed)? {
            let i = entries + includes.len();
            match self.include(&v, i).map_err(de::Error::custom)? {
                Some(target) => includes.push(target),
                None if includes.is_empty() => {
                    if !(self.entry)(self.key, i, v) {
                        return Err(de::Error::custom("out of memory"));
                    }
                    entries += 1;
                }
                None => entries += 1,
            }
            if entries > 0 && !includes.is_empty() {
                return Err(de::Error::custom(format_args!(
                    "{}[{i}]: a list with includes holds only includes, no match entries",
                    key_path(self.key)
                )));
            }
        }
        if entries == 0 && includes.is_empty() {
            return Err(de::Error::custom(format_args!(
                "the match list at {} is empty",
                key_path(self.key)
            )));
        }
        Ok(if includes.is_empty() { Parsed::Entries(entries) } else { Parsed::Includes(includes) })
    }
}

/// What a file is expected to be, in messages.
const FILE_EXPECTED: &str = "a JSON object of match key -> match list at $";

struct FileVisitor<'a> {
    keys: &'a Keys,
    room: &'a dyn Fn(usize) -> bool,
    fence: Option<&'a Fence>,
    lists: &'a mut dyn Lists,
}

impl<'de> Visitor<'de> for FileVisitor<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(FILE_EXPECTED)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        // The map began where it did in the first pass: the fence before it is lifted.
        if let Some(fence) = self.fence {
            fence.lift();
        }
        // The keys read, for duplicates: sized for the first pass's count, and each growth
        // asked of `room` before it is made.
        let mut seen: HashSet<String> = HashSet::new();
        let no_room = || de::Error::custom("out of memory for the keys of the file");
        let expected = self.keys.all.len();
        if !(self.room)(set_growth(expected, 0)) || seen.try_reserve(expected).is_err() {
            return Err(no_room());
        }
        while let Some(key) = map.next_key::<String>()? {
            let grow = set_growth(seen.len(), seen.capacity()).saturating_add(key.len());
            if !(self.room)(grow) || seen.try_reserve(1).is_err() {
                return Err(no_room());
            }
            if !seen.insert(key.clone()) {
                return Err(de::Error::custom(format_args!(
                    "duplicate match key at {}",
                    key_path(Some(&key))
                )));
            }
            let Some(len) = self.lists.before(&key) else {
                return Err(de::Error::custom("the parse was stopped before this list"));
            };
            if let Some(fence) = self.fence {
                fence.set(len);
            }
            let lists = &mut *self.lists;
            let entry = &mut |key: Option<&str>, i, e| lists.entry(key.unwrap_or_default(), i, e);
            let list =
                map.next_value_seed(ListSeed { key: Some(&key), keys: Some(self.keys), entry });
            // Lifted once the list is read, or found wrong (serde_json reads on to the map's
            // end after an error), unless it was the fence that stopped it: the read then
            // stays stopped.
            if let Some(fence) = self.fence.filter(|f| !f.passed.get()) {
                fence.lift();
            }
            let list = list?;
            self.lists.list(key, list);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_error_has_position() {
        let e = parse_list(b"[\n {\"any\": true},\n]", &mut |_, _, _| true).unwrap_err();
        assert_eq!((e.line(), e.column()), (3, 1));
        assert_eq!(e.message(), "trailing comma");
    }

    #[test]
    fn list_must_be_an_array() {
        let e = parse_list(br#"{"a": 1}"#, &mut |_, _, _| true).unwrap_err();
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

    /// Any JSON value, written with what shows differently: keys repeated and out of order,
    /// escapes, numbers of every kind.
    fn any_json() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let leaf = prop::sample::select(vec![
            "null",
            "true",
            "false",
            "0",
            "-0",
            "-0.0",
            "1.50",
            "1e3",
            "-12",
            "0.1e-2",
            "18446744073709551615",
            "-9223372036854775808",
            "18446744073709551616",
            r#""""#,
            r#""a\u0000\"\\\/b""#,
            r#""\ud83d\ude00 é""#,
            r#""\t\u001f""#,
        ])
        .prop_map(str::to_owned);
        let key = prop::sample::select(vec![
            r#""b""#, r#""a""#, r#""\n""#, r#""A""#, r#""é""#, r#""a ""#,
        ]);
        leaf.prop_recursive(4, 32, 5, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5)
                    .prop_map(|v| format!("[{}]", v.join(","))),
                prop::collection::vec((key.clone(), inner), 0..5).prop_map(|v| {
                    let m: Vec<String> = v.into_iter().map(|(k, v)| format!("{k}:{v}")).collect();
                    format!("{{{}}}", m.join(" , "))
                }),
            ]
        })
    }

    /// The one entry of `[json]`.
    fn one(json: &str) -> RawEntry {
        let mut got = None;
        parse_list(format!("[{json}]").as_bytes(), &mut |_, _, e| got.replace(e).is_none())
            .unwrap();
        got.unwrap()
    }

    proptest::proptest! {
        /// A value the compile does not take is shown as `serde_json::Value` shows it (the
        /// warnings' text of a tree), though no tree of it is built.
        #[test]
        fn values_are_shown_as_a_tree_shows_them(v in any_json()) {
            let want = serde_json::from_str::<Value>(&v).unwrap().to_string();
            match one(&v) {
                RawEntry::Other(shown) => proptest::prop_assert_eq!(&shown, &want),
                RawEntry::Object(_) => proptest::prop_assert!(v.starts_with('{'), "{}", v),
            }
            let RawEntry::Object(f) = one(&format!(r#"{{"any":{v},"x":{v}}}"#)) else { panic!() };
            proptest::prop_assert_eq!(f.any.to_string(), want.clone());
            let RawEntry::Object(f) = one(&format!(r#"{{"headers":["a",{v},{v}]}}"#)) else {
                panic!()
            };
            if !v.starts_with('"') {
                proptest::prop_assert_eq!(f.headers, Got::BadItem(want));
            }
        }
    }

    #[test]
    fn trailing_garbage_is_an_error() {
        assert!(parse_list(b"[{}] x", &mut |_, _, _| true).is_err());
        assert!(parse_file(b"{} {}").is_err());
    }
}
