//! Per-worker cache of compiled `$http_matches` values (blog-era NGF), kept by content: the
//! NGINX module's, with no NGINX type in it (it asks [`get`] with the value's bytes).
//!
//! A value is parsed and compiled at most once per worker per distinct (syntax, value) while it
//! stays in the cache. `$http_matches` is only ever set by the configuration (`set`, `map`: a
//! client's `Matches:` header is refused), so its distinct values are the configuration's, unless
//! an operator pastes request data into one. The cache is bounded in bytes
//! (`http_matches_var_cache`: each value, its compiled list as [`crate::MatchList::memory`]
//! counts it, and [`SLOT`] for the cache's own bookkeeping), which also bounds the count. Its
//! policy is quick_cache's S3-FIFO: a new value enters a small queue and reaches the main one only
//! when it is asked for again (while in that queue, or while its hash is among the ghosts of
//! recently evicted values), so a stream of one-off values cannot evict the values that many
//! requests use. A value whose compiled form does not fit is compiled for its request and not
//! kept. Keys are hashed with SipHash (std's `RandomState`: values may carry client bytes).
//!
//! A hit costs no hash of the value: a table of [`HINTS`] slots maps the value's (address,
//! length, syntax) to its SipHash, and the cache compares the bytes. A `set $http_matches
//! '<literal>'` or a `map`'s constant value lies at the same address on every request, and a
//! copy in the request's pool usually does too. A stale hint costs a miss of the hint only: the
//! bytes are always compared. An NGINX worker runs handlers on one thread, so the cache is
//! thread-local. Before all of this, a location asks its own last value ([`Kept`]), which
//! skips the thread-local cache and the request's header scan.

use core::hash::{BuildHasher, Hash, Hasher};
use std::cell::{Cell, RefCell};
use std::hash::RandomState;
use std::rc::{Rc, Weak};

use crate::compile::{Bounds, CompiledList};
use crate::parse::{ParseError, Syntax};
use quick_cache::{Equivalent, Lifecycle, Weighter};
use rustc_hash::FxBuildHasher;

/// Slots of the address hint table (a power of two; a few KiB per worker).
const HINTS: usize = 256;

/// Bytes charged per value for the cache's own bookkeeping (its key, slab entry and table
/// slot): an estimate, so that the byte bound also bounds the count.
const SLOT: usize = core::mem::size_of::<Key>() + 64;

/// A compiled value (or why it could not be used).
pub struct Entry {
    /// The value (shared with its key).
    source: Rc<[u8]>,
    /// The compiled list, or the value's refusal as text.
    pub compiled: Result<CompiledList, String>,
    /// Bytes this entry accounts for: the value, its compiled list and [`SLOT`].
    pub cost: usize,
}

/// A location's last value the cache took: its (address, length) and a weak reference to its
/// entry. The cache stays the entry's only owner, so `http_matches_var_cache` bounds the lists
/// whatever the locations keep: an evicted entry leaves a location only its `Rc` allocation
/// (the value and compiled list are freed), one per location. A `set $http_matches
/// '<literal>'` lies at the same address on every request, and so, in a steady layout, does a
/// copy in the request's pool.
#[derive(Default)]
pub struct Kept {
    at: Cell<(usize, usize)>,
    entry: Cell<Weak<Entry>>,
}

impl Kept {
    /// The entry of `value` when it is this location's last value, still in the cache: the
    /// same address and length, and the same bytes (compared, as another request's memory may
    /// hold other bytes there).
    #[inline]
    pub fn get(&self, value: &[u8]) -> Option<Rc<Entry>> {
        if self.at.get() != (value.as_ptr() as usize, value.len()) {
            return None;
        }
        let weak = self.entry.take();
        let entry = weak.upgrade();
        self.entry.set(weak);
        entry.filter(|e| *e.source == *value)
    }

    /// Keeps `entry`, which the cache holds, as this location's last value.
    pub fn keep(&self, value: &[u8], entry: &Rc<Entry>) {
        self.at.set((value.as_ptr() as usize, value.len()));
        self.entry.set(Rc::downgrade(entry));
    }
}

