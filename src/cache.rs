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
//! Values from the configuration (a `set $http_matches '<literal>'`, a `map`'s constant values,
//! which ngx_http_map_module copies into the cycle's pool with `ngx_pstrdup(ctx->keys.pool)`,
//! whether the `map` defines `$http_matches` itself or a variable that `set $http_matches $list`
//! copies) are never in that LRU: a client that walks more `map` keys than the LRU holds would
//! otherwise force a compile on every request. A value is from the configuration when its
//! bytes lie inside the memory of the cycle's pool (its blocks and its large allocations, read
//! once per worker from `ngx_pool_t`, a public struct): that memory lives as long as the
//! configuration, so no request's memory can ever be inside it. Such a value is compiled once
//! per worker and kept for the worker's life, found by its address and by its bytes, in a set
//! bounded in bytes by what `http_matches_max_memory` leaves after the configuration's other
//! lists (a bound the configuration's own size sets, not a client). Past that bound a value
//! goes to the LRU like any other, and the first such value of a worker is reported once.
//!
//! Lookups first try the value's address: a configured value is the same bytes at the same
//! address for every request, so a hit costs a hash of two integers and one comparison of the
//! bytes (which guards against a reused address). A copy of a configured value (`set
//! $http_matches $list` copies the map's value into the request's pool) is found by its bytes
//! among the kept values. Only when a value is in none of the sets, that is before it is
//! compiled, are the request's evaluated variables searched for a configured original of it
//! (the copy's source): that search is never on the path of a request that compiles nothing,
//! and it looks at a constant number of variable slots (the few that held an original before,
//! then a window of [`SEARCH_SLOTS`] that moves on from one search to the next), charged to
//! the request's work. Which variable a `set` copies is known only to
//! ngx_http_rewrite_module: its location configuration (`ngx_http_rewrite_loc_conf_t`, with
//! the compiled script codes of `set`) is private to `ngx_http_rewrite_module.c`, and the
//! codes' layout (their sizes follow from the function each starts with) is not an API
//! either, so the module does not read it at configuration time.
//! Keeping a value is decided only from where its bytes lie, so request data never enters the
//! kept set; a request value with the same bytes as a kept one is answered by the kept compile
//! (the same bytes compile alike). Values that are not kept are hashed with SipHash (they may
//! come from request data). An NGINX worker runs handlers on one thread, so the cache is
//! thread-local.

use core::cell::Cell;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use ngx::ffi::{ngx_cycle_t, ngx_pool_t, ngx_variable_value_t};
use route_match::{Bounds, CompiledList, ParseError, Syntax};
use rustc_hash::FxHashMap;

use crate::util::var;

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
    /// Values from the configuration, kept for the worker's life.
    configured: Configured,
}

/// The most variable slots one search for a configured original of a value looks at (see
/// [`get`]), besides the [`LEARNED`] slots it tries first: a constant, whatever the number of
/// variables the configuration has or the request evaluated.
pub(crate) const SEARCH_SLOTS: usize = 32;
/// The most slots remembered as having held a configured original (tried first by every later
/// search of the worker).
pub(crate) const LEARNED: usize = 8;

/// The configuration's memory and the values found in it (see the module's text).
#[derive(Default)]
struct Configured {
    /// The cycle whose pool `ranges` describe (0: not read yet).
    cycle: usize,
    /// `[start, end)` of each block and large allocation of the cycle's pool, by start.
    ranges: Vec<(usize, usize)>,
    /// (syntax, address, length) -> entry; checked against `Entry::source`.
    kept: FxHashMap<(usize, usize, usize), Rc<Entry>>,
    /// Per syntax: value -> entry, for copies of kept values. FxHash: only configured values
    /// are ever inserted, so a client's bytes can at most probe among those.
    kept_by_value: [FxHashMap<Rc<[u8]>, Rc<Entry>>; 3],
    /// Sum of `cost` over `kept`.
    bytes: usize,
    /// Configured values compiled that did not fit in `Limits::configured` (each went to the
    /// LRU; one value evicted and compiled again counts again).
    refused: usize,
    /// Slots (indexes of `r->variables`) that held the configured original of a value.
    learned: Vec<usize>,
    /// Where the next search's window of [`SEARCH_SLOTS`] starts: each search goes on where
    /// the last one stopped, so that an original in any slot is found within a few searches.
    cursor: usize,
}

