//! JSON -> raw entries, with positions for everything that makes a source unusable.
//!
//! The shape (an array of entries, or an object of key -> array) is checked while
//! deserializing, so serde_json attaches the line and column of the offending token to the
//! error. Entries themselves are kept as `serde_json::Value`: a malformed entry is not a parse
//! error but an entry that fails when reached (see `compile`).

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

/// One list's entries, still as JSON values.
pub(crate) type RawList = Vec<Value>;

pub(crate) fn parse_list(json: &[u8]) -> Result<RawList, ParseError> {
    let mut de = serde_json::Deserializer::from_slice(json);
    let list = ListSeed { key: None, keys: None }.deserialize(&mut de)?;
    de.end()?;
    match list {
        Parsed::Entries(list) => Ok(list),
        // The seed refuses includes without the keys of a file.
        Parsed::Includes(_) => Err(ParseError::io(&std::io::Error::other("include in a list"))),
    }
}

/// Parses a whole file, handing each (key, list) to `each` as soon as it is read, so that only
/// one list's JSON tree is alive at a time (a file of 100,000 entries would otherwise hold
/// ~160 MB of trees at once, and leave the heap that fragmented).
///
/// `keys` (from the [`survey`] of the same file) is what an include is checked against: the
/// position of a bad include is then the parser's own.
///
/// `before` is asked before each list is parsed, with its key: `None` stops the parse there
/// (an error, which the caller replaces by its own reason), before the list's tree is built;
/// else the most bytes the list may take, which `fence` (the reader's, for a stream) holds
/// the read to while the list is parsed.
///
/// `room(n)` is asked before the set of keys read (for duplicates) grows by up to `n` bytes:
/// `false` stops the parse (an error; the caller reports its memory).
pub(crate) fn parse_file_with<'de, R: serde_json::de::Read<'de>>(
    mut de: serde_json::Deserializer<R>,
    keys: &Keys,
    room: &dyn Fn(usize) -> bool,
    fence: Option<&Fence>,
    before: &mut dyn FnMut(&str) -> Option<u64>,
    each: &mut dyn FnMut(String, Parsed),
) -> Result<(), ParseError> {
    (&mut de).deserialize_map(FileVisitor { keys, room, fence, before, each })?;
    de.end()?;
    Ok(())
}

/// One list of a file as parsed: match entries, or includes of other lists (never both).
#[derive(Debug)]
pub(crate) enum Parsed {
    /// Match entries, still as JSON values.
    Entries(RawList),
    /// `{"include": KEY}` elements: the keys, in order. Each is a key of the same file whose
    /// list has no includes of its own (checked while parsing, when the survey was complete).
    Includes(Vec<String>),
}

#[cfg(test)]
pub(crate) fn parse_file(json: &[u8]) -> Result<Vec<(String, RawList)>, ParseError> {
    let mut out = Vec::new();
    let keys = survey(serde_json::Deserializer::from_slice(json), &|| 0, &|_| true).names;
    let de = serde_json::Deserializer::from_slice(json);
    parse_file_with(de, &keys, &|_| true, None, &mut |_| Some(u64::MAX), &mut |k, l| match l {
        Parsed::Entries(l) => out.push((k, l)),
        Parsed::Includes(i) => {
            out.push((k, i.into_iter().map(|k| serde_json::json!({ INCLUDE: k })).collect()))
        }
    })?;
    Ok(out)
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
    let counts = Counts {
        entries: Cell::new(0),
        conditions: Cell::new(0),
        keys: Cell::new(0),
        bytes: Cell::new(0),
        keys_seen: Default::default(),
        current: Default::default(),
        lengths: Default::default(),
        pos,
        room,
        out_of_memory: Cell::new(false),
        system_refused: Cell::new(false),
        longest_key: Cell::new(0),
        lead: Cell::new(None),
        string_file: Cell::new(false),
    };
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
            let start = (self.counts.pos)();
            let f = map.next_value_seed(next);
            if self.depth == 0 {
                // Recorded before a syntax error inside the list ends the walk, too: the real
                // parse stops at the same byte, so its tree of this list is no bigger than
                // what was read up to the error, and it can report the error's position.
                let len = (self.counts.pos)().saturating_sub(start);
                let mut lengths = self.counts.lengths.borrow_mut();
                // Fallible: without the room, this list and those after it have no length
                // (and are refused unparsed).
                if lengths.len() + 1 == self.counts.keys.get() && lengths.try_reserve(1).is_ok() {
                    lengths.push(u32::try_from(len).unwrap_or(u32::MAX));
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
}

impl<'de> DeserializeSeed<'de> for ListSeed<'_> {
    type Value = Parsed;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Parsed, D::Error> {
        d.deserialize_any(ListVisitor { key: self.key, keys: self.keys })
    }
}

struct ListVisitor<'a> {
    key: Option<&'a str>,
    keys: Option<&'a Keys>,
}

