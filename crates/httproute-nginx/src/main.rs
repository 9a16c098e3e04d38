//! The `httproute-nginx` command.

#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use httproute_nginx::plan::PortProbe;
use httproute_nginx::{BackendMap, Carrier, Options, explain, parse_backend, read_backends};

#[derive(Parser)]
#[command(
    version,
    about = "Gateway API manifests in, an NGINX configuration (ngx_http_matches_module) out"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args)]
struct Input {
    /// A manifest file or a directory of them (YAML or JSON); repeatable.
    #[arg(short = 'f', long = "file", required = true)]
    files: Vec<PathBuf>,
    /// Where a backend lives: NAMESPACE/NAME:PORT=HOST:PORT; repeatable.
    #[arg(long = "backend", value_parser = parse_backend)]
    backends: Vec<(String, String)>,
    /// A file of NAMESPACE/NAME:PORT=HOST:PORT lines.
    #[arg(long = "backends")]
    backends_file: Option<PathBuf>,
}

/// The options that decide the plan: `generate` and `explain` take the same, so that explain
/// answers for the configuration generate writes.
#[derive(clap::Args)]
struct Planning {
    /// The files of a TLS Secret: NAMESPACE/NAME=CERT.pem,KEY.pem; repeatable. Without it
    /// a Secret among the inputs is written to certs/NAMESPACE_NAME.crt and .key in the
    /// run's generation (DIR/generations/N/) and read from there.
    #[arg(long = "certificate", value_parser = parse_certificate)]
    certificates: Vec<(String, (String, String))>,
    /// Generate Experimental-channel fields too (`retry`); without it they are warned
    /// about and left out.
    #[arg(long)]
    experimental: bool,
    /// The version of the NGINX that runs the configuration (MAJOR.MINOR[.PATCH]): before
    /// 1.25.1, HTTP/2 for GRPCRoutes is written as a `listen` parameter. The default is the
    /// NGINX this build was made for (the Debian package: the distribution's).
    #[arg(long, value_parser = parse_version, default_value = DEFAULT_NGINX_VERSION)]
    nginx_version: (u32, u32, u32),
    /// Follow backendRefs to ExternalName Services (their name resolved per request). Off
    /// by default: the name may be the gateway's own loopback or another namespace's Service
    /// without a ReferenceGrant (CVE-2021-25740).
    #[arg(long)]
    allow_external_name: bool,
}

/// What `generate` and `apply` write, and where.
#[derive(clap::Args)]
struct Writing {
    #[command(flatten)]
    input: Input,
    #[command(flatten)]
    planning: Planning,
    /// The directory NGINX runs in (`nginx -p DIR/ -c nginx.conf`): nginx.conf is replaced by
    /// a rename, its files go to DIR/generations/N/, and NGINX's logs/ and tmp/ (pid file,
    /// logs) are created when missing and never touched.
    #[arg(short = 'o', long = "output")]
    output: PathBuf,
    #[command(flatten)]
    written: Written,
    /// Also write the Gateway API status (conditions of every Gateway, listener and
    /// HTTPRoute parentRef) to this file, as YAML. A refused run leaves it as it was (the
    /// configuration it describes is still the one in place) and says so on stderr.
    #[arg(long = "status")]
    status: Option<PathBuf>,
}

/// What the configuration is written with, besides the plan: `generate`, `apply` and
/// `explain` take the same, so that `explain --nginx` checks the configuration generate writes.
#[derive(clap::Args)]
struct Written {
    /// The `load_module` path of ngx_http_matches_module (for `explain --nginx`, a relative
    /// path is taken from the current directory: its check runs elsewhere).
    #[arg(long, default_value = "modules/ngx_http_matches_module.so")]
    module: String,
    /// How match lists reach the module.
    #[arg(long, value_enum, default_value_t = Carrier::Preload)]
    carrier: Carrier,
    /// Listen on this address only (default: all addresses): IPv4, [IPv6] or a host name.
    #[arg(long, value_parser = parse_listen_address)]
    listen_address: Option<String>,
    /// A DNS server for backends named by DNS (cluster Service names, ExternalName
    /// Services): ADDRESS[:PORT]; repeatable. Default: the nameservers of /etc/resolv.conf.
    #[arg(long = "resolver", value_parser = parse_resolver)]
    resolvers: Vec<String>,
    #[command(flatten)]
    process: Process,
}

