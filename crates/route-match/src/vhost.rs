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
}
