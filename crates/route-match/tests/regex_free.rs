//! Lists without regex conditions are evaluated without regex state (no budget, no memo, no
//! failure report). Random short lists of exact, method, path, `any` and malformed entries,
//! and random requests from a small vocabulary (so that conditions often hold): the outcome is
//! the general path's (`evaluate_linear`, which always makes the regex state) and that of a
//! reference written from the README's rules, the obvious way.

mod common;

use common::Req;
use proptest::prelude::*;
use route_match::{EvalError, Forward, Outcome, RequestView, Syntax, compile_list};

const METHODS: [&str; 3] = ["GET", "POST", "HEAD"];
const NAMES: [&str; 3] = ["x-a", "version", "v"];
/// Values of conditions and of requests: comma lists, OWS, a prefix of another value.
const VALUES: [&str; 7] = ["1", "2", "v2", "1,2", " 2 ,1", "v", "a b"];
const PATHS: [&str; 4] = ["/a", "/a/b", "/ab", "/"];

#[derive(Debug, Clone)]
enum Cond {
    Method(usize),
    Path {
        exact: bool,
        path: usize,
    },
    Header {
        name: usize,
        value: usize,
    },
    Param {
        name: usize,
        value: usize,
    },
    /// A regex condition (on a header, a param or the path): the list is not regex-free.
    Regex {
        name: usize,
        on: usize,
    },
}

#[derive(Debug, Clone)]
enum Entry {
    When(Vec<Cond>),
    Any,
    Invalid,
}

fn cond() -> impl Strategy<Value = Cond> {
    prop_oneof![
        2 => (0..METHODS.len()).prop_map(Cond::Method),
        1 => (any::<bool>(), 0..PATHS.len()).prop_map(|(exact, path)| Cond::Path { exact, path }),
        6 => (0..NAMES.len(), 0..VALUES.len()).prop_map(|(name, value)| Cond::Header { name, value }),
        3 => (0..NAMES.len(), 0..VALUES.len()).prop_map(|(name, value)| Cond::Param { name, value }),
    ]
}

fn entry(regex: bool) -> impl Strategy<Value = Entry> {
    let conds = proptest::collection::vec(cond(), 0..4);
    let conds = if regex {
        (conds, 0..NAMES.len(), 0..3usize)
            .prop_map(|(mut c, name, on)| {
                // First: an entry keeps its first path condition.
                c.insert(0, Cond::Regex { name, on });
                c
            })
            .boxed()
    } else {
        conds.boxed()
    };
    prop_oneof![8 => conds.prop_map(Entry::When), 1 => Just(Entry::Any), 1 => Just(Entry::Invalid)]
}