/// A cached value: its SipHash (under the worker's keys), its syntax and its bytes. Its `Hash`
/// writes the SipHash only, so the cache's own table hashes a `u64`.
struct Key {
    hash: u64,
    syntax: u8,
    value: Rc<[u8]>,
}

/// A lookup of a value the request holds, without copying it.
struct Probe<'a> {
    hash: u64,
    syntax: u8,
    value: &'a [u8],
}

impl Hash for Key {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

impl Hash for Probe<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash && self.syntax == other.syntax && self.value == other.value
    }
}

impl Eq for Key {}

impl Equivalent<Key> for Probe<'_> {
    fn equivalent(&self, key: &Key) -> bool {
        self.hash == key.hash && self.syntax == key.syntax && *self.value == *key.value
    }
}

/// Weighs a value by its [`Entry::cost`] (never 0: 0 would make it unevictable).
#[derive(Clone)]
struct Cost;

impl Weighter<Key, Rc<Entry>> for Cost {
    fn weight(&self, _key: &Key, entry: &Rc<Entry>) -> u64 {
        entry.cost.max(1) as u64
    }
}

/// Counts the values an insert evicted (for the compile's log line).
#[derive(Clone, Default)]
struct Evictions;

impl Lifecycle<Key, Rc<Entry>> for Evictions {
    type RequestState = usize;

    fn on_evict(&self, evicted: &mut usize, _key: Key, _entry: Rc<Entry>) {
        *evicted += 1;
    }
}

/// (address, length, syntax) of a value last looked up in a slot, and its SipHash.
#[derive(Clone, Copy, Default)]
struct Hint {
    at: usize,
    len: usize,
    syntax: u8,
    hash: u64,
}

struct Cache {
    values: quick_cache::unsync::Cache<Key, Rc<Entry>, Cost, FxBuildHasher, Evictions>,
    /// `http_matches_var_cache` the cache was made for.
    budget: usize,
    keys: RandomState,
    hints: Box<[Hint; HINTS]>,
}

/// Bytes a ghost (the hash of a recently evicted value) takes in the cache: its slab entry and
/// table slot, as for a value ([`SLOT`]).
const GHOST: usize = 72;

impl Cache {
    /// A cache of `budget` bytes: one ghost for every 512 bytes (a value asked for again within
    /// that many new values is taken into the main queue: more than the values the cache can
    /// hold, at 700 bytes or more each), their bytes taken from the budget (about 14 %).
    fn new(budget: usize) -> Cache {
        let ghosts = (budget / 512).clamp(16, 1 << 16);
        let weight = budget.saturating_sub(ghosts * GHOST).max(1);
        // quick_cache keeps half its estimated item count as ghosts; nothing is allocated ahead.
        let values = quick_cache::unsync::Cache::with(
            2 * ghosts,
            weight as u64,
            Cost,
            FxBuildHasher,
            Evictions,
        );
        Cache {
            values,
            budget,
            keys: RandomState::new(),
            hints: Box::new([Hint::default(); HINTS]),
        }
    }
}

/// The hint slot of (address, length, syntax): a multiplicative hash of the three.
fn hint_slot(at: usize, len: usize, syntax: u8) -> usize {
    let mixed = (at as u64) ^ (len as u64).rotate_left(32) ^ u64::from(syntax);
    (mixed.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - HINTS.trailing_zeros())) as usize
}

thread_local! {
    static CACHE: RefCell<Option<Cache>> = const { RefCell::new(None) };
}

/// What a lookup did, for logging.
pub enum Lookup {
    /// Found in the cache.
    Hit,
    /// Compiled now and kept, after evicting `evicted` values; the cache then holds `values`
    /// values, `bytes` bytes.
    Compiled {
        /// Values evicted to make room.
        evicted: usize,
        /// Values the cache holds now.
        values: usize,
        /// Bytes the cache holds now.
        bytes: usize,
    },
    /// Compiled now, not kept: larger than the cache takes.
    Uncached,
}

