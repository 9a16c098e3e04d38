//! End-to-end harness: a real NGINX with the module loaded, in a scratch prefix, on a free
//! loopback port; raw HTTP/1.0 requests; the error log.
//!
//! Binaries: `NGX_MATCHES_NGINX` and `NGX_MATCHES_MODULE` (scripts/test.sh sets both from
//! scripts/build.sh), else the vendored NGINX that nginx-sys built and the module cargo built
//! next to this test. `NGX_MATCHES_KEEP=1` keeps the scratch directories.
#![allow(dead_code)]

pub mod certs;
pub mod epp_shim;
pub mod fake_epp;
pub mod master;
pub mod shapes;

#[allow(unused_imports)] // not every test file makes certificates
pub use certs::self_signed;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// `NGX_MATCHES_TIME_SCALE`: how many times longer every wait may take (for an NGINX under
/// valgrind, say). Default 1.
pub fn time_scale() -> u32 {
    std::env::var("NGX_MATCHES_TIME_SCALE").ok().and_then(|v| v.parse().ok()).unwrap_or(1).max(1)
}

/// `secs` seconds, scaled by [`time_scale`].
pub fn secs(secs: u64) -> Duration {
    Duration::from_secs(secs) * time_scale()
}

/// How long a test waits for something that must happen (NGINX listening, a log line, an
/// answer) before it fails: long, because it only runs out when the test fails anyway, and
/// these machines can slow down 10-50x without warning. Never a bound on how fast anything is.
pub fn patience() -> Duration {
    secs(120)
}

/// The harness's one wait: polls `poll` until it gives a value, failing the test with `what`
/// after [`patience`]. For events (NGINX listening, a log line, an answer), never a bound on
/// how fast anything is. `what` is formatted only then ([`Nginx::with_log`] adds the log).
pub fn wait_for<T>(what: impl std::fmt::Display, mut poll: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + patience();
    loop {
        if let Some(v) = poll() {
            return v;
        }
        assert!(Instant::now() < deadline, "waited in vain for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// [`wait_for`] a condition.
pub fn wait_until(what: impl std::fmt::Display, mut cond: impl FnMut() -> bool) {
    wait_for(what, || cond().then_some(()))
}

/// A wait's `what` followed by NGINX's error log as it is when the wait fails.
pub struct WithLog<'a, W>(&'a Nginx, W);

impl<W: std::fmt::Display> std::fmt::Display for WithLog<'_, W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}; the error log:\n{}", self.1, self.0.error_log())
    }
}

pub fn nginx_binary() -> PathBuf {
    if let Some(p) = std::env::var_os("NGX_MATCHES_NGINX") {
        return p.into();
    }
    match option_env!("DEP_NGINX_BUILD_DIR") {
        Some(dir) => PathBuf::from(dir).join("nginx"),
        None => panic!("set NGX_MATCHES_NGINX (scripts/build.sh prints it)"),
    }
}

pub fn module_path() -> PathBuf {
    if let Some(p) = std::env::var_os("NGX_MATCHES_MODULE") {
        return p.into();
    }
    let exe = std::env::current_exe().expect("test binary path");
    exe.parent().expect("deps dir").join("libngx_http_matches.so")
}

/// Request headers as (name, value) pairs.
pub type Headers<'a> = &'a [(&'a str, &'a str)];

/// Whether the NGINX under test was built `--with-debug` (then the module's debug lines must
/// be there).
pub fn nginx_has_debug() -> bool {
    let out = Command::new(nginx_binary()).arg("-V").output().expect("nginx -V");
    String::from_utf8_lossy(&out.stderr).contains("--with-debug")
}

static SEQ: AtomicUsize = AtomicUsize::new(0);

/// The directory every scratch prefix of this test process lives in, created mode 0700: as
/// for a checkout under `/root`, NGINX's workers (`nobody` when the tests run as root) cannot
/// reach anything below it. So a test passes only if the configuration under test answers
/// without the workers reading files from the prefix (no static fallthrough, no temp files).
fn private_root() -> &'static PathBuf {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("private-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("private scratch root");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
            .expect("chmod 0700 the scratch root");
        dir
    })
}

/// A new, unused path `e2e-NAME-N` under [`private_root`].
fn scratch_path(name: &str) -> PathBuf {
    let n = SEQ.fetch_add(1, Ordering::SeqCst);
    private_root().join(format!("e2e-{name}-{n}"))
}

