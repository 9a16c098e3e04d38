//! Per-worker cache of compiled `$http_matches` values (blog-era NGF).
//!
//! A value is parsed and compiled at most once per worker per distinct (syntax, value); later
//! requests with the same value reuse it. The cache holds at most [`MAX_VALUES`] values; when a
//! new value would exceed that, the cache is emptied and starts over (logged at `notice`), so
//! memory stays bounded even if a configuration builds values from request data.
//!
//! Lookups first try the value's address: a `set $http_matches '<literal>'` value points into
//! the configuration, the same bytes at the same address for every request, so a hit costs a
//! hash of two integers and one comparison of the bytes (which guards against a reused
//! address). Only other values are hashed whole (SipHash: they may come from request data).
//! An NGINX worker runs handlers on one thread, so the cache is thread-local.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use route_match::{CompiledList, Syntax};
use rustc_hash::FxHashMap;

/// The most distinct `$http_matches` values one worker keeps compiled.
pub(crate) const MAX_VALUES: usize = 1024;

/// A compiled value (or why it could not be used), with the value it came from.
pub(crate) struct Entry {
    /// Also the key of `Cache::by_value` (one copy of the value).
    source: Rc<[u8]>,
    pub(crate) compiled: Result<CompiledList, String>,
}

#[derive(Default)]
struct Cache {
    /// Per syntax: value -> entry (one map per syntax, so a lookup borrows the value).
    by_value: [HashMap<Rc<[u8]>, Rc<Entry>>; 3],
    /// (syntax, address, length) -> entry; checked against `Entry::source`. FxHash: SipHash
    /// of the key cost ~280 instructions per request, and addresses are not chosen by clients.
    by_address: FxHashMap<(usize, usize, usize), Rc<Entry>>,
}

fn slot(syntax: Syntax) -> usize {
    match syntax {
        Syntax::Auto => 0,
        Syntax::Typed => 1,
        Syntax::Untyped => 2,
    }
}

thread_local! {
    static CACHE: RefCell<Cache> = RefCell::new(Cache::default());
}

/// What a lookup did, for logging.
pub(crate) enum Lookup {
    Hit,
    /// Compiled now; `true` when the cache was full and was emptied first.
    Compiled(bool),
}

/// The compiled form of `value`, compiling it on first sight.
pub(crate) fn get(syntax: Syntax, value: &[u8]) -> (Rc<Entry>, Lookup) {
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        let s = slot(syntax);
        let address = (s, value.as_ptr() as usize, value.len());
        if let Some(hit) = c.by_address.get(&address) {
            if *hit.source == *value {
                return (hit.clone(), Lookup::Hit);
            }
        }
        if let Some(hit) = c.by_value[s].get(value).cloned() {
            if c.by_address.len() >= MAX_VALUES {
                c.by_address.clear();
            }
            c.by_address.insert(address, hit.clone());
            return (hit, Lookup::Hit);
        }
        let flushed = c.by_value.iter().map(HashMap::len).sum::<usize>() >= MAX_VALUES;
        if flushed {
            c.by_value.iter_mut().for_each(HashMap::clear);
            c.by_address.clear();
        }
        let compiled = route_match::compile_list(value, syntax).map_err(|e| e.to_string());
        let source: Rc<[u8]> = value.into();
        let entry = Rc::new(Entry { source: source.clone(), compiled });
        c.by_value[s].insert(source, entry.clone());
        c.by_address.insert(address, entry.clone());
        (entry, Lookup::Compiled(flushed))
    })
}
