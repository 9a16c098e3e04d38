//! The CRD's uniqueness rules for a route's `parentRefs` (CommonRouteSpec's two CEL rules),
//! checked in one pass by hashing rather than the CRD's pairwise `self.all(p1, self.all(p2,
//! ...))`:
//!
//! - "sectionName or port must be specified when parentRefs includes 2 or more references to
//!   the same parent": every reference to one parent (group and kind with their defaults, name,
//!   and namespace as written: unset and `""` alike, `default` another) has a sectionName, or
//!   none has; likewise a port;
//! - "sectionName or port must be unique when parentRefs includes 2 or more references to the
//!   same parent": no two references to one parent have the same sectionName and port.

use std::collections::HashMap;

use super::types::ParentRef;

/// `Err((field, message))` as the CRD refuses the list.
pub(crate) fn check(refs: &[ParentRef]) -> Result<(), (String, String)> {
    if refs.len() < 2 {
        // Both rules are about two references (most routes have one): no map to build.
        return Ok(());
    }
    let field = "spec.parentRefs".to_owned();
    // Parent -> (has a sectionName, has a port) of its first reference.
    let mut shape: HashMap<(&str, &str, &str, &str), (bool, bool)> = HashMap::new();
    let mut seen: HashMap<(&str, &str, &str, &str, &str, u16), ()> = HashMap::new();
    for p in refs {
        let group = p.group.as_deref().unwrap_or("gateway.networking.k8s.io");
        let kind = p.kind.as_deref().unwrap_or("Gateway");
        let ns = p.namespace.as_deref().unwrap_or("");
        let parent = (group, kind, p.name.as_str(), ns);
        let section = p.section_name.as_deref().unwrap_or("");
        let port = p.port.unwrap_or(0);
        let this = (!section.is_empty(), port != 0);
        if *shape.entry(parent).or_insert(this) != this {
            return Err((
                field,
                "sectionName or port must be specified when parentRefs includes 2 or more \
                 references to the same parent"
                    .into(),
            ));
        }
        if seen.insert((group, kind, p.name.as_str(), ns, section, port), ()).is_some() {
            return Err((
                field,
                "sectionName or port must be unique when parentRefs includes 2 or more \
                 references to the same parent"
                    .into(),
            ));
        }
    }
    Ok(())
}