/// A scratch prefix: conf/, logs/, tmp/.
pub struct Prefix {
    pub dir: PathBuf,
    pub port: u16,
    /// The configuration file, relative to `dir`.
    pub conf: String,
    /// The configuration does not say `daemon off;` (so `start` passes it with `-g`).
    foreign: bool,
}

/// `n` distinct free ports (all bound at once, then released, so none repeats).
pub fn free_ports(n: usize) -> Vec<u16> {
    let held: Vec<TcpListener> =
        (0..n).map(|_| TcpListener::bind("127.0.0.1:0").expect("free port")).collect();
    held.iter().map(|l| l.local_addr().expect("bound").port()).collect()
}

/// `nginx-conf/preamble.conf`, the NGINX preamble shared with `scripts/lib/prefix.sh` and
/// `scripts/bench/bench.py`, with its `@NAME@` placeholders filled (the http body last, so none
/// in it is taken for a placeholder).
pub fn preamble(fill: &[(&str, &str)]) -> String {
    let mut text = include_str!("../../nginx-conf/preamble.conf").to_owned();
    for (name, value) in fill {
        text = text.replace(&format!("@{name}@"), value);
    }
    text
}

/// A port nothing accepts on, for an endpoint that must refuse: below the ephemeral range
/// (32768-60999 on Linux), so neither another test's listener (they bind port 0) nor NGINX's
/// own connection to it (a TCP self-connect, when the kernel picks the same port as the
/// connection's source) can answer. A port from [`free_port`] can be either, later.
pub const DEAD_PORT: u16 = 9;

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("free port").port()
}

impl Prefix {
    /// Writes `conf/nginx.conf` (with `http_body` inside `http {}`, `{PORT}` replaced) and
    /// the given extra files under `conf/`.
    pub fn new(name: &str, http_body: &str, files: &[(&str, &str)]) -> Prefix {
        Prefix::new_on(name, http_body, files, free_port())
    }

    /// As `new`, on a port the caller chose (e.g. one of `free_ports`).
    pub fn new_on(name: &str, http_body: &str, files: &[(&str, &str)], port: u16) -> Prefix {
        let dir = scratch_path(name);
        for sub in ["conf", "logs", "tmp"] {
            std::fs::create_dir_all(dir.join(sub)).expect("scratch dir");
        }
        let p = Prefix { dir, port, conf: "conf/nginx.conf".to_owned(), foreign: false };
        p.write_conf(http_body);
        for (f, text) in files {
            p.write(f, text);
        }
        p
    }

    /// A scratch directory name for other files (generated configurations).
    pub fn scratch(name: &str) -> PathBuf {
        scratch_path(name)
    }

    /// An existing configuration directory (e.g. written by httproute-nginx).
    pub fn existing(dir: PathBuf, conf: &str, port: u16) -> Prefix {
        Prefix { dir, port, conf: conf.to_owned(), foreign: true }
    }

    pub fn write(&self, file: &str, text: &str) {
        std::fs::write(self.dir.join("conf").join(file), text).expect("write conf file");
    }

    pub fn write_conf(&self, http_body: &str) {
        let conf = preamble(&[
            ("LOADS", &format!("load_module {};\n", module_path().display())),
            ("MASTER", "on"),
            ("WORKERS", "1"),
            ("LOG_LEVEL", "info"),
            ("CONNECTIONS", "512"),
            ("ACCESS_LOG", "off"),
            ("HTTP", &http_body.replace("{PORT}", &self.port.to_string())),
        ]);
        self.write("nginx.conf", &conf);
    }

    fn command(&self) -> Command {
        self.command_with(&[])
    }

    /// The nginx command line, run through `wrapper` (a program and its arguments) if any.
    pub fn command_with(&self, wrapper: &[&str]) -> Command {
        let mut c = match wrapper {
            [program, args @ ..] => {
                let mut c = Command::new(program);
                c.args(args).arg(nginx_binary());
                c
            }
            [] => Command::new(nginx_binary()),
        };
        c.arg("-p").arg(format!("{}/", self.dir.display())).arg("-c").arg(&self.conf);
        c
    }

