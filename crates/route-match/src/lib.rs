//! NGINX Gateway Fabric match lists, natively.
//!
//! A *match list* is the JSON array that NGF's `httpmatches.js` evaluates: entries with
//! `method`, `headers`, `params`, `any` and `redirectPath`. This crate parses such lists (one
//! inline list, or a whole `matches.json` object of key -> list), compiles them once
//! ([`MatchList`]), and evaluates a request against a compiled list ([`MatchList::evaluate`]):
//! the first entry the request satisfies wins.
//!
//! The crate knows nothing about NGINX: a request is seen through [`RequestView`] (method bytes,
//! header lines in arrival order, raw query bytes). Semantics are those of the README's
//! "Match lists" section (this repository's reference for them):
//! - header names compare case-insensitively; a header condition holds on any whole line value
//!   or any OWS-trimmed comma element of any line with that name;
//! - a param condition uses the first occurrence of the (decoded) name; empty counts as absent;
//! - regular expressions are PCRE2 (the dialect of njs and `location ~`), unanchored, with a
//!   bounded amount of work per match;
//! - a malformed entry compiles into "error when reached", with a warning at compile time.
//!
//! Beside the lists, [`vhost`] is NGINX's choice of a server for a host name on one listen
//! socket, which the module's `http_matches_fallback` checks its chains with at load.

#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

mod bytes;
mod compile;
mod directive;
mod eval;
mod file;
mod include;
mod index;
mod parse;
mod pattern;
mod prefilter;
mod query;
pub mod regex_cache;
mod store;
pub mod var_cache;
pub mod vhost;

pub use bytes::{decimal, escape, small_decimal};
pub use compile::{Bounds, CompiledFile, CompiledList, FileError, Warning, bound_text};
pub use directive::{is_empty_list, memory_args, split_syntax};
pub use eval::{DEFAULT_REGEX_BUDGET, EvalError, Forward, MatchList, Outcome, RequestView, Work};
pub use include::{flatten, flatten_text};
pub use parse::{INCLUDE, ParseError, Syntax};
pub use pattern::{ATTEMPT_MAX_CHARGE, DEFAULT_PATTERN_MEMORY, MATCH_LIMIT, PROBES, Pattern};

/// The most a list's parse and compile allocate at once per byte of its JSON, besides
/// [`LIST_BYTES_PER_ENTRY`] per element and [`LIST_BYTES_PER_PARSE`]: the entry being parsed
/// (the fields the compile reads: no JSON tree is built), the strings, conditions and regex
/// code of the compiled form, a malformed value as its warning shows it. A list whose
/// estimate does not fit in what is left of its bound is refused before it is parsed.
/// Measured worst (`tests/parse_estimate.rs`, `the_factor_covers_every_shape`, with the other
/// two constants as they are; each constant keeps a third more): 13.7, 3,000 NGF-shaped
/// entries (a regex and an exact header, a param, a method; PCRE2's code counted); 15.7, one
/// entry of 2^k + 1 short conditions (`conditions_just_past_a_doubling_are_within_the_estimate`:
/// 19.0 while its condition lists grew by doubling).
/// It was 192 while serde_json's tree of the whole list was built first (~143 per byte for
/// one-key objects nested in an unknown field), which refused a 1.35 MB list of 10,000 such
/// entries under the default 128 MiB.
pub const LIST_BYTES_PER_JSON_BYTE: usize = 18;

/// The most a list's parse and compile allocate per element (an entry, or an include, counted
/// by a first pass before the list is parsed): its compiled entry, its slots in the index
/// arrays, one warning and its message. Measured worst: 182, a list of `0`s (each a malformed
/// entry and a warning, 2 bytes of JSON).
pub const LIST_BYTES_PER_ENTRY: usize = 240;

/// What a list's parse and compile may allocate besides its bytes and elements: the first
/// sizes of the compiled form's tables, one regex's analysis. Measured worst: 8,079, one
/// NGF-shaped entry.
pub const LIST_BYTES_PER_PARSE: usize = 10_752;

