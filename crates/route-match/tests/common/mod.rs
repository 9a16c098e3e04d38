//! A request made of plain vectors, a compact way to write expected outcomes, and the list and
//! request builders that the tests and the examples (`examples/eval_loop.rs`,
//! `examples/attack_loop.rs`, which include this file with `#[path]`) share.
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
    /// Failures are not recorded (the examples' loops: nothing grows per evaluation).
    pub quiet: bool,
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
    pub fn quiet(mut self) -> Req {
        self.quiet = true;
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
        if self.quiet {
            return;
        }
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

/// 20 prefiltered regex entries (an indexed list) that `x-tenant: tenant-<salt>-19` wins, and
/// an `any`; `salt` makes lists distinct.
pub fn tenant_list(salt: usize) -> String {
    let entries: Vec<String> = (0..20)
        .map(|i| {
            format!(
                r#"{{"headers":["x-tenant:RegularExpression:^tenant-{salt}-{i}$"],"redirectPath":"/r{i}"}}"#
            )
        })
        .collect();
    format!("[{},{{\"any\":true,\"redirectPath\":\"/any\"}}]", entries.join(","))
}

/// A file of `n` tenant lists, `k0` to `k<n-1>` (`tenant_list(k)` under `k<k>`).
pub fn tenant_file(n: usize) -> route_match::CompiledFile {
    let body: Vec<String> = (0..n).map(|k| format!("\"k{k}\":{}", tenant_list(k))).collect();
    match route_match::compile_file(format!("{{{}}}", body.join(",")).as_bytes(), Syntax::Auto) {
        Ok(f) => f,
        Err(e) => panic!("tenant_file({n}): {e}"),
    }
}
