//! YAML documents (JSON is YAML) into `serde_json` values, built from the parser's own events,
//! one document at a time, with the nesting depth and the work of aliases counted as the
//! events arrive.
//!
//! The parser is libyaml's, ported to safe Rust (`libyaml-safer`): the scanner serde_yaml_ng
//! runs, so the same documents are accepted with the same scalars. Its scanner looks ahead at
//! most 1,024 characters (a possible simple key) before the next event, and its work per token
//! grows with the open flow levels; refusing the first node deeper than [`MAX_DEPTH`] as its
//! event arrives therefore bounds the work per byte, whatever the quoting and styles (no
//! scanner of our own guesses where a scalar ends).
//!
//! Scalars are resolved as serde_yaml_ng resolves them (YAML 1.2 core schema: `null`, `~` and
//! empty are null, `true`/`false`, integers in 10, 16 (`0x`), 8 (`0o`) and 2 (`0b`), floats),
//! mapping keys are the scalar's text, and a key given twice in a mapping is refused.
//!
//! The elements of a document's top-level `items` sequence (a `kind: List`, as
//! `kubectl get -o json` writes it) are handed over one by one as each is complete
//! ([`Part::Item`]), so that a List is never held as one tree.

use std::collections::HashMap;

use libyaml_safer::{EventData, Mark, Parser, ScalarStyle};
use serde_json::map::Entry;
use serde_json::{Map, Value};

/// The deepest nesting accepted, in collections (block and flow alike, aliases expanded).
/// Kubernetes objects nest about 20 levels (`managedFields` included).
pub const MAX_DEPTH: usize = 64;

/// The bytes the parser decodes at a time: its reader decodes all that `fill_buf` gives into
/// chars (4 bytes each), which for a whole slice would be 4 times the file at once.
pub const INPUT_BUFFER: usize = 64 << 10;

/// What [`read`] hands over, in input order.
#[derive(Debug, PartialEq)]
pub enum Part {
    /// Element `index` of the top-level `items` sequence of document `document` (0-based),
    /// as soon as it is complete. Only when the document is a mapping whose `kind`, if it came
    /// before `items`, is a List kind ([`is_list_kind`]).
    Item { document: usize, index: usize, value: Value },
    /// Document `document`, complete. When its items were handed over as [`Part::Item`]s,
    /// `items` is an empty sequence in `value` and `streamed` is how many there were.
    Document { document: usize, value: Value, streamed: Option<usize> },
}

/// `List`, or the list kind of one resource (`HTTPRouteList`, as the API server names it).
pub fn is_list_kind(kind: &str) -> bool {
    kind.ends_with("List")
}

/// Why a file could not be read: in which document (`None`: before the first), and what.
#[derive(Debug, PartialEq)]
pub struct ReadError {
    pub document: Option<usize>,
    pub message: String,
    /// The work done before the error.
    pub work: Work,
}

/// The work done, counted: parser events, value nodes built (aliases expanded included),
/// nodes copied for aliases and the bytes of their strings (keys and scalars). Each is at
/// most a constant times the input's bytes.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Work {
    pub events: u64,
    pub nodes: u64,
    pub alias_nodes: u64,
    pub alias_bytes: u64,
}

/// An open collection.
enum Frame {
    Seq(Vec<Value>, Option<String>),
    /// The key waiting for its value, if read.
    Map(Map<String, Value>, Option<String>, Option<String>),
    /// The top-level `items` of a document, handed over element by element: how many so far.
    Items(usize),
}

struct Reader<'s, F> {
    stack: Vec<Frame>,
    anchors: HashMap<String, Value>,
    document: Option<usize>,
    root: Option<Value>,
    streamed: Option<usize>,
    /// What aliases may still copy in this file (a node and its strings' bytes each): its
    /// length in bytes.
    alias_budget: u64,
    work: Work,
    sink: &'s mut F,
}

/// Reads every document of `text`, handing each (and each List item) to `sink` as it is
/// complete. Stops at the first error.
pub fn read(text: &str, sink: impl FnMut(Part)) -> Result<Work, ReadError> {
    read_from(
        std::io::BufReader::with_capacity(INPUT_BUFFER, text.as_bytes()),
        text.len() as u64,
        sink,
    )
}