/// The most the compiled lists hold per byte of their JSON, past [`LIST_RESIDENT_BYTES_PER_LIST`]
/// per list (each key of a file, each inline list) and besides their regex conditions' own
/// memory (PCRE2's code, the prefilter's share: bounded per pattern apart), as the module
/// counts them against `http_matches_max_memory`: once compiled (the scope's bytes, or
/// `memory()`, whichever is more), and while a file is compiled besides the list being parsed
/// (its estimate, [`LIST_BYTES_PER_JSON_BYTE`] and the rest: the first pass's keys and the arrays sized from
/// them are alive through the second pass). The generator budgets the lists' memory with
/// them. Measured worst (`tests/resident.rs`, the shapes the generator writes): 1.65 per byte
/// past 512 a list.
pub const LIST_RESIDENT_BYTES_PER_JSON_BYTE: usize = 2;
/// What each list (a key of `matches.json`: ~430 bytes at the file's peak, its part of the
/// first pass's set of keys; an inline list: its list, store and their headers, ~300-420
/// bytes) holds besides its entries.
pub const LIST_RESIDENT_BYTES_PER_LIST: usize = 512;
/// What each include of a list of includes (`{"include":"<key>"}`, 48 bytes of JSON in a
/// generated file) holds once compiled, instead of [`LIST_RESIDENT_BYTES_PER_JSON_BYTE`] per
/// byte of it: a file of many long lists of includes peaks at ~4.2 bytes per byte of its
/// JSON while compiled, 167 bytes an include past the rest of the model measured
/// (`tests/resident.rs` `lists_of_includes_are_within_the_model`: 1 to 600 includes a list).
pub const LIST_RESIDENT_BYTES_PER_INCLUDE: usize = 256;

/// Parses and compiles one match list (a JSON array), e.g. an inline `http_matches` argument or
/// a `$http_matches` value.
pub fn compile_list(json: &[u8], syntax: Syntax) -> Result<CompiledList, ParseError> {
    compile::compile_list(json, syntax, Bounds::default())
}

/// [`compile_list`] within `bounds`: running out of memory (or over `bounds.memory`) is an
/// error ([`ParseError::is_memory`]), a pattern over `bounds.pattern` a malformed entry.
pub fn compile_list_within(
    json: &[u8],
    syntax: Syntax,
    bounds: Bounds,
) -> Result<CompiledList, ParseError> {
    compile::compile_list(json, syntax, bounds)
}

/// Parses and compiles a whole NGF `matches.json` (a JSON object: key -> match list).
/// Identical lists (NGF writes one copy per hostname) are compiled once and shared.
pub fn compile_file(json: &[u8], syntax: Syntax) -> Result<CompiledFile, ParseError> {
    file::compile_file(json, syntax, Bounds::default())
}

/// [`compile_file`] within `bounds` (see [`compile_file_at_within`]): running out of memory, or
/// needing more than `bounds.memory`, is an error ([`ParseError::is_memory`]).
pub fn compile_file_within(
    json: &[u8],
    syntax: Syntax,
    bounds: Bounds,
) -> Result<CompiledFile, ParseError> {
    file::compile_file(json, syntax, bounds)
}

/// [`compile_file`] reading the file as it parses it (a buffer at a time), so the whole text is
/// never held in memory next to its compiled form (NGINX compiles `http_matches_load` files in
/// the master at every reload, while the previous configuration is still alive).
pub fn compile_file_at(path: &std::path::Path, syntax: Syntax) -> Result<CompiledFile, FileError> {
    file::compile_path(path, syntax, Bounds::default())
}

/// [`compile_file_at`] within `bounds`: running out of memory, or needing more than
/// `bounds.memory`, is [`FileError::Memory`] (never an abort: see `alloc_meter`); a
/// pattern over `bounds.pattern` is a malformed entry.
pub fn compile_file_at_within(
    path: &std::path::Path,
    syntax: Syntax,
    bounds: Bounds,
) -> Result<CompiledFile, FileError> {
    file::compile_path(path, syntax, bounds)
}

/// [`compile_file_at_within`] from any source of a file's text: `open` gives a reader of the
/// text from its start, once for each of the two passes (and a third time, for at most `len()`
/// bytes, to place a syntax error exactly). A text that changes between the passes is never
/// parsed past what the first pass found: a list longer than it was is refused
/// ([`FileError::Io`]: "the file changed while it was read"), within `bounds.memory`.
pub fn compile_file_from_within<R: std::io::Read>(
    open: impl FnMut() -> std::io::Result<R>,
    len: impl FnOnce() -> std::io::Result<u64>,
    syntax: Syntax,
    bounds: Bounds,
) -> Result<CompiledFile, FileError> {
    file::compile_source(open, len, syntax, bounds)
}
