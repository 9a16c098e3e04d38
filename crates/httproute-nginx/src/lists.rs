//! The match lists of `matches.json` (the preload carrier): each run of candidates that
//! locations share (a [`Segment`] of the plan) written once, under its own key, and each location's list as includes of
//! those runs (`{"include": KEY}`, the module's extension of NGF's format; see the README's
//! "Shared lists"). A list of one run is that run's key. Identical texts share one key (NGF's
//! layout: a PathPrefix rule's `= /p` and `/p/` locations; the same run in several servers).

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::plan::{Candidate, Entry, Segment};

/// An element of a written list.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Item<'a> {
    Entry(&'a Entry),
    Include { include: String },
}

/// The lists written so far, by key.
#[derive(Default)]
pub struct Lists<'a> {
    matches: BTreeMap<String, Vec<Item<'a>>>,
    key_of_text: HashMap<String, String>,
    /// A run already looked at, by [`Segment::id`] (the same candidates in the same order,
    /// whichever location holds it): its key, `None` when it serves none.
    key_of_run: HashMap<(usize, usize, usize), Option<String>>,
}

impl<'a> Lists<'a> {
    /// The key of the list of a location whose candidates are the runs `segments`, of which
    /// those `served` takes are written (`None`: it serves none); `key`: the name it gets if
    /// its text is new (`PORT_SERVER_LOCATION`), its runs `KEY_N`. Each run is looked at
    /// once, whatever the number of locations holding it.
    pub fn key(
        &mut self,
        key: &str,
        segments: &'a [Segment],
        served: &dyn Fn(&Candidate) -> bool,
    ) -> Result<Option<String>, String> {
        let mut live: Vec<&'a Segment> = Vec::with_capacity(segments.len());
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
                live.push(s);
            }
        }
        if let [only] = &live[..] {
            return self.run(key.to_owned(), only, served).map(Some);
        }
        if live.is_empty() {
            return Ok(None);
        }
        let mut items = Vec::with_capacity(live.len());
        for (n, s) in live.iter().enumerate() {
            let include = self.run(format!("{key}_{n}"), s, served)?;
            items.push(Item::Include { include });
        }
        let out = self.text(key.to_owned(), items)?;
        debug_assert_eq!(
            self.expanded(&out),
            segments
                .iter()
                .flat_map(Segment::candidates)
                .filter(|c| served(c))
                .map(|c| &c.entry)
                .collect::<Vec<_>>()
        );
        Ok(Some(out))
    }

    /// The key of one run that serves some candidate, written once.
    fn run(
        &mut self,
        key: String,
        run: &'a Segment,
        served: &dyn Fn(&Candidate) -> bool,
    ) -> Result<String, String> {
        if let Some(Some(k)) = self.key_of_run.get(&run.id()) {
            return Ok(k.clone());
        }
        let items: Vec<Item<'a>> =
            run.candidates().iter().filter(|c| served(c)).map(|c| Item::Entry(&c.entry)).collect();
        if items.is_empty() {
            return Err("generator bug: an empty run".into());
        }
        let k = self.text(key, items)?;
        self.key_of_run.insert(run.id(), Some(k.clone()));
        Ok(k)
    }

    /// The key of a list with these items: an earlier one with the same text, or `key`.
    fn text(&mut self, key: String, items: Vec<Item<'a>>) -> Result<String, String> {
        let text = serde_json::to_string(&items).map_err(|e| e.to_string())?;
        Ok(self
            .key_of_text
            .entry(text)
            .or_insert_with(|| {
                self.matches.insert(key.clone(), items);
                key
            })
            .clone())
    }

    /// The entries of the list under `key`, includes expanded.
    fn expanded(&self, key: &str) -> Vec<&'a Entry> {
        let mut out = Vec::new();
        for item in self.matches.get(key).into_iter().flatten() {
            match item {
                Item::Entry(e) => out.push(*e),
                Item::Include { include } => out.extend(self.expanded(include)),
            }
        }
        out
    }

    /// `matches.json`'s text.
    pub fn json(&self) -> Result<String, String> {
        Ok(serde_json::to_string(&self.matches).map_err(|e| e.to_string())? + "\n")
    }
}
