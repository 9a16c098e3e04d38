//! `httproute-nginx`: Gateway API `Gateway` and `HTTPRoute` manifests in, a complete NGINX
//! configuration that uses `ngx_http_matches_module` out.
//!
//! The pipeline is load -> validate -> resolve -> attach -> plan -> emit, each stage a module
//! that imports only the stages before it (`tests/module_graph.rs` checks that no file closes
//! a circle):
//! - [`model`] reads manifests (YAML or JSON) with CRD defaults and limits (load, validate);
//! - [`plan`] resolves every route's references once, for the route's own kind, attaches
//!   routes to listeners and orders every match by Gateway API precedence, per NGINX
//!   location, with fallback to shorter prefixes, for the target NGINX, and decides what emit
//!   writes (servers merged over ports, header filters merged, retries expanded); one file per
//!   Gateway API step (the table in [`plan`]'s docs). [`plan::plan`] with [`plan_options`] is
//!   the one planning generate and explain run;
//! - [`emit`] writes `nginx.conf` (through the typed writer [`conf`]) and `matches.json`, one
//!   file per NGINX block;
//!   [`emit_global`] the operator's options in it (workers, access log, upstream keepalive);
//! - [`output`] puts them in their directory for a running NGINX to reload (generations,
//!   one rename; NGINX's pid, logs and temp files never touched); [`apply`] is the operator's
//!   flow over it (`nginx -t`, then the reload);
//! - [`conf_reader`] reads nginx.conf back the way NGINX does (for tests and fuzzing);
//! - [`explain`] answers "which route serves this request, and why", from the request as
//!   [`nginx_request`] says NGINX reads it (decoded, normalised path; validated host);
//! - [`status`] writes the conditions a controller would set, from [`plan::Plan::status`]
//!   (the caller renders it: [`generate_all`] returns it).

#![forbid(unsafe_code)]

pub mod apply;
pub mod conf;
pub mod conf_reader;
pub mod emit;
pub mod emit_global;
pub mod explain;
pub mod limits;
pub mod lists;
mod message;
pub mod model;
pub mod nginx_check;
pub mod nginx_request;
pub mod output;
mod path_check;
pub mod plan;
pub mod status;
pub mod syntax;

use std::path::{Path, PathBuf};

pub use emit::{Carrier, Options, Output};
pub use message::escape_message;
pub use output::write_dir;
use path_check::check_path;
pub use plan::BackendMap;

/// Parses `NAMESPACE/NAME:PORT=HOST:PORT`.
pub fn parse_backend(s: &str) -> Result<(String, String), String> {
    let (key, addr) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?}: expected NAMESPACE/NAME:PORT=HOST:PORT"))?;
    let ok_key = key.split_once('/').is_some_and(|(ns, rest)| {
        !ns.is_empty()
            && rest.rsplit_once(':').is_some_and(|(n, p)| !n.is_empty() && p.parse::<u16>().is_ok())
    });
    if !ok_key {
        return Err(format!("{s:?}: expected NAMESPACE/NAME:PORT before \"=\""));
    }
    let ok_addr = addr.rsplit_once(':').is_some_and(|(h, p)| {
        !h.is_empty()
            && p.parse::<u16>().is_ok_and(|p| p != 0)
            && h.chars().all(|c| c.is_ascii_alphanumeric() || ".-[]:".contains(c))
    });
    if !ok_addr {
        return Err(format!("{s:?}: expected HOST:PORT after \"=\""));
    }
    Ok((key.to_owned(), addr.to_owned()))
}

/// Reads a backends file: one `NAMESPACE/NAME:PORT=HOST:PORT` per line, `#` comments.
pub fn read_backends(path: &Path, into: &mut BackendMap) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let (k, v) =
            parse_backend(line).map_err(|e| format!("{}:{}: {e}", path.display(), i + 1))?;
        into.insert(k, v);
    }
    Ok(())
}

/// `--listen-address`: an IPv4 address, an IPv6 address in brackets, `*`, or a host name.
pub fn check_listen_address(a: &str) -> Result<(), String> {
    let ok = a == "*"
        || a.parse::<std::net::Ipv4Addr>().is_ok()
        || a.strip_prefix('[')
            .and_then(|r| r.strip_suffix(']'))
            .is_some_and(|v6| v6.parse::<std::net::Ipv6Addr>().is_ok())
        || (a.parse::<std::net::Ipv6Addr>().is_err() && model::is_host_name(a));
    if ok {
        Ok(())
    } else if a.parse::<std::net::Ipv6Addr>().is_ok() {
        Err(format!("--listen-address {a:?}: write an IPv6 address in brackets: [{a}]"))
    } else {
        Err(format!(
            "--listen-address {a:?}: expected an IPv4 address, an IPv6 address in brackets, * \
             or a host name"
        ))
    }
}

