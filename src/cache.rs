//! Per-worker cache of compiled `$http_matches` values (blog-era NGF).
//!
//! A value is parsed and compiled at most once per worker per distinct (syntax, value); later
//! requests with the same value reuse it. The cache holds at most [`MAX_VALUES`] values; when a
//! new value would exceed that, the cache is emptied and starts over (logged at `notice`), so
//! memory stays bounded even if a configuration builds values from request data.
//! An NGINX worker runs handlers on one thread, so the cache is thread-local.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use route_match::{CompiledList, Syntax};

/// The most distinct `$http_matches` values one worker keeps compiled.
pub(crate) const MAX_VALUES: usize = 1024;

/// A compiled value, or why it could not be used.
pub(crate) type Cached = Result<CompiledList, String>;

/// One map per syntax, so a lookup borrows the value (`&[u8]`) without building a key.
type Maps = [HashMap<Box<[u8]>, Rc<Cached>>; 3];

thread_local! {
    static CACHE: RefCell<Maps> = RefCell::new(Default::default());
}

fn slot(syntax: Syntax) -> usize {
    match syntax {
        Syntax::Auto => 0,
        Syntax::Typed => 1,
        Syntax::Untyped => 2,
    }
}

/// What a lookup did, for logging.
pub(crate) enum Lookup {
    Hit,
    /// Compiled now; `true` when the cache was full and was emptied first.
    Compiled(bool),
}

/// The compiled form of `value`, compiling it on first sight.
pub(crate) fn get(syntax: Syntax, value: &[u8]) -> (Rc<Cached>, Lookup) {
    CACHE.with(|c| {
        let mut maps = c.borrow_mut();
        // A hit costs one hash of the value and no allocation.
        if let Some(hit) = maps[slot(syntax)].get(value) {
            return (hit.clone(), Lookup::Hit);
        }
        let flushed = maps.iter().map(HashMap::len).sum::<usize>() >= MAX_VALUES;
        if flushed {
            maps.iter_mut().for_each(HashMap::clear);
        }
        let compiled = Rc::new(route_match::compile_list(value, syntax).map_err(|e| e.to_string()));
        maps[slot(syntax)].insert(value.into(), compiled.clone());
        (compiled, Lookup::Compiled(flushed))
    })
}