impl Lookup {
    /// The log line of this lookup of `value` (`entry` its result, `budget`
    /// `http_matches_var_cache`): `None` for a hit, and for a value refused for memory (the
    /// request's error says so). Nothing is formatted (nor the value hashed) until the line is
    /// written ([`LogLine`]'s `Display`), so a level that is off costs nothing.
    pub fn log_line<'a>(
        &'a self,
        value: &'a [u8],
        entry: &Entry,
        budget: usize,
    ) -> Option<LogLine<'a>> {
        let warn = match self {
            Lookup::Hit => return None,
            Lookup::Uncached if entry.compiled.is_err() => return None,
            Lookup::Compiled { .. } => false,
            Lookup::Uncached => true,
        };
        Some(LogLine { lookup: self, value, cost: entry.cost, budget, warn })
    }
}

/// A lookup's log line ([`Lookup::log_line`]). The value may come from a client: only its
/// length and [`fingerprint`] are said.
pub struct LogLine<'a> {
    lookup: &'a Lookup,
    value: &'a [u8],
    cost: usize,
    budget: usize,
    /// A warning (a value over the cache's budget), else an info line.
    pub warn: bool,
}

impl core::fmt::Display for LogLine<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let (n, cost, budget, fp) =
            (self.value.len(), self.cost, self.budget, fingerprint(self.value));
        match self.lookup {
            Lookup::Compiled { evicted, values, bytes } => write!(
                f,
                "compiled a $http_matches value of {n} bytes ({cost} bytes counted, \
                 fingerprint {fp:016x}); {evicted} evicted, the cache holds {values} values, \
                 {bytes} bytes"
            ),
            _ => write!(
                f,
                "a $http_matches value of {n} bytes compiles to {cost} bytes, more than \
                 http_matches_var_cache ({budget}): compiled for this request only \
                 (fingerprint {fp:016x})"
            ),
        }
    }
}

/// The compiled form of `value`, compiling it on first sight (charged to this request: the
/// compile runs under `bounds`). `budget`: `http_matches_var_cache`.
pub fn get(syntax: Syntax, value: &[u8], budget: usize, bounds: Bounds) -> (Rc<Entry>, Lookup) {
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        let c = match &mut *c {
            Some(c) if c.budget == budget => c,
            // The first request, or a reload in a single process that changed the budget.
            other => other.insert(Cache::new(budget)),
        };
        let s = syntax as u8;
        let (at, len) = (value.as_ptr() as usize, value.len());
        let h = hint_slot(at, len, s);
        let hint = c.hints[h];
        let mut found = None;
        if hint.at == at && hint.len == len && hint.syntax == s {
            found = c.values.get(&Probe { hash: hint.hash, syntax: s, value }).cloned();
        }
        let hash = if found.is_some() { hint.hash } else { c.keys.hash_one((s, value)) };
        if found.is_none() {
            c.hints[h] = Hint { at, len, syntax: s, hash };
            found = c.values.get(&Probe { hash, syntax: s, value }).cloned();
        }
        if let Some(hit) = found {
            return (hit, Lookup::Hit);
        }
        let compiled = crate::compile::compile_list(value, syntax, bounds);
        // Out of memory says nothing about the value: never remembered.
        let transient = compiled.as_ref().is_err_and(ParseError::is_memory);
        let compiled = compiled.map_err(|e| e.to_string());
        let cost =
            SLOT + value.len() + compiled.as_ref().map_or_else(String::len, |c| c.list.memory());
        let cost = cost + core::mem::size_of::<Entry>();
        let source: Rc<[u8]> = value.into();
        let entry = Rc::new(Entry { source: source.clone(), compiled, cost });
        if cost > budget || transient {
            return (entry, Lookup::Uncached);
        }
        let mut evicted = 0;
        let key = Key { hash, syntax: s, value: source };
        c.values.insert_with_lifecycle(key, entry.clone(), &mut evicted);
        // The cache refuses a value larger than its main queue (97 % of the budget) and
        // reports it as evicted: then only this request holds it.
        if Rc::strong_count(&entry) == 1 {
            return (entry, Lookup::Uncached);
        }
        let (values, bytes) = (c.values.len(), c.values.weight() as usize);
        (entry, Lookup::Compiled { evicted, values, bytes })
    })
}

