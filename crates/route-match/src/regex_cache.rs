//! The per-thread (per NGINX worker) cache of expensive regex attempts: (pattern, subject) ->
//! how the attempt up the step ladder ended ([`Record`]).
//!
//! Why: HTTP/2's HPACK lets a client send a 4 KiB header once and then refer to it in ~46
//! bytes per request; keep-alive floods repeat the same bytes too. Without a cache, each such
//! request pays the whole backtracking work again. With it, a subject the worker has already
//! climbed the ladder for is answered from here, and charged to the request's budget exactly
//! as the real attempt would be (`Record::replay`), so the cache changes the CPU spent, never
//! the routing.
//!
//! Only attempts that needed more than the first probe are stored and looked up (see
//! `Pattern::attempt`): the common path never hashes a subject. The store is quick_cache's
//! S3-FIFO (the `$http_matches` cache's too): a new record enters a small queue and reaches the
//! main one only when asked for again, so a stream of one-off subjects cannot evict the ones a
//! client repeats. It is bounded in bytes ([`set_capacity`]; 0, the default, turns it off):
//! each record weighs its subject and [`OVERHEAD`], and at least 1/[`MAX_RECORDS`] of the
//! capacity, so it is bounded in records too; quick_cache's ghosts (hashes of recently evicted
//! records) are taken from the capacity first.
//!
//! Keys are the pattern's process-unique id and the subject, hashed with this thread's random
//! SipHash-1-3 keys (std's `RandomState`), so a client cannot aim collisions at the table; a
//! lookup compares the bytes, so a collision is never a wrong answer. A subject up to
//! [`MAX_SUBJECT`] bytes is kept in its record. A longer one (NGINX joins HTTP/2 `cookie`
//! fields into one line: three HPACK references to a 3.9 KB cookie make an 11.7 KB subject)
//! is kept as its length and a 128-bit digest under two more keys, which a client cannot aim a
//! collision at either: the record costs the same bytes whatever the subject's length.

use core::cell::{Cell, RefCell};
use core::hash::{BuildHasher, Hash, Hasher};
use std::hash::RandomState;

use quick_cache::{Equivalent, Weighter};
use rustc_hash::FxBuildHasher;

use pcre2_bounded::MatchError;

/// How an attempt up the ladder ended, whatever budget it had: which probe decided and what
/// it said. A function of (pattern, subject) only, so it can be remembered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Record {
    /// Index in [`PROBES`](crate::PROBES) of the probe that decided.
    pub(crate) last: u8,
    pub(crate) end: End,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    Matched(bool),
    /// The last probe (or an earlier one, for a limit other than the step limit) gave up.
    GaveUp(MatchError),
}

/// The longest subject kept in its record; longer ones are kept as a keyed digest.
pub const MAX_SUBJECT: usize = 8 * 1024;

/// The most records the cache holds, whatever its capacity in bytes.
pub const MAX_RECORDS: usize = 1 << 16;

/// Bytes a record accounts for besides its subject: its entry in quick_cache's slab (88 bytes,
/// twice: the slab is a `Vec` that grows by doubling) and its table slot
/// (`the_cache_holds_its_bytes_and_records` checks it against quick_cache's own count).
pub const OVERHEAD: usize = 192;

/// Bytes a ghost (the hash of an evicted record) takes: an entry and a table slot, as a record.
const GHOST: usize = OVERHEAD;

/// A record's key: the pattern, the subject's length and either its bytes or its digest, and
/// the keyed hash of all of it (the table hashes that `u64` only).
struct Key {
    hash: u64,
    pattern: u64,
    len: usize,
    digest: [u64; 2],
    /// The subject, or empty for one longer than `MAX_SUBJECT` (then `digest` names it).
    subject: Box<[u8]>,
}

/// A lookup of the subject the request holds, without copying it.
struct Probe<'a> {
    hash: u64,
    pattern: u64,
    digest: [u64; 2],
    subject: &'a [u8],
}

impl Probe<'_> {
    fn kept(&self) -> &[u8] {
        if self.subject.len() <= MAX_SUBJECT { self.subject } else { &[] }
    }
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
    fn eq(&self, o: &Self) -> bool {
        (self.hash, self.pattern, self.len, self.digest) == (o.hash, o.pattern, o.len, o.digest)
            && self.subject == o.subject
    }
}

impl Eq for Key {}

impl Equivalent<Key> for Probe<'_> {
    fn equivalent(&self, k: &Key) -> bool {
        (self.hash, self.pattern, self.subject.len(), self.digest)
            == (k.hash, k.pattern, k.len, k.digest)
            && *self.kept() == *k.subject
    }
}

/// A record's bytes: its kept subject and [`OVERHEAD`], at least `floor`
/// (capacity / [`MAX_RECORDS`]).
#[derive(Clone)]
struct Cost {
    floor: u64,
}

impl Weighter<Key, Record> for Cost {
    fn weight(&self, key: &Key, _: &Record) -> u64 {
        ((key.subject.len() + OVERHEAD) as u64).max(self.floor)
    }
}

struct Cache {
    records: quick_cache::unsync::Cache<Key, Record, Cost, FxBuildHasher>,
    /// The thread's keys: the table's hash, and the two halves of a long subject's digest.
    keys: [RandomState; 3],
}

