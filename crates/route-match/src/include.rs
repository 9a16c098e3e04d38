//! Shared lists: `{"include": "KEY"}` elements of a `matches.json` (an extension of NGF's
//! format, written by `httproute-nginx` so that its output grows with its input).
//!
//! A list of a file is either match entries or includes, never both. An include names a list
//! of match entries of the same file (one level deep: no cycles, no fan-out). The compiled list
//! of includes holds the compiled lists it names, shared with their own keys (their entries and
//! indexes are in the file's one compiled form, never copied); it is evaluated segment after
//! segment, first match wins, with one budget and one memo for the whole evaluation, and an
//! entry's number (`$matches_entry`, the outcome's `entry`) is its place in the expanded list.

use rustc_hash::FxHashMap as HashMap;
use serde_json::{Map, Value};

use crate::parse::{INCLUDE, key_path, key_shown};
use crate::store::{Builder, Span};

/// What a key of a file holds, while the file is compiled.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Slot {
    /// A list of match entries: its number among them.
    Plain(u32),
    /// A list of includes: its number among them.
    Composite(u32),
}

/// The lists of includes resolved: each key's list number, and the lists made of segments.
pub(crate) struct Resolved {
    /// Per key (in the order given), the number of its list: the lists of entries first, then
    /// [`Resolved::composites`].
    pub(crate) numbers: Vec<u32>,
    /// Distinct lists of two or more includes: the numbers of the lists they name, in order.
    pub(crate) composites: Vec<Vec<u32>>,
}

/// Resolves every include to the list of entries it names. A list of one include is that
/// list (its key an alias); identical lists of includes are made once.
///
/// The parser already refused unknown keys and nested includes with their position; these
/// errors are for a file whose survey was cut short (then the parse fails first anyway).
pub(crate) fn resolve(
    b: &Builder,
    keys: &[(Span, Slot)],
    composites: &[Vec<String>],
    plain: usize,
) -> Result<Resolved, String> {
    let mut by_key: HashMap<&[u8], Slot> = HashMap::default();
    by_key.try_reserve(keys.len()).map_err(|_| "out of memory resolving includes".to_owned())?;
    for (span, slot) in keys {
        by_key.insert(b.text(*span), *slot);
    }
    let mut made: HashMap<&[u32], u32> = HashMap::default();
    let mut resolved: Vec<Vec<u32>> = Vec::new();
    let mut number_of: Vec<u32> = Vec::new();
    let targets: Vec<Vec<u32>> = composites
        .iter()
        .map(|targets| {
            targets
                .iter()
                .map(|t| match by_key.get(t.as_bytes()) {
                    Some(Slot::Plain(n)) => Ok(*n),
                    Some(Slot::Composite(_)) => Err(format!(
                        "the list {} has includes of its own: includes are one level deep",
                        key_path(Some(t))
                    )),
                    None => Err(format!(
                        "unknown key {}: an include names a list of the same file",
                        key_shown(t)
                    )),
                })
                .collect::<Result<Vec<u32>, String>>()
        })
        .collect::<Result<_, _>>()?;
    for t in &targets {
        let number = match t[..] {
            [one] => one,
            _ => match made.get(&t[..]) {
                Some(&n) => n,
                None => {
                    let n = u32::try_from(plain + resolved.len())
                        .map_err(|_| "too many lists".to_owned())?;
                    made.insert(&t[..], n);
                    resolved.push(t.clone());
                    n
                }
            },
        };
        number_of.push(number);
    }
    let numbers = keys
        .iter()
        .map(|(_, slot)| match *slot {
            Slot::Plain(n) => n,
            Slot::Composite(c) => number_of.get(c as usize).copied().unwrap_or(u32::MAX),
        })
        .collect();
    Ok(Resolved { numbers, composites: resolved })
}

/// A `matches.json` (as JSON) with every include expanded: each list of includes replaced by
/// the entries of the lists it names, in order. The lists that [`crate::compile_file`] accepts
/// come out as NGF's format (what njs and any other reader of it evaluate alike); an include
/// that the module refuses is an error here too.
pub fn flatten(file: &Map<String, Value>) -> Result<Map<String, Value>, String> {
    let mut out = Map::new();
    for (key, list) in file {
        let Some(items) = list.as_array() else {
            return Err(format!("{} is not a list", key_path(Some(key))));
        };
        let mut flat: Vec<Value> = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let Some(target) = item.as_object().and_then(|o| o.get(INCLUDE)) else {
                flat.push(item.clone());
                continue;
            };
            let at = format!("{}[{i}]", key_path(Some(key)));
            let target = target.as_str().ok_or_else(|| format!("{at}: include is no string"))?;
            let named = file
                .get(target)
                .and_then(Value::as_array)
                .ok_or_else(|| format!("{at}: unknown key {}", key_shown(target)))?;
            if named.iter().any(|e| e.get(INCLUDE).is_some()) {
                return Err(format!("{at}: {} has includes of its own", key_shown(target)));
            }
            flat.extend(named.iter().cloned());
        }
        out.insert(key.clone(), Value::Array(flat));
    }
    Ok(out)
}

/// [`flatten`] of a `matches.json` text, as text (for tools: what NGF's njs, or any other
/// reader of NGF's format, can evaluate).
pub fn flatten_text(json: &str) -> Result<String, String> {
    let file: Map<String, Value> = serde_json::from_str(json).map_err(|e| e.to_string())?;
    serde_json::to_string(&flatten(&file)?).map_err(|e| e.to_string())
}
