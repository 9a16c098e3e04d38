//! The JSON fast path (src/model/json.rs): a kubectl List is read without libyaml's parser, and
//! for any input the result is the YAML path's (parts, values, errors and their messages),
//! either read alike or, on a doubt, by falling back to the YAML path from the start.

use httproute_nginx::model::{KEY_SPAN, MAX_DEPTH, Part, read_json, read_yaml};
use proptest::prelude::*;

fn cases() -> u32 {
    std::env::var("HTTPROUTE_LOADER_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256)
}

/// The YAML path's parts, or its error message.
fn yaml(text: &str) -> Result<Vec<Part>, String> {
    let mut out = Vec::new();
    read_yaml(text, |p| out.push(p)).map_err(|e| e.message)?;
    Ok(out)
}

/// What `read_json` gives: the parts after its last fallback (or its error message), and
/// whether the JSON path gave them (no parser event counted, no fallback).
fn json(text: &str) -> (Result<Vec<Part>, String>, bool) {
    let (mut out, mut fell) = (Vec::new(), false);
    let read = read_json(text, |p| match p {
        Some(p) => out.push(p),
        None => (out, fell) = (Vec::new(), true),
    });
    match read {
        Ok(work) if work.events == 0 => {
            assert!(!fell && work.nodes > 0, "{text:?}");
            (Ok(out), true)
        }
        Ok(_) => (Ok(out), false),
        Err(e) => (Err(e.message), false),
    }
}

/// The JSON path's answer is the YAML path's; returns whether the JSON path gave it.
fn same(text: &str) -> bool {
    let (parts, fast) = json(text);
    assert_eq!(parts, yaml(text), "{text:?}");
    fast
}

/// A doubt: the YAML path answers.
fn doubt(text: &str) {
    assert!(!same(text), "the JSON path answered {text:?}");
}

/// A List as `kubectl get -A -o json` writes it: 4-space indents, `items` before `kind`,
/// HTML characters escaped (`\u003c`, `\u0026`), annotations holding escaped JSON.
fn kubectl_list(n: usize) -> String {
    let item = |i: usize| {
        format!(
            r#"        {{
            "apiVersion": "gateway.networking.k8s.io/v1",
            "kind": "HTTPRoute",
            "metadata": {{
                "annotations": {{
                    "kubectl.kubernetes.io/last-applied-configuration": "{{\"apiVersion\":\"v1\",\"x\":\"a\u003cb\u0026c\"}}\n"
                }},
                "generation": 1,
                "name": "r{i}",
                "namespace": "ns{i}",
                "resourceVersion": "{i}"
            }},
            "spec": {{
                "hostnames": ["h{i}.example.com"],
                "parentRefs": [{{"name": "gw", "namespace": "default"}}],
                "rules": [{{"backendRefs": [{{"name": "svc", "port": 8080, "weight": -1}}],
                    "matches": [{{"headers": [{{"name": "x", "value": "v"}}], "path": {{"type": "PathPrefix", "value": "/"}}}}]}}]
            }}
        }}"#
        )
    };
    let items: Vec<String> = (0..n).map(item).collect();
    format!(
        "{{\n    \"apiVersion\": \"v1\",\n    \"items\": [\n{}\n    ],\n    \"kind\": \"List\",\n    \"metadata\": {{\n        \"resourceVersion\": \"\"\n    }}\n}}\n",
        items.join(",\n")
    )
}

#[test]
fn a_kubectl_list_is_read_by_the_json_path_item_by_item() {
    // Past the 64 KiB the reader reads at a time.
    let text = kubectl_list(300);
    assert!(text.len() > 2 * (64 << 10));
    assert!(same(&text), "the JSON path fell back on kubectl's output");
    let parts = json(&text).0.unwrap();
    assert_eq!(parts.len(), 301);
    assert!(matches!(&parts[299], Part::Item { document: 0, index: 299, .. }));
    assert!(matches!(parts[300], Part::Document { streamed: Some(300), .. }));
}

