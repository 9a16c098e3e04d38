//! The match lists of `matches.json` (the preload carrier): each run of candidates that
//! locations share (a [`Segment`] of the plan) written once, under its own key, and each location's list as includes of
//! those runs (`{"include": KEY}`, the module's extension of NGF's format; see the README's
//! "Shared lists"). A list of one run is that run's key. Identical texts share one key (NGF's
//! layout: a PathPrefix rule's `= /p` and `/p/` locations; the same run in several servers).
//!
//! A key is its list's text, digested ([`key_of`]): `e` (a list of match entries) or `i` (a
//! list of includes) and the first 128 bits of the SHA-256 of the list's JSON, in hex. So a
//! location's key and what it names depend only on its own list, never on other servers,
//! other tenants or the order things are written in (issue #29, the innocent tenant).

use std::collections::BTreeMap;
use std::io::Write as _;
use std::rc::Rc;

use rustc_hash::FxHashMap;
use serde::Serialize;

use crate::plan::{Candidate, Entry, Segment};

/// The key of a list whose JSON is `text`: `i` for a list of includes, `e` for one of match
/// entries, then the SHA-256 of `text` in hex, its first 128 bits (`full`: all of it).
pub fn key_of(text: &str, includes: bool, full: bool) -> String {
    key_of_digest(&sha256(text.as_bytes()), includes, full)
}

/// The SHA-256 of `bytes`: OpenSSL's context, not its one-call `SHA256()`, which since
/// OpenSSL 3 looks the algorithm up on every call (~5,000 instructions, more than digesting a
/// rule's name or a list).
pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    let mut h = openssl::sha::Sha256::new();
    h.update(bytes);
    h.finish()
}

/// [`key_of`] the text whose SHA-256 is `digest`.
fn key_of_digest(digest: &[u8; 32], includes: bool, full: bool) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = if full { &digest[..] } else { &digest[..16] };
    let mut key = String::with_capacity(1 + 2 * bytes.len());
    key.push(if includes { 'i' } else { 'e' });
    for b in bytes {
        key.push(char::from(HEX[usize::from(b >> 4)]));
        key.push(char::from(HEX[usize::from(b & 15)]));
    }
    key
}

/// An element of a written list.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Item<'a> {
    Entry(&'a Entry),
    Include { include: String },
}

/// A list's key, held once by the maps that name it.
type Key = Rc<str>;

/// The lists written so far, by key, each with the SHA-256 of its text: texts with one
/// SHA-256 are taken as the same text (finding two is a second preimage of SHA-256). A list's
/// items borrow the plan's entries and its text is not kept: the text is made again when
/// matches.json is written ([`Lists::write_json`]), so what the lists hold beyond the plan is
/// a key, a digest and a pointer per item.
#[derive(Default)]
pub struct Lists<'a> {
    matches: BTreeMap<Key, ([u8; 32], Vec<Item<'a>>)>,
    /// A run already looked at, by [`Segment::id`] (the same candidates in the same order,
    /// whichever location holds it): its key, `None` when it serves none. Keyed by an address
    /// and indexes, never a tenant's text: the fast hasher.
    key_of_run: FxHashMap<(usize, usize, usize), Option<Key>>,
    /// The text of the list being digested ([`Lists::text`]).
    buf: Vec<u8>,
}

/// A piece of a block: its candidates `block[range]`.
struct Run<'a> {
    block: &'a [Candidate],
    range: std::ops::Range<usize>,
}

impl Run<'_> {
    /// As [`Segment::id`]: the block by address, and the piece.
    fn id(&self) -> (usize, usize, usize) {
        (self.block.as_ptr() as usize, self.range.start, self.range.end)
    }
}

