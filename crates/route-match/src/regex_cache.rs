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
//! `Pattern::attempt`): the common path never hashes a subject. Subjects longer than
//! [`MAX_SUBJECT`] are not cached. The cache is bounded in bytes ([`set_capacity`]; 0, the
//! default, turns it off) and evicts the least recently used record.
//!
//! Keys are the pattern's process-unique id and the subject's bytes; the table is indexed by
//! a 64-bit hash of both and each slot keeps its subject, so a hash collision (which a client
//! can aim for) is only a miss that replaces the slot, never a wrong answer, and never a
//! long probe chain.

use core::cell::{Cell, RefCell};
use core::hash::Hasher;

use rustc_hash::{FxHashMap, FxHasher};

use crate::pattern::Record;

/// The longest subject whose attempts are cached.
pub const MAX_SUBJECT: usize = 8 * 1024;

/// Bytes a record accounts for besides its subject (the slot, the map entry).
const OVERHEAD: usize = 96;

const NONE: u32 = u32::MAX;

struct Slot {
    pattern: u64,
    subject: Box<[u8]>,
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

fn cost(subject: &[u8]) -> usize {
    subject.len() + OVERHEAD
}

pub(crate) fn get(pattern: u64, subject: &[u8]) -> Option<Record> {
    if subject.len() > MAX_SUBJECT || CAPACITY.with(Cell::get) == 0 {
        return None;
    }
    let found = CACHE.with(|c| {
        let mut c = c.borrow_mut();
        let hash = key_hash(pattern, subject);
        let i = *c.by_hash.get(&hash)?;
        let slot = c.slots.get(i as usize)?;
        if slot.pattern != pattern || *slot.subject != *subject {
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
    if subject.len() > MAX_SUBJECT || cost(subject) > capacity {
        return;
    }
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        let hash = key_hash(pattern, subject);
        if let Some(&old) = c.by_hash.get(&hash) {
            c.remove(old);
        }
        while c.bytes + cost(subject) > capacity && c.evict() {}
        let slot =
            Slot { pattern, subject: subject.into(), record, newer: NONE, older: NONE, hash };
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
        self.bytes -= cost(&subject);
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
    use crate::pattern::End;

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
        // Long subjects are never kept.
        put(1, &vec![b'x'; MAX_SUBJECT + 1], rec(true));
        assert_eq!(get(1, &vec![b'x'; MAX_SUBJECT + 1]), None);
        set_capacity(0);
        assert_eq!(get(1, &s(b'a')), None);
    }
}
