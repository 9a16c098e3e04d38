//! What the operator's options write outside the routes: the worker processes and
//! connections, the access log, keepalive in every upstream, and where the files nginx.conf
//! reads (matches.json, Secrets' certificates) live relative to it. [`crate::emit`] calls
//! these where it writes the top of nginx.conf, the `http` block's first lines and each
//! `upstream`; nothing here depends on the routes.

use crate::conf::{Directive, Node};

/// Where the master reports each configuration load, relative to the prefix: the generated
/// configuration's `http_matches_reload_report` (the module writes `N took` or `N refused`,
/// by a rename; no client can write there, unlike the error log).
pub const REPORT: &str = "logs/reload.report";

/// `worker_processes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workers {
    /// One per CPU (NGINX's `auto`).
    Auto,
    /// This many (1-1024, NGINX's `NGX_MAX_PROCESSES`).
    Count(u16),
}

/// `access_log`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AccessLog {
    Off,
    /// A file, relative to the prefix (`nginx -p`) unless absolute.
    Path(String),
}

/// The options of the NGINX process and its connections (`--worker-processes`,
/// `--worker-connections`, `--access-log`, `--upstream-keepalive`), and the directory of the
/// files nginx.conf reads (chosen by [`crate::output`] for a generation, none in tests).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Global {
    pub worker_processes: Workers,
    /// `worker_connections` (1-65535, as NGF's NginxProxy `workerConnections`).
    pub worker_connections: u32,
    /// `--open-files`: the open-file limit (`RLIMIT_NOFILE`, soft) NGINX's master and `nginx
    /// -t` run with; they open every listening socket (the listening sockets budget).
    pub open_files: u32,
    pub access_log: AccessLog,
    /// `keepalive N` in every `upstream`: idle connections to the backends each worker
    /// keeps; 0 writes none (a new connection per request).
    pub keepalive: u32,
    /// The directory, relative to nginx.conf, that `matches.json` and `certs/` are written
    /// to and read from; `None`: next to nginx.conf.
    pub files_dir: Option<String>,
    /// The generation number the configuration is written as (by [`crate::output`]): the
    /// master reports whether it took it ([`reload_report`]); `None`: no report.
    pub generation: Option<u64>,
    /// Bytes of the module's `http_matches_max_memory` one namespace's regex conditions may
    /// take (`--regex-memory-per-tenant`; the regex memory budget, `plan/budget.rs`).
    pub regex_memory_per_tenant: usize,
    /// Bytes all namespaces' regex conditions may take together (`--regex-memory-total`).
    pub regex_memory_total: usize,
    /// Bytes of the module's memory one namespace's match lists may hold
    /// (`--list-memory-per-tenant`; the list memory budget, `plan/list_bytes.rs`).
    pub list_memory_per_tenant: usize,
    /// Units one namespace's InferencePools may take (`--pool-units-per-tenant`; the pool
    /// endpoints budget, `plan::inference::admit`, `PlanOptions::pool_units_per_tenant`).
    pub pool_units_per_tenant: usize,
    /// `--module-max-memory`: the module's `http_matches_max_memory`, written; `None`: not
    /// written (the module's 128 MiB).
    pub module_max_memory: Option<usize>,
    /// `--epp-shim URL`: InferencePool pickers are asked through NGF's Go shim at URL
    /// (`http_matches_epp URL` with `$epp_host` / `$epp_port`), not over gRPC by the module.
    pub epp_shim: Option<String>,
}

/// The open-file limit a process starts with on Linux (the soft `RLIMIT_NOFILE`, systemd's
/// default for a service too): what NGINX's master can count on unless the operator says more.
pub const DEFAULT_OPEN_FILES: u32 = 1024;

/// Idle connections per upstream and worker by default: NGF's default (`keepalive 16`).
pub const DEFAULT_KEEPALIVE: u32 = 16;

impl Default for Global {
    fn default() -> Global {
        Global {
            worker_processes: Workers::Auto,
            worker_connections: 1024,
            open_files: DEFAULT_OPEN_FILES,
            access_log: AccessLog::Path("logs/access.log".into()),
            keepalive: DEFAULT_KEEPALIVE,
            files_dir: None,
            generation: None,
            regex_memory_per_tenant: crate::limits::DEFAULT_REGEX_MEMORY_PER_TENANT,
            regex_memory_total: crate::limits::DEFAULT_REGEX_MEMORY_TOTAL,
            list_memory_per_tenant: crate::limits::DEFAULT_LIST_MEMORY_PER_TENANT,
            pool_units_per_tenant: crate::limits::POOL_UNITS_PER_TENANT,
            module_max_memory: None,
            epp_shim: None,
        }
    }
}

