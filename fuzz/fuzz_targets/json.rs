//! The JSON fast path (crates/httproute-nginx/src/model/json.rs) against the YAML path on any
//! text: it falls back to the YAML path, or it hands over exactly the YAML path's parts
//! without a parser event; an error is always the YAML path's.

#![no_main]

use httproute_nginx::model::{Part, read_json, read_yaml};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let mut yaml = Vec::new();
    let yaml = read_yaml(text, |p| yaml.push(p)).map(|_| yaml).map_err(|e| e.message);
    let (mut json, mut fell) = (Vec::<Part>::new(), false);
    let read = read_json(text, |p| match p {
        Some(p) => json.push(p),
        None => (json, fell) = (Vec::new(), true),
    });
    if let (Ok(work), false) = (&read, fell) {
        assert_eq!(work.events, 0, "the JSON path counted parser events");
    }
    assert_eq!(read.map(|_| json).map_err(|e| e.message), yaml, "{text:?}");
});
