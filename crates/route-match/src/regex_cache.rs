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
//! `Pattern::attempt`): the common path never hashes a subject. The cache is bounded in bytes
//! ([`set_capacity`]; 0, the default, turns it off) and in records ([`MAX_RECORDS`]), and
//! evicts the least recently used record.
//!
//! Keys are the pattern's process-unique id and the subject. A subject up to [`MAX_SUBJECT`]
//! bytes is kept in its slot, so a hash collision (which a client can aim for) is only a miss
//! that replaces the slot, never a wrong answer, and never a long probe chain. A longer one
//! (NGINX joins HTTP/2 `cookie` fields into one line: three HPACK references to a 3.9 KB
//! cookie make an 11.7 KB subject) is kept as its length and a 128-bit digest keyed with this
//! thread's random keys (two SipHash-1-3 of the std library), which a client cannot aim a
//! collision at: the record costs the same bytes whatever the subject's length.

use core::cell::{Cell, RefCell};
use core::hash::Hasher;

use rustc_hash::{FxHashMap, FxHasher};

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

/// The longest subject whose attempts are cached.
/// The longest subject kept in its record; longer ones are kept as a keyed digest.
pub const MAX_SUBJECT: usize = 8 * 1024;

/// The most records the cache holds, whatever its capacity in bytes.
pub const MAX_RECORDS: usize = 1 << 16;

/// Bytes a record accounts for besides its subject (the slot, the map entry).
const OVERHEAD: usize = 96;

const NONE: u32 = u32::MAX;

struct Slot {
    pattern: u64,
    /// The subject, or empty for one longer than `MAX_SUBJECT` (then `digest` names it).
    subject: Box<[u8]>,
    len: usize,
    digest: u128,
    record: Record,
    /// Neighbours in recency order (indexes into `slots`).
    newer: u32,
    older: u32,
    hash: u64,
}

#[derive(Default)]
struct Cache {
    by_hash: FxHashMap<u64, u32>,
    slots: Vec<Slot>,
    /// Indexes of slots evicted and free for reuse.
    free: Vec<u32>,
    newest: Option<u32>,
    oldest: Option<u32>,
    bytes: usize,
}

thread_local! {
    static KEYS: (std::hash::RandomState, std::hash::RandomState) =
        (std::hash::RandomState::new(), std::hash::RandomState::new());
    static CAPACITY: Cell<usize> = const { Cell::new(0) };
    static CACHE: RefCell<Cache> = RefCell::new(Cache::default());
    static STATS: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

/// Sets the bytes this thread's cache may hold (0 turns it off and empties it).
pub fn set_capacity(bytes: usize) {
    CAPACITY.with(|c| c.set(bytes));
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        while c.bytes > bytes && c.evict() {}
        if bytes == 0 {
            *c = Cache::default();
        }
    });
}

/// (hits, misses) of this thread's cache since it started: for tests and benchmarks.
pub fn stats() -> (u64, u64) {
    STATS.with(Cell::get)
}

fn key_hash(pattern: u64, subject: &[u8]) -> u64 {
    let mut h = FxHasher::default();
    h.write_u64(pattern);
    h.write(subject);
    h.finish()
}

/// The keyed digest of a long subject (0 for a short one, which its slot keeps).
fn digest(subject: &[u8]) -> u128 {
    use core::hash::BuildHasher;
    if subject.len() <= MAX_SUBJECT {
        return 0;
    }
    KEYS.with(|(a, b)| {
        let (x, y) = (a.hash_one(subject), b.hash_one(subject));
        u128::from(x) << 64 | u128::from(y)
    })
}

/// The key's hash: of the subject's bytes, or of its digest for a long one.
fn slot_hash(pattern: u64, subject: &[u8], digest: u128) -> u64 {
    if digest == 0 { key_hash(pattern, subject) } else { key_hash(pattern, &digest.to_ne_bytes()) }
}

fn cost(subject: &[u8]) -> usize {
    if subject.len() > MAX_SUBJECT { 16 + OVERHEAD } else { subject.len() + OVERHEAD }
}

pub(crate) fn get(pattern: u64, subject: &[u8]) -> Option<Record> {
    if CAPACITY.with(Cell::get) == 0 {
        return None;
    }
    let found = CACHE.with(|c| {
        let mut c = c.borrow_mut();
        let digest = digest(subject);
        let hash = slot_hash(pattern, subject, digest);
        let i = *c.by_hash.get(&hash)?;
        let slot = c.slots.get(i as usize)?;
        if slot.pattern != pattern
            || slot.len != subject.len()
            || slot.digest != digest
            || (digest == 0 && *slot.subject != *subject)
        {
            return None;
        }
        let record = slot.record;
        c.unlink(i);
        c.push_newest(i);
        Some(record)
    });
    STATS.with(|s| {
        let (h, m) = s.get();
        s.set(if found.is_some() { (h + 1, m) } else { (h, m + 1) });
    });
    found
}