/// The NGINX process's options (as NGF's NginxProxy offers them).
#[derive(clap::Args)]
struct Process {
    /// `worker_processes`: auto (one per CPU) or 1-1024.
    #[arg(long, value_parser = httproute_nginx::emit_global::parse_workers, default_value = "auto")]
    worker_processes: httproute_nginx::emit_global::Workers,
    /// `worker_connections` of each worker, 1-65535.
    #[arg(long, default_value_t = 1024,
          value_parser = clap::value_parser!(u32).range(1..=65535))]
    worker_connections: u32,
    /// The open-file limit (soft `RLIMIT_NOFILE`) NGINX's master and `nginx -t` run with
    /// (systemd's `LimitNOFILE`): they open every listening socket, so at most half of it
    /// are written, as of `--worker-connections`.
    #[arg(long, default_value_t = httproute_nginx::emit_global::DEFAULT_OPEN_FILES,
          value_parser = clap::value_parser!(u32).range(64..=16777216))]
    open_files: u32,
    /// The access log: a file (relative to DIR unless absolute) or `off`.
    #[arg(long, default_value = "logs/access.log")]
    access_log: String,
    /// Idle connections to the backends of each upstream that each worker keeps open for
    /// the next requests (`keepalive`); 0: a new connection per request.
    #[arg(long, default_value_t = httproute_nginx::emit_global::DEFAULT_KEEPALIVE)]
    upstream_keepalive: u32,
    /// Bytes of the module's memory (`http_matches_max_memory`, 128 MiB) the regex conditions
    /// of one namespace may take, each counted at the most it may compile to (about 64 KiB);
    /// a newer route past it is refused. All namespaces together: --regex-memory-total.
    #[arg(long, default_value_t = httproute_nginx::limits::DEFAULT_REGEX_MEMORY_PER_TENANT)]
    regex_memory_per_tenant: usize,
    /// Bytes of the module's memory the regex conditions of all namespaces together may take
    /// (at least --regex-memory-per-tenant, at most three quarters of --module-max-memory: the
    /// rest is the lists' own); default 64 MiB.
    #[arg(long, default_value_t = httproute_nginx::limits::DEFAULT_REGEX_MEMORY_TOTAL)]
    regex_memory_total: usize,
    /// Bytes of the module's memory the match lists of one namespace may hold (each byte of
    /// their JSON counted at 2, each list at 512; all namespaces together: what
    /// --module-max-memory leaves beside --regex-memory-total and an eighth for the list being
    /// parsed, 48 MiB by default); a newer route past it is refused. Default 24 MiB.
    #[arg(long, default_value_t = httproute_nginx::limits::DEFAULT_LIST_MEMORY_PER_TENANT)]
    list_memory_per_tenant: usize,
    /// Units one namespace's InferencePools may take: each EndpointSlice their selectors
    /// read and each address of its endpoints, each address written with each target port; a
    /// newer pool past what is left is refused (its backendRefs `BackendNotFound`), older
    /// pools first. Default 262144.
    #[arg(long, default_value_t = httproute_nginx::limits::POOL_UNITS_PER_TENANT)]
    pool_units_per_tenant: usize,
    /// The module's `http_matches_max_memory` in bytes, written to the configuration (not
    /// written by default: the module's 128 MiB).
    #[arg(long)]
    module_max_memory: Option<usize>,
    /// Ask InferencePool endpoint pickers through NGF's shim at this URL
    /// (`http_matches_epp URL` with `$epp_host` / `$epp_port`, e.g. http://127.0.0.1:54800)
    /// instead of over gRPC by the module (`http_matches_epp grpc://PICKER`).
    #[arg(long, value_name = "URL", value_parser = httproute_nginx::emit_global::parse_epp_shim)]
    epp_shim: Option<String>,
}