/// A `resolver` address: IPv4 or bracketed IPv6, with an optional port 1-65535.
fn check_resolver(r: &str) -> Result<(), String> {
    let (host, port) = match r.rsplit_once(':') {
        Some((h, p)) if !r.ends_with(']') && (h.ends_with(']') || !h.contains(':')) => (h, Some(p)),
        _ => (r, None),
    };
    let host_ok = host.parse::<std::net::Ipv4Addr>().is_ok()
        || host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .is_some_and(|v6| v6.parse::<std::net::Ipv6Addr>().is_ok());
    let port_ok = port.is_none_or(|p| p.parse::<u16>().is_ok_and(|p| p != 0));
    if host_ok && port_ok {
        Ok(())
    } else {
        Err(format!("--resolver {r:?}: expected ADDRESS or ADDRESS:PORT (an IP address)"))
    }
}

/// Every option that reaches the configuration, checked before anything is written:
/// `Err` names the option and what is wrong; `Ok` has warnings (a certificate file that
/// cannot be read here is not checked).
pub fn check_options(opts: &Options, backends: &BackendMap) -> Result<Vec<String>, String> {
    let mut warnings = Vec::new();
    check_path("--module", &opts.module)?;
    emit_global::check(&opts.global)?;
    if let Some(a) = &opts.listen_address {
        check_listen_address(a)?;
    }
    for r in &opts.resolvers {
        check_resolver(r)?;
    }
    for (k, v) in backends {
        parse_backend(&format!("{k}={v}")).map_err(|e| format!("--backend {e}"))?;
    }
    for (secret, (crt, key)) in &opts.certificates {
        check_path("--certificate", crt)?;
        check_path("--certificate", key)?;
        match (std::fs::read(crt), std::fs::read(key)) {
            (Ok(c), Ok(k)) => match model::check_certificate(&c, &k) {
                Ok(_) => {}
                Err(why) => {
                    return Err(format!("--certificate {secret}={crt},{key}: {why}"));
                }
            },
            (c, k) => {
                let e = c.err().or(k.err()).map(|e| e.to_string()).unwrap_or_default();
                warnings.push(format!(
                    "--certificate {secret}: not checked, the files cannot be read here ({e})"
                ));
            }
        }
    }
    Ok(warnings)
}

/// The planning options of a generator run: its backends, the Secrets `--certificate` gives
/// files for, the target NGINX (`--nginx-version`) and `--experimental`. Explain plans with
/// the same.
pub fn plan_options<'a>(opts: &Options, backends: &'a BackendMap) -> plan::PlanOptions<'a> {
    plan::PlanOptions {
        backends,
        pool_units_per_tenant: opts.global.pool_units_per_tenant,
        port_unavailable: opts.port_unavailable.clone(),
        given_certificates: opts.certificates.keys().cloned().collect(),
        capabilities: plan::Capabilities::of_nginx(opts.nginx_version),
        experimental: opts.experimental,
        allow_external_name: opts.allow_external_name,
        worker_connections: opts.global.worker_connections,
        open_files: opts.global.open_files,
        regex_memory_per_tenant: opts.global.regex_memory_per_tenant,
        regex_memory_total: opts.global.regex_memory_total,
        module_max_memory: opts.global.module_max_memory.unwrap_or(limits::MODULE_MAX_MEMORY),
        list_memory_per_tenant: opts.global.list_memory_per_tenant,
        regex_per_location: opts.carrier == Carrier::Inline,
        status: true,
        list_word: match opts.carrier {
            Carrier::Preload => None,
            Carrier::Inline => Some(syntax::Pos::Literal),
            Carrier::Variable => Some(syntax::Pos::Variables),
        },
    }
}

/// What a generator run makes.
pub struct Generated {
    /// The configuration.
    pub output: Output,
    /// The conditions a controller would set (`--status`: [`status::yaml`]); empty from
    /// [`generate_streamed`], which writes them before the configuration.
    pub status: plan::Status,
    /// Warnings: the options', the plan's, then the configuration's.
    pub warnings: Vec<String>,
}

/// Manifests to configuration (with [`Output::tree`]), status and warnings.
pub fn generate_all(
    inputs: &[PathBuf],
    backends: &BackendMap,
    opts: &Options,
) -> Result<Generated, String> {
    generate_all_by(inputs, backends, opts, true, |p| emit::emit_with(p, opts, emit::Tree::Keep))
}