/// [`read`] from a reader of `bytes` bytes (a file, never held whole).
pub fn read_from<R: std::io::BufRead>(
    input: R,
    bytes: u64,
    mut sink: impl FnMut(Part),
) -> Result<Work, ReadError> {
    let mut r = Reader {
        stack: Vec::new(),
        anchors: HashMap::new(),
        document: None,
        root: None,
        streamed: None,
        alias_budget: bytes,
        work: Work::default(),
        sink: &mut sink,
    };
    match run(input, &mut r) {
        Ok(()) => Ok(r.work),
        Err(e) => Err(ReadError { work: r.work, ..e }),
    }
}

fn error(document: Option<usize>, message: String) -> ReadError {
    ReadError { document, message, work: Work::default() }
}

fn run<R: std::io::BufRead, F: FnMut(Part)>(
    input: R,
    r: &mut Reader<'_, F>,
) -> Result<(), ReadError> {
    let mut parser = Parser::new();
    parser.set_input(input);
    let mut next_document = 0;
    loop {
        // libyaml-safer 0.3 panics on some malformed input (`[!a,]`, a text ending in a
        // quoted `\`; found by fuzz/fuzz_targets/json.rs): a refusal of the file, never a
        // crash. Only the parser's own call is caught.
        let parsed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| parser.parse()));
        let document = r.document.or(Some(next_document));
        let event = match parsed {
            Ok(event) => event.map_err(|e| error(document, format!("invalid YAML/JSON: {e}")))?,
            Err(_) => {
                let why = "invalid YAML/JSON: the parser gave up on it".to_owned();
                return Err(error(document, why));
            }
        };
        r.work.events += 1;
        let at = event.start_mark;
        match event.data {
            EventData::StreamStart { .. } => {}
            EventData::StreamEnd => return Ok(()),
            EventData::DocumentStart { .. } => {
                r.document = Some(next_document);
                next_document += 1;
                r.anchors.clear();
            }
            EventData::DocumentEnd { .. } => {
                let document = r.document.take().unwrap_or(next_document);
                let value = r.root.take().unwrap_or(Value::Null);
                (r.sink)(Part::Document { document, value, streamed: r.streamed.take() });
            }
            EventData::Alias { anchor } => r.alias(&anchor, at)?,
            EventData::Scalar { anchor, tag, value, style, .. } => {
                r.work.nodes += 1;
                let key = matches!(r.stack.last(), Some(Frame::Map(_, None, _)));
                let v = if key {
                    Value::String(value)
                } else {
                    scalar(value, style, tag.as_deref()).map_err(|m| {
                        error(r.document, format!("invalid YAML/JSON: {m} at {}", pos(at)))
                    })?
                };
                r.complete(v, anchor, at)?;
            }
            EventData::SequenceStart { anchor, tag, .. } => {
                r.sequence_start(anchor, tag.as_deref(), at)?
            }
            EventData::MappingStart { anchor, tag, .. } => {
                r.open(at, tag.as_deref())?;
                r.stack.push(Frame::Map(Map::new(), None, anchor));
            }
            EventData::SequenceEnd | EventData::MappingEnd => match r.stack.pop() {
                Some(Frame::Seq(v, anchor)) => r.complete(Value::Array(v), anchor, at)?,
                Some(Frame::Map(m, _, anchor)) => r.complete(Value::Object(m), anchor, at)?,
                Some(Frame::Items(n)) => {
                    r.streamed = Some(n);
                    r.complete(Value::Array(Vec::new()), None, at)?;
                }
                None => {}
            },
        }
    }
}

