//! Arbitrary bytes as a match list and as a whole matches.json, in every syntax mode: parsing
//! and compiling never panic, and whatever compiles can be evaluated.

#![no_main]

use libfuzzer_sys::fuzz_target;
use route_match::{RequestView, Syntax, compile_file, compile_list};

struct Probe;

impl RequestView for Probe {
    fn method(&self) -> &[u8] {
        b"GET"
    }
    fn headers(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        [(&b"version"[..], &b"v2, v3"[..]), (b"x", b"abc")].into_iter()
    }
    fn query(&self) -> &[u8] {
        b"TEST=v2&a=%41+b"
    }
    fn path(&self) -> &[u8] {
        b"/coffee/v2"
    }
}

fuzz_target!(|data: &[u8]| {
    // The first byte picks the syntax mode, so one input does not pay for three parses.
    let (mode, text) = match data.split_first() {
        Some((m, rest)) => (m % 3, rest),
        None => (0, data),
    };
    let syntax = [Syntax::Auto, Syntax::Typed, Syntax::Untyped][usize::from(mode)];
    if let Ok(c) = compile_list(text, syntax) {
        assert!(!c.list.is_empty(), "an empty list must be a parse error");
        let _ = c.list.evaluate(&Probe);
    }
    if let Ok(f) = compile_file(text, syntax) {
        assert!(f.distinct() <= f.len());
    }
});