/// [`generate_all`] without the tree, nginx.conf and matches.json written to `streams`
/// as they are made ([`emit::emit_streamed`]): [`Generated::output`]'s texts are empty. The
/// status, with `status`, is written there before the configuration (and not returned).
pub fn generate_streamed(
    inputs: &[PathBuf],
    backends: &BackendMap,
    opts: &Options,
    status: Option<&mut dyn std::io::Write>,
    streams: emit::Streams<'_>,
) -> Result<Generated, String> {
    generate_all_by(inputs, backends, opts, status.is_some(), |plan| {
        // What is left out is decided before the configuration is written: the status is
        // complete then, written and freed before the writing.
        let mut conditions = std::mem::take(&mut plan.status);
        emit::emit_streamed(plan, opts, streams, move |dropped| {
            let Some(out) = status else { return Ok(()) };
            plan::dropped_from_configuration(&mut conditions, dropped);
            status::write(&conditions, out)
        })
    })
}

/// [`generate_all`] with or without [`Output::tree`] and the status, the configuration
/// checked by the NGINX binary `nginx` (see [`nginx_check`]): when it refuses, a Secret it
/// names, else the newest tenant's objects, are left out, with a condition, until the
/// configuration loads. `out_dir` is where the output will be written (the check runs beside
/// it).
pub fn generate_checked(
    inputs: &[PathBuf],
    backends: &BackendMap,
    opts: &Options,
    tree: emit::Tree,
    status: bool,
    nginx: &Path,
    out_dir: &Path,
) -> Result<Generated, String> {
    generate_all_by(inputs, backends, opts, status, |plan| {
        nginx_check::emit_checked(plan, opts, tree, nginx, out_dir).map(|c| c.output)
    })
}

/// A generator run with `emit` writing the configuration of the plan.
fn generate_all_by(
    inputs: &[PathBuf],
    backends: &BackendMap,
    opts: &Options,
    status: bool,
    emit: impl FnOnce(&mut plan::Plan) -> Result<Output, String>,
) -> Result<Generated, String> {
    let option_warnings = check_options(opts, backends)?;
    let model = model::load(inputs).map_err(|e| e.to_string())?;
    // The plan takes the manifests: their routes are freed before the servers are planned.
    let mut plan = plan::plan(model, &plan::PlanOptions { status, ..plan_options(opts, backends) });
    if !status {
        plan.status = plan::Status::default();
    }
    let mut output = emit(&mut plan)?;
    plan::dropped_from_configuration(&mut plan.status, &output.dropped);
    let mut warnings = option_warnings;
    warnings.append(&mut plan.warnings);
    warnings.append(&mut output.warnings);
    Ok(Generated { output, status: plan.status, warnings })
}

/// The plan the configuration is written from, for these manifests, backends and options:
/// the one planning step of `generate` and `explain`, so that they cannot disagree.
pub fn plan_for(model: &model::Inputs, backends: &BackendMap, opts: &Options) -> plan::Plan {
    plan::plan(model, &plan_options(opts, backends))
}

/// Manifests to configuration text, plus warnings.
pub fn generate(
    inputs: &[PathBuf],
    backends: &BackendMap,
    opts: &Options,
) -> Result<(Output, Vec<String>), String> {
    generate_all(inputs, backends, opts).map(|g| (g.output, g.warnings))
}

/// [`generate`] from manifests already read.
pub fn generate_from(
    model: &model::Inputs,
    backends: &BackendMap,
    opts: &Options,
) -> Result<(Output, Vec<String>), String> {
    let mut warnings = check_options(opts, backends)?;
    let mut plan = plan_for(model, backends, opts);
    let mut out = emit::emit(&plan, opts)?;
    warnings.append(&mut plan.warnings);
    warnings.append(&mut out.warnings);
    Ok((out, warnings))
}

/// The `nameserver` addresses of a resolv.conf, in NGINX's `resolver` syntax (IPv6 in
/// brackets; a zone index such as `%eth0` is dropped, NGINX does not take it).
pub fn resolv_conf_nameservers(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            (words.next() == Some("nameserver")).then(|| words.next()).flatten()
        })
        .filter_map(|a| {
            let a = a.split('%').next().unwrap_or(a);
            match a.parse::<std::net::IpAddr>().ok()? {
                std::net::IpAddr::V4(v4) => Some(v4.to_string()),
                std::net::IpAddr::V6(v6) => Some(format!("[{v6}]")),
            }
        })
        .collect()
}