/// Leaves every cached value allocated, for a worker that is exiting (the module's `MainConf`
/// `Drop` does the same with the loaded file): freeing them would only dirty shared pages.
/// They stay reachable from [`LEFT`] (a leak checker finds them reachable: the module stays
/// mapped after NGINX's dlclose). The swap's result goes through `black_box`: a static only
/// ever written is deleted by LTO, store and all.
pub fn forget_all() {
    if let Some(cache) = CACHE.with(|c| c.borrow_mut().take()) {
        let kept = Box::into_raw(Box::new(cache));
        core::hint::black_box(LEFT.swap(kept, core::sync::atomic::Ordering::Relaxed));
    }
}

/// The cache an exiting worker leaves unfreed.
static LEFT: core::sync::atomic::AtomicPtr<Cache> =
    core::sync::atomic::AtomicPtr::new(core::ptr::null_mut());

/// Whether `value` is what a client sent as `Matches:` (`lines()`: the request's lines of
/// that name, in order): one of them, or, for several, all of them joined by ", " (as NGINX's
/// `$http_matches` reads them; only then a copy).
pub fn is_client_value<'a, I: Iterator<Item = &'a [u8]>>(
    lines: impl Fn() -> I,
    value: &[u8],
) -> bool {
    let mut n = 0;
    for line in lines() {
        if line == value {
            return true;
        }
        n += 1;
    }
    n > 1 && lines().collect::<Vec<_>>().join(&b", "[..]) == value
}

/// Why a `$http_matches` value is refused before it is compiled, if it is: it is the client's
/// `Matches:` header (`client`, [`is_client_value`]), or longer than `max`
/// (`http_matches_var_max_size`).
pub fn refusal(value: &[u8], client: bool, max: usize) -> Option<String> {
    if client {
        let what = "$http_matches holds the client's \"Matches\" request header, not a list set \
                    in the configuration; refused";
        return Some(what.to_owned());
    }
    let n = value.len();
    (n > max).then(|| {
        let shown = crate::escape(value, 64);
        format!(
            "$http_matches is {n} bytes, more than http_matches_var_max_size ({max}); refused: \
             \"{shown}\""
        )
    })
}

/// Why a location of `http_matches` has no list for a request: no inline list, the loaded file
/// (`file`) and `$match_key` (`key`: some directive sets it) as they are, no `$http_matches`.
pub fn no_list(file: bool, key: bool) -> String {
    let key_state = match (file, key) {
        (false, _) => "no http_matches_load",
        (true, false) => "$match_key is never set",
        (true, true) => "$match_key is not set or empty here",
    };
    format!(
        "no match list for this request: no inline list, {key_state}, and $http_matches is not \
         set here"
    )
}

