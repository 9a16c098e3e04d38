//! The fast path for JSON input (`kubectl get -A -o json`, a `List`): read by `serde_json`
//! instead of libyaml's parser, with [`yaml`]'s result, or not at all.
//!
//! A file whose first non-blank byte (in the first buffer read) is `{` or `[` is read as JSON
//! first, whatever its name: the content decides, as a `.json` file may hold YAML and a
//! `.yaml` file JSON, and the fallback makes a wrong guess cost only time. The JSON path
//! hands over the same [`Part`]s as [`yaml::read_from`] (the elements of a top-level `items`
//! one by one as each is read, never the List as one tree), or it gives up: on any doubt
//! that YAML could read the text otherwise, the sink is told (`None`: drop what it has
//! staged) and the file is read again by the YAML path from its start, whose values,
//! errors and messages are then the result. Nothing the JSON path reads is ever an error.
//! Input that cannot be read again (a pipe: `-f /dev/stdin`) takes the YAML path alone.
//!
//! Doubts, each where YAML reads valid JSON otherwise or refuses it: invalid JSON (YAML may
//! read it as flow YAML), text after the value; a byte that is not printable ASCII, tabs
//! included (YAML refuses some characters, folds others as line breaks; a tab where a line
//! starts is refused); a `\u` escape of a surrogate (YAML refuses each half); a key more
//! than [`KEY_SPAN`] bytes from its `"` to its `:`, or a line break between them (libyaml's
//! simple keys end there); a number that is not an integer of i64 or u64 (`-0`, fractions,
//! exponents: resolved by other rules); a key given twice (YAML refuses it); nesting within
//! one level of [`MAX_DEPTH`]. Whatever is not a doubt reads alike (checked by
//! tests/json_input.rs and the `json` fuzz target against the YAML path).
//!
//! The work is counted as on the YAML path: no parser events, one node per value and key.

use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};

use serde::de::{DeserializeSeed, Deserializer, Error, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value, map::Entry};

use super::yaml::{self, INPUT_BUFFER, MAX_DEPTH, Part, ReadError, Work, is_list_kind};

/// The most bytes from a key's opening `"` to its `:` (libyaml: a simple key is 1,024
/// characters at most, on one line).
pub const KEY_SPAN: u64 = 1000;

/// Reads `input` (`bytes` long) as [`yaml::read_from`] does, through the JSON path when it
/// opens a JSON object or array and nothing in it is a doubt. `sink` gets `Some` of each
/// part, and `None` when the JSON path gives up: what it handed over is to be dropped.
pub fn read_from<R: BufRead + Seek>(
    mut input: R,
    bytes: u64,
    mut sink: impl FnMut(Option<Part>),
) -> Result<Work, ReadError> {
    // Only input that can be read again (a file, a text; not a pipe): a doubt reads it again
    // from the start.
    if input.stream_position().is_ok() && opens_json(&mut input) {
        if let Some(work) = json(&mut input, &mut |p| sink(Some(p))) {
            return Ok(work);
        }
        sink(None);
        input.seek(SeekFrom::Start(0)).map_err(|e| ReadError {
            document: None,
            message: e.to_string(),
            work: Work::default(),
        })?;
    }
    yaml::read_from(input, bytes, |p| sink(Some(p)))
}

/// [`read_from`] a text.
pub fn read(text: &str, sink: impl FnMut(Option<Part>)) -> Result<Work, ReadError> {
    let input = BufReader::with_capacity(INPUT_BUFFER, std::io::Cursor::new(text.as_bytes()));
    read_from(input, text.len() as u64, sink)
}

/// Whether the first byte of `input` that is not a space or a line break opens a JSON
/// object or array (in the first buffer; nothing is consumed).
fn opens_json(input: &mut impl BufRead) -> bool {
    let first = input
        .fill_buf()
        .ok()
        .and_then(|b| b.iter().copied().find(|c| !matches!(c, b' ' | b'\n' | b'\r')));
    matches!(first, Some(b'{' | b'['))
}

/// The JSON path: `None` on any doubt (having maybe handed over some items).
fn json<R: BufRead>(input: R, sink: &mut dyn FnMut(Part)) -> Option<Work> {
    let scan = Scan { input, at: 0, lex: Lex::Out, key_at: 0, broken: false, space: false };
    let mut de =
        serde_json::Deserializer::from_reader(BufReader::with_capacity(INPUT_BUFFER, scan));
    let mut build = Build { sink, nodes: 0, depth: 0, streamed: None };
    let value = Node { build: &mut build, items: false }.deserialize(&mut de).ok()?;
    de.end().ok()?;
    let streamed = build.streamed;
    (build.sink)(Part::Document { document: 0, value, streamed });
    Some(Work { nodes: build.nodes, ..Work::default() })
}

/// Where the lexer is: outside strings, in one, after its `\`, in a `\u` (hex digits still
/// to read, the value so far).
#[derive(Clone, Copy)]
enum Lex {
    Out,
    In,
    Escape,
    Hex(u8, u32),
}

/// The input as read, checked for the doubts seen in bytes (an error: a doubt), each run of
/// white space outside strings given to `serde_json` as one space (kubectl indents by 4 per
/// level: fewer bytes for its byte-at-a-time reader; JSON reads any such run as one space).
/// Valid JSON is lexed exactly; what is not makes `serde_json` fail anyway.
struct Scan<R> {
    input: R,
    /// Offset of the next byte.
    at: u64,
    lex: Lex,
    /// Offset of the last string's opening `"`, and whether a line break came since.
    key_at: u64,
    broken: bool,
    /// Whether the last byte given out was white space outside strings.
    space: bool,
}