/// Parses `--epp-shim`: `http://` or `https://` then HOST (an IP address, `[IPv6]` or a DNS
/// name) and an optional `:PORT` (1-65535), nothing else: the module's `http_matches_epp`
/// refuses a path, query or variable, and the value is written into nginx.conf as one word.
pub fn parse_epp_shim(s: &str) -> Result<String, String> {
    let bad = |why: &str| Err(format!("--epp-shim {s:?}: {why} (e.g. http://127.0.0.1:54800)"));
    let Some(rest) = s.strip_prefix("http://").or_else(|| s.strip_prefix("https://")) else {
        return bad("expected http:// or https://");
    };
    let (host, port) = match rest.rsplit_once(':') {
        Some((h, p)) if !p.contains(']') => (h, Some(p)),
        _ => (rest, None),
    };
    let host_ok = match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(v6) => v6.parse::<std::net::Ipv6Addr>().is_ok(),
        None => {
            host.parse::<std::net::Ipv4Addr>().is_ok()
                || crate::model::is_host_name(host.strip_suffix('.').unwrap_or(host))
        }
    };
    if !host_ok {
        return bad("the host is not an IP address, [IPv6] or a DNS name (and no path is allowed)");
    }
    if port.is_some_and(|p| p.parse::<u16>().map_or(true, |p| p == 0)) {
        return bad("the port is not 1-65535");
    }
    Ok(s.to_owned())
}

/// Parses `--worker-processes`: `auto` or 1-1024.
pub fn parse_workers(s: &str) -> Result<Workers, String> {
    if s == "auto" {
        return Ok(Workers::Auto);
    }
    match s.parse::<u16>() {
        Ok(n @ 1..=1024) => Ok(Workers::Count(n)),
        _ => Err(format!("{s:?}: expected auto or a number of processes 1-1024")),
    }
}

/// Parses `--access-log`: `off` or a file.
pub fn parse_access_log(s: &str) -> AccessLog {
    if s == "off" { AccessLog::Off } else { AccessLog::Path(s.to_owned()) }
}

/// `worker_processes`.
pub fn worker_processes(g: &Global) -> Node {
    let d = Directive::new("worker_processes");
    match g.worker_processes {
        Workers::Auto => d.code("auto"),
        Workers::Count(n) => d.code(n.to_string()),
    }
    .into()
}

/// `events { worker_connections N; }`.
pub fn events(g: &Global) -> Node {
    Directive::new("events")
        .block(vec![
            Directive::new("worker_connections").code(g.worker_connections.to_string()).into(),
        ])
        .into()
}

/// `access_log`.
pub fn access_log(g: &Global) -> Node {
    let d = Directive::new("access_log");
    match &g.access_log {
        AccessLog::Off => d.code("off"),
        AccessLog::Path(p) => d.data("--access-log", p.clone()),
    }
    .into()
}

/// `http_matches_reload_report logs/reload.report N`, the `http` block's first line (so that
/// every load that fails in it is reported): the master writes there whether it took
/// generation N, which `apply` waits for.
pub fn reload_report(g: &Global) -> Option<Node> {
    g.generation.map(|n| {
        Directive::new("http_matches_reload_report").code(REPORT).code(n.to_string()).into()
    })
}

/// What an `upstream` block gets after its servers: `keepalive N`, unless it is 0.
pub fn upstream_tail(g: &Global) -> Option<Node> {
    (g.keepalive > 0).then(|| Directive::new("keepalive").code(g.keepalive.to_string()).into())
}

/// `path` (relative to the files directory) relative to nginx.conf.
pub fn file(g: &Global, path: &str) -> String {
    match &g.files_dir {
        Some(dir) => format!("{dir}/{path}"),
        None => path.to_owned(),
    }
}

/// The match lists' file, relative to nginx.conf.
pub fn matches_file(g: &Global) -> String {
    file(g, "matches.json")
}

/// Checks what NGINX would refuse or misread: the access log's path as any path given on
/// the command line (see `crate::check_options`), worker connections 1-65535.
pub fn check(g: &Global) -> Result<(), String> {
    if let AccessLog::Path(p) = &g.access_log {
        crate::path_check::check_path("--access-log", p)?;
    }
    if !(1..=65535).contains(&g.worker_connections) {
        return Err(format!("--worker-connections {}: expected 1-65535", g.worker_connections));
    }
    if let Workers::Count(n) = g.worker_processes
        && !(1..=1024).contains(&n)
    {
        return Err(format!("--worker-processes {n}: expected auto or 1-1024"));
    }
    let (per, total) = (g.regex_memory_per_tenant, g.regex_memory_total);
    let max = g.module_max_memory.unwrap_or(crate::limits::MODULE_MAX_MEMORY);
    let room = crate::limits::regex_memory_room(max);
    if per > total || total > room {
        return Err(format!(
            "--regex-memory-per-tenant {per}, --regex-memory-total {total}: expected per tenant \
             <= total <= {room}, three quarters of the module's http_matches_max_memory {max} \
             (--module-max-memory; the last quarter is the lists' own)"
        ));
    }
    Ok(())
}

/// `http_matches_max_memory N` when the operator gives it (`--module-max-memory`): before
/// any list is loaded.
pub fn module_max_memory(g: &Global) -> Option<Node> {
    let n = g.module_max_memory?;
    Some(Directive::new("http_matches_max_memory").code(n.to_string()).into())
}