/// A short fingerprint of a value for log lines (the value itself may come from a client and
/// is not logged whole).
pub fn fingerprint(value: &[u8]) -> u64 {
    FxBuildHasher.hash_one(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BUDGET: usize = 1 << 20;

    fn list(n: usize) -> Vec<u8> {
        format!(r#"[{{"redirectPath":"/r{n}","headers":["x-v:Exact:{n}"]}}]"#).into_bytes()
    }

    fn lookup(value: &[u8], budget: usize) -> (Rc<Entry>, Lookup) {
        get(Syntax::Auto, value, budget, Bounds::default())
    }

    #[test]
    fn a_value_is_compiled_once_and_found_by_content_at_any_address() {
        let v = list(1);
        let (first, l) = lookup(&v, BUDGET);
        assert!(matches!(l, Lookup::Compiled { evicted: 0, values: 1, .. }));
        assert!(first.compiled.is_ok());
        let line = l.log_line(&v, &first, BUDGET).unwrap();
        let (warn, line) = (line.warn, line.to_string());
        assert!(!warn && line.contains("0 evicted, the cache holds 1 values"));
        assert!(Lookup::Hit.log_line(&v, &first, BUDGET).is_none());
        let (again, l) = lookup(&v, BUDGET);
        assert!(matches!(l, Lookup::Hit) && Rc::ptr_eq(&first, &again));
        // Another copy (another address: the hint misses) is the same value.
        let copy = v.clone();
        let (by_content, l) = lookup(&copy, BUDGET);
        assert!(matches!(l, Lookup::Hit) && Rc::ptr_eq(&first, &by_content));
        // The same bytes under another syntax are another value.
        let (other, l) = get(Syntax::Typed, &v, BUDGET, Bounds::default());
        assert!(matches!(l, Lookup::Compiled { .. }) && !Rc::ptr_eq(&first, &other));
    }

    #[test]
    fn a_refused_value_is_kept_with_its_reason() {
        let (e, l) = lookup(b"[{", BUDGET);
        assert!(matches!(l, Lookup::Compiled { .. }) && e.compiled.is_err());
        assert!(matches!(lookup(b"[{", BUDGET).1, Lookup::Hit));
    }

    #[test]
    fn a_value_over_the_budget_is_compiled_for_its_request_only() {
        let v = list(2);
        let (e, l) = lookup(&v, 64);
        assert!(matches!(l, Lookup::Uncached) && e.compiled.is_ok() && e.cost > 64);
        let line = l.log_line(&v, &e, 64).unwrap();
        let (warn, line) = (line.warn, line.to_string());
        let fp = format!("(fingerprint {:016x})", fingerprint(&v));
        assert!(
            warn && line.contains("more than http_matches_var_cache (64)") && line.ends_with(&fp)
        );
        assert!(matches!(lookup(&v, 64).1, Lookup::Uncached));
    }

    #[test]
    fn the_cache_never_holds_more_bytes_than_its_budget() {
        let budget = 64 * 1024;
        let mut evicted_any = false;
        for n in 0..2_000 {
            if let (_, Lookup::Compiled { evicted, bytes, .. }) = lookup(&list(n), budget) {
                assert!(bytes <= budget, "{bytes} > {budget}");
                evicted_any |= evicted > 0;
            }
        }
        assert!(evicted_any);
    }

    #[test]
    fn a_location_s_kept_value_needs_its_address_its_bytes_and_the_cache() {
        let kept = Kept::default();
        let mut v = list(3);
        assert!(kept.get(&v).is_none());
        let (e, _) = lookup(&v, BUDGET);
        kept.keep(&v, &e);
        assert!(kept.get(&v).is_some_and(|k| Rc::ptr_eq(&k, &e)));
        // The same bytes elsewhere: not this location's last value (the cache finds it).
        assert!(kept.get(&v.clone()).is_none());
        // Other bytes at the same address and length.
        let last = v.len() - 3;
        v[last] = b'4';
        assert!(kept.get(&v).is_none());
        // Once the cache drops the entry (a new budget makes a new cache), the location keeps
        // nothing of it.
        drop(e);
        let _ = lookup(&list(9), BUDGET / 2);
        v[last] = b'3';
        assert!(kept.get(&v).is_none());
    }

    #[test]
    fn a_client_value_is_one_of_its_lines_or_all_of_them_joined() {
        let lines: [&[u8]; 2] = [b"[1]", b"[2]"];
        let all = || lines.iter().copied();
        assert!(is_client_value(all, b"[2]"));
        assert!(is_client_value(all, b"[1], [2]"));
        assert!(!is_client_value(all, b"[1],[2]"));
        assert!(!is_client_value(|| lines[..1].iter().copied(), b"[1], [2]"));
        assert!(!is_client_value(|| [].iter().copied(), b""));
    }

    #[test]
    fn fingerprints_tell_values_apart() {
        assert_eq!(fingerprint(b"a"), fingerprint(b"a"));
        assert_ne!(fingerprint(b"a"), fingerprint(b"b"));
    }
}
