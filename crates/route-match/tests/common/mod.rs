//! A request made of plain vectors, and a compact way to write expected outcomes.
#![allow(dead_code)]

use std::cell::RefCell;

use route_match::{MatchList, Outcome, RequestView, Syntax};

#[derive(Default, Debug)]
pub struct Req {
    pub method: Vec<u8>,
    pub headers: Vec<(Vec<u8>, Vec<u8>)>,
    pub query: Vec<u8>,
    pub path: Vec<u8>,
    pub regex_failures: RefCell<Vec<String>>,
    /// `Some(b)`: the regex budget `b` instead of the default.
    pub budget: Option<Option<u64>>,
}

impl Req {
    pub fn new(method: &str) -> Req {
        Req { method: method.as_bytes().to_vec(), ..Req::default() }
    }
    pub fn h(mut self, name: &str, value: &str) -> Req {
        self.headers.push((name.as_bytes().to_vec(), value.as_bytes().to_vec()));
        self
    }
    pub fn q(mut self, query: &str) -> Req {
        self.query = query.as_bytes().to_vec();
        self
    }
    pub fn p(mut self, path: &str) -> Req {
        self.path = path.as_bytes().to_vec();
        self
    }
}

impl RequestView for Req {
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
    fn regex_failed(&self, entry: usize, pattern: &str, why: &str) {
        self.regex_failures.borrow_mut().push(format!("{entry} {pattern} {why}"));
    }
    fn regex_budget(&self) -> Option<u64> {
        self.budget.unwrap_or(Some(route_match::DEFAULT_REGEX_BUDGET))
    }
}

/// Compiles a list, insisting that it parses.
pub fn list(json: &str) -> MatchList {
    match route_match::compile_list(json.as_bytes(), Syntax::Auto) {
        Ok(c) => c.list,
        Err(e) => panic!("{json}: {e}"),
    }
}

/// The outcome as a short string: `-> /path`, `404`, or `500 <reason>`.
pub fn show(o: Outcome<'_>) -> String {
    match o {
        Outcome::Redirect { path, .. } => format!("-> {path}"),
        Outcome::NoMatch => "404".to_owned(),
        Outcome::Error(e) => format!("500 {e}"),
    }
}

pub fn run(json: &str, req: &Req) -> String {
    show(list(json).evaluate(req))
}

/// Wraps a single entry (JSON object text) into a list redirecting to /hit.
pub fn one(entry_fields: &str) -> String {
    format!(r#"[{{"redirectPath":"/hit",{entry_fields}}}]"#)
}
