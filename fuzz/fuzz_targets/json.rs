//! The JSON fast path (crates/httproute-nginx/src/model/json.rs) against the YAML path on any
//! text: it falls back to the YAML path (or reads with it from the start: not JSON), or it
//! hands over exactly the YAML path's parts without a parser event; an error is always the
//! YAML path's, a refusal where libyaml-safer panics (`[!a,]`, a text ending `"a\`, a block
//! scalar of `!:` lines: the loader catches the parser's panic, model/yaml.rs).

#![no_main]

use httproute_nginx::model::{Part, read_json, read_yaml};
use libfuzzer_sys::fuzz_target;

fuzz_target!(
    init: {
        // libFuzzer's panic hook aborts before a panic unwinds: libyaml-safer's go on to the
        // loader's catch; any other panic aborts here (a finding).
        let abort = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !info.location().is_some_and(|l| l.file().contains("libyaml-safer")) {
                abort(info);
            }
        }));
    },
    |data: &[u8]| {
        if let Ok(text) = std::str::from_utf8(data) {
            agree(text);
        }
    }
);

/// The JSON path's parts (or error) are the YAML path's.
fn agree(text: &str) {
    let mut yaml = Vec::new();
    let yaml = read_yaml(text, |p| yaml.push(p)).map(|_| yaml).map_err(|e| e.message);
    let (mut json, mut fell) = (Vec::<Part>::new(), false);
    let read = read_json(text, |p| match p {
        Some(p) => json.push(p),
        None => (json, fell) = (Vec::new(), true),
    });
    // No parser event: the JSON path answered, and did not fall back first.
    if read.as_ref().is_ok_and(|w| w.events == 0) {
        assert!(!fell && !json.is_empty(), "{text:?}");
    }
    assert_eq!(read.map(|_| json).map_err(|e| e.message), yaml, "{text:?}");
}