impl<F: FnMut(Part)> Reader<'_, F> {
    /// An alias: a copy of its anchor's value, within the file's budget of nodes and bytes
    /// and the depth limit.
    fn alias(&mut self, anchor: &str, at: Mark) -> Result<(), ReadError> {
        let d = self.document;
        let v = self.anchors.get(anchor).ok_or_else(|| {
            error(d, format!("invalid YAML/JSON: unknown alias *{anchor} at {}", pos(at)))
        })?;
        let (nodes, bytes, height) = size(v, self.alias_budget.saturating_add(1));
        if nodes + bytes > self.alias_budget {
            return Err(error(
                d,
                format!(
                    "invalid YAML/JSON: aliases expand to more nodes and bytes than the file has \
                     bytes ({}) at {}",
                    self.work.alias_nodes + self.work.alias_bytes + self.alias_budget,
                    pos(at)
                ),
            ));
        }
        if self.stack.len() + height > MAX_DEPTH {
            return Err(error(d, too_deep(at)));
        }
        self.alias_budget -= nodes + bytes;
        self.work.alias_nodes += nodes;
        self.work.alias_bytes += bytes;
        self.work.nodes += nodes;
        let v = v.clone();
        self.complete(v, None, at)
    }

    /// A sequence starts: a document's top-level `items` are streamed, unless its kind (read
    /// before) says it is not a List, or an alias could name them.
    fn sequence_start(
        &mut self,
        anchor: Option<String>,
        tag: Option<&str>,
        at: Mark,
    ) -> Result<(), ReadError> {
        self.open(at, tag)?;
        let items = anchor.is_none()
            && matches!(self.stack.as_slice(), [Frame::Map(m, Some(k), _)]
                if k == "items"
                    && m.get("kind").is_none_or(|k| k.as_str().is_some_and(is_list_kind)));
        self.stack.push(if items { Frame::Items(0) } else { Frame::Seq(Vec::new(), anchor) });
        Ok(())
    }

    /// A collection starts here: refused if too deep, or where a key is expected.
    fn open(&mut self, at: Mark, tag: Option<&str>) -> Result<(), ReadError> {
        self.work.nodes += 1;
        let fail = |message| Err(error(self.document, message));
        if let Some(t) = tag.filter(|t| t.starts_with('!')) {
            return fail(format!("invalid YAML/JSON: tag {t} is not supported at {}", pos(at)));
        }
        if matches!(self.stack.last(), Some(Frame::Map(_, None, _))) {
            return fail(format!(
                "invalid YAML/JSON: a mapping key must be a scalar at {}",
                pos(at)
            ));
        }
        if self.stack.len() >= MAX_DEPTH {
            return fail(too_deep(at));
        }
        Ok(())
    }

    /// A node is complete: into its parent (or the document, or the sink).
    fn complete(&mut self, v: Value, anchor: Option<String>, at: Mark) -> Result<(), ReadError> {
        if let Some(a) = anchor {
            self.anchors.insert(a, v.clone());
        }
        let document = self.document;
        let fail = |message| Err(error(document, message));
        match self.stack.last_mut() {
            None => self.root = Some(v),
            Some(Frame::Seq(items, _)) => items.push(v),
            Some(Frame::Items(n)) => {
                let index = *n;
                *n += 1;
                (self.sink)(Part::Item { document: document.unwrap_or(0), index, value: v });
            }
            Some(Frame::Map(_, key @ None, _)) => {
                *key = Some(match v {
                    Value::String(s) => s,
                    Value::Number(n) => n.to_string(),
                    Value::Bool(b) => b.to_string(),
                    _ => {
                        return fail(format!(
                            "invalid YAML/JSON: a mapping key must be a scalar at {}",
                            pos(at)
                        ));
                    }
                });
            }
            Some(Frame::Map(m, key, _)) => match m.entry(key.take().unwrap_or_default()) {
                // One search of the map per key.
                Entry::Vacant(e) => {
                    e.insert(v);
                }
                Entry::Occupied(e) => {
                    let k = e.key();
                    return fail(format!("invalid YAML/JSON: duplicate key {k:?} at {}", pos(at)));
                }
            },
        }
        Ok(())
    }
}

fn pos(m: Mark) -> String {
    format!("line {} column {}", m.line + 1, m.column + 1)
}

fn too_deep(at: Mark) -> String {
    format!("invalid YAML/JSON: nesting deeper than {MAX_DEPTH} levels at {}", pos(at))
}

/// (nodes, height) of `v`, counting at most `limit` nodes (then it stops, having counted more).
fn size(v: &Value, limit: u64) -> (u64, u64, usize) {
    // (nodes, bytes): the walk stops once their sum passes `limit`.
    fn walk(v: &Value, limit: u64, n: &mut (u64, u64)) -> usize {
        n.0 += 1;
        if n.0 + n.1 > limit {
            return 0;
        }
        let children: Box<dyn Iterator<Item = &Value>> = match v {
            Value::Array(a) => Box::new(a.iter()),
            Value::Object(m) => {
                n.1 += m.keys().map(|k| k.len() as u64).sum::<u64>();
                Box::new(m.values())
            }
            Value::String(s) => {
                n.1 += s.len() as u64;
                return 0;
            }
            _ => return 0,
        };
        1 + children.map(|c| walk(c, limit, n)).max().unwrap_or(0)
    }
    let mut n = (0, 0);
    let height = walk(v, limit, &mut n);
    (n.0, n.1, height)
}