    /// `nginx -t`: (success, what it printed).
    pub fn test(&self) -> (bool, String) {
        let out = self.command().arg("-t").output().expect("run nginx -t");
        (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
    }

    /// Starts NGINX in the foreground. `NGX_MATCHES_WRAPPER` (e.g. `valgrind.bin --tool=memcheck
    /// ...`) runs it under another program; it must exec or be NGINX's own process, since the
    /// harness signals the child's pid.
    pub fn start(self) -> Nginx {
        let wrapper = std::env::var("NGX_MATCHES_WRAPPER").unwrap_or_default();
        let mut command = self.command_with(&wrapper.split_whitespace().collect::<Vec<_>>());
        if self.foreign {
            // Stay in the foreground, as our child, so that stopping it stops everything.
            command.arg("-g").arg("daemon off;");
        }
        let child =
            command.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("start nginx");
        let n = Nginx { prefix: self, child: Some(child) };
        // Started once its master takes signals. Listening is not enough: NGINX opens its
        // sockets before it installs its signal handlers (a SIGHUP then ends it). Nor is the
        // pid file, written after them: the master blocks signals later, and a SIGHUP or
        // SIGTERM caught before that waits for the next signal (`apply::takes_signals`).
        let id = n.child.as_ref().map(Child::id);
        let (pid, pid_file) = (id.map(|i| format!("{i}\n")), n.prefix.dir.join("logs/nginx.pid"));
        wait_until(n.with_log("nginx to start"), || {
            std::fs::read_to_string(&pid_file).ok() == pid
                && id.is_some_and(httproute_nginx::apply::takes_signals)
                && TcpStream::connect(("127.0.0.1", n.prefix.port)).is_ok()
        });
        n
    }
}

pub struct Nginx {
    pub prefix: Prefix,
    child: Option<Child>,
}

#[derive(Debug, Clone)]
pub struct Resp {
    pub status: u16,
    pub head: String,
    pub body: String,
}

impl Nginx {
    pub fn start(name: &str, http_body: &str, files: &[(&str, &str)]) -> Nginx {
        let p = Prefix::new(name, http_body, files);
        let (ok, out) = p.test();
        assert!(ok, "nginx -t failed:\n{out}");
        p.start()
    }

    /// NGINX with `http_body` under a master with one worker that runs as the test's user (a
    /// root master takes `user root;`), so that it can write request-body temp files in the
    /// private scratch root.
    pub fn start_keeping_bodies(name: &str, http_body: &str) -> Nginx {
        let p = Prefix::new(name, http_body, &[]);
        let conf = std::fs::read_to_string(p.dir.join(&p.conf)).expect("nginx.conf");
        p.write("nginx.conf", &format!("user root;\n{conf}"));
        let (ok, out) = p.test();
        assert!(ok, "nginx -t failed:\n{out}");
        p.start()
    }

    pub fn port(&self) -> u16 {
        self.prefix.port
    }

    /// Sends raw bytes, reads the whole answer (HTTP/1.0, the server closes).
    pub fn raw(&self, request: &[u8]) -> std::io::Result<Resp> {
        let mut s = TcpStream::connect(("127.0.0.1", self.port()))?;
        s.set_read_timeout(Some(patience()))?;
        s.write_all(request)?;
        let mut buf = Vec::new();
        s.read_to_end(&mut buf)?;
        let text = String::from_utf8_lossy(&buf).into_owned();
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        Ok(Resp { status, head: head.to_owned(), body: body.to_owned() })
    }

    pub fn req(&self, method: &str, target: &str, headers: &[(&str, &str)]) -> Resp {
        let mut r = format!("{method} {target} HTTP/1.0\r\nHost: localhost\r\n");
        for (n, v) in headers {
            r.push_str(&format!("{n}: {v}\r\n"));
        }
        r.push_str("\r\n");
        self.raw(r.as_bytes()).unwrap_or_else(|e| panic!("{method} {target}: {e}"))
    }

    pub fn get(&self, target: &str, headers: &[(&str, &str)]) -> Resp {
        self.req("GET", target, headers)
    }

    /// `what`, shown with the error log (for [`wait_for`]).
    pub fn with_log<W: std::fmt::Display>(&self, what: W) -> WithLog<'_, W> {
        WithLog(self, what)
    }

    pub fn error_log(&self) -> String {
        std::fs::read_to_string(self.prefix.dir.join("logs/error.log")).unwrap_or_default()
    }

