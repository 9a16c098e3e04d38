//! The loader's reading of YAML and JSON, from the parser's events: nesting depth refused
//! exactly past `MAX_DEPTH` whatever the styles and quoting, values as serde_yaml_ng reads
//! them, aliases charged, the items of a List handed over one by one, and the work counted
//! (events, nodes), never timed.

use std::path::Path;

use httproute_nginx::model::{Inputs, MAX_DEPTH, Part, load_text, read_yaml};
use proptest::prelude::*;
use serde_json::{Value, json};

fn cases() -> u32 {
    std::env::var("HTTPROUTE_LOADER_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(64)
}

/// Every part `read_yaml` hands over, or its error message.
fn parts(text: &str) -> Result<Vec<Part>, String> {
    let mut out = Vec::new();
    read_yaml(text, |p| out.push(p)).map_err(|e| e.message)?;
    Ok(out)
}

/// The documents of `text` (no List streaming in these: no key is `items`).
fn documents(text: &str) -> Result<Vec<Value>, String> {
    Ok(parts(text)?
        .into_iter()
        .map(|p| match p {
            Part::Document { value, .. } => value,
            Part::Item { .. } => panic!("an item outside a List"),
        })
        .collect())
}

#[derive(Clone, Debug)]
enum Node {
    Scalar(String, Quote),
    Seq(Vec<Node>, bool),
    Map(Vec<(String, Node)>, bool),
}

#[derive(Clone, Copy, Debug)]
enum Quote {
    Plain,
    Single,
    Double,
}

impl Node {
    fn value(&self) -> Value {
        match self {
            Node::Scalar(s, _) => Value::String(s.clone()),
            Node::Seq(v, _) => Value::Array(v.iter().map(Node::value).collect()),
            Node::Map(m, _) => {
                Value::Object(m.iter().map(|(k, v)| (k.clone(), v.value())).collect())
            }
        }
    }
    fn flow_style(&self) -> bool {
        match self {
            Node::Scalar(..) => true,
            Node::Seq(v, f) => *f || v.is_empty(),
            Node::Map(m, f) => *f || m.is_empty(),
        }
    }
}

fn scalar(s: &str, q: Quote) -> String {
    match q {
        // Only letters and quotes that do not start it: always a string, in both contexts.
        Quote::Plain => s.to_owned(),
        Quote::Single => format!("'{}'", s.replace('\'', "''")),
        Quote::Double => format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\"")),
    }
}