impl Configured {
    /// Reads the cycle's pool when the worker's cycle is not the one read last (the first
    /// request; in a single process, a reload: the old values are dropped with the old ranges).
    fn refresh(&mut self, cycle: *const ngx_cycle_t) {
        if cycle as usize == self.cycle || cycle.is_null() {
            return;
        }
        *self = Configured { cycle: cycle as usize, ..Configured::default() };
        // SAFETY: `cycle` is the running cycle (`ngx_cycle`), alive while this worker serves
        // its requests; its pool's blocks and large list are only changed by allocations on
        // this thread, and none runs while we read them.
        unsafe { self.ranges = pool_ranges((*cycle).pool) };
    }

    /// A configured value with `value`'s bytes in one of the request's variable slots, and
    /// how many slots were looked at: the learned ones, then a window of at most
    /// [`SEARCH_SLOTS`] from the cursor on (a constant amount of work, however many variables
    /// the request evaluated; an original outside both is found by a later search).
    fn origin<'s>(
        &mut self,
        value: &[u8],
        slots: &'s [ngx_variable_value_t],
    ) -> (Option<&'s [u8]>, usize) {
        if self.ranges.is_empty() || slots.is_empty() {
            return (None, 0);
        }
        let is_origin = |c: &Configured, i: usize| {
            slots.get(i).and_then(var::get).filter(|o| {
                o.len() == value.len() && o.as_ptr() != value.as_ptr() && c.holds(o) && *o == value
            })
        };
        let mut looked = 0;
        for k in 0..self.learned.len() {
            looked += 1;
            if let Some(o) = is_origin(self, self.learned[k]) {
                return (Some(o), looked);
            }
        }
        let window = slots.len().min(SEARCH_SLOTS);
        for k in 0..window {
            let i = (self.cursor + k) % slots.len();
            looked += 1;
            if let Some(o) = is_origin(self, i) {
                if self.learned.len() < LEARNED && !self.learned.contains(&i) {
                    self.learned.push(i);
                }
                return (Some(o), looked);
            }
        }
        self.cursor = (self.cursor + window) % slots.len();
        (None, looked)
    }

    /// Whether `value` lies wholly inside the configuration's memory.
    fn holds(&self, value: &[u8]) -> bool {
        let start = value.as_ptr() as usize;
        let Some(end) = start.checked_add(value.len()) else { return false };
        let i = self.ranges.partition_point(|r| r.0 <= start);
        i > 0 && self.ranges.get(i - 1).is_some_and(|r| end <= r.1)
    }
}

/// The memory of `pool`: each block `[block, block->d.end)` and each large allocation, sorted.
///
/// # Safety
/// `pool` must be null or a live NGINX pool that nothing changes while this runs.
unsafe fn pool_ranges(pool: *const ngx_pool_t) -> Vec<(usize, usize)> {
    let mut ranges = Vec::new();
    let mut block = pool;
    // SAFETY: the caller guarantees the pool; `d.next` links its blocks (null-terminated),
    // `large` its large allocations (entries freed by ngx_pfree have a null `alloc`).
    unsafe {
        let mut blocks = 0usize;
        while !block.is_null() && blocks < 1 << 24 {
            ranges.push((block as usize, (*block).d.end as usize));
            block = (*block).d.next;
            blocks += 1;
        }
        if !pool.is_null() {
            let mut large = (*pool).large;
            let mut n = 0usize;
            while !large.is_null() && n < 1 << 24 {
                let alloc = (*large).alloc;
                if !alloc.is_null() {
                    let size = usable_size(alloc);
                    if size > 0 {
                        ranges.push((alloc as usize, alloc as usize + size));
                    }
                }
                large = (*large).next;
                n += 1;
            }
        }
    }
    ranges.sort_unstable();
    ranges
}

#[cfg(target_os = "linux")]
unsafe extern "C" {
    fn malloc_usable_size(ptr: *mut core::ffi::c_void) -> usize;
}

/// Bytes usable in a block NGINX's `ngx_alloc` / `ngx_memalign` made (malloc, posix_memalign):
/// at least what was asked for. 0 where the C library cannot tell: such values go to the LRU.
///
/// # Safety
/// `p` must be a live allocation of the C library's malloc.
unsafe fn usable_size(p: *mut core::ffi::c_void) -> usize {
    #[cfg(target_os = "linux")]
    // SAFETY: the caller guarantees a live malloc'd block (glibc and musl both answer).
    return unsafe { malloc_usable_size(p) };
    #[cfg(not(target_os = "linux"))]
    {
        let _ = p;
        0
    }
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
    /// A value from the configuration, compiled now and kept for the worker's life.
    Kept,
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
    /// Values from the configuration kept, and their bytes.
    pub(crate) kept: usize,
    pub(crate) kept_bytes: usize,
    /// This lookup's value was the worker's first configured value that did not fit: the
    /// handler's one `[warn]`.
    pub(crate) first_refusal: bool,
    /// Variable slots the search for a configured original looked at (0: no search), at most
    /// [`LEARNED`] + [`SEARCH_SLOTS`]: charged to the request's work.
    pub(crate) looked: usize,
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
        Stats {
            values: self.len(),
            bytes: self.bytes,
            kept: self.configured.kept.len(),
            kept_bytes: self.configured.bytes,
            first_refusal: false,
            looked: 0,
        }
    }
}