impl ListVisitor<'_> {
    /// The key of an include element, or why it is not one that can be (`Ok(None)`: `v` is a
    /// match entry).
    fn include(&self, v: &Value, i: usize) -> Result<Option<String>, String> {
        let Some(target) = v.as_object().and_then(|o| o.get(INCLUDE).map(|t| (o, t))) else {
            return Ok(None);
        };
        let at = format!("{}[{i}]", key_path(self.key));
        let Some(keys) = self.keys else {
            return Err(format!(
                "{at}: an include is only for the lists of an http_matches_load file (it names \
                 another list of that file)"
            ));
        };
        let (obj, target) = target;
        if obj.len() != 1 {
            return Err(format!(
                "{at}: an include element has one field, \"{INCLUDE}\", and no other"
            ));
        }
        let Some(target) = target.as_str() else {
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

impl<'de> Visitor<'de> for ListVisitor<'_> {
    type Value = Parsed;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an array of match entries at {}", key_path(self.key))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Parsed, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(4));
        let mut includes: Vec<String> = Vec::new();
        while let Some(v) = seq.next_element::<Value>()? {
            let i = out.len() + includes.len();
            match self.include(&v, i).map_err(de::Error::custom)? {
                Some(target) => includes.push(target),
                None => out.push(v),
            }
            if !(out.is_empty() || includes.is_empty()) {
                return Err(de::Error::custom(format_args!(
                    "{}[{i}]: a list with includes holds only includes, no match entries",
                    key_path(self.key)
                )));
            }
        }
        if out.is_empty() && includes.is_empty() {
            return Err(de::Error::custom(format_args!(
                "the match list at {} is empty",
                key_path(self.key)
            )));
        }
        Ok(if includes.is_empty() { Parsed::Entries(out) } else { Parsed::Includes(includes) })
    }
}

/// What a file is expected to be, in messages.
const FILE_EXPECTED: &str = "a JSON object of match key -> match list at $";

struct FileVisitor<'a> {
    keys: &'a Keys,
    room: &'a dyn Fn(usize) -> bool,
    fence: Option<&'a Fence>,
    before: &'a mut dyn FnMut(&str) -> Option<u64>,
    each: &'a mut dyn FnMut(String, Parsed),
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
            let Some(len) = (self.before)(&key) else {
                return Err(de::Error::custom("the parse was stopped before this list"));
            };
            if let Some(fence) = self.fence {
                fence.set(len);
            }
            let list = map.next_value_seed(ListSeed { key: Some(&key), keys: Some(self.keys) });
            // Lifted once the list is read, or found wrong (serde_json reads on to the map's
            // end after an error), unless it was the fence that stopped it: the read then
            // stays stopped.
            if let Some(fence) = self.fence.filter(|f| !f.passed.get()) {
                fence.lift();
            }
            let list = list?;
            (self.each)(key, list);
        }
        Ok(())
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
