//! NGINX's choice of a server for a host name among the servers of one listen socket, as
//! `ngx_http_server_names` builds its hashes (`ngx_hash_add_key`: the first of conflicting
//! names is kept) and `ngx_hash_find_combined` searches them: the exact name, else the
//! longest `*.` / `.` wildcard that covers it, else none (the socket's default server).
//! Trailing wildcards (`www.example.*`) and regular expressions are left out here, and the
//! module's lookup at request time leaves them out too.
//!
//! Pure code for the module's `http_matches_fallback`, which resolves its names with it at
//! load, per socket, and checks the walks they make ([`longest_walks`]) before a request can
//! take one.

use std::collections::{HashMap, HashSet};

/// The names of the servers of one socket, in the order NGINX adds them.
#[derive(Default)]
pub struct Names<'a> {
    /// Exact names kept, to the first server that has them.
    exact: HashMap<&'a [u8], usize>,
    /// Wildcards kept, by the name they cover (`S` of `*.S` and `.S`): the server, and
    /// whether `S` itself is covered (`.S`).
    head: HashMap<&'a [u8], (usize, bool)>,
    /// The exact keys taken: exact names and the `S` of each `.S`, which conflict.
    taken: HashSet<&'a [u8]>,
}

impl<'a> Names<'a> {
    /// Adds `name` (lowercased, not a regular expression) of `server`, as `ngx_hash_add_key`
    /// with `NGX_HASH_WILDCARD_KEY`: a name whose key is taken is ignored (NGINX warns
    /// "conflicting server name"); a trailing wildcard is not looked up; a name NGINX refuses
    /// (a `*` elsewhere) fails the configuration before a request is served, and is skipped.
    pub fn add(&mut self, name: &'a [u8], server: usize) {
        if name.len() > 1 && name[0] == b'.' {
            let s = &name[1..];
            // `.S` takes the exact key S first, then the wildcard key S.
            if self.taken.insert(s) {
                self.head.entry(s).or_insert((server, true));
            }
        } else if name.len() > 2 && name.starts_with(b"*.") {
            self.head.entry(&name[2..]).or_insert((server, false));
        } else if name.contains(&b'*') {
            // `www.example.*`, or a name NGINX refuses.
        } else if self.taken.insert(name) {
            self.exact.insert(name, server);
        }
    }

    /// The server NGINX picks for `host` (lowercased) among the names added, `None` for the
    /// socket's default server.
    pub fn find(&self, host: &[u8]) -> Option<usize> {
        if let Some(&s) = self.exact.get(host) {
            return Some(s);
        }
        if host.is_empty() {
            return None;
        }
        if let Some(&(s, true)) = self.head.get(host) {
            return Some(s);
        }
        host.iter()
            .enumerate()
            .filter(|&(_, &b)| b == b'.')
            .find_map(|(i, _)| self.head.get(&host[i + 1..]).map(|&(s, _)| s))
    }
}