impl Cache {
    /// A cache of `capacity` bytes: one ghost for every 2 KiB (a tenth of the bytes), their
    /// bytes taken first.
    fn new(capacity: usize) -> Cache {
        let ghosts = (capacity / 2048).clamp(16, MAX_RECORDS);
        let weight = capacity.saturating_sub(ghosts * GHOST).max(1) as u64;
        let cost = Cost { floor: (capacity / MAX_RECORDS) as u64 };
        // quick_cache keeps half its estimated item count as ghosts; nothing is allocated ahead.
        let records = quick_cache::unsync::Cache::with(
            2 * ghosts,
            weight,
            cost,
            FxBuildHasher,
            Default::default(),
        );
        Cache { records, keys: [RandomState::new(), RandomState::new(), RandomState::new()] }
    }

    /// The lookup key of (pattern, subject).
    fn probe<'a>(&self, pattern: u64, subject: &'a [u8]) -> Probe<'a> {
        let [table, a, b] = &self.keys;
        let (kept, digest) = match subject.len() <= MAX_SUBJECT {
            true => (subject, [0; 2]),
            false => (&[][..], [a.hash_one(subject), b.hash_one(subject)]),
        };
        // The length and digest are compared, not hashed: a short subject's bytes or a long
        // one's digest name it.
        let hash = if kept.len() == subject.len() {
            table.hash_one((pattern, kept))
        } else {
            table.hash_one((pattern, digest))
        };
        Probe { hash, pattern, digest, subject }
    }
}

thread_local! {
    static CACHE: RefCell<Option<Cache>> = const { RefCell::new(None) };
    static STATS: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

/// Sets the bytes this thread's cache may hold (0 turns it off and empties it; another
/// capacity starts it empty).
pub fn set_capacity(bytes: usize) {
    CACHE.with(|c| *c.borrow_mut() = (bytes > 0).then(|| Cache::new(bytes)));
}

/// (hits, misses) of this thread's cache since it started: for tests and benchmarks.
pub fn stats() -> (u64, u64) {
    STATS.with(Cell::get)
}

pub(crate) fn get(pattern: u64, subject: &[u8]) -> Option<Record> {
    let found = CACHE.with(|c| {
        let c = c.borrow();
        let c = c.as_ref()?;
        Some(c.records.get(&c.probe(pattern, subject)).copied())
    })?;
    STATS.with(|s| {
        let (h, m) = s.get();
        s.set(if found.is_some() { (h + 1, m) } else { (h, m + 1) });
    });
    found
}

pub(crate) fn put(pattern: u64, subject: &[u8], record: Record) {
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        let Some(c) = c.as_mut() else { return };
        let p = c.probe(pattern, subject);
        let key = Key {
            hash: p.hash,
            pattern,
            len: subject.len(),
            digest: p.digest,
            subject: p.kept().into(),
        };
        // quick_cache refuses a record heavier than its capacity allows.
        c.records.insert(key, record);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(m: bool) -> Record {
        Record { last: 3, end: End::Matched(m) }
    }

    /// quick_cache's own count of its entries (twice: its slab is a `Vec` that grows by
    /// doubling, and quick_cache counts the entries in use) and table, and the subjects kept.
    fn bytes() -> usize {
        CACHE.with(|c| {
            let c = c.borrow();
            let c = c.as_ref().unwrap();
            let kept: usize = c.records.iter().map(|(k, _)| k.subject.len()).sum();
            let used = c.records.memory_used();
            2 * used.entries + used.map + kept
        })
    }

    #[test]
    fn a_repeated_subject_stays_and_long_ones_are_kept_by_digest() {
        set_capacity(64 * 1024);
        let s = |c: u8, i: usize| [vec![c; 100], i.to_le_bytes().to_vec()].concat();
        put(1, &s(b'a', 0), rec(true));
        assert_eq!(get(1, &s(b'a', 0)), Some(rec(true)));
        // Another pattern, the same subject: another key.
        assert_eq!(get(2, &s(b'a', 0)), None);
        // A stream of one-off subjects, ten times what fits, does not evict the repeated one.
        for i in 1..6000 {
            put(1, &s(b'b', i), rec(false));
            assert_eq!(get(1, &s(b'a', 0)), Some(rec(true)), "{i}");
        }
        // Long subjects are kept by digest, at a fixed cost: another long subject, or the same
        // one for another pattern, is another key.
        let long = vec![b'x'; 3 * MAX_SUBJECT];
        put(1, &long, rec(true));
        assert_eq!(get(1, &long), Some(rec(true)));
        let mut other = long.clone();
        other[2 * MAX_SUBJECT] = b'y';
        assert_eq!(get(1, &other), None);
        assert_eq!(get(2, &long), None);
        set_capacity(0);
        assert_eq!(get(1, &s(b'a', 0)), None);
    }

    /// The cache's memory, as quick_cache counts its entries and table plus the subjects kept,
    /// stays within the capacity whatever the subjects' lengths; and the record count within
    /// [`MAX_RECORDS`] whatever the capacity.
    #[test]
    fn the_cache_holds_its_bytes_and_records() {
        for (capacity, len) in
            [(1 << 20, 0), (1 << 20, 40), (1 << 20, 3000), (1 << 20, 20_000), (64 << 10, 8)]
        {
            set_capacity(capacity);
            for i in 0..50_000usize {
                let subject = [vec![b'v'; len], i.to_le_bytes().to_vec()].concat();
                put(1, &subject, rec(true));
            }
            assert!(bytes() <= capacity, "{capacity} {len}: {}", bytes());
        }
        set_capacity(64 << 20);
        for i in 0..(MAX_RECORDS + 5000) {
            put(1, &i.to_le_bytes(), rec(true));
        }
        let n = CACHE.with(|c| c.borrow().as_ref().unwrap().records.len());
        assert!(n <= MAX_RECORDS, "{n}");
        set_capacity(0);
    }
}