fn flow(n: &Node) -> String {
    match n {
        Node::Scalar(s, q) => scalar(s, *q),
        Node::Seq(v, _) => format!("[{}]", v.iter().map(flow).collect::<Vec<_>>().join(", ")),
        Node::Map(m, _) => format!(
            "{{{}}}",
            m.iter().map(|(k, v)| format!("{k}: {}", flow(v))).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// `n` after `key:` or `-` at indentation `indent`.
fn block(n: &Node, indent: usize) -> String {
    if n.flow_style() {
        return format!(" {}\n", flow(n));
    }
    let pad = " ".repeat(indent);
    let mut out = String::from("\n");
    match n {
        Node::Seq(v, _) => v.iter().for_each(|c| out += &format!("{pad}-{}", block(c, indent + 2))),
        Node::Map(m, _) => {
            m.iter().for_each(|(k, c)| out += &format!("{pad}{k}:{}", block(c, indent + 2)))
        }
        Node::Scalar(..) => unreachable!(),
    }
    out
}

fn document(n: &Node) -> String {
    // The root at indentation 0: what `block` writes after its newline.
    block(n, 0).strip_prefix('\n').map(str::to_owned).unwrap_or_else(|| flow(n) + "\n")
}

/// Scalars with the characters that fool a scanner: brackets, quotes, `#`, `:`, `,`.
fn text() -> impl Strategy<Value = (String, Quote)> {
    prop_oneof![
        "x[a-z]{0,3}(\"[a-z]{0,2}|'[a-z]{0,2})?".prop_map(|s| (s, Quote::Plain)),
        "[a-z\\[\\]{}#:,\"' ]{0,8}".prop_map(|s| (s, Quote::Single)),
        "[a-z\\[\\]{}#:,\"'\\\\ ]{0,8}".prop_map(|s| (s, Quote::Double)),
    ]
}

/// (map, flow, scalar siblings).
type Level = (bool, bool, Vec<(String, Quote)>);

/// One level of a nesting chain: map or sequence, flow or block, and up to 2 scalar siblings.
fn level() -> impl Strategy<Value = Level> {
    (any::<bool>(), any::<bool>(), prop::collection::vec(text(), 0..3))
}

/// A chain of `levels` collections (outermost first) around a scalar: its depth is their count.
fn chain(levels: &[Level], leaf: (String, Quote)) -> Node {
    let mut n = Node::Scalar(leaf.0, leaf.1);
    // A flow collection is written in flow style all through (flow cannot hold block).
    for (is_map, flow, siblings) in levels.iter().rev() {
        let flow = *flow;
        let mut children: Vec<Node> =
            siblings.iter().map(|(s, q)| Node::Scalar(s.clone(), *q)).collect();
        children.insert(siblings.len() / 2, n);
        n = if *is_map {
            Node::Map(
                children.into_iter().enumerate().map(|(i, c)| (format!("k{i}"), c)).collect(),
                flow,
            )
        } else {
            Node::Seq(children, flow)
        };
    }
    n
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    /// Whatever the styles and quoting: refused exactly when deeper than `MAX_DEPTH`, and read
    /// back as written otherwise; the events are at most the bytes.
    #[test]
    fn refused_exactly_when_deeper_than_the_limit(
        levels in prop::collection::vec(level(), 1..(MAX_DEPTH + 16)),
        leaf in text(),
    ) {
        let n = chain(&levels, leaf);
        let text = document(&n);
        let mut count = 0;
        let work = read_yaml(&text, |_| count += 1);
        if levels.len() > MAX_DEPTH {
            let e = work.unwrap_err();
            prop_assert!(e.message.contains("nesting deeper than 64 levels"), "{}\n{text}", e.message);
            prop_assert_eq!(count, 0);
        } else {
            let work = work.map_err(|e| TestCaseError::fail(format!("{}\n{text}", e.message)))?;
            prop_assert!(work.events <= text.len() as u64 + 4, "{work:?} {}", text.len());
            prop_assert_eq!(documents(&text).unwrap(), vec![n.value()], "{}", text);
        }
    }

    /// Scalars resolve as serde_yaml_ng resolves them (null, booleans, integers in four bases,
    /// floats, strings with leading zeros), plain and quoted, as values and as keys.
    #[test]
    fn scalars_read_as_serde_yaml_ng_reads_them(
        words in prop::collection::vec(prop_oneof![
            Just("~"), Just("null"), Just("Null"), Just(""), Just("true"), Just("False"),
            Just("yes"), Just("0x1F"), Just("-0x10"), Just("0o17"), Just("+0b101"), Just("007"),
            Just("-0"), Just("+12"), Just("1e3"), Just("-1.5"), Just(".inf"), Just("-.Inf"),
            Just(".nan"), Just("1_000"), Just("9223372036854775808"), Just("-9223372036854775808"),
            Just("18446744073709551615"), Just("0x"), Just("1."), Just("abc"),
        ], 1..6),
        quoted in prop::collection::vec(any::<bool>(), 6),
    ) {
        let mut text = String::new();
        for (i, w) in words.iter().enumerate() {
            let v = if quoted[i] { format!("'{w}'") } else { w.to_string() };
            text += &format!("k{i}: {v}\n");
            if !w.is_empty() {
                text += &format!("{w}{i}: x\n");
            }
        }
        let ours = documents(&text).unwrap();
        let theirs: Value = serde_yaml_ng::from_str(&text).unwrap();
        prop_assert_eq!(&ours, &vec![theirs], "{}", text);
    }
}

#[test]
fn deep_input_is_refused_after_the_same_work_however_long() {
    // The work before the refusal does not grow with what follows: the rest is never read.
    let refused = |n: usize| {
        let e = read_yaml(&format!("a: [x\"y, {}", "[a\"b, ".repeat(n)), |_| {}).unwrap_err();
        assert!(e.message.contains("nesting deeper"), "{}", e.message);
        e
    };
    let (small, large) = (refused(100_000), refused(200_000));
    assert_eq!(small, large);
    assert!(small.work.events <= 2 * MAX_DEPTH as u64 + 8, "{:?}", small.work);
    // Shallow input: the work is linear in the bytes (2x the documents, 2x the events).
    let docs =
        |n: usize| "---\nkind: HTTPRoute\nmetadata: {name: r, labels: {a: \"[[[\"}}\n".repeat(n);
    let a = read_yaml(&docs(1000), |_| {}).unwrap();
    let b = read_yaml(&docs(2000), |_| {}).unwrap();
    assert_eq!(b.events - 2, 2 * (a.events - 2));
    assert_eq!(b.nodes, 2 * a.nodes);
}

#[test]
fn aliases_are_expanded_within_a_budget_of_the_files_bytes() {
    let doc = documents("x: &v {name: a, list: [1, 2]}\ny: *v\n").unwrap();
    assert_eq!(
        doc,
        vec![json!({"x": {"name": "a", "list": [1, 2]}, "y": {"name": "a", "list": [1, 2]}})]
    );
    // A billion laughs: 10^9 nodes from 300 bytes.
    let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..10 {
        let p = format!("*a{}", i - 1);
        text += &format!("a{i}: &a{i} [{}]\n", vec![p; 10].join(", "));
    }
    let e = read_yaml(&text, |_| {}).unwrap_err();
    assert!(
        e.message.contains("aliases expand to more nodes and bytes than the file has bytes"),
        "{}",
        e.message
    );
    // Aliases cannot nest deeper than the limit either.
    let deep = format!(
        "a: &d {}{}\nb: {}*d{}\n",
        "[".repeat(40),
        "]".repeat(40),
        "[".repeat(30),
        "]".repeat(30)
    );
    assert!(read_yaml(&deep, |_| {}).unwrap_err().message.contains("nesting deeper"));
    assert!(read_yaml("a: *nothing\n", |_| {}).unwrap_err().message.contains("unknown alias"));
}

#[test]
fn aliases_of_a_long_scalar_are_budgeted_in_bytes() {
    // n aliases of a 64 KiB scalar: each copies 64 KiB; the bytes copied stay within the
    // file's, so past about one alias the file is refused (counting nodes, 100 passed).
    let long = "x".repeat(64 * 1024);
    let aliases = |n: usize| format!("a: &s {long}\nb: [{}]\n", vec!["*s"; n].join(", "));
    let one = read_yaml(&aliases(1), |_| {}).unwrap();
    assert_eq!(one.alias_bytes, long.len() as u64);
    let e = read_yaml(&aliases(100), |_| {}).unwrap_err();
    assert!(e.message.contains("more nodes and bytes than the file has bytes"), "{}", e.message);
    assert!(e.work.alias_bytes <= aliases(100).len() as u64, "{:?}", e.work);
    // Keys count too: a map of long keys.
    let keys = |n: usize| format!("a: &m {{{long}: 1}}\nb: [{}]\n", vec!["*m"; n].join(", "));
    assert!(read_yaml(&keys(100), |_| {}).is_err());
}

/// A `kubectl get -o json` List (`items` before `kind`, as kubectl writes it).
fn list(items: &[String]) -> String {
    format!(
        "{{\n  \"apiVersion\": \"v1\",\n  \"items\": [\n{}\n  ],\n  \"kind\": \"List\",\n  \"metadata\": {{}}\n}}\n",
        items.join(",\n")
    )
}

fn namespace(i: usize) -> String {
    format!(
        "    {{\"apiVersion\": \"v1\", \"kind\": \"Namespace\", \"metadata\": {{\"name\": \"n{i}\", \"labels\": {{\"i\": \"{i}\"}}}}}}"
    )
}

#[test]
fn list_items_are_handed_over_one_by_one() {
    for n in [1, 10, 100] {
        let text = list(&(0..n).map(namespace).collect::<Vec<_>>());
        let parts = parts(&text).unwrap();
        assert_eq!(parts.len(), n + 1);
        for (i, p) in parts[..n].iter().enumerate() {
            // One item at a time: never more than one object's tree.
            let Part::Item { document: 0, index, value } = p else { panic!("{p:?}") };
            assert_eq!((*index, value["metadata"]["name"].as_str()), (i, Some(&*format!("n{i}"))));
        }
        let Part::Document { document: 0, value, streamed: Some(s) } = &parts[n] else { panic!() };
        assert_eq!((*s, &value["items"], &value["kind"]), (n, &json!([]), &json!("List")));
        let mut inputs = Inputs::default();
        load_text(Path::new("t.json"), &text, &mut inputs).unwrap();
        assert_eq!(inputs.namespace_labels.len(), n);
    }
    // A document whose kind, read first, is not a List keeps its `items` as a field.
    let parts = parts("kind: Foo\nitems: [1, 2]\n").unwrap();
    assert_eq!(
        parts,
        [Part::Document {
            document: 0,
            value: json!({"kind": "Foo", "items": [1, 2]}),
            streamed: None
        }]
    );
    // One whose kind comes after: the items were read apart and are dropped, with a warning.
    let mut inputs = Inputs::default();
    let text =
        format!("items:\n- {}\nkind: Namespace\nmetadata: {{name: real}}\n", namespace(7).trim());
    load_text(Path::new("t.yaml"), &text, &mut inputs).unwrap();
    assert_eq!(inputs.namespace_labels.keys().collect::<Vec<_>>(), ["real"]);
    assert!(inputs.warnings.iter().any(|w| w.contains("t.yaml, document 0: the 1 top-level items of a kind \"Namespace\" object (not a List) are ignored")), "{:?}", inputs.warnings);
}

#[test]
fn errors_inside_a_list_name_the_item() {
    let mut items: Vec<String> = (0..20).map(namespace).collect();
    items[12] = "    {\"kind\": \"Gateway\", \"metadata\": {\"name\": \"g\"}, \"spec\": {\"listeners\": [{\"name\": \"a\", \"port\": 0, \"protocol\": \"HTTP\"}]}}".into();
    let text = format!("kind: Namespace\nmetadata: {{name: first}}\n---\n{}", list(&items));
    // The Gateway is refused (the others are read), its error naming the item.
    let mut inputs = Inputs::default();
    load_text(Path::new("t.json"), &text, &mut inputs).unwrap();
    assert_eq!(inputs.namespace_labels.len(), 20);
    assert_eq!(inputs.refused.len(), 1);
    let e = &inputs.refused[0].error;
    assert!(
        e.to_string().starts_with("t.json, document 1, items[12], spec.listeners[0].port: "),
        "{e}"
    );
    assert_eq!((e.document, e.item), (Some(1), Some(12)));
    assert!(
        inputs.warnings.iter().any(|w| w.starts_with(
            "Gateway default/g is refused as the API server refuses it: t.json, document 1, \
             items[12], spec.listeners[0].port: "
        )),
        "{:?}",
        inputs.warnings
    );
    // A route refused inside a List: its warning names the item too.
    items[12] = "    {\"kind\": \"HTTPRoute\", \"metadata\": {\"name\": \"r\"}, \"spec\": {\"hostnames\": [\"Bad_Host\"]}}".into();
    let mut inputs = Inputs::default();
    load_text(Path::new("t.json"), &list(&items), &mut inputs).unwrap();
    assert_eq!(inputs.rejected.len(), 1);
    assert_eq!(
        inputs.rejected[0].error.to_string(),
        "t.json, document 0, items[12], spec.hostnames[0]: invalid hostname \"Bad_Host\""
    );
}

#[test]
fn characters_across_the_parsers_input_buffer_are_read_whole() {
    // The parser decodes 64 KiB at a time: 2- and 4-byte characters straddle its edges.
    for pad in 0..4 {
        let value = format!("{}{}", "a".repeat(pad), "é😀".repeat(40_000));
        let doc = documents(&format!("k: \"{value}\"\n")).unwrap();
        assert_eq!(doc, vec![json!({ "k": value })]);
    }
    assert!(read_yaml("k: \"\u{1}\"\n", |_| {}).is_err());
}

/// Input on which libyaml-safer 0.3 panics (found by the `json` fuzz target) is a refusal of
/// the file, with a message, never a crash of the run (main 4762b21: `generate` panicked).
#[test]
fn input_the_parser_gives_up_on_is_refused_not_a_crash() {
    for text in ["[!a,]", "{\"a\": \"x\\", "|\n \n !:\n !:\n !"] {
        let mut inputs = Inputs::default();
        let got = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            load_text(Path::new("p.yaml"), text, &mut inputs)
        }));
        let Ok(result) = got else { panic!("{text:?}: the loader panicked") };
        if let Err(e) = result {
            assert!(e.to_string().contains("p.yaml"), "{text:?}: {e}");
        }
    }
}