pub(crate) fn put(pattern: u64, subject: &[u8], record: Record) {
    let capacity = CAPACITY.with(Cell::get);
    if cost(subject) > capacity {
        return;
    }
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        let digest = digest(subject);
        let hash = slot_hash(pattern, subject, digest);
        if let Some(&old) = c.by_hash.get(&hash) {
            c.remove(old);
        }
        while (c.bytes + cost(subject) > capacity || c.by_hash.len() >= MAX_RECORDS) && c.evict() {}
        let kept: Box<[u8]> = if digest == 0 { subject.into() } else { Box::default() };
        let slot = Slot {
            pattern,
            subject: kept,
            len: subject.len(),
            digest,
            record,
            newer: NONE,
            older: NONE,
            hash,
        };
        let i = match c.free.pop() {
            Some(i) => {
                c.slots[i as usize] = slot;
                i
            }
            None => {
                c.slots.push(slot);
                (c.slots.len() - 1) as u32
            }
        };
        c.by_hash.insert(hash, i);
        c.bytes += cost(subject);
        c.push_newest(i);
    });
}

impl Cache {
    fn unlink(&mut self, i: u32) {
        let (newer, older) = {
            let s = &self.slots[i as usize];
            (s.newer, s.older)
        };
        match newer {
            NONE => self.newest = (older != NONE).then_some(older),
            n => self.slots[n as usize].older = older,
        }
        match older {
            NONE => self.oldest = (newer != NONE).then_some(newer),
            o => self.slots[o as usize].newer = newer,
        }
        let s = &mut self.slots[i as usize];
        s.newer = NONE;
        s.older = NONE;
    }

    fn push_newest(&mut self, i: u32) {
        match self.newest {
            Some(n) => {
                self.slots[n as usize].newer = i;
                self.slots[i as usize].older = n;
            }
            None => self.oldest = Some(i),
        }
        self.newest = Some(i);
    }

    fn remove(&mut self, i: u32) {
        self.unlink(i);
        let s = &mut self.slots[i as usize];
        let (hash, subject) = (s.hash, core::mem::take(&mut s.subject));
        self.bytes -= if s.digest != 0 { 16 + OVERHEAD } else { subject.len() + OVERHEAD };
        self.by_hash.remove(&hash);
        self.free.push(i);
    }

    /// Evicts the least recently used record; `false` when empty.
    fn evict(&mut self) -> bool {
        match self.oldest {
            Some(i) => {
                self.remove(i);
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(m: bool) -> Record {
        Record { last: 3, end: End::Matched(m) }
    }

    #[test]
    fn bounded_in_bytes_and_least_recently_used_goes_first() {
        set_capacity(3 * (100 + OVERHEAD));
        let s = |c: u8| vec![c; 100];
        put(1, &s(b'a'), rec(true));
        put(1, &s(b'b'), rec(false));
        put(1, &s(b'c'), rec(true));
        assert_eq!(get(1, &s(b'a')), Some(rec(true)));
        // `b` is now the oldest: a fourth record evicts it.
        put(1, &s(b'd'), rec(false));
        assert_eq!(get(1, &s(b'b')), None);
        assert_eq!(get(1, &s(b'a')), Some(rec(true)));
        assert_eq!(get(1, &s(b'c')), Some(rec(true)));
        assert_eq!(get(1, &s(b'd')), Some(rec(false)));
        // Another pattern, the same subject: another key.
        assert_eq!(get(2, &s(b'a')), None);
        CACHE.with(|c| assert!(c.borrow().bytes <= 3 * (100 + OVERHEAD)));
        // Long subjects are kept by digest, at a fixed cost: another long subject, or the same
        // one for another pattern, is another key.
        let long = vec![b'x'; 3 * MAX_SUBJECT];
        put(1, &long, rec(true));
        assert_eq!(get(1, &long), Some(rec(true)));
        let mut other = long.clone();
        other[2 * MAX_SUBJECT] = b'y';
        assert_eq!(get(1, &other), None);
        assert_eq!(get(2, &long), None);
        CACHE.with(|c| assert!(c.borrow().bytes <= 3 * (100 + OVERHEAD)));
        set_capacity(0);
        assert_eq!(get(1, &s(b'a')), None);
    }
}
