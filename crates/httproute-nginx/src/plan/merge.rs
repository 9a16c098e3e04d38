//! Server merging: servers that are the same on several ports are written once, with a
//! `listen` per port (emit writes what this decides).

use super::ids::ListenerId;
use super::types::{Loc, PortPlan, ServerPlan};

/// A server of the plan: (index of its port, index in the port's servers).
pub type ServerAt = (usize, usize);

/// Servers that are the same on several ports, written once with a `listen` per port.
///
/// Two servers of different ports are one when everything written in them is the same: the
/// host name, the certificates, the locations with their lists and the rules. Their ports
/// must also be alike: both HTTP or both HTTPS, the same HTTP/2 setting, and, over TLS, the
/// same host names of the same listener hostnames (emit's SNI check of an HTTPS server reads
/// the map of the first port). A server
/// with a RequestRedirect to the listener's own port (no port, no scheme) stays on its port.
/// Servers that fall back to the same name are one: the module looks the name up on the socket
/// a request came in on, so each port's own server of that name answers there.
/// Each server is hashed once and compared with the first server of its bucket, so the cost
/// grows with the servers, not with their pairs.
#[derive(Debug, Default)]
pub struct Merged {
    /// Per port, per server: the (port, server) indexes it stands for, when it is the first of
    /// them; `None` for one written with an earlier port.
    members: Vec<Vec<Option<Vec<ServerAt>>>>,
}

/// What tells servers apart cheaply (their port's `shape`, its pin, names, locations and rules);
/// `alike` decides.
fn sketch(shape: (bool, bool, Option<usize>), pinned: Option<u16>, server: &ServerPlan) -> u64 {
    use std::hash::{Hash as _, Hasher as _};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (shape, pinned).hash(&mut h);
    (&server.hostname, &server.certificates, &server.fallback).hash(&mut h);
    (server.locations.len(), server.rules.len()).hash(&mut h);
    for l in &server.locations {
        match &l.loc {
            Loc::Exact(p) => (0u8, p).hash(&mut h),
            Loc::Prefix(p) => (1u8, p).hash(&mut h),
        }
        l.len().hash(&mut h);
    }
    for r in &server.rules {
        (&r.id, r.backends.len()).hash(&mut h);
    }
    h.finish()
}

impl Merged {
    /// The merging of the servers of `ports` (`Plan::merged`).
    pub fn of(ports: &[PortPlan]) -> Merged {
        Merged::keeping_apart(ports, |_| false)
    }

    /// [`Merged::of`], but the servers `apart` says are written for their own port alone (a
    /// Gateway's whose servers leave out a route other servers alike keep).
    pub fn keeping_apart(ports: &[PortPlan], apart: impl Fn(&ServerPlan) -> bool) -> Merged {
        use std::collections::HashMap;
        // Over TLS: ports with the same host names, each of the same listener hostname (their
        // SNI maps are the same).
        type Tagged<'a> = Vec<(Option<&'a str>, Option<&'a str>)>;
        let mut host_sets: HashMap<Tagged<'_>, usize> = HashMap::new();
        let hosts: Vec<usize> = ports
            .iter()
            .map(|p| {
                let set: Tagged<'_> = p
                    .servers
                    .iter()
                    .map(|s| (s.hostname.as_deref(), s.listener_hostname.as_deref()))
                    .collect();
                let n = host_sets.len();
                *host_sets.entry(set).or_insert(n)
            })
            .collect();
        // A redirect whose port is the listener's: the server is written for its port.
        let pinned = |p: &PortPlan, s: &ServerPlan| -> Option<u16> {
            s.rules
                .iter()
                .any(|r| {
                    r.redirect.as_ref().is_some_and(|r| r.port.is_none() && r.scheme.is_none())
                })
                .then_some(p.port)
        };
        let alike = |(ap, a): (usize, &ServerPlan), (bp, b): (usize, &ServerPlan)| {
            let (pa, pb) = (&ports[ap], &ports[bp]);
            pa.tls == pb.tls
                && pa.http2 == pb.http2
                && (!pa.tls || hosts[ap] == hosts[bp])
                && pinned(pa, a) == pinned(pb, b)
                // The name alone: the module looks it up on each socket.
                && a.fallback == b.fallback
                && a.hostname == b.hostname
                && a.certificates == b.certificates
                && a.brought_by == b.brought_by
                && a.locations == b.locations
                && a.rules == b.rules
        };
        // A port's servers have names of their own: a name on one port alone is one server.
        let mut named: HashMap<Option<&str>, usize> = HashMap::new();
        for s in ports.iter().flat_map(|p| &p.servers) {
            *named.entry(s.hostname.as_deref()).or_default() += 1;
        }
        let mut buckets: HashMap<u64, Vec<ServerAt>> = HashMap::new();
        let mut members: Vec<Vec<Option<Vec<ServerAt>>>> =
            ports.iter().map(|p| p.servers.iter().map(|_| None).collect()).collect();
        for (pi, port) in ports.iter().enumerate() {
            for (si, server) in port.servers.iter().enumerate() {
                if named[&server.hostname.as_deref()] == 1 || apart(server) {
                    members[pi][si] = Some(vec![(pi, si)]);
                    continue;
                }
                let shape = (port.tls, port.http2, port.tls.then_some(hosts[pi]));
                let bucket =
                    buckets.entry(sketch(shape, pinned(port, server), server)).or_default();
                let first = bucket
                    .iter()
                    .copied()
                    .find(|&(fp, fs)| alike((fp, &ports[fp].servers[fs]), (pi, server)));
                match first {
                    Some((fp, fs)) => {
                        members[fp][fs].as_mut().expect("the first of its group").push((pi, si))
                    }
                    None => {
                        bucket.push((pi, si));
                        members[pi][si] = Some(vec![(pi, si)]);
                    }
                }
            }
        }
        Merged { members }
    }

    /// The servers (port, server) that server `si` of port `pi` is written for, or `None` when
    /// it is written with an earlier port.
    pub fn members(&self, pi: usize, si: usize) -> Option<&[ServerAt]> {
        self.members[pi][si].as_deref()
    }

    /// The members server `(pi, si)` is written for, those on a listened port
    /// ([`Merged::listened`]) that `written` keeps (`Left::written`: the one predicate of
    /// emit, the budgets and explain). Emit writes the first member's server for them, once;
    /// the budgets count it once. Empty: not written here (an earlier port's, or no member
    /// left).
    pub fn written_for(
        &self,
        (ports, listened): (&[PortPlan], &[bool]),
        (pi, si): ServerAt,
        written: &dyn Fn(&ServerPlan) -> bool,
    ) -> Vec<ServerAt> {
        let Some(all) = self.members(pi, si) else { return Vec::new() };
        let kept = |&(p, i): &ServerAt| listened[p] && written(&ports[p].servers[i]);
        all.iter().copied().filter(kept).collect()
    }

    /// Per port, whether it is listened on when the listeners `dropped` are left out: all
    /// are when none is, else those with a listener kept.
    pub fn listened(ports: &[PortPlan], dropped: &dyn Fn(&ListenerId) -> bool) -> Vec<bool> {
        let kept = |s: &ServerPlan| !s.listener.as_ref().is_some_and(dropped);
        let none = ports.iter().flat_map(|p| &p.servers).all(kept);
        let listened = |p: &PortPlan| p.servers.iter().any(|s| s.listener.is_some() && kept(s));
        ports.iter().map(|p| none || listened(p)).collect()
    }

    /// Whether some server is written for port `pi` (first of its group).
    pub fn writes_any(&self, pi: usize) -> bool {
        self.members[pi].iter().any(Option::is_some)
    }
}