#[test]
fn items_of_an_object_not_a_list_are_streamed_as_the_yaml_path_streams_them() {
    for text in [
        r#"{"items": [1, {"a": 2}], "kind": "Pod"}"#,
        r#"{"kind": "Pod", "items": [1, 2]}"#,
        r#"{"kind": 5, "items": [1]}"#,
        r#"{"items": {"a": [1]}, "kind": "List"}"#,
        r#"[{"items": [1]}]"#,
        r#"{"a": {"items": [1]}}"#,
    ] {
        assert!(same(text), "{text}");
    }
}

#[test]
fn surrogate_escapes_are_doubts() {
    doubt(r#"{"a": "\ud83d\ude00"}"#);
    doubt(r#"{"a": "\udc00"}"#);
    doubt(r#"{"\ud800": 1}"#);
    assert!(same(r#"{"a": "\u00e9\u2028\u0000\ufeff"}"#));
}

#[test]
fn a_key_far_from_its_colon_or_on_another_line_is_a_doubt() {
    let key = |n: usize| format!("{{\"{}\": 1}}", "k".repeat(n));
    doubt(&key(1100));
    doubt(&key(KEY_SPAN as usize));
    assert!(same(&key(KEY_SPAN as usize - 2)));
    doubt(&format!("{{\"a\"{}: 1}}", " ".repeat(1100)));
    doubt("{\"a\"\n: 1}");
    doubt("{\"a\"\r: 1}");
    // A value may be long, and on the next line.
    assert!(same(&format!("{{\"a\":\n\"{}\"}}", "v".repeat(3000))));
}

#[test]
fn numbers_other_than_integers_are_doubts() {
    doubt(r#"{"a": -0}"#);
    // serde_json's own parsing (no `float_roundtrip`) rounds this to 1.0.
    doubt(r#"[0.9999999999999999]"#);
    doubt(r#"[122.416294033786585]"#);
    doubt(r#"[1.5, 1e5, 2E-3, -0.0]"#);
    doubt(r#"[18446744073709551616]"#);
    doubt(r#"[-9223372036854775809]"#);
    assert!(same(r#"[0, -1, 18446744073709551615, -9223372036854775808]"#));
}

#[test]
fn a_key_given_twice_is_a_doubt() {
    doubt(r#"{"a": 1, "a": 1}"#);
    doubt(r#"{"items": [1], "kind": "List", "items": [2]}"#);
}

#[test]
fn nesting_near_the_limit_is_a_doubt() {
    let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    doubt(&deep(MAX_DEPTH + 1));
    doubt(&deep(MAX_DEPTH));
    assert!(same(&deep(MAX_DEPTH - 2)));
}

#[test]
fn bytes_other_than_printable_ascii_are_doubts() {
    for c in ['\u{85}', '\u{2028}', '\u{2029}', '\u{feff}', '\u{7f}', 'é'] {
        doubt(&format!("{{\"a\": \"x{c}y\"}}"));
        doubt(&format!("{{\"a\": 1}}{c}"));
    }
    doubt("{\"a\": 1}\n\t\n");
    doubt("{\"a\":\t1}");
}

#[test]
fn what_is_not_json_is_read_as_yaml() {
    doubt(r#"{"a": 1,}"#);
    doubt("{\"a\": 1} # a comment");
    doubt("[1]\n---\n[2]\n");
    doubt("{a: b}");
    doubt("[1, 2");
    doubt("{\"a\": 1}\n...\n");
    // White space outside strings reaches serde_json as one space: never joins two tokens.
    doubt("[1 2]");
    doubt("[1\n\n    2]");
    doubt("[tr ue]");
    assert!(same(&format!("{{\"a\":{}1}}", " \n".repeat(70000))));
    assert!(same("\n  \r\n{\"a\": [true, false, null, \"1\"]}\n\n"));
}

/// One JSON-ish text, most of it valid JSON, with the doubt cases among its pieces.
fn text() -> impl Strategy<Value = String> {
    let string = prop::collection::vec(
        prop::sample::select(vec![
            "a",
            "kind",
            "items",
            " ",
            "#",
            ":",
            "\\n",
            "\\\"",
            "\\\\",
            "\\/",
            "\\b",
            "\\f",
            "\\u0041",
            "\\u00e9",
            "\\u2028",
            "\\ud83d\\ude00",
            "\\udfff",
            "\u{85}",
            "\u{2028}",
            "é",
            "\u{7f}",
            "\t",
            "'",
            "&",
            "*",
            "!",
            "---",
        ]),
        0..4,
    )
    .prop_map(|p| format!("\"{}\"", p.concat()));
    let number = prop::sample::select(vec![
        "0",
        "-0",
        "1",
        "-1",
        "1.5",
        "0.9999999999999999",
        "1e5",
        "-0.0",
        "1E400",
        "0.1",
        "18446744073709551615",
        "18446744073709551616",
        "-9223372036854775808",
        "-9223372036854775809",
        "007",
    ]);
    let leaf = prop_oneof![
        string.clone(),
        number.prop_map(str::to_owned),
        prop::sample::select(vec!["true", "false", "null", "\"List\"", "\"Pod\""])
            .prop_map(str::to_owned),
    ];
    let key = prop_oneof![
        4 => prop::sample::select(vec!["\"a\"", "\"kind\"", "\"items\"", "\"b\""]).prop_map(str::to_owned),
        1 => string,
        1 => (KEY_SPAN as usize - 4..KEY_SPAN as usize + 30).prop_map(|n| format!("\"{}\"", "k".repeat(n))),
    ];
    let ws = prop::sample::select(vec!["", "", " ", "\n", "\n    ", "\r\n", "\t"]);
    let value = leaf.prop_recursive(4, 32, 4, move |inner| {
        prop_oneof![
            prop::collection::vec((ws.clone(), inner.clone()), 0..4).prop_map(|v| {
                let v: Vec<String> = v.into_iter().map(|(w, x)| format!("{w}{x}")).collect();
                format!("[{}]", v.join(","))
            }),
            prop::collection::vec((key.clone(), ws.clone(), inner), 0..4).prop_map(|m| {
                let m: Vec<String> = m.into_iter().map(|(k, w, v)| format!("{k}{w}:{v}")).collect();
                format!("{{{}}}", m.join(", "))
            }),
        ]
    });
    let tail = prop::sample::select(vec!["", "", "\n", " ", ",", "\n---\n{}", "#", "\t", "]"]);
    (0..MAX_DEPTH + 4, value, tail).prop_map(|(depth, v, tail)| {
        // Most texts shallow, some around the depth limit.
        let d = if depth < MAX_DEPTH - 8 { 0 } else { depth - 1 };
        format!("{}{v}{}{tail}", "[".repeat(d), "]".repeat(d))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    /// For any input, the JSON path falls back or yields exactly the YAML path's parts (or
    /// its error message).
    #[test]
    fn the_json_path_reads_as_the_yaml_path_or_falls_back(text in text()) {
        same(&text);
    }
}

/// A JSON file given as a pipe (`-f /dev/stdin`, a FIFO) cannot be read again: a doubt in it
/// (here a non-ASCII byte in one object's annotation) must not fail the run. Review rv: the
/// JSON path rewound the input and the run was refused with "Illegal seek".
#[test]
fn a_piped_json_file_with_a_doubt_is_read_by_the_yaml_path() {
    let dir = std::env::temp_dir().join(format!("json-input-fifo-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("routes.json");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let labelled = "\"generation\": 1, \"labels\": {\"a\": \"café\"},";
    let text = kubectl_list(3).replacen("\"generation\": 1,", labelled, 1);
    assert!(!text.is_ascii());
    let writer = {
        let (fifo, text) = (fifo.clone(), text.clone());
        std::thread::spawn(move || std::fs::write(fifo, text).unwrap())
    };
    let inputs = httproute_nginx::model::load(std::slice::from_ref(&fifo));
    writer.join().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let inputs = inputs.map_err(|e| e.to_string()).unwrap();
    assert_eq!(inputs.routes.len() + inputs.rejected.len(), 3);
}