fn json(entries: &[Entry]) -> String {
    let body: Vec<String> = entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            // Every fifth entry has no redirectPath.
            let redirect =
                if i % 5 == 4 { String::new() } else { format!(r#","redirectPath":"/r{i}""#) };
            let fields = match e {
                Entry::Any => r#""any":true"#.to_owned(),
                Entry::Invalid => r#""headers":["x-a:Bogus:1"]"#.to_owned(),
                Entry::When(conds) => {
                    let (mut headers, mut params, mut other) = (vec![], vec![], vec![]);
                    for c in conds {
                        match *c {
                            Cond::Method(m) => other.push(format!(r#""method":"{}""#, METHODS[m])),
                            Cond::Path { exact, path } => {
                                let kind = if exact { "Exact" } else { "PathPrefix" };
                                other.push(format!(r#""path":"{kind}:{}""#, PATHS[path]));
                            }
                            Cond::Header { name, value } => headers
                                .push(format!(r#""{}:Exact:{}""#, NAMES[name], VALUES[value])),
                            Cond::Param { name, value } => {
                                params.push(format!(r#""{}=Exact={}""#, NAMES[name], VALUES[value]))
                            }
                            Cond::Regex { name, on: 0 } => {
                                headers.push(format!(r#""{}:RegularExpression:^v""#, NAMES[name]))
                            }
                            Cond::Regex { name, on: 1 } => {
                                params.push(format!(r#""{}=RegularExpression=^v""#, NAMES[name]))
                            }
                            Cond::Regex { .. } => {
                                other.push(r#""path":"RegularExpression:^/a""#.to_owned())
                            }
                        }
                    }
                    // One method and one path per entry: the last given wins in the JSON, so
                    // keep only the first of each (the reference does the same).
                    let mut seen = (false, false);
                    other.retain(|o| {
                        let slot =
                            if o.starts_with(r#""method""#) { &mut seen.0 } else { &mut seen.1 };
                        !std::mem::replace(slot, true)
                    });
                    other.push(format!(r#""headers":[{}]"#, headers.join(",")));
                    other.push(format!(r#""params":[{}]"#, params.join(",")));
                    other.join(",")
                }
            };
            format!("{{{fields}{redirect}}}")
        })
        .collect();
    format!("[{}]", body.join(","))
}

fn request() -> impl Strategy<Value = Req> {
    (
        0..METHODS.len(),
        proptest::collection::vec((0..NAMES.len(), 0..VALUES.len() + 1, 0..3usize), 0..6),
        proptest::collection::vec((0..NAMES.len(), 0..VALUES.len()), 0..4),
        0..PATHS.len(),
    )
        .prop_map(|(m, hs, ps, path)| {
            let mut r = Req::new(METHODS[m]).p(PATHS[path]);
            for (n, v, case) in hs {
                let name = match case {
                    0 => NAMES[n].to_owned(),
                    1 => NAMES[n].to_uppercase(),
                    _ => {
                        let mut c = NAMES[n].chars();
                        c.next()
                            .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                            .unwrap_or_default()
                    }
                };
                // VALUES.len(): an empty value.
                r = r.h(&name, VALUES.get(v).copied().unwrap_or(""));
            }
            let q: Vec<String> = ps
                .iter()
                .map(|(n, v)| format!("{}={}", NAMES[*n], VALUES[*v].replace(' ', "+")))
                .collect();
            r.q(&q.join("&"))
        })
}

/// The rules, the obvious way (for lists without regex conditions).
fn reference(entries: &[Entry], req: &Req) -> Outcome<'static> {
    let trim = |s: &[u8]| -> Vec<u8> {
        let s = String::from_utf8_lossy(s);
        s.trim_matches(|c| c == ' ' || c == '\t').as_bytes().to_vec()
    };
    let header = |name: &str, want: &str| {
        req.headers.iter().any(|(n, v)| {
            n.eq_ignore_ascii_case(name.as_bytes())
                && !v.is_empty()
                && (v == want.as_bytes()
                    || v.split(|&b| b == b',').any(|el| trim(el) == want.as_bytes()))
        })
    };
    let param = |name: &str| -> Option<Vec<u8>> {
        let decode =
            |s: &[u8]| s.iter().map(|&b| if b == b'+' { b' ' } else { b }).collect::<Vec<u8>>();
        req.query.split(|&b| b == b'&').filter(|s| !s.is_empty()).find_map(|seg| {
            let (n, v) = match seg.iter().position(|&b| b == b'=') {
                Some(i) => (&seg[..i], &seg[i + 1..]),
                None => (seg, &[][..]),
            };
            (decode(n) == name.as_bytes()).then(|| decode(v))
        })
    };
    for (i, e) in entries.iter().enumerate() {
        let holds = match e {
            Entry::Any => true,
            Entry::Invalid => {
                return Outcome::Error(EvalError::InvalidEntry { entry: i, reason: "" });
            }
            Entry::When(conds) => {
                let (mut method, mut path) = (None, None);
                let mut ok = true;
                for c in conds {
                    match *c {
                        Cond::Method(m) => {
                            method.get_or_insert(m);
                        }
                        Cond::Path { exact, path: p } => {
                            path.get_or_insert((exact, p));
                        }
                        Cond::Header { name, value } => ok &= header(NAMES[name], VALUES[value]),
                        Cond::Param { name, value } => {
                            let v = param(NAMES[name]);
                            ok &= v.is_some_and(|v| !v.is_empty() && v == VALUES[value].as_bytes());
                        }
                        Cond::Regex { .. } => unreachable!("the reference is for regex-free lists"),
                    }
                }
                ok &= method.is_none_or(|m| req.method == METHODS[m].as_bytes());
                ok &= path.is_none_or(|(exact, p)| {
                    let (want, got) = (PATHS[p].trim_end_matches('/').as_bytes(), &req.path[..]);
                    if exact {
                        got == PATHS[p].as_bytes()
                    } else {
                        got.starts_with(want)
                            && (got.len() == want.len() || got[want.len()] == b'/')
                    }
                });
                ok
            }
        };
        if holds {
            return if i % 5 == 4 {
                Outcome::Error(EvalError::NoRedirectPath { entry: i })
            } else {
                Outcome::Redirect { entry: i, path: Box::leak(format!("/r{i}").into_boxed_str()) }
            };
        }
    }
    Outcome::NoMatch
}

/// Malformed-entry reasons are the compiler's text; the reference does not know them.
fn without_reason(o: Outcome<'_>) -> String {
    match o {
        Outcome::Error(EvalError::InvalidEntry { entry, .. }) => format!("invalid {entry}"),
        other => format!("{other:?}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn regex_free_lists_agree_with_the_general_path_and_the_reference(
        entries in proptest::collection::vec(entry(false), 1..8),
        reqs in proptest::collection::vec(request(), 1..8),
    ) {
        let json = json(&entries);
        let list = compile_list(json.as_bytes(), Syntax::Typed).unwrap().list;
        prop_assert!(list.is_regex_free(), "{}", json);
        for req in &reqs {
            let (outcome, attempts) = list.evaluate_counting(req);
            prop_assert_eq!(attempts, 0);
            prop_assert_eq!(&outcome, &list.evaluate_linear(req), "{}", json);
            prop_assert_eq!(
                without_reason(outcome),
                without_reason(reference(&entries, req)),
                "{} {:?}",
                json,
                req
            );
        }
    }

    #[test]
    fn lists_with_a_regex_condition_keep_the_regex_state(
        mut entries in proptest::collection::vec(entry(false), 0..6),
        with_regex in entry(true),
        at in 0..6usize,
        reqs in proptest::collection::vec(request(), 1..8),
    ) {
        entries.insert(at.min(entries.len()), with_regex.clone());
        let json = json(&entries);
        let list = compile_list(json.as_bytes(), Syntax::Typed).unwrap().list;
        // A regex condition in a malformed or `any` entry is not one.
        prop_assert_eq!(list.is_regex_free(), !matches!(with_regex, Entry::When(_)), "{}", json);
        for req in &reqs {
            prop_assert_eq!(list.evaluate(req), list.evaluate_linear(req), "{}", json);
        }
    }
}

#[test]
fn a_regex_free_list_never_asks_for_a_regex_budget() {
    // Asking for the budget is recorded as a regex failure of the request.
    fn probe(r: &Req) -> Option<u64> {
        r.regex_failed(0, "", "asked for a budget");
        None
    }
    let json = r#"[{"headers":["version:v2"],"redirectPath":"/coffee_v2"},
        {"params":["TEST=v2"],"redirectPath":"/coffee_v2"},
        {"any":true,"redirectPath":"/coffee_v1"}]"#;
    let list = compile_list(json.as_bytes(), Syntax::Auto).unwrap().list;
    assert!(list.is_regex_free());
    for req in [Req::new("GET").h("Version", "v2"), Req::new("GET").q("TEST=v2"), Req::new("GET")] {
        let view = Forward { view: &req, budget: Some(probe) };
        assert!(matches!(list.evaluate(&view), Outcome::Redirect { .. }));
        assert!(req.regex_failures.borrow().is_empty());
        // The general path does ask.
        list.evaluate_linear(&view);
        assert_eq!(req.regex_failures.borrow().len(), 1);
    }
}