/// The worker's limits for [`get`].
pub(crate) struct Limits {
    /// The most bytes the LRU of values from request data may hold (`http_matches_var_cache`).
    pub(crate) budget: usize,
    /// The most bytes the values from the configuration may be kept in (what
    /// `http_matches_max_memory` leaves after the configuration's other lists).
    pub(crate) configured: usize,
    /// The running cycle, whose pool holds the configuration's values.
    pub(crate) cycle: *const ngx_cycle_t,
}

/// The compiled form of `value`, compiling it on first sight.
///
/// `slots`: the request's variable values (`r->variables`), searched only before a compile,
/// and then at most [`LEARNED`] + [`SEARCH_SLOTS`] of them ([`Stats::looked`]). A value that
/// is a copy of one of them lying in the configuration's memory (`set $http_matches $list;`
/// copies a `map`'s constant value into the request's pool) is that configured value: the same
/// bytes compile alike, so it is kept under the configured copy's address and its bytes.
pub(crate) fn get<'a>(
    syntax: Syntax,
    value: &'a [u8],
    limits: &Limits,
    bounds: Bounds,
    slots: &'a [ngx_variable_value_t],
) -> (Rc<Entry>, Lookup, Stats) {
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        let now = c.tick();
        let s = slot(syntax);
        let own = (s, value.as_ptr() as usize, value.len());
        if let Some((at, hit)) = &c.last
            && *at == own
            && *hit.source == *value
        {
            hit.used.set(now);
            let hit = hit.clone();
            return (hit, Lookup::Hit, c.stats());
        }
        c.configured.refresh(limits.cycle);
        // A kept value: at its own address (a `map`'s value read directly, a literal), or by
        // its bytes (a copy of one in the request's pool).
        let kept = c.configured.kept.get(&own).filter(|hit| *hit.source == *value).cloned();
        let kept = kept.or_else(|| c.configured.kept_by_value[s].get(value).cloned());
        if let Some(hit) = kept {
            // The next request's copy is often at the same address, with the same bytes.
            c.last = Some((own, hit.clone()));
            return (hit, Lookup::Hit, c.stats());
        }
        if let Some(hit) = c.by_address.get(&own) {
            if *hit.source == *value {
                hit.used.set(now);
                let hit = hit.clone();
                c.last = Some((own, hit.clone()));
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
            c.by_address.insert(own, hit.clone());
            return (hit, Lookup::Hit, c.stats());
        }
        // Not compiled yet (or evicted): is it a configured value, or a copy of one?
        let mut value = value;
        let mut configured = c.configured.holds(value);
        let mut looked = 0;
        if !configured {
            let (origin, n) = c.configured.origin(value, slots);
            looked = n;
            if let Some(origin) = origin {
                value = origin;
                configured = true;
            }
        }
        let address = (s, value.as_ptr() as usize, value.len());
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
        if configured && !transient {
            if c.configured.bytes + cost <= limits.configured {
                c.configured.bytes += cost;
                c.configured.kept.insert(address, entry.clone());
                c.configured.kept_by_value[s].insert(source, entry.clone());
                c.last = Some((own, entry.clone()));
                return (entry, Lookup::Kept, Stats { looked, ..c.stats() });
            }
            c.configured.refused += 1;
        }
        let first_refusal = configured && !transient && c.configured.refused == 1;
        let stats = |c: &Cache| Stats { first_refusal, looked, ..c.stats() };
        let budget = limits.budget;
        if cost > budget || transient {
            return (entry, Lookup::Uncached, stats(&c));
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
        c.by_address.insert(own, entry.clone());
        (entry, Lookup::Compiled { evicted }, stats(&c))
    })
}

/// Leaves every cached value allocated, for a worker that is exiting (see `MainConf`'s
/// `Drop`): freeing them would only dirty shared pages.
pub(crate) fn forget_all() {
    CACHE.with(|c| core::mem::forget(core::mem::take(&mut *c.borrow_mut())));
}