#[derive(Subcommand)]
enum Command {
    /// Write DIR/nginx.conf and its files; the NGINX running from DIR can be reloaded at any
    /// time (`nginx -p DIR/ -c nginx.conf -s reload`), it reads one configuration whole.
    /// Start it once with `nginx -p DIR/ -c nginx.conf`.
    Generate {
        #[command(flatten)]
        writing: Writing,
        /// Check the output with this NGINX binary (`NGINX -t`, in a scratch directory beside
        /// DIR) before DIR is written: when NGINX refuses, the Secret whose file it names (at
        /// most 16), else the newest tenant's objects newer than every other tenant's (once),
        /// are left out with a condition and the check runs again. Any other refusal exits 1
        /// and leaves DIR as it was.
        #[arg(long = "nginx")]
        nginx: Option<PathBuf>,
    },
    /// `generate`, then `nginx -t` on the new configuration before it is put in place, then
    /// a reload of the NGINX running from DIR, verified by the master's report
    /// (DIR/logs/reload.report, which the module writes). When the check
    /// fails, or the master refuses the configuration at the reload, the configuration in
    /// place (and the status file) stays or is put back, the refused one is left as
    /// DIR/nginx.conf.rejected, and the exit is 1.
    Apply {
        #[command(flatten)]
        writing: Writing,
        /// The nginx binary that runs DIR's configuration: it checks the output first as
        /// `generate --nginx` does (a tenant's object it refuses is left out, with a
        /// condition), then the configuration in place, and is signalled.
        #[arg(long = "nginx", default_value = "nginx")]
        nginx: PathBuf,
        /// How long to wait, in seconds, for the master's report on the reload (took; or
        /// refused: it keeps the old configuration, which is put back in place). Past it the
        /// exit is 1, the outcome unknown.
        #[arg(long, default_value_t = httproute_nginx::apply::RELOAD_WAIT.as_secs(),
              value_parser = clap::value_parser!(u64).range(1..=3600))]
        reload_wait: u64,
    },
    /// Show which route, rule and match serve a request, and why.
    Explain {
        #[command(flatten)]
        input: Input,
        #[command(flatten)]
        planning: Planning,
        #[arg(long, default_value = "GET")]
        method: String,
        /// The Host header, as sent (NGINX lowercases it and drops its port and a trailing dot).
        #[arg(long)]
        host: String,
        /// The request target, as sent: /PATH?QUERY, percent-encoded (NGINX decodes it and
        /// resolves `.`, `..` and `//` before it looks up a location), or http://HOST/PATH.
        #[arg(long)]
        path: String,
        /// The listener port (default: the first port).
        #[arg(long)]
        port: Option<u16>,
        /// A request header NAME:VALUE; repeatable.
        #[arg(long = "header")]
        headers: Vec<String>,
        /// A query parameter NAME=VALUE (raw, as in the URL); repeatable.
        #[arg(long = "query")]
        query: Vec<String>,
        /// The nginx binary `generate --nginx` checks with: explain answers from what is left
        /// when it has left out what NGINX's refusals leave out (a Secret, the newest tenant's
        /// routes and listeners).
        #[arg(long = "nginx")]
        nginx: Option<PathBuf>,
        #[command(flatten)]
        written: Written,
    },
}

/// `HTTPROUTE_NGINX_VERSION` at build time (scripts/package.sh sets the distribution's), else
/// the vendored NGINX's.
const DEFAULT_NGINX_VERSION: &str = match option_env!("HTTPROUTE_NGINX_VERSION") {
    Some(v) => v,
    None => "1.28.0",
};

fn parse_version(s: &str) -> Result<(u32, u32, u32), String> {
    let bad = || format!("{s:?}: expected MAJOR.MINOR[.PATCH], e.g. 1.22.1");
    let parts: Vec<u32> =
        s.split('.').map(|p| p.parse().map_err(|_| bad())).collect::<Result<_, _>>()?;
    match parts[..] {
        [a, b] => Ok((a, b, 0)),
        [a, b, c] => Ok((a, b, c)),
        _ => Err(bad()),
    }
}

fn parse_listen_address(s: &str) -> Result<String, String> {
    httproute_nginx::check_listen_address(s).map(|()| s.to_owned())
}

fn parse_certificate(s: &str) -> Result<(String, (String, String)), String> {
    let bad = || format!("{s:?}: expected NAMESPACE/NAME=CERT.pem,KEY.pem");
    let (secret, files) = s.split_once('=').ok_or_else(bad)?;
    let (crt, key) = files.split_once(',').ok_or_else(bad)?;
    let ok = secret.split_once('/').is_some_and(|(ns, n)| !ns.is_empty() && !n.is_empty());
    if !ok || crt.is_empty() || key.is_empty() {
        return Err(bad());
    }
    Ok((secret.to_owned(), (crt.to_owned(), key.to_owned())))
}

/// `ADDRESS[:PORT]` for NGINX's `resolver`: an IPv4 address, an IPv6 address in brackets,
/// or a bare IPv6 address (bracketed here).
fn parse_resolver(s: &str) -> Result<String, String> {
    use std::net::{IpAddr, SocketAddr};
    if let Ok(ip) = s.parse::<IpAddr>() {
        return Ok(match ip {
            IpAddr::V4(v4) => v4.to_string(),
            IpAddr::V6(v6) => format!("[{v6}]"),
        });
    }
    if s.parse::<SocketAddr>().is_ok() {
        return Ok(s.to_owned());
    }
    if let Some(inner) = s.strip_prefix('[').and_then(|r| r.strip_suffix(']'))
        && inner.parse::<std::net::Ipv6Addr>().is_ok()
    {
        return Ok(s.to_owned());
    }
    Err(format!("{s:?}: expected ADDRESS or ADDRESS:PORT (an IP address)"))
}