/// Whether `name` is one `http_matches_fallback` takes: `""`, a host name (labels of letters,
/// digits, `-` and `_`, joined by single dots), or `*.` and a host name.
pub fn valid_fallback_name(name: &[u8]) -> bool {
    if name.is_empty() {
        return true;
    }
    let host = name.strip_prefix(b"*.").unwrap_or(name);
    !host.is_empty()
        && host.split(|&b| b == b'.').all(|label| {
            !label.is_empty()
                && label.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

/// The number of servers on the longest walk from each node (itself included) of the graph
/// `targets`, or a cycle (its nodes in walk order) when there is one. Iterative: a chain may
/// be thousands of servers long.
pub fn longest_walks(targets: &[Vec<usize>]) -> Result<Vec<usize>, Vec<usize>> {
    const NEW: u8 = 0;
    const ON_PATH: u8 = 1;
    const DONE: u8 = 2;
    let mut state = vec![NEW; targets.len()];
    let mut depth = vec![0usize; targets.len()];
    for start in 0..targets.len() {
        if state[start] != NEW {
            continue;
        }
        // (node, next target to look at)
        let mut path: Vec<(usize, usize)> = vec![(start, 0)];
        state[start] = ON_PATH;
        while let Some(&(node, next)) = path.last() {
            match targets[node].get(next) {
                Some(&t) => {
                    if let Some(top) = path.last_mut() {
                        top.1 += 1;
                    }
                    match state[t] {
                        NEW => {
                            state[t] = ON_PATH;
                            path.push((t, 0));
                        }
                        ON_PATH => {
                            let from = path.iter().position(|&(p, _)| p == t).unwrap_or(0);
                            return Err(path[from..].iter().map(|&(p, _)| p).collect());
                        }
                        _ => {}
                    }
                }
                None => {
                    depth[node] = 1 + targets[node].iter().map(|&t| depth[t]).max().unwrap_or(0);
                    state[node] = DONE;
                    path.pop();
                }
            }
        }
    }
    Ok(depth)
}

/// A listen socket as `http_matches_fallback` sees it.
#[derive(Debug, Default)]
pub struct Socket {
    /// Its servers (indexes), in the order NGINX adds their names to its hash.
    pub servers: Vec<usize>,
    /// Its default server (`listen ... default_server`, else its first).
    pub default_server: Option<usize>,
}

/// Why a configuration's fallbacks are refused.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Server `server`'s fallback names `server` itself on socket `socket` (said once per
    /// server, on its first such socket).
    Itself {
        /// The server.
        server: usize,
        /// The socket.
        socket: usize,
    },
    /// The fallbacks form a cycle: its servers in walk order, starting at the first in
    /// configuration order.
    Cycle(Vec<usize>),
    /// A request may pass through `depth` servers from `server` (the first such in
    /// configuration order), more than allowed.
    TooLong {
        /// The server.
        server: usize,
        /// The servers of its longest walk.
        depth: usize,
    },
}

impl Refusal {
    /// The `[emerg]` text of this refusal (after `http_matches_fallback: `): `names` as given
    /// to [`fallback_targets`] (a server's first name labels it), `sockets` each socket's
    /// `addr:port`, `written(i)` server `i`'s fallback as written, `at(i)` where its
    /// directive stands, `max_chain` as given.
    pub fn text(
        &self,
        names: &[Vec<Vec<u8>>],
        sockets: &[String],
        written: impl Fn(usize) -> String,
        at: impl Fn(usize) -> String,
        max_chain: usize,
    ) -> String {
        let first = |i: usize| names.get(i).and_then(|n| n.first()).map_or(&b""[..], |n| n);
        let label = |i: usize| format!("\"{}\"", String::from_utf8_lossy(first(i)));
        match self {
            Refusal::Itself { server: i, socket } => format!(
                "\"{}\" names this server itself on {} in {}",
                written(*i),
                sockets.get(*socket).map_or("", |s| s),
                at(*i)
            ),
            Refusal::Cycle(cycle) => {
                let walk = cycle.iter().chain(cycle.first()).map(|&i| label(i));
                let at = cycle.first().map(|&i| at(i)).unwrap_or_default();
                format!(
                    "the fallbacks form a cycle: {} in {at}",
                    walk.collect::<Vec<_>>().join(" -> ")
                )
            }
            Refusal::TooLong { server: i, depth } => format!(
                "a request may pass through {depth} servers from {} (at most {max_chain}) in {}",
                label(*i),
                at(*i)
            ),
        }
    }
}

/// The servers each server's fallback reaches, over all its sockets, in socket order:
/// `fallbacks[i]` (lowercased; `None`: no fallback) looked up on each socket of server `i`
/// among the names (`names[j]`: server `j`'s, lowercased, no regular expression) of that
/// socket's servers, else its default server. Refused: a server that reaches itself, else a
/// cycle, else a walk through more than `max_chain` servers. Linear in the servers' names
/// times their sockets. Total: a server past `fallbacks` has no fallback, one past `names` (a
/// socket's index out of range) none of either and no targets.
pub fn fallback_targets(
    names: &[Vec<Vec<u8>>],
    sockets: &[Socket],
    fallbacks: &[Option<Vec<u8>>],
    max_chain: usize,
) -> Result<Vec<Vec<usize>>, Vec<Refusal>> {
    let mut targets: Vec<Vec<usize>> = vec![Vec::new(); names.len()];
    let (mut refused, mut said) = (Vec::new(), vec![false; names.len()]);
    let fallback = |i: usize| fallbacks.get(i).and_then(Option::as_ref);
    for (k, socket) in sockets.iter().enumerate() {
        if !socket.servers.iter().any(|&i| fallback(i).is_some()) {
            continue;
        }
        let mut on = Names::default();
        for &i in &socket.servers {
            for n in names.get(i).into_iter().flatten() {
                on.add(n, i);
            }
        }
        for &i in socket.servers.iter().filter(|&&i| i < names.len()) {
            let Some(name) = fallback(i) else { continue };
            let found = on.find(name).or(socket.default_server).filter(|&t| t < names.len());
            if found == Some(i) {
                if !std::mem::replace(&mut said[i], true) {
                    refused.push(Refusal::Itself { server: i, socket: k });
                }
            } else if let Some(t) = found.filter(|t| !targets[i].contains(t)) {
                targets[i].push(t);
            }
        }
    }
    if !refused.is_empty() {
        return Err(refused);
    }
    match longest_walks(&targets) {
        Err(mut cycle) => {
            let first = cycle.iter().enumerate().min_by_key(|&(_, &c)| c).map_or(0, |(k, _)| k);
            cycle.rotate_left(first);
            Err(vec![Refusal::Cycle(cycle)])
        }
        Ok(depth) => match (0..names.len()).find(|&i| depth[i] > max_chain) {
            Some(server) => Err(vec![Refusal::TooLong { server, depth: depth[server] }]),
            None => Ok(targets),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names<'a>(servers: &[&'a [&'a str]]) -> Names<'a> {
        let mut n = Names::default();
        for (i, names) in servers.iter().enumerate() {
            for name in *names {
                n.add(name.as_bytes(), i);
            }
        }
        n
    }

    #[test]
    fn exact_then_the_longest_wildcard_then_none() {
        let n = names(&[&[""], &["a.b.test"], &["*.test"], &["*.b.test"], &[".c.test"]]);
        assert_eq!(n.find(b""), Some(0));
        assert_eq!(n.find(b"a.b.test"), Some(1));
        assert_eq!(n.find(b"x.b.test"), Some(3));
        assert_eq!(n.find(b"*.b.test"), Some(3));
        assert_eq!(n.find(b"b.test"), Some(2));
        assert_eq!(n.find(b"test"), None);
        // `.c.test` covers c.test itself and its subdomains; `*.test` does not cover test.
        assert_eq!(n.find(b"c.test"), Some(4));
        assert_eq!(n.find(b"x.y.c.test"), Some(4));
        assert_eq!(n.find(b"other"), None);
    }

    #[test]
    fn the_first_of_conflicting_names_is_kept() {
        // The same exact name twice; `.x.test` after the exact x.test is ignored whole (its
        // exact key is taken), and `*.y.test` after `.y.test` (its wildcard key is taken).
        let n = names(&[&["x.test", ".y.test"], &["x.test", ".x.test", "*.y.test"]]);
        assert_eq!(n.find(b"x.test"), Some(0));
        assert_eq!(n.find(b"a.x.test"), None);
        assert_eq!(n.find(b"a.y.test"), Some(0));
        // `.z.test` first: the exact z.test after it is ignored, and `.z.test` answers it.
        let n = names(&[&[".z.test"], &["z.test"]]);
        assert_eq!(n.find(b"z.test"), Some(0));
    }

    #[test]
    fn trailing_wildcards_are_not_looked_up() {
        let n = names(&[&["www.*"], &["www.test"]]);
        assert_eq!(n.find(b"www.test"), Some(1));
        assert_eq!(n.find(b"www.other"), None);
    }

    #[test]
    fn fallback_names() {
        for ok in ["", "a", "a.test", "*.test", "*.b-c.d_e.test", "A.Test"] {
            assert!(valid_fallback_name(ok.as_bytes()), "{ok:?}");
        }
        for bad in [".test", "*", "*.", "a..test", "a.test.", "www.*", "a*.test", "~^a", "a b"] {
            assert!(!valid_fallback_name(bad.as_bytes()), "{bad:?}");
        }
    }

    #[test]
    fn walks_and_cycles() {
        // 0 -> 1 -> 3, 0 -> 2 -> 3 -> 4: the longest walk from 0 is 0 2 3 4.
        let g = vec![vec![1, 2], vec![3], vec![3], vec![4], vec![]];
        assert_eq!(longest_walks(&g), Ok(vec![4, 3, 3, 2, 1]));
        // 0 -> 1 -> 2 -> 1.
        let g = vec![vec![1], vec![2], vec![1]];
        assert_eq!(longest_walks(&g), Err(vec![1, 2]));
        // A cycle reached through a second target.
        let g = vec![vec![3, 1], vec![2], vec![0], vec![]];
        assert_eq!(longest_walks(&g), Err(vec![0, 1, 2]));
        // A long chain, no recursion.
        let g: Vec<Vec<usize>> =
            (0..100_000).map(|i| if i + 1 < 100_000 { vec![i + 1] } else { vec![] }).collect();
        assert_eq!(longest_walks(&g).map(|d| d[0]), Ok(100_000));
    }

    fn socket(servers: &[usize], default_server: usize) -> Socket {
        Socket { servers: servers.to_vec(), default_server: Some(default_server) }
    }

    fn owned(names: &[&[&str]]) -> Vec<Vec<Vec<u8>>> {
        names.iter().map(|n| n.iter().map(|s| s.as_bytes().to_vec()).collect()).collect()
    }

    #[test]
    fn fallbacks_resolve_per_socket_and_their_graph_is_checked() {
        let names = owned(&[&["a.example"], &["b.example"], &["c.example"]]);
        let to = |s: &str| Some(s.as_bytes().to_vec());
        // 0 -> b on both sockets; on the second, b is not there: the default server (2).
        let sockets = [socket(&[0, 1, 2], 0), socket(&[0, 2], 2)];
        let fallbacks = [to("b.example"), None, None];
        let got = fallback_targets(&names, &sockets, &fallbacks, 128);
        assert_eq!(got, Ok(vec![vec![1, 2], vec![], vec![]]));
        // Itself, said once per server though it holds on two sockets.
        let sockets = [socket(&[0, 1], 0), socket(&[0], 0)];
        let fallbacks = [to("a.example"), None, None];
        let got = fallback_targets(&names, &sockets, &fallbacks, 128);
        assert_eq!(got, Err(vec![Refusal::Itself { server: 0, socket: 0 }]));
        // A cycle, from its first server in configuration order: 2 -> 1 -> 2 said as 1 -> 2.
        let sockets = [socket(&[0, 1, 2], 0)];
        let fallbacks = [None, to("c.example"), to("b.example")];
        let got = fallback_targets(&names, &sockets, &fallbacks, 128);
        assert_eq!(got, Err(vec![Refusal::Cycle(vec![1, 2])]));
        // 0 -> 1 -> 2: three servers, over a bound of two.
        let fallbacks = [to("b.example"), to("c.example"), None];
        let got = fallback_targets(&names, &sockets, &fallbacks, 2);
        assert_eq!(got, Err(vec![Refusal::TooLong { server: 0, depth: 3 }]));
        assert!(fallback_targets(&names, &sockets, &fallbacks, 3).is_ok());
        // Total (review 13): fewer fallbacks than servers, a socket's server or default past
        // the servers: no panic, the missing ones have no fallback and reach nothing.
        let sockets = [socket(&[0, 1, 7], 9)];
        let got = fallback_targets(&names, &sockets, &[to("zz.example")], 128);
        assert_eq!(got, Ok(vec![vec![], vec![], vec![]]));
        let got = fallback_targets(&names, &sockets, &[None, None, None, to("a.example")], 128);
        assert_eq!(got, Ok(vec![vec![], vec![], vec![]]));
    }

    #[test]
    fn each_refusal_says_its_servers_socket_and_place() {
        let names = owned(&[&["a.example", "x"], &["b.example"], &[]]);
        let sockets = ["127.0.0.1:80".to_owned()];
        let written = |i: usize| format!("Name{i}");
        let at = |i: usize| format!("f.conf:{i}");
        let text = |r: Refusal| r.text(&names, &sockets, written, at, 9);
        assert_eq!(
            text(Refusal::Itself { server: 1, socket: 0 }),
            "\"Name1\" names this server itself on 127.0.0.1:80 in f.conf:1"
        );
        assert_eq!(
            text(Refusal::Cycle(vec![0, 1, 2])),
            "the fallbacks form a cycle: \"a.example\" -> \"b.example\" -> \"\" -> \"a.example\" in f.conf:0"
        );
        assert_eq!(
            text(Refusal::TooLong { server: 1, depth: 12 }),
            "a request may pass through 12 servers from \"b.example\" (at most 9) in f.conf:1"
        );
    }
}
