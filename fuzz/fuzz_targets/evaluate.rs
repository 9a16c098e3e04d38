//! A structured list (every condition kind, values from a small vocabulary or arbitrary
//! strings) against an arbitrary request (any bytes in the method, header lines, query and
//! path). Checks, besides "no panic": the index never changes an outcome (evaluate ==
//! evaluate_linear), and a winner is the entry its redirectPath names.

#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use route_match::{Outcome, RequestView, Syntax, compile_list};
use serde_json::{Value, json};

/// Values and patterns; the regex ones include shapes the prefilter uses (`^v[0-9]+$`,
/// `.*TEST`, `v2\.`, length bounds `^v2$`), caseless ones whose literals hold letters with
/// partners outside ASCII (`(?i)test`, `(?i)^ks`, `(?i)µå`, `(?i)eu-west-[0-9]`: PCRE2 also
/// matches U+017F for s, U+212A for k, U+039C/U+03BC for µ, U+212B for å, spelled in some
/// values), and ones PCRE2 and regex-syntax read differently, which it must leave alone
/// (`[a[b]]x`, `[x&&y]`, `x\<y`, `a\vb`).
const WORDS: [&str; 79] = [
    "v2",
    "x",
    "TEST",
    "a b",
    "1,2",
    "^v[0-9]+$",
    "(a+)+$",
    "/a",
    ".*TEST",
    "v2\\.",
    "[a[b]]x",
    "[x&&y]",
    "(?i)test",
    "a]x",
    "(?i)v2",
    "te\u{17F}t",
    "\u{212A}",
    "^v2$",
    "v2\n",
    "x\\<y",
    "x<y",
    "a{ 2}b",
    "^a{2, 3}$",
    "a\\vb",
    "a\nb",
    "(?i)^ks",
    "\u{212A}\u{17F}",
    "(?i)\u{B5}\u{E5}",
    "\u{39C}\u{212B}",
    "\u{3BC}\u{C5}",
    "(?i)eu-west-[0-9]",
    "EU-WE\u{17F}T-1",
    "(?i:k)elvin|\u{17F}s",
    // Shapes aimed at the anchored prefix lookup and the stems.
    "^a|b",
    "(?m)^v2",
    "\\Av2",
    "(?i)^\u{17F}t",
    "(?i)^st",
    "(?i)^k",
    "(?i)^\u{B5}",
    "(?i)^\u{C5}x",
    "(?i)^\u{E9}",
    "\u{C9}",
    "^(?:v2|v3)\\.",
    "^.?x",
    "^\\x{17F}",
    "^[sS]",
    "^(ab)?c",
    "(?<=a)^b",
    "\\Gv2",
    "(?x) ^ v2",
    "(*UTF)^v2",
    "(*UCP)(?i)^k",
    "\\Q^v2\\E",
    "^v2\\.[0-9]",
    "v2.5",
    " v2",
    "v2, v3",
    "x,\tv2.1",
    "ab c",
    "c",
    "^\u{E9}",
    "^\u{E8}",
    "\u{E8}x",
    "(?i)^\u{130}",
    "i\u{307}",
    "(?i)^\u{23F}",
    "\u{2C7E}",
    "^aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "^\\s?v2",
    "^ v2",
    "(?i)^V2\\.[0-9]",
    "V2.7",
    ",v2",
    "^v2|^v3",
    "^$",
    "^v2(?=\\.)",
    "\u{17F}T",
];

#[derive(Arbitrary, Debug)]
enum Text {
    Word(u8),
    Any(String),
}

impl Text {
    fn get(&self) -> String {
        match self {
            Text::Word(i) => WORDS[usize::from(*i) % WORDS.len()].to_owned(),
            Text::Any(s) => s.clone(),
        }
    }
}

#[derive(Arbitrary, Debug)]
enum Kind {
    Exact,
    Regex,
    Bogus,
}

impl Kind {
    fn name(&self) -> &'static str {
        match self {
            Kind::Exact => "Exact",
            Kind::Regex => "RegularExpression",
            Kind::Bogus => "Prefix",
        }
    }
}

#[derive(Arbitrary, Debug)]
enum PathKind {
    Exact,
    Prefix,
    Regex,
}

#[derive(Arbitrary, Debug)]
struct Entry {
    any: bool,
    method: Option<Text>,
    headers: Vec<(Text, Kind, Text)>,
    params: Vec<(Text, Kind, Text)>,
    path: Option<(PathKind, Text)>,
    has_redirect: bool,
}

#[derive(Arbitrary, Debug)]
struct Input {
    entries: Vec<Entry>,
    method: Vec<u8>,
    headers: Vec<(Vec<u8>, Vec<u8>)>,
    query: Vec<u8>,
    path: Vec<u8>,
}

impl RequestView for Input {
    fn method(&self) -> &[u8] {
        &self.method
    }
    fn headers(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.headers.iter().map(|(n, v)| (n.as_slice(), v.as_slice()))
    }
    fn query(&self) -> &[u8] {
        &self.query
    }
    fn path(&self) -> &[u8] {
        &self.path
    }
    /// No shared budget: the check below compares the indexed evaluation with the linear one,
    /// which attempts more regexes and so could spend a budget where the index does not.
    /// Each attempt is still bounded by its step limit.
    fn regex_budget(&self) -> Option<u64> {
        None
    }
}

fn to_json(i: usize, e: &Entry) -> Value {
    let mut o = serde_json::Map::new();
    if e.any {
        o.insert("any".into(), json!(true));
    }
    if let Some(m) = &e.method {
        o.insert("method".into(), json!(m.get()));
    }
    let strings = |conds: &[(Text, Kind, Text)], sep: char| -> Value {
        conds
            .iter()
            .map(|(n, k, v)| format!("{}{sep}{}{sep}{}", n.get(), k.name(), v.get()))
            .collect()
    };
    o.insert("headers".into(), strings(&e.headers, ':'));
    o.insert("params".into(), strings(&e.params, '='));
    if let Some((k, v)) = &e.path {
        let k = match k {
            PathKind::Exact => "Exact",
            PathKind::Prefix => "PathPrefix",
            PathKind::Regex => "RegularExpression",
        };
        o.insert("path".into(), json!(format!("{k}:{}", v.get())));
    }
    if e.has_redirect {
        o.insert("redirectPath".into(), json!(format!("/r{i}")));
    }
    Value::Object(o)
}

fuzz_target!(|input: Input| {
    if input.entries.is_empty() || input.entries.len() > 64 {
        return;
    }
    let list: Vec<Value> = input.entries.iter().enumerate().map(|(i, e)| to_json(i, e)).collect();
    let Ok(text) = serde_json::to_vec(&list) else { return };
    let compiled = match compile_list(&text, Syntax::Typed) {
        Ok(c) => c,
        Err(e) => panic!("a well-formed list must parse: {e}"),
    };
    let fast = compiled.list.evaluate(&input);
    let slow = compiled.list.evaluate_linear(&input);
    assert_eq!(fast, slow, "the index changed the outcome");
    if let Outcome::Redirect { entry, path } = fast {
        assert_eq!(path, format!("/r{entry}"));
    }
});