impl<R: BufRead> Read for Scan<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            let n = self.input.read(buf)?;
            if n == 0 {
                return Ok(0);
            }
            let kept = self.scan(&mut buf[..n]);
            self.at += n as u64;
            match kept {
                None => return Err(std::io::Error::other("not read as JSON")),
                // All white space after white space: read on (0 would be the end).
                Some(0) => {}
                Some(kept) => return Ok(kept),
            }
        }
    }
}

impl<R> Scan<R> {
    /// Checks `buf` (read from `self.at` on) and collapses its white space in place: how many
    /// bytes are kept, `None` on a doubt. One pass, byte by byte (no copy per run), white
    /// space outside strings (most of a List's bytes: its indentation) 8 bytes at a time.
    fn scan(&mut self, buf: &mut [u8]) -> Option<usize> {
        let (mut r, mut w) = (0, 0);
        while let Some(&b) = buf.get(r) {
            if matches!(self.lex, Lex::Out) && matches!(b, b' ' | b'\n' | b'\r') {
                self.broken |= b != b' ';
                r += 1 + spaces(&buf[r + 1..]);
                if !self.space {
                    buf[w] = b' ';
                    w += 1;
                }
                self.space = true;
                continue;
            }
            if !matches!(b, b' '..=b'~' | b'\n' | b'\r') || !self.byte(b, self.at + r as u64) {
                return None;
            }
            buf[w] = b;
            (r, w, self.space) = (r + 1, w + 1, false);
            if matches!(self.lex, Lex::In) {
                // A string's bytes up to its `"` or a `\`, in a loop of their own.
                while let Some(&b @ (b' '..=b'!' | b'#'..=b'[' | b']'..=b'~')) = buf.get(r) {
                    buf[w] = b;
                    (r, w) = (r + 1, w + 1);
                }
            }
        }
        Some(w)
    }

    /// One byte that may change the lexer's state (not white space outside strings), at offset
    /// `at`: false on a doubt.
    fn byte(&mut self, b: u8, at: u64) -> bool {
        self.lex = match (self.lex, b) {
            (Lex::Out, b'"') => {
                (self.key_at, self.broken) = (at, false);
                Lex::In
            }
            (Lex::Out, b':') if self.broken || at - self.key_at > KEY_SPAN => return false,
            (Lex::In, b'"') => Lex::Out,
            (Lex::In, b'\\') => Lex::Escape,
            (Lex::Escape, b'u') => Lex::Hex(4, 0),
            (Lex::Escape, _) => Lex::In,
            (Lex::Hex(n, v), _) => {
                let v = v << 4 | (b as char).to_digit(16).unwrap_or(0);
                if n > 1 {
                    Lex::Hex(n - 1, v)
                } else if (0xd800..0xe000).contains(&v) {
                    return false;
                } else {
                    Lex::In
                }
            }
            (lex, _) => lex,
        };
        true
    }
}

/// How many spaces `s` starts with, 8 at a time (a List's indentation is most of its bytes).
fn spaces(s: &[u8]) -> usize {
    let eights = s.chunks_exact(8).take_while(|c| *c == b"        ").count() * 8;
    eights + s[eights..].iter().take_while(|&&b| b == b' ').count()
}

/// What the values are built with: the sink for items, the work, the open collections.
struct Build<'s> {
    sink: &'s mut dyn FnMut(Part),
    nodes: u64,
    depth: usize,
    /// How many items were handed over, once the top-level `items` is read.
    streamed: Option<usize>,
}

/// One value; `items`: the top-level `items` of a document that may be a List, whose
/// elements are handed over one by one when it is a sequence.
struct Node<'b, 's> {
    build: &'b mut Build<'s>,
    items: bool,
}

impl<'de> DeserializeSeed<'de> for Node<'_, '_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        self.build.nodes += 1;
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_, '_> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E: Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_bool<E: Error>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }
    fn visit_u64<E: Error>(self, n: u64) -> Result<Value, E> {
        Ok(n.into())
    }
    fn visit_i64<E: Error>(self, n: i64) -> Result<Value, E> {
        Ok(n.into())
    }
    fn visit_f64<E: Error>(self, _: f64) -> Result<Value, E> {
        Err(E::custom("a number YAML resolves by other rules"))
    }
    fn visit_str<E: Error>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_owned()))
    }
    fn visit_string<E: Error>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let b = self.build.open::<A::Error>()?;
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(Node { build: b, items: false })? {
            if self.items {
                let index = b.streamed.unwrap_or(0);
                b.streamed = Some(index + 1);
                (b.sink)(Part::Item { document: 0, index, value: v });
            } else {
                out.push(v);
            }
        }
        if self.items {
            b.streamed = Some(b.streamed.unwrap_or(0));
        }
        b.depth -= 1;
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let b = self.build.open::<A::Error>()?;
        let root = b.depth == 1;
        let mut m = Map::new();
        while let Some(k) = map.next_key::<String>()? {
            b.nodes += 1;
            let items = root
                && k == "items"
                && m.get("kind").is_none_or(|k| k.as_str().is_some_and(is_list_kind));
            let v = map.next_value_seed(Node { build: b, items })?;
            match m.entry(k) {
                Entry::Vacant(e) => e.insert(v),
                Entry::Occupied(_) => return Err(Error::custom("a key given twice")),
            };
        }
        b.depth -= 1;
        Ok(Value::Object(m))
    }
}

impl Build<'_> {
    /// A collection opens: a doubt within one level of [`MAX_DEPTH`].
    fn open<E: Error>(&mut self) -> Result<&mut Self, E> {
        if self.depth + 1 >= MAX_DEPTH {
            return Err(E::custom("nesting near the YAML path's limit"));
        }
        self.depth += 1;
        Ok(self)
    }
}
