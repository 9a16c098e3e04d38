//! What tenants share in NGINX, budgeted before anything is written: an object whose share
//! does not fit is refused, newest first (Gateway API's conflict order, [`Ages`]), so a newer
//! object never evicts an older one, and NGINX never refuses the configuration for it.
//!
//! | resource | rule |
//! |----------|------|
//! | server names in NGINX's hashes (`server_names_hash`, the SNI maps) | [`server_names`] |

use std::collections::{BTreeMap, BTreeSet};

use crate::limits::{ADMIT_ROOM, FALLBACK_SIZE, NameBudget};

use super::ids::{Ages, ListenerId, RouteId};
use super::types::PortPlan;

/// An object a budget refuses: left out of the configuration as NGINX's refusal of it would
/// leave it out (a listener: `Programmed: False`; a route: not served, `Accepted: False`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Refused {
    Listener(ListenerId),
    Route(RouteId),
}

/// The objects whose server names NGINX's hashes cannot hold beside older objects' names, with
/// why. Each name is owned by the routes that alone bring it (a name that is no listener's),
/// else by its listeners; it is as old as its oldest owner. Names are admitted oldest first
/// ([`NameBudget`]: names crafted to share a bucket fill it at most to NGINX's limit); a name
/// that does not fit refuses its owners, and the names of owners already refused are not
/// counted (they are not written).
pub(super) fn server_names(ports: &[PortPlan], ages: &Ages) -> Vec<(Refused, String)> {
    let mut names: BTreeMap<&str, (usize, BTreeSet<Refused>)> = BTreeMap::new();
    for s in ports.iter().flat_map(|p| &p.servers) {
        let Some(h) = s.hostname.as_deref() else { continue };
        let owners: Vec<(usize, Refused)> = if s.brought_by.is_empty() {
            s.listener.iter().map(|l| (ages.listener(l), Refused::Listener(l.clone()))).collect()
        } else {
            s.brought_by.iter().map(|r| (ages.route(r), Refused::Route(r.clone()))).collect()
        };
        let e = names.entry(h).or_insert((usize::MAX, BTreeSet::new()));
        for (age, o) in owners {
            e.0 = e.0.min(age);
            e.1.insert(o);
        }
    }
    let mut order: Vec<(usize, &str, BTreeSet<Refused>)> =
        names.into_iter().map(|(h, (age, owners))| (age, h, owners)).collect();
    order.sort();
    let mut budget = NameBudget::default();
    let mut refused: BTreeSet<Refused> = BTreeSet::new();
    let mut out = Vec::new();
    for (_, h, owners) in order {
        if (!owners.is_empty() && owners.iter().all(|o| refused.contains(o))) || budget.admit(h) {
            continue;
        }
        let why = format!(
            "server name {h} does not fit NGINX's server-name hash beside older objects' names \
             (names that hash alike share a bucket of {ADMIT_ROOM} bytes at {FALLBACK_SIZE} \
             buckets; budget: server-name hash)"
        );
        for o in owners {
            if refused.insert(o.clone()) {
                out.push((o, why.clone()));
            }
        }
    }
    out
}