/// The runs `live` (a location's runs that serve some candidate, in order) with consecutive
/// pieces of one block joined. A location holds each block whole (`plan/segments.rs`), so
/// what lies between two pieces of a block, and before its first or after its last piece
/// that serves, serves none: a joined piece reaches back to the previous one of its block
/// (its start: 0) and the last one to the block's end. So a block no written candidate cuts
/// is one run, the whole block, the same in every location: each looked at once per server.
fn joined(mut live: Vec<Run<'_>>) -> Vec<Run<'_>> {
    if let [one] = &mut live[..] {
        // Most locations: one run, its whole block.
        one.range = 0..one.block.len();
        return live;
    }
    let mut out: Vec<Run<'_>> = Vec::with_capacity(live.len());
    // By block: where its previous piece ended, and that piece's place in `out`.
    let mut last: FxHashMap<usize, (usize, usize)> = FxHashMap::default();
    for r in live {
        let at = r.block.as_ptr() as usize;
        match out.last_mut() {
            Some(prev) if prev.block.as_ptr() as usize == at => prev.range.end = r.range.end,
            _ => {
                let start = last.get(&at).map_or(0, |&(end, _)| end);
                out.push(Run { block: r.block, range: start..r.range.end });
            }
        }
        last.insert(at, (r.range.end, out.len() - 1));
    }
    for (_, i) in last.into_values() {
        out[i].range.end = out[i].block.len();
    }
    out
}

/// Each block `segments` holds, whole: its pieces follow one another from its start to its
/// end (`plan/segments.rs`), so every list cuts a block only where another block's candidate
/// comes between, and [`joined`] may join its live pieces across the ones left out.
fn whole_blocks(segments: &[Segment]) -> bool {
    let mut next: FxHashMap<usize, (usize, usize)> = FxHashMap::default();
    let follow = segments.iter().all(|s| {
        let (end, _) = next.entry(s.id().0).or_insert((0, s.block().len()));
        std::mem::replace(end, s.range.end) == s.range.start
    });
    follow && next.values().all(|(end, len)| end == len)
}

impl<'a> Lists<'a> {
    /// The key of the list of a location whose candidates are the runs `segments`, of which
    /// those `served` takes are written (`None`: it serves none). Each run is looked at once,
    /// whatever the number of locations holding it. Runs serving none are left out, and the
    /// pieces of one block they separated are one run again ([`joined`]): what is written
    /// depends on what is served, never on a cut by a candidate not written.
    pub fn key(
        &mut self,
        segments: &'a [Segment],
        served: &dyn Fn(&Candidate) -> bool,
    ) -> Result<Option<String>, String> {
        debug_assert!(whole_blocks(segments), "a location holds each block whole");
        if let [s] = segments
            && let Some(k) = self.key_of_run.get(&s.id())
        {
            // One block looked at before (the other location of a PathPrefix rule; blocks are
            // a server's own): whole, so its run is the segment.
            return Ok(k.as_deref().map(String::from));
        }
        let mut live: Vec<Run<'a>> = Vec::with_capacity(segments.len());
        for s in segments {
            let serves = match self.key_of_run.get(&s.id()) {
                Some(k) => k.is_some(),
                None => {
                    let any = s.candidates().iter().any(served);
                    if !any {
                        self.key_of_run.insert(s.id(), None);
                    }
                    any
                }
            };
            if serves {
                live.push(Run { block: s.block(), range: s.range.clone() });
            }
        }
        let live = joined(live);
        if let [only] = &live[..] {
            return self.run(only, served).map(|k| Some(String::from(&*k)));
        }
        if live.is_empty() {
            return Ok(None);
        }
        let mut items = Vec::with_capacity(live.len());
        for s in &live {
            let include = String::from(&*self.run(s, served)?);
            items.push(Item::Include { include });
        }
        let out = self.text(items)?;
        debug_assert_eq!(
            self.expanded(&out),
            segments
                .iter()
                .flat_map(Segment::candidates)
                .filter(|c| served(c))
                .map(|c| &c.entry)
                .collect::<Vec<_>>()
        );
        Ok(Some(String::from(&*out)))
    }

    /// The key of one run that serves some candidate, written once.
    fn run(&mut self, run: &Run<'a>, served: &dyn Fn(&Candidate) -> bool) -> Result<Key, String> {
        if let Some(Some(k)) = self.key_of_run.get(&run.id()) {
            return Ok(k.clone());
        }
        let items: Vec<Item<'a>> = run.block[run.range.clone()]
            .iter()
            .filter(|c| served(c))
            .map(|c| Item::Entry(&c.entry))
            .collect();
        if items.is_empty() {
            return Err("generator bug: an empty run".into());
        }
        let k = self.text(items)?;
        self.key_of_run.insert(run.id(), Some(k.clone()));
        Ok(k)
    }

    /// The key of a list with these items ([`key_of`] its text), written once.
    fn text(&mut self, items: Vec<Item<'a>>) -> Result<Key, String> {
        // The text in one buffer for all lists (only its digest is kept).
        self.buf.clear();
        serde_json::to_writer(&mut self.buf, &items).map_err(|e| e.to_string())?;
        let digest = sha256(&self.buf);
        let includes = matches!(items.first(), Some(Item::Include { .. }));
        for full in [false, true] {
            let key = key_of_digest(&digest, includes, full);
            match self.matches.get_key_value(key.as_str()) {
                Some((k, (d, _))) if *d == digest => return Ok(k.clone()),
                // Another text with the same 128 bits: this one is written under all 256.
                // Which of the two gets the long key depends on the order they are written
                // in, but making a text collide with a given one (another tenant's) is a
                // second preimage of SHA-256 cut to 128 bits.
                Some(_) => {}
                None => {
                    let key: Key = key.into();
                    self.matches.insert(key.clone(), (digest, items));
                    return Ok(key);
                }
            }
        }
        Err("generator bug: two match lists with one SHA-256".into())
    }

    /// The entries of the list under `key`, includes expanded.
    fn expanded(&self, key: &str) -> Vec<&'a Entry> {
        let mut out = Vec::new();
        for item in self.matches.get(key).into_iter().flat_map(|(_, items)| items) {
            match item {
                Item::Entry(e) => out.push(*e),
                Item::Include { include } => out.extend(self.expanded(include)),
            }
        }
        out
    }

    /// `matches.json`'s text.
    pub fn json(&self) -> Result<String, String> {
        let mut out = Vec::new();
        self.write_json(&mut out)?;
        String::from_utf8(out).map_err(|e| e.to_string())
    }

    /// `matches.json`'s text, written to `out` list by list (no copy of the whole text).
    pub fn write_json(&self, out: &mut dyn std::io::Write) -> Result<(), String> {
        let mut w = std::io::BufWriter::with_capacity(64 << 10, out);
        // As serde_json writes a map of strings to lists: `{"KEY":LIST,...}`.
        let err = |e: &dyn std::fmt::Display| e.to_string();
        w.write_all(b"{").map_err(|e| err(&e))?;
        for (i, (key, (_, items))) in self.matches.iter().enumerate() {
            if i > 0 {
                w.write_all(b",").map_err(|e| err(&e))?;
            }
            serde_json::to_writer(&mut w, &**key).map_err(|e| err(&e))?;
            w.write_all(b":").map_err(|e| err(&e))?;
            serde_json::to_writer(&mut w, items).map_err(|e| err(&e))?;
        }
        w.write_all(b"}\n").map_err(|e| err(&e))?;
        w.flush().map_err(|e| e.to_string())
    }
}
