//! Per-worker cache of compiled `$http_matches` values (blog-era NGF).
//!
//! A value is parsed and compiled at most once per worker per distinct (syntax, value) while it
//! stays in the cache; later requests with the same value reuse it. The cache is bounded in
//! bytes (`http_matches_var_cache`: the values plus their compiled lists, as
//! [`route_match::MatchList::memory`] counts them) and in count ([`MAX_VALUES`]). When a new value
//! does not fit, the least recently used values are evicted one by one until it does, so a
//! stream of distinct values never pushes out the value that every other request uses. A
//! value whose compiled form alone is larger than the whole cache is compiled for its request
//! and not kept.
//!
//! Lookups first try the value's address: a `set $http_matches '<literal>'` value points into
//! the configuration, the same bytes at the same address for every request, so a hit costs a
//! hash of two integers and one comparison of the bytes (which guards against a reused
//! address). Only other values are hashed whole (SipHash: they may come from request data).
//! An NGINX worker runs handlers on one thread, so the cache is thread-local.

use core::cell::Cell;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use route_match::{Bounds, CompiledList, ParseError, Syntax};
use rustc_hash::FxHashMap;

/// The most distinct `$http_matches` values one worker keeps compiled, whatever their size.
pub(crate) const MAX_VALUES: usize = 1024;

/// A compiled value (or why it could not be used), with the value it came from.
pub(crate) struct Entry {
    /// Also the key of `Cache::by_value` (one copy of the value).
    source: Rc<[u8]>,
    pub(crate) compiled: Result<CompiledList, String>,
    /// Bytes this entry accounts for: the value and its compiled list.
    pub(crate) cost: usize,
    slot: usize,
    /// The cache's clock when it was last used.
    used: Cell<u64>,
}

#[derive(Default)]
struct Cache {
    /// Per syntax: value -> entry (one map per syntax, so a lookup borrows the value).
    by_value: [HashMap<Rc<[u8]>, Rc<Entry>>; 3],
    /// (syntax, address, length) -> entry; checked against `Entry::source`. FxHash: SipHash
    /// of the key cost ~280 instructions per request, and addresses are not chosen by clients.
    by_address: FxHashMap<(usize, usize, usize), Rc<Entry>>,
    /// The last hit by address, asked first: a location's `set $http_matches '<literal>'`
    /// gives the same address on every request. Checked against `Entry::source` like
    /// `by_address`; dropped when its entry is evicted.
    last: Option<((usize, usize, usize), Rc<Entry>)>,
    /// Sum of `cost` over `by_value`.
    bytes: usize,
    clock: u64,
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
    /// Compiled now and kept, after evicting `evicted` older values.
    Compiled {
        evicted: usize,
    },
    /// Compiled now, not kept: larger than the whole cache.
    Uncached,
}

/// The cache's state after a lookup, for log lines.
pub(crate) struct Stats {
    pub(crate) values: usize,
    pub(crate) bytes: usize,
}

impl Cache {
    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    fn len(&self) -> usize {
        self.by_value.iter().map(HashMap::len).sum()
    }

    /// Evicts the least recently used entry; `false` when there is none.
    fn evict_one(&mut self) -> bool {
        let oldest = self.by_value.iter().flat_map(HashMap::values).min_by_key(|e| e.used.get());
        let Some(victim) = oldest.cloned() else { return false };
        self.by_value[victim.slot].remove(&victim.source);
        self.by_address.retain(|_, e| !Rc::ptr_eq(e, &victim));
        if self.last.as_ref().is_some_and(|(_, e)| Rc::ptr_eq(e, &victim)) {
            self.last = None;
        }
        self.bytes -= victim.cost;
        true
    }

    fn stats(&self) -> Stats {
        Stats { values: self.len(), bytes: self.bytes }
    }
}

/// The compiled form of `value`, compiling it on first sight. `budget` is the most bytes the
/// worker's cache may hold.
pub(crate) fn get(
    syntax: Syntax,
    value: &[u8],
    budget: usize,
    bounds: Bounds,
) -> (Rc<Entry>, Lookup, Stats) {
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        let now = c.tick();
        let s = slot(syntax);
        let address = (s, value.as_ptr() as usize, value.len());
        if let Some((at, hit)) = &c.last
            && *at == address
            && *hit.source == *value
        {
            hit.used.set(now);
            let hit = hit.clone();
            return (hit, Lookup::Hit, c.stats());
        }
        if let Some(hit) = c.by_address.get(&address) {
            if *hit.source == *value {
                hit.used.set(now);
                let hit = hit.clone();
                c.last = Some((address, hit.clone()));
                return (hit, Lookup::Hit, c.stats());
            }
        }
        if let Some(hit) = c.by_value[s].get(value).cloned() {
            hit.used.set(now);
            // The address map only speeds up values that keep their address; values from
            // request memory get a new one each time, so it is emptied now and then.
            if c.by_address.len() >= MAX_VALUES {
                c.by_address.clear();
            }
            c.by_address.insert(address, hit.clone());
            return (hit, Lookup::Hit, c.stats());
        }
        let compiled = route_match::compile_list_within(value, syntax, bounds);
        // Out of memory says nothing about the value: never remembered.
        let transient = compiled.as_ref().is_err_and(ParseError::is_memory);
        let compiled = compiled.map_err(|e| e.to_string());
        let cost = value.len()
            + core::mem::size_of::<Entry>()
            + compiled.as_ref().map_or_else(String::len, |c| c.list.memory());
        let source: Rc<[u8]> = value.into();
        let entry =
            Rc::new(Entry { source: source.clone(), compiled, cost, slot: s, used: now.into() });
        if cost > budget || transient {
            return (entry, Lookup::Uncached, c.stats());
        }
        let mut evicted = 0;
        while (c.bytes + cost > budget || c.len() >= MAX_VALUES) && c.evict_one() {
            evicted += 1;
        }
        c.bytes += cost;
        c.by_value[s].insert(source, entry.clone());
        if c.by_address.len() >= MAX_VALUES {
            c.by_address.clear();
        }
        c.by_address.insert(address, entry.clone());
        (entry, Lookup::Compiled { evicted }, c.stats())
    })
}

/// Leaves every cached value allocated, for a worker that is exiting (see `MainConf`'s
/// `Drop`): freeing them would only dirty shared pages.
pub(crate) fn forget_all() {
    CACHE.with(|c| core::mem::forget(core::mem::take(&mut *c.borrow_mut())));
}