fn backends(input: &Input) -> Result<BackendMap, String> {
    let mut map = BackendMap::new();
    if let Some(f) = &input.backends_file {
        read_backends(f, &mut map)?;
    }
    map.extend(input.backends.iter().cloned());
    Ok(map)
}

/// The options of a run: the plan's and what it is written with.
fn options(p: Planning, w: Written) -> Options {
    let Written { module, carrier, listen_address, mut resolvers, process } = w;
    if resolvers.is_empty() {
        resolvers = std::fs::read_to_string("/etc/resolv.conf")
            .map(|t| httproute_nginx::resolv_conf_nameservers(&t))
            .unwrap_or_default();
    }
    let global = httproute_nginx::emit_global::Global {
        worker_processes: process.worker_processes,
        worker_connections: process.worker_connections,
        open_files: process.open_files,
        access_log: httproute_nginx::emit_global::parse_access_log(&process.access_log),
        keepalive: process.upstream_keepalive,
        files_dir: None,
        generation: None,
        regex_memory_per_tenant: process.regex_memory_per_tenant,
        regex_memory_total: process.regex_memory_total,
        list_memory_per_tenant: process.list_memory_per_tenant,
        pool_units_per_tenant: process.pool_units_per_tenant,
        module_max_memory: process.module_max_memory,
        epp_shim: process.epp_shim,
    };
    Options {
        module,
        carrier,
        listen_address,
        certificates: p.certificates.into_iter().collect(),
        resolvers,
        experimental: p.experimental,
        nginx_version: p.nginx_version,
        allow_external_name: p.allow_external_name,
        global,
        port_unavailable: None,
    }
}

/// A `generate` or `apply` run up to its configuration staged in DIR (not yet in place).
struct Run {
    staged: httproute_nginx::output::Staged,
    /// The status file's next content, put in place once the configuration is.
    status: Option<httproute_nginx::output::Pending>,
    dir: PathBuf,
}

/// Generates and stages the configuration ([`httproute_nginx::apply::stage`]); `apply`
/// passes its probe of the ports another process holds ([`httproute_nginx::apply::port_probe`]).
fn stage(w: Writing, check: Option<&Path>, probe: Option<PortProbe>) -> Result<Run, String> {
    let Writing { input, planning, output, written, status } = w;
    let map = backends(&input)?;
    let opts = Options { port_unavailable: probe, ..options(planning, written) };
    let mut status = status
        .map(|f| {
            httproute_nginx::output::remove_abandoned(&f);
            httproute_nginx::output::Pending::create(&f, false)
                .map_err(|e| format!("{}: {e}", f.display()))
        })
        .transpose()?;
    let out = status.as_mut().map(|p| p.writer());
    let (staged, generated) =
        httproute_nginx::apply::stage(&output, &input.files, &map, opts, out, check)?;
    for w in &generated.warnings {
        say(&format!("warning: {w}"));
    }
    Ok(Run { staged, status, dir: output })
}

/// [`stage`], or `None` when the run is refused: then the error, and that nothing was
/// written (the directory and the status file are as the last run left them), are on stderr.
fn stage_or_refuse(w: Writing, check: Option<&Path>, probe: Option<PortProbe>) -> Option<Run> {
    let (dir, status) = (w.output.display().to_string(), and_status_file(w.status.as_deref()));
    let e = stage(w, check, probe).map_err(|e| say(&format!("error: {e}"))).ok();
    if e.is_none() {
        say(&format!(
            "the run is refused, nothing was written: {dir}{status} are as the last run left them"
        ));
    }
    e
}

/// `httproute-nginx: M` on stderr, escaped.
fn say(m: &str) {
    eprintln!("httproute-nginx: {}", httproute_nginx::escape_message(m));
}

/// Puts the status file in place by a rename (a reader sees the old file or the new one).
fn write_status(status: Option<httproute_nginx::output::Pending>) -> Result<(), String> {
    let Some(p) = status else { return Ok(()) };
    let f = p.path().display().to_string();
    p.commit().map_err(|e| format!("{f}: {e}"))
}