const TAG: &str = "tag:yaml.org,2002:";

/// A scalar's value, as serde_yaml_ng resolves it.
fn scalar(text: String, style: ScalarStyle, tag: Option<&str>) -> Result<Value, String> {
    let core = tag.and_then(|t| t.strip_prefix(TAG));
    match core {
        Some("bool") => {
            parse_bool(&text).map(Value::Bool).ok_or(format!("{text:?} is not a boolean"))
        }
        Some("int") => parse_int(&text).ok_or(format!("{text:?} is not an integer")),
        Some("float") => parse_f64(&text).map(float).ok_or(format!("{text:?} is not a float")),
        Some("null") if parse_null(&text) => Ok(Value::Null),
        Some("null") => Err(format!("{text:?} is not null")),
        Some(_) => Ok(Value::String(text)),
        None if tag.is_some_and(|t| t.starts_with('!') && t.len() > 1) => {
            Err(format!("tag {} is not supported", tag.unwrap_or_default()))
        }
        // Untagged (or the non-specific `!`): plain scalars are resolved.
        None if style == ScalarStyle::Plain => Ok(plain(text)),
        None => Ok(Value::String(text)),
    }
}

fn plain(text: String) -> Value {
    if text.is_empty() || parse_null(&text) {
        return Value::Null;
    }
    if let Some(b) = parse_bool(&text) {
        return Value::Bool(b);
    }
    if let Some(n) = parse_int(&text) {
        return n;
    }
    if !digits_but_not_number(&text) {
        if let Some(f) = parse_f64(&text) {
            return float(f);
        }
    }
    Value::String(text)
}

fn float(f: f64) -> Value {
    serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)
}

fn parse_null(s: &str) -> bool {
    matches!(s, "null" | "Null" | "NULL" | "~")
}

fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "true" | "True" | "TRUE" => Some(true),
        "false" | "False" | "FALSE" => Some(false),
        _ => None,
    }
}

/// Leading zeros then digits: a string in YAML 1.2.
fn digits_but_not_number(s: &str) -> bool {
    let s = s.strip_prefix(['-', '+']).unwrap_or(s);
    s.len() > 1 && s.starts_with('0') && s[1..].bytes().all(|b| b.is_ascii_digit())
}

/// An integer that fits i64 or u64 (a larger one is a string, as it cannot be a number here).
fn parse_int(s: &str) -> Option<Value> {
    let (negative, digits) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    if digits.starts_with(['+', '-']) {
        return None;
    }
    let (radix, body) = if let Some(r) = digits.strip_prefix("0x") {
        (16, r)
    } else if let Some(r) = digits.strip_prefix("0o") {
        (8, r)
    } else if let Some(r) = digits.strip_prefix("0b") {
        (2, r)
    } else {
        if digits_but_not_number(digits) {
            return None;
        }
        (10, digits)
    };
    if body.is_empty() || body.starts_with(['+', '-']) {
        return None;
    }
    let magnitude = u64::from_str_radix(body, radix).ok()?;
    if negative {
        if magnitude <= i64::MAX as u64 + 1 {
            Some(Value::Number(
                (magnitude as i128).wrapping_neg().try_into().map_or(i64::MIN, |n: i64| n).into(),
            ))
        } else {
            None
        }
    } else {
        Some(Value::Number(magnitude.into()))
    }
}

fn parse_f64(s: &str) -> Option<f64> {
    let unsigned = match s.strip_prefix('+') {
        Some(u) if u.starts_with(['+', '-']) => return None,
        Some(u) => u,
        None => s,
    };
    match unsigned {
        ".inf" | ".Inf" | ".INF" => return Some(f64::INFINITY),
        "-.inf" | "-.Inf" | "-.INF" => return Some(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => return Some(f64::NAN),
        _ => {}
    }
    unsigned.parse::<f64>().ok().filter(|f| f.is_finite())
}
