//! What the memory tests (reload_memory.rs, pressure.rs) share: the master's pid, its
//! /proc/PID/status and smaps figures, and the NGINX body they load a matches.json with.

use super::Nginx;

/// The http body of the memory tests: `matches.json` loaded, `$match_key` from `x-key`,
/// `/small` and `/big` as the lists' answers. `{MEMORY}` is replaced by an
/// `http_matches_max_memory` line (or nothing).
const CONF_TEMPLATE: &str = r#"
    {MEMORY}
    http_matches_load matches.json;
    server {
      listen 127.0.0.1:{PORT};
      location /small { internal; return 200 "small\n"; }
      location /big { internal; return 200 "big\n"; }
      location = /t { set $match_key $http_x_key; http_matches; }
    }"#;

/// [`CONF_TEMPLATE`] with `memory` (e.g. `"http_matches_max_memory off;"`, or `""`).
pub fn conf(memory: &str) -> String {
    CONF_TEMPLATE.replace("{MEMORY}", memory)
}

/// The master's pid, from `logs/nginx.pid`.
pub fn pid(n: &Nginx) -> u32 {
    let pid = std::fs::read_to_string(n.prefix.dir.join("logs/nginx.pid")).unwrap_or_default();
    pid.trim().parse().expect("master pid")
}

/// A field of /proc/PID/status in KiB (`"VmRSS:"`, `"VmData:"`, `"VmSize:"`; 0 if absent).
pub fn status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// (Size, Rss) in KiB of the anonymous private executable mappings of `pid`: PCRE2's JIT
/// code (sljit maps it `rwxp` with no file; nothing else in NGINX or the module does).
pub fn jit_kib(pid: u32) -> (u64, u64) {
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).unwrap_or_default();
    let (mut size, mut rss, mut jit) = (0, 0, false);
    for line in smaps.lines() {
        let mut words = line.split_whitespace();
        let first = words.next().unwrap_or("");
        if first.contains('-') && first.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
            // A mapping's first line: range, perms, offset, dev, inode, [path].
            let perms = words.next().unwrap_or("");
            let path = words.nth(3);
            jit = perms == "rwxp" && path.is_none();
        } else if jit {
            let kib = || words.clone().next().and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
            match first {
                "Size:" => size += kib(),
                "Rss:" => rss += kib(),
                _ => {}
            }
        }
    }
    (size, rss)
}
