//! An index over exact conditions, so a long list costs about the same as a short one.
//!
//! Each entry of a long list is filed under one *key*: its most selective exact condition
//! (a header `name: value`, a param `name=value`, or else its method). For a request, the
//! entries whose key holds are found by hash lookups (one per request header line with an
//! indexed name, one per indexed param name, one for the method) and merged in list order
//! with the entries that have no key (`any`, regex-only, malformed). Only those candidates are
//! evaluated, in ascending order, so the first satisfied candidate is the first satisfied entry
//! of the list and a malformed entry is still reached exactly when the linear scan would reach
//! it. Built at compile time; the lookups allocate nothing.

use std::collections::HashMap;

use rustc_hash::FxHashMap;

use crate::eval::{Body, Bytes, Entry, Test};

/// Lists shorter than this are scanned linearly (the index would not pay for itself).
pub(crate) const MIN_ENTRIES: usize = 8;

/// Posting lists: value -> ascending entry indexes.
type Postings = FxHashMap<Bytes, Vec<u32>>;

#[derive(Debug, Default)]
pub(crate) struct Index {
    /// (lower-case header name, postings by exact value).
    pub(crate) headers: Vec<(Box<[u8]>, Postings)>,
    /// (param name, postings by exact decoded value).
    pub(crate) params: Vec<(Box<[u8]>, Postings)>,
    /// (method, entries keyed by their method only).
    pub(crate) methods: Vec<(Bytes, Vec<u32>)>,
    /// Entries with no exact condition: always candidates.
    pub(crate) rest: Vec<u32>,
}

#[derive(Clone, PartialEq, Eq, Hash)]
enum Key {
    Header(Box<[u8]>, Bytes),
    Param(Bytes, Bytes),
    Method(Bytes),
}

fn keys_of(e: &Entry) -> Vec<Key> {
    let Body::When { method, headers, params, .. } = &e.body else { return Vec::new() };
    let mut keys = Vec::new();
    for h in headers.iter() {
        if let Test::Exact(v) = &h.test {
            keys.push(Key::Header(h.name.to_ascii_lowercase().into(), v.clone()));
        }
    }
    for p in params.iter() {
        if let Test::Exact(v) = &p.test {
            keys.push(Key::Param(p.name.clone(), v.clone()));
        }
    }
    if let Some(m) = method {
        keys.push(Key::Method(m.clone()));
    }
    keys
}

impl Index {
    /// Heap bytes held (see `MatchList::memory`); the keys' strings are the entries' own.
    pub(crate) fn memory(&self) -> usize {
        use crate::eval::malloc_size;
        use core::mem::size_of;
        let vec = |cap: usize, item: usize| if cap == 0 { 0 } else { malloc_size(cap * item) };
        let postings = |p: &Postings| {
            // hashbrown: one block of buckets plus a control byte per bucket and a group.
            let buckets = p.capacity().next_power_of_two().max(4) * 8 / 7;
            malloc_size(buckets * (size_of::<(Bytes, Vec<u32>)>() + 1) + 16)
                + p.values().map(|v| vec(v.capacity(), 4)).sum::<usize>()
        };
        let groups = |g: &Vec<(Box<[u8]>, Postings)>| {
            vec(g.capacity(), size_of::<(Box<[u8]>, Postings)>())
                + g.iter().map(|(n, p)| malloc_size(n.len()) + postings(p)).sum::<usize>()
        };
        groups(&self.headers)
            + groups(&self.params)
            + vec(self.methods.capacity(), size_of::<(Bytes, Vec<u32>)>())
            + self.methods.iter().map(|(_, v)| vec(v.capacity(), 4)).sum::<usize>()
            + vec(self.rest.capacity(), 4)
    }

    pub(crate) fn build(entries: &[Entry]) -> Option<Index> {
        if entries.len() < MIN_ENTRIES || entries.len() > u32::MAX as usize {
            return None;
        }
        let keys: Vec<Vec<Key>> = entries.iter().map(keys_of).collect();
        let mut count: HashMap<&Key, usize> = HashMap::new();
        for k in keys.iter().flatten() {
            *count.entry(k).or_default() += 1;
        }
        let mut ix = Index::default();
        for (i, ks) in keys.iter().enumerate() {
            let i = i as u32;
            // The most selective key: the one the fewest entries share (methods last on ties,
            // since every entry of a route tends to share its method).
            let best = ks.iter().min_by_key(|k| (count[k], matches!(k, Key::Method(_))));
            match best {
                None => ix.rest.push(i),
                Some(Key::Header(name, value)) => posting(&mut ix.headers, name, value).push(i),
                Some(Key::Param(name, value)) => posting(&mut ix.params, name, value).push(i),
                Some(Key::Method(m)) => match ix.methods.iter_mut().find(|(n, _)| n == m) {
                    Some((_, list)) => list.push(i),
                    None => ix.methods.push((m.clone(), vec![i])),
                },
            }
        }
        Some(ix)
    }
}

fn posting<'a>(
    groups: &'a mut Vec<(Box<[u8]>, Postings)>,
    name: &[u8],
    value: &Bytes,
) -> &'a mut Vec<u32> {
    let g = match groups.iter().position(|(n, _)| **n == *name) {
        Some(g) => g,
        None => {
            groups.push((name.into(), FxHashMap::default()));
            groups.len() - 1
        }
    };
    groups[g].1.entry(value.clone()).or_default()
}

/// The candidate lists of one request, merged in ascending order. Fixed capacity: a request
/// that hits more lists than this is evaluated by the linear scan instead.
pub(crate) struct Candidates<'a> {
    lists: [&'a [u32]; CAP],
    len: usize,
    next_min: u32,
}

/// How many posting lists one request may hit before the linear scan is used instead.
const CAP: usize = 32;

impl<'a> Candidates<'a> {
    pub(crate) fn new() -> Self {
        Candidates { lists: [&[]; CAP], len: 0, next_min: 0 }
    }

    /// Adds a list; `false` when full.
    pub(crate) fn push(&mut self, list: &'a [u32]) -> bool {
        if list.is_empty() {
            return true;
        }
        if self.len == CAP {
            return false;
        }
        self.lists[self.len] = list;
        self.len += 1;
        true
    }
}

impl Iterator for Candidates<'_> {
    type Item = usize;

    /// The smallest entry index not yet returned.
    fn next(&mut self) -> Option<usize> {
        let mut min: Option<u32> = None;
        for list in &mut self.lists[..self.len] {
            // Drop what was already returned (the same entry can sit in several lists).
            let skip = list.partition_point(|&i| i < self.next_min);
            *list = &list[skip..];
            if let Some(&head) = list.first() {
                min = Some(min.map_or(head, |m| m.min(head)));
            }
        }
        let m = min?;
        self.next_min = m + 1;
        Some(m as usize)
    }
}