    /// `nginx -s SIGNAL` against this prefix.
    pub fn signal(&self, sig: &str) -> (bool, String) {
        let out = self.prefix.command().arg("-s").arg(sig).output().expect("nginx -s");
        (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
    }

    /// Sends a signal to the master by pid (`nginx -s` would parse the configuration first,
    /// and refuse if it is broken).
    pub fn kill(&self, signal: &str) {
        assert!(self.send_signal(signal), "kill -{signal} failed");
    }

    fn send_signal(&self, signal: &str) -> bool {
        let Some(pid) = self.child.as_ref().map(Child::id) else { return false };
        let ok = Command::new("kill").arg(format!("-{signal}")).arg(pid.to_string()).status();
        ok.is_ok_and(|s| s.success())
    }

    /// A reload that does not check the configuration first.
    pub fn hup(&self) {
        self.kill("HUP");
    }

    /// Waits until the error log has `needle` (a reload finishing, say).
    pub fn wait_log(&self, needle: &str, count: usize) {
        wait_until(self.with_log(format!("{count} x {needle:?}")), || {
            self.error_log().matches(needle).count() >= count
        });
    }

    /// Stops NGINX and checks that no worker died and nothing was logged at `[alert]`.
    pub fn finish(mut self) {
        self.stop();
        let log = self.error_log();
        assert!(!log.contains("exited on signal"), "a worker crashed:\n{log}");
        assert!(!log.contains("[alert]"), "alerts in the error log:\n{log}");
        if std::env::var_os("NGX_MATCHES_KEEP").is_none() {
            let _ = std::fs::remove_dir_all(&self.prefix.dir);
        }
    }

    fn stop(&mut self) {
        // Graceful stop, then fast stop: both make the master end its workers. Killing the
        // master outright would orphan them.
        for signal in ["QUIT", "TERM"] {
            if self.child.is_none() {
                return;
            }
            self.send_signal(signal);
            let deadline = Instant::now() + secs(5);
            while Instant::now() < deadline {
                if let Some(Ok(Some(_))) = self.child.as_mut().map(Child::try_wait) {
                    self.child = None;
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A `kubernetes.io/tls` Secret of namespace default holding these PEM texts, as a document
/// of a manifest file (`---` after it).
pub fn tls_secret(name: &str, crt: &str, key: &str) -> String {
    let secret =
        manifest_gen::objects::tls_secret(Some("default"), name, crt.as_bytes(), key.as_bytes());
    manifest_gen::objects::file([&secret])
}

/// [`tls_secret`] `name` of a new self-signed certificate ([`certs::self_signed`]: `cn`,
/// `san`).
pub fn self_signed_secret(name: &str, cn: &str, san: &str) -> String {
    let (crt, key) = certs::self_signed(cn, san);
    let read = |p: PathBuf| std::fs::read_to_string(p).expect("a certificate file");
    tls_secret(name, &read(crt), &read(key))
}

/// The location the EPP tests' calls redirect to (`$epp_internal_path /_internal`): "no
/// endpoint, args=[ARGS]" when the call found none (`$epp_none`, a `map` of the test's), else
/// the request proxied to the endpoint.
pub const EPP_INTERNAL: &str = r#"location /_internal {
            internal;
            if ($epp_none) { return 200 "no endpoint, args=[$args]\n"; }
            proxy_pass http://$inference_workload_endpoint;
        }"#;

/// `curl -k` to https://SNI:PORT/PATH through 127.0.0.1, SNI `sni`, the Host header `host` if
/// given (else `sni`): (status, body), or None when the TLS handshake fails.
pub fn https(port: u16, sni: &str, host: Option<&str>, path: &str) -> Option<(u16, String)> {
    let mut c = Command::new("curl");
    c.args(["-sk", "-o", "-", "-w", "\n%{http_code}", "--max-time", "10", "--resolve"])
        .arg(format!("{sni}:{port}:127.0.0.1"));
    if let Some(h) = host {
        c.arg("-H").arg(format!("Host: {h}"));
    }
    let out = c.arg(format!("https://{sni}:{port}{path}")).output().expect("run curl");
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n')?;
    Some((code.parse().ok()?, body.to_owned()))
}

/// [`https`]'s status alone, SNI and Host `host`.
pub fn https_status(port: u16, host: &str, path: &str) -> Option<u16> {
    https(port, host, None, path).map(|(status, _)| status)
}

/// The pid of the newest worker, from its "start worker process N" notice (which the master
/// writes after the fork: the worker may answer before it is there).
pub fn worker_pid(n: &Nginx) -> u32 {
    wait_for(n.with_log("a worker's start"), || {
        n.error_log()
            .lines()
            .rev()
            .filter(|l| l.contains("start worker process"))
            .find_map(|l| l.rsplit(' ').next()?.trim().parse().ok())
    })
}

/// Resident memory of a process in KiB (`VmRSS` of /proc/PID/status).
pub fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

/// What the generator end-to-end tests give httproute-nginx: the module under test, listening
/// on 127.0.0.1, `preload`, no resolver, nothing experimental (tests change what they need).
pub fn generator_options() -> httproute_nginx::Options {
    httproute_nginx::Options {
        module: module_path().display().to_string(),
        carrier: httproute_nginx::Carrier::Preload,
        listen_address: Some("127.0.0.1".into()),
        certificates: Default::default(),
        resolvers: Vec::new(),
        experimental: false,
        nginx_version: nginx_version(),
        allow_external_name: false,
        global: Default::default(),
        port_unavailable: None,
    }
}

/// The version of the NGINX under test, from `nginx -v` (asked once per test binary).
pub fn nginx_version() -> (u32, u32, u32) {
    static VERSION: std::sync::OnceLock<(u32, u32, u32)> = std::sync::OnceLock::new();
    *VERSION.get_or_init(ask_nginx_version)
}

fn ask_nginx_version() -> (u32, u32, u32) {
    let out = std::process::Command::new(nginx_binary()).arg("-v").output().expect("nginx -v");
    let text = String::from_utf8_lossy(&out.stderr);
    let version = text.split("nginx/").nth(1).unwrap_or("").split_whitespace().next().unwrap_or("");
    let v: Vec<u32> = version.split('.').filter_map(|p| p.parse().ok()).collect();
    match v[..] {
        [a, b, c, ..] => (a, b, c),
        _ => panic!("cannot read the version in {text:?}"),
    }
}

/// A plain NGINX standing in for Services: for each `(key, reply)` a server on the next of
/// `ports` answering 200 with `reply` and a newline (NGINX variables allowed), and the
/// `--backend` map `key` -> `127.0.0.1:PORT`; the port after them is its own (a 404 server).
pub fn backend_servers(
    tag: &str,
    backends: &[(String, String)],
    ports: &[u16],
) -> (Nginx, httproute_nginx::BackendMap) {
    let mut body = String::new();
    let mut map = httproute_nginx::BackendMap::new();
    for ((key, reply), port) in backends.iter().zip(ports) {
        body.push_str(&format!(
            "server {{ listen 127.0.0.1:{port}; return 200 \"{reply}\\n\"; }}\n"
        ));
        map.insert(key.clone(), format!("127.0.0.1:{port}"));
    }
    body.push_str("server { listen 127.0.0.1:{PORT}; return 404; }\n");
    let p = Prefix::new_on(tag, &body, &[], ports[backends.len()]);
    let (ok, text) = p.test();
    assert!(ok, "{text}");
    (p.start(), map)
}

/// Writes `yaml` to a scratch directory named after `name`, generates from it with `backends`
/// and `opts` into another, and checks `nginx -t` on the result: the prefix (listening on
/// `port`, not started) and the generator's warnings.
pub fn generated(
    name: &str,
    yaml: &str,
    port: u16,
    backends: &httproute_nginx::BackendMap,
    opts: &httproute_nginx::Options,
) -> (Prefix, Vec<String>) {
    let src = Prefix::scratch(&format!("{name}-in"));
    std::fs::create_dir_all(&src).expect("scratch dir");
    std::fs::write(src.join("all.yaml"), yaml).expect("write manifests");
    let out = Prefix::scratch(&format!("{name}-out"));
    let (generated, warnings) =
        httproute_nginx::generate(&[src], backends, opts).expect("generate");
    httproute_nginx::write_dir(&out, &generated).expect("write the configuration");
    let p = Prefix::existing(out, "nginx.conf", port);
    let (ok, text) = p.test();
    assert!(ok, "{name}: nginx -t:\n{text}\n{}", generated.nginx_conf);
    (p, warnings)
}
