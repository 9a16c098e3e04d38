//! ReferenceGrants: whether one lets a route's (or a Gateway's) namespace use an object of
//! another namespace. Below the stages that ask (listeners for certificates, backends).
//!
//! Indexed once by (to namespace, from kind, from namespace, to kind): a question is one
//! lookup, whatever the number of grants (a scan per reference was quadratic: n references
//! into one namespace holding n grants).

use std::collections::{HashMap, HashSet};

use crate::model::ReferenceGrant;

/// The grant key of an InferencePool (its group is not the core one).
pub(super) const POOL_KIND: &str = "inference.networking.k8s.io/InferencePool";

/// (to namespace, from kind, from namespace, to kind).
type Key<'a> = (&'a str, &'a str, &'a str, &'a str);

/// The grants of the inputs, by what they let use what: `None`, every object of the kind;
/// else the names granted.
#[derive(Default)]
pub(super) struct Grants<'a>(HashMap<Key<'a>, Option<HashSet<&'a str>>>);

impl<'a> Grants<'a> {
    /// The index of `grants`: one entry per (from, to) pair of each grant (the CRD allows 16
    /// of each: at most 256 per grant).
    pub(super) fn of(grants: &'a [ReferenceGrant]) -> Self {
        let mut index: HashMap<Key<'a>, Option<HashSet<&'a str>>> = HashMap::new();
        for g in grants {
            let froms = g.spec.from.iter().filter(|f| f.group == "gateway.networking.k8s.io");
            for f in froms {
                for t in &g.spec.to {
                    // A core kind by its name; an InferencePool by its group too.
                    let to_kind: &str = match (t.group.as_str(), t.kind.as_str()) {
                        ("", kind) => kind,
                        (crate::model::INFERENCE_GROUP, "InferencePool") => POOL_KIND,
                        _ => continue,
                    };
                    let key = (g.metadata.namespace.as_str(), &*f.kind, &*f.namespace, to_kind);
                    let names = index.entry(key).or_insert_with(|| Some(HashSet::new()));
                    match (&t.name, names) {
                        (Some(n), Some(names)) => {
                            names.insert(n);
                        }
                        (None, names) => *names = None,
                        (Some(_), None) => {}
                    }
                }
            }
        }
        Grants(index)
    }

    /// Whether a ReferenceGrant in `to_ns` lets objects of kind `from.0` (a Gateway API kind)
    /// in namespace `from.1` use the core object `to` (kind, name).
    pub(super) fn granted(&self, from: (&str, &str), to_ns: &str, to: (&str, &str)) -> bool {
        self.0
            .get(&(to_ns, from.0, from.1, to.0))
            .is_some_and(|names| names.as_ref().is_none_or(|n| n.contains(to.1)))
    }
}