fn run(cli: Cli) -> Result<ExitCode, String> {
    match cli.command {
        Command::Generate { writing, nginx } => {
            let Some(Run { staged, status, .. }) = stage_or_refuse(writing, nginx.as_deref(), None)
            else {
                return Ok(ExitCode::FAILURE);
            };
            staged.commit().map_err(|e| e.to_string())?;
            write_status(status)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Apply { writing, nginx, reload_wait } => apply(writing, &nginx, reload_wait),
        Command::Explain {
            input,
            planning,
            method,
            host,
            path,
            port,
            headers,
            query,
            nginx,
            written,
        } => {
            let plan = explained_plan(&input, planning, written, nginx.as_deref())?;
            let headers = headers
                .iter()
                .map(|h| h.split_once(':').map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned())))
                .collect::<Option<Vec<_>>>()
                .ok_or("--header takes NAME:VALUE")?;
            let req =
                explain::Request { port, method, host, path, headers, query: query.join("&") };
            let (text, status) = explain::explain(&plan, &req);
            print!("{text}");
            println!("=> {status}");
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// " and the status file F" when there is one.
fn and_status_file(status: Option<&Path>) -> String {
    status.map(|f| format!(" and the status file {}", f.display())).unwrap_or_default()
}

/// `apply`: stage, `nginx -t`, reload the running NGINX; the status file is written only
/// when the new configuration serves (or will, once NGINX starts).
fn apply(writing: Writing, nginx: &Path, reload_wait: u64) -> Result<ExitCode, String> {
    use httproute_nginx::apply::{Applied, check_and_reload, port_probe};
    let probe = port_probe(&writing.output, writing.written.listen_address.as_deref());
    let Some(Run { staged, status, dir }) = stage_or_refuse(writing, Some(nginx), Some(probe))
    else {
        return Ok(ExitCode::FAILURE);
    };
    let wait = std::time::Duration::from_secs(reload_wait);
    let s = and_status_file(status.as_ref().map(|p| p.path()));
    let m = match check_and_reload(staged, &dir, nginx, wait)? {
        Applied::Rejected { kept, nginx_said } => {
            eprint!("{nginx_said}");
            eprintln!(
                "httproute-nginx: error: nginx -t refused the new configuration (kept as {})",
                kept.display()
            );
            format!(
                "the run is refused: {}/nginx.conf, its files and the running configuration{s} \
                 are as the last run left them",
                dir.display(),
            )
        }
        Applied::ReloadRefused { kept, nginx_said } => {
            eprintln!("{nginx_said}");
            format!(
                "error: nginx -t passed, but the running NGINX refused the new configuration at \
                 the reload (above) and keeps serving the one it had: {}/nginx.conf is that one \
                 again{s}, as the last run left them; the refused one is kept as {}",
                dir.display(),
                kept.display()
            )
        }
        Applied::PortHeld { kept, held } => format!(
            "error: the new configuration listens on a port another process holds (the running \
             NGINX would refuse every reload): {held}; nothing changed, {}/nginx.conf is as the \
             last run left it; the refused one is kept as {}",
            dir.display(),
            kept.display()
        ),
        Applied::NotRunning => {
            write_status(status)?;
            eprintln!(
                "httproute-nginx: {0}/nginx.conf written and checked; no NGINX runs from \
                 {0} (no pid in logs/nginx.pid): start it with {1} -p {0}/ -c nginx.conf",
                dir.display(),
                nginx.display()
            );
            return Ok(ExitCode::SUCCESS);
        }
        Applied::Reloaded => {
            write_status(status)?;
            return Ok(ExitCode::SUCCESS);
        }
    };
    say(&m);
    Ok(ExitCode::FAILURE)
}

/// What generate would serve, for `explain`: the plan without what the writer leaves out
/// (and, with `--nginx`, what NGINX refuses); its warnings on stderr.
fn explained_plan(
    input: &Input,
    planning: Planning,
    written: Written,
    nginx: Option<&Path>,
) -> Result<httproute_nginx::plan::Plan, String> {
    let map = backends(input)?;
    let mut opts = options(planning, written);
    if nginx.is_some() {
        let module = std::path::absolute(&opts.module)
            .map_err(|e| format!("--module {}: {e}", opts.module))?;
        opts.module = module.to_string_lossy().into_owned();
    }
    let mut warnings = httproute_nginx::check_options(&opts, &map)?;
    let model = httproute_nginx::model::load(&input.files).map_err(|e| e.to_string())?;
    let mut plan = match nginx {
        Some(nginx) => explain::plan_as_checked(&model, &map, &opts, nginx)?,
        None => explain::plan_as_served(&model, &map, &opts)?,
    };
    warnings.append(&mut plan.warnings);
    for w in &warnings {
        say(&format!("warning: {w}"));
    }
    Ok(plan)
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(code) => code,
        Err(e) => {
            say(&format!("error: {e}"));
            ExitCode::FAILURE
        }
    }
}
