//! The match lists of `matches.json` (the preload carrier): each run of candidates that
//! locations share written once, under its own key, and each location's list as includes of
//! those runs (`{"include": KEY}`, the module's extension of NGF's format; see the README's
//! "Shared lists"). A list of one run is that run's key. Identical texts share one key (NGF's
//! layout: a PathPrefix rule's `= /p` and `/p/` locations; the same run in several servers).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde::Serialize;

use crate::plan::segments::runs;
use crate::plan::{Candidate, Entry};

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
    /// A run already written, by (its first candidate, its length): the same candidates in
    /// the same order, whichever location asks (a run is a contiguous piece of one block).
    key_of_run: HashMap<(usize, usize), String>,
}

impl<'a> Lists<'a> {
    /// The key of the list of `list` (a location's candidates, in precedence order, none
    /// left out); `key`: the name it gets if its text is new (`PORT_SERVER_LOCATION`), its
    /// runs `KEY_N`.
    pub fn key(&mut self, key: &str, list: &[&'a Arc<Candidate>]) -> Result<String, String> {
        let plain: Vec<&Candidate> = list.iter().map(|c| &***c).collect();
        let runs = runs(&plain);
        if let [only] = &runs[..] {
            return self.run(key.to_owned(), &list[only.clone()]);
        }
        let mut items = Vec::with_capacity(runs.len());
        for (n, r) in runs.iter().enumerate() {
            let include = self.run(format!("{key}_{n}"), &list[r.clone()])?;
            items.push(Item::Include { include });
        }
        let out = self.text(key.to_owned(), items)?;
        debug_assert_eq!(self.expanded(&out), list.iter().map(|c| &c.entry).collect::<Vec<_>>());
        Ok(out)
    }

    /// The key of one run, written once.
    fn run(&mut self, key: String, run: &[&'a Arc<Candidate>]) -> Result<String, String> {
        let Some(first) = run.first() else { return Err("generator bug: an empty run".into()) };
        let id = (Arc::as_ptr(first) as usize, run.len());
        if let Some(k) = self.key_of_run.get(&id) {
            return Ok(k.clone());
        }
        let items = run.iter().map(|c| Item::Entry(&c.entry)).collect();
        let k = self.text(key, items)?;
        self.key_of_run.insert(id, k.clone());
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
