//! The operator's flow, as `generate -o DIR` and `apply` run it: a new generation of the
//! configuration staged in DIR ([`stage`]), then either put in place as it is, or checked with
//! `nginx -t` first and the running NGINX reloaded onto it ([`check_and_reload`]).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::output::{Reservation, Staged};
use crate::{BackendMap, Generated, Options};

/// Generates from `inputs` into a new generation of `dir` (its files written, nginx.conf
/// staged beside the current one, nothing in place yet). `opts.global.files_dir` is set to the
/// generation's. On an error nothing of the run is left in `dir`. With `status`, the status
/// ([`crate::status::write`]) is written to it; unchecked, before the configuration is written
/// and freed then, so the run never holds both.
pub fn stage(
    dir: &Path,
    inputs: &[PathBuf],
    backends: &BackendMap,
    mut opts: Options,
    status: Option<&mut dyn std::io::Write>,
    check: Option<&Path>,
) -> Result<(Staged, Generated), String> {
    let in_dir = |e: std::io::Error| format!("{}: {e}", dir.display());
    let reservation = Reservation::take(dir).map_err(in_dir)?;
    opts.global.files_dir = Some(reservation.files_dir());
    opts.global.generation = Some(reservation.number());
    let tree = crate::emit::Tree::Drop;
    let Some(nginx) = check else {
        // Unchecked: written as it is made (no line of it is looked up afterwards).
        return reservation.stage_streamed(
            |streams| crate::generate_streamed(inputs, backends, &opts, status, streams),
            |g: &Generated| &g.output,
        );
    };
    let generated =
        crate::generate_checked(inputs, backends, &opts, tree, status.is_some(), nginx, dir)?;
    if let Some(out) = status {
        crate::status::write(&generated.status, out)?;
    }
    let staged = reservation.stage(&generated.output).map_err(in_dir)?;
    Ok((staged, generated))
}

/// What [`check_and_reload`] did.
#[derive(Debug, PartialEq, Eq)]
pub enum Applied {
    /// In place, and the master named by `logs/nginx.pid` reported that it took it.
    Reloaded,
    /// In place; no NGINX runs from the directory (`logs/nginx.pid` missing, empty (as
    /// `nginx -t` leaves it), or naming no process).
    NotRunning,
    /// `nginx -t` refused it: nothing changed; the refused file is kept here.
    Rejected { kept: PathBuf, nginx_said: String },
    /// `nginx -t` passed, but the running master reported that it refused it (a file gone
    /// since the check, a shared memory zone it cannot change) and keeps serving the
    /// configuration it had: that configuration is put back in place, and the refused one is
    /// kept here. `nginx_said`: where NGINX says why (its error log), or what `nginx -s
    /// reload` printed.
    ReloadRefused { kept: PathBuf, nginx_said: String },
    /// `nginx -t` passed, but the new configuration listens on a TCP address the running
    /// master does not hold and another process holds ([`held_ports`]: an IPv4 address whose
    /// bind fails with "address in use"): the master would refuse every reload, so nothing
    /// changed; the refused file is kept here.
    PortHeld { kept: PathBuf, held: String },
}

/// How long [`check_and_reload`] waits, by default, for the master's report on the reload
/// (a product timeout: a master that reads a large configuration takes seconds).
pub const RELOAD_WAIT: Duration = Duration::from_secs(30);

pub use crate::emit_global::REPORT;

/// The error log the generated configuration names (`error_log logs/error.log notice`): read
/// by people for the reason of a refusal, never by this flow.
pub const ERROR_LOG: &str = "logs/error.log";

/// `nginx -t` on the staged configuration; if it passes, and every TCP address it adds can
/// be bound ([`held_ports`]), the configuration is put in place, [`REPORT`] removed, the
/// NGINX running from `dir` told to reload (`nginx -s reload`, once its master takes signals:
/// [`takes_signals`]), and its report on the staged generation awaited ([`wait_report`]): when
/// the master refuses the new configuration, the one it keeps serving is put back in place.
/// `Err`: nginx could not be run, a file could not be renamed, the master took no signals
/// within `wait` (nothing changed), or no report named the generation within `wait` (the new
/// configuration is then in place, since the master may still take it).
pub fn check_and_reload(
    staged: Staged,
    dir: &Path,
    nginx: &Path,
    wait: Duration,
) -> Result<Applied, String> {
    let conf = staged.conf().file_name().map(PathBuf::from).unwrap_or_default();
    let (ok, said) = run_nginx(nginx, dir, &conf, &["-t", "-q"])?;
    if !ok {
        let kept = staged.reject().map_err(|e| e.to_string())?;
        return Ok(Applied::Rejected { kept, nginx_said: said });
    }
    let Some(master) = running_master(dir) else {
        staged.commit().map_err(|e| e.to_string())?;
        return Ok(Applied::NotRunning);
    };
    if !master_ready(master, wait) {
        return Err(format!(
            "the master (pid {master}) took no signals within {} s: NGINX's master acts on a \
             reload once it has blocked signals and started its workers (a signal caught before \
             waits for the next one); NGINX without a master process is not reloaded by apply; \
             nothing changed",
            wait.as_secs()
        ));
    }
    let current = std::fs::read_to_string(dir.join("nginx.conf")).unwrap_or_default();
    let new = std::fs::read_to_string(staged.conf()).map_err(|e| e.to_string())?;
    let held = held_ports(&current, &new);
    if !held.is_empty() {
        let kept = staged.reject().map_err(|e| e.to_string())?;
        return Ok(Applied::PortHeld { kept, held: held.join("\n") });
    }
    let generation = staged.generation().ok_or("a configuration without a generation")?;
    let report = dir.join(REPORT);
    if let Err(e) = std::fs::remove_file(&report)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        return Err(format!("{}: {e}", report.display()));
    }
    let committed = staged.commit_undoable().map_err(|e| e.to_string())?;
    let (ok, said) = run_nginx(nginx, dir, Path::new("nginx.conf"), &["-s", "reload"])?;
    let verdict = if ok {
        wait_report(&report, generation, wait)
    } else {
        Reload::Refused(format!("nginx -s reload failed: {said}"))
    };
    match verdict {
        Reload::Took => {
            committed.keep();
            Ok(Applied::Reloaded)
        }
        Reload::Refused(nginx_said) => {
            let kept = committed.roll_back().map_err(|e| e.to_string())?;
            Ok(Applied::ReloadRefused { kept, nginx_said })
        }
        Reload::Unknown => {
            committed.keep();
            Err(format!(
                "{}/nginx.conf is in place and the master (pid {master}) was told to reload, but \
                 {} named no verdict on generation {generation} within {} s (a patience, not a \
                 verdict: the master may still take it or refuse it; is the module the one the \
                 master runs?)",
                dir.display(),
                report.display(),
                wait.as_secs()
            ))
        }
    }
}

/// A reload's outcome, as the master reported it.
#[derive(Debug, PartialEq, Eq)]
pub enum Reload {
    /// `N took`: the master took generation N (it starts new worker processes).
    Took,
    /// `N refused`, or the signal could not be sent: the master keeps the old configuration.
    Refused(String),
    /// No report on the generation within the wait.
    Unknown,
}

/// Waits for `report` to name `generation` (`N took` or `N refused`): looked at every 20 ms
/// until it does or `wait` has passed ([`Reload::Unknown`]). A report on another generation
/// (an earlier reload's, late) is not an answer.
pub fn wait_report(report: &Path, generation: u64, wait: Duration) -> Reload {
    let start = Instant::now();
    let took = format!("{generation} took\n");
    let refused = format!("{generation} refused\n");
    loop {
        let text = std::fs::read_to_string(report).unwrap_or_default();
        if text == took {
            return Reload::Took;
        }
        if text == refused {
            return Reload::Refused(format!(
                "the master reported \"{}\" ({REPORT}); {ERROR_LOG} says why",
                refused.trim_end()
            ));
        }
        if start.elapsed() >= wait {
            return Reload::Unknown;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Why a listener on `port` could not be served from `dir`, when that is certain: the address
/// (`--listen-address`; none or `*`: every IPv4 address) is IPv4, no `listen` of the
/// configuration in place uses the port (its master holds those), and binding it fails with
/// "address in use": another process holds it, and the master would refuse every reload.
/// Planning refuses its listeners (`PortUnavailable`), so one tenant's listener never stops
/// another's change. Anything less certain (IPv6, a name, another error, a port the
/// configuration in place uses at any address) is left to [`held_ports`], the net behind it.
/// `dir`'s nginx.conf is read at the first question, inside the run's lock.
pub fn port_probe(dir: &Path, listen_address: Option<&str>) -> crate::plan::PortProbe {
    let conf = dir.join("nginx.conf");
    let host = listen_address.filter(|a| *a != "*").unwrap_or("0.0.0.0").to_owned();
    let in_use = std::sync::OnceLock::<std::collections::BTreeSet<u16>>::new();
    crate::plan::PortProbe(std::sync::Arc::new(move |port| {
        let ip: std::net::Ipv4Addr = host.parse().ok()?;
        let used = in_use.get_or_init(|| {
            let text = std::fs::read_to_string(&conf).unwrap_or_default();
            let port_of = |a: &str| a.rsplit_once(':')?.1.parse::<u16>().ok();
            tcp_listens(&text).iter().filter_map(|(a, _)| port_of(a)).collect()
        });
        if used.contains(&port) {
            return None;
        }
        let e = std::net::TcpListener::bind((ip, port)).err()?;
        held_by_another(e.kind())
            .then(|| format!("port {port} is held by another process ({ip}:{port}: {e})"))
    }))
}

/// The TCP addresses `new` listens on that `current` does not (the running master holds
/// those it listens on) and that another process holds, each with its `listen` directive and
/// the error: the reload would fail for every tenant. Only what is certain ([`port_probe`]'s
/// rule): an IPv4 address whose bind fails with "address in use" ([`held_by_another`]). Any
/// other error (EACCES, as `apply` run unprivileged beside a root master meets on a port below
/// 1024; EADDRNOTAVAIL), a name (resolved here, maybe not as NGINX resolves it) and IPv6
/// (bound here dual-stack, where NGINX binds `[::]` with `ipv6only=on`: an IPv4 holder of the
/// port is no conflict for it) are left to the reload, whose refusal puts the configuration in
/// place back. A bound address is released at once.
pub fn held_ports(current: &str, new: &str) -> Vec<String> {
    let old: std::collections::BTreeSet<String> =
        tcp_listens(current).into_iter().map(|(a, _)| a).collect();
    let mut seen = std::collections::BTreeSet::new();
    tcp_listens(new)
        .into_iter()
        .filter(|(a, _)| !old.contains(a) && seen.insert(a.clone()))
        .filter_map(|(a, listen)| {
            let ip: std::net::SocketAddrV4 = a.parse().ok()?;
            let e = std::net::TcpListener::bind(ip).err()?;
            held_by_another(e.kind())
                .then(|| format!("port {a} (nginx.conf's `{listen}`, a Gateway listener's): {e}"))
        })
        .collect()
}

/// Whether a bind of a new `listen` address that failed with `error` is certain to fail the
/// reload: "address in use", another process holds it. Any other error may be this process's
/// alone (EACCES: `apply` without the master's privileges) and is left to the reload.
pub fn held_by_another(error: std::io::ErrorKind) -> bool {
    error == std::io::ErrorKind::AddrInUse
}

/// The TCP addresses of the `listen` directives of `text`'s servers, as NGINX reads the file
/// ([`crate::conf_reader`]; `PORT` and `*:PORT` as `0.0.0.0:PORT`), each with its directive;
/// `unix:` sockets are left out, and a file that does not parse has none.
fn tcp_listens(text: &str) -> Vec<(String, String)> {
    fn walk(stmts: &[crate::conf::Stmt], in_server: bool, out: &mut Vec<(String, String)>) {
        for s in stmts {
            match (s.words.first().map(String::as_str), s.words.get(1), &s.block) {
                (Some("listen"), Some(word), None) if in_server && !word.starts_with("unix:") => {
                    let port = word.strip_prefix("*:").unwrap_or(word);
                    let addr = if port.bytes().all(|b| b.is_ascii_digit()) {
                        format!("0.0.0.0:{port}")
                    } else {
                        word.clone()
                    };
                    out.push((addr, s.words.join(" ")));
                }
                (first, _, Some(block)) => walk(block, first == Some("server"), out),
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    walk(&crate::conf_reader::read(text).unwrap_or_default(), false, &mut out);
    out
}

/// The pid in `DIR/logs/nginx.pid`, if it names a process (where /proc tells). `nginx -t`
/// creates the file empty when it is missing, so its existence says nothing.
pub fn running_master(dir: &Path) -> Option<u32> {
    let text = std::fs::read_to_string(dir.join("logs/nginx.pid")).ok()?;
    let pid: u32 = text.trim().parse().ok()?;
    let proc = Path::new("/proc");
    (!proc.is_dir() || proc.join(pid.to_string()).exists()).then_some(pid)
}

/// Whether the NGINX master `pid` acts on a signal now. The master installs its signal
/// handlers and writes its pid file in `main()`, then blocks signals, takes the title `nginx:
/// master process`, forks its workers and waits for a signal: a reload signal caught before
/// the block is acted on only at the next signal. So: the master's title, or a child (under
/// valgrind the title does not show); `true` where Linux tells neither (`hidepid`, a kernel
/// that lists no children). NGINX without a master process (`master_process off`) has neither.
pub fn takes_signals(pid: u32) -> bool {
    let title = std::fs::read(format!("/proc/{pid}/cmdline"));
    let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"));
    match (title, children) {
        (Ok(t), _) if t.starts_with(b"nginx: master process") => true,
        (_, Ok(c)) => !c.trim().is_empty(),
        _ => true,
    }
}

/// [`takes_signals`], looked at every 20 ms for at most `wait`.
fn master_ready(pid: u32, wait: Duration) -> bool {
    let start = Instant::now();
    while !takes_signals(pid) {
        if start.elapsed() >= wait {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// `nginx -p DIR/ -c CONF ARGS`: (success, what it printed).
fn run_nginx(
    binary: &Path,
    dir: &Path,
    conf: &Path,
    args: &[&str],
) -> Result<(bool, String), String> {
    let out = std::process::Command::new(binary)
        .arg("-p")
        .arg(format!("{}/", dir.display()))
        .arg("-c")
        .arg(conf)
        .args(args)
        .output()
        .map_err(|e| format!("{}: {e}", binary.display()))?;
    let mut text = String::from_utf8_lossy(&out.stderr).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stdout));
    Ok((out.status.success(), text))
}

#[cfg(test)]
mod tests {
    use super::{held_by_another, held_ports, port_probe, tcp_listens};
    use std::io::ErrorKind;

    /// The probe refuses a port only when it is certain another process holds it: an IPv4
    /// address (none and `*` are every one) in use, on a port the configuration in place does
    /// not listen on at any address. IPv6, names and free ports are left to the net.
    #[test]
    fn the_probe_names_only_ports_another_process_holds() {
        let holder = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let held = holder.local_addr().unwrap().port();
        let free = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let free_port = free.local_addr().unwrap().port();
        drop(free);
        let dir = std::env::temp_dir().join(format!("probe-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ask = |address: Option<&str>, port| (port_probe(&dir, address).0)(port);
        for address in [Some("127.0.0.1"), Some("*"), None] {
            let why = ask(address, held).unwrap_or_else(|| panic!("{address:?}"));
            assert!(why.starts_with(&format!("port {held} is held by another process")), "{why}");
            assert_eq!(ask(address, free_port), None, "{address:?}");
        }
        assert_eq!(ask(Some("[::1]"), held), None, "IPv6: left to the net");
        assert_eq!(ask(Some("localhost"), held), None, "a name: left to the net");
        // The configuration in place listens on the port (at another address): its master
        // may hold it; left to the net.
        std::fs::write(
            dir.join("nginx.conf"),
            format!("http {{ server {{ listen 10.9.9.9:{held}; }} }}\n"),
        )
        .unwrap();
        assert_eq!(ask(Some("127.0.0.1"), held), None);
        let _ = std::fs::remove_dir_all(&dir);
        drop(holder);
    }

    /// A bind error refuses the change only when another process holds the address: EACCES
    /// (`apply` unprivileged beside a root master, a listener below port 1024) and the rest
    /// are left to the reload, which puts the configuration in place back when it fails.
    #[test]
    fn only_an_address_in_use_is_held() {
        assert!(held_by_another(ErrorKind::AddrInUse));
        for other in [ErrorKind::PermissionDenied, ErrorKind::AddrNotAvailable, ErrorKind::Other] {
            assert!(!held_by_another(other), "{other:?}");
        }
    }

    /// `held_ports` names a new IPv4 address another process holds, and leaves to the reload
    /// an address it cannot bind for another reason (192.0.2.1, TEST-NET-1, is no address of
    /// this machine: EADDRNOTAVAIL), a name and IPv6; an address the configuration in place
    /// listens on is its master's.
    #[test]
    fn held_ports_names_only_addresses_another_process_holds() {
        let holder = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let held = holder.local_addr().unwrap().port();
        let not_here = std::net::TcpListener::bind(("192.0.2.1", held)).unwrap_err();
        assert_eq!(not_here.kind(), ErrorKind::AddrNotAvailable, "192.0.2.1 is local here");
        let conf = |listens: &[String]| {
            let lines: String = listens.iter().map(|l| format!("listen {l}; ")).collect();
            format!("http {{ server {{ {lines}}} }}\n")
        };
        let new = conf(&[
            format!("127.0.0.1:{held}"),
            format!("192.0.2.1:{held}"),
            format!("localhost:{held}"),
            format!("[::1]:{held}"),
        ]);
        let got = held_ports("", &new);
        assert_eq!(got.len(), 1, "{got:?}");
        let named = format!("port 127.0.0.1:{held} (nginx.conf's `listen 127.0.0.1:{held}`");
        assert!(got[0].starts_with(&named), "{got:?}");
        assert_eq!(held_ports(&conf(&[format!("127.0.0.1:{held}")]), &new), Vec::<String>::new());
        drop(holder);
    }

    /// The addresses are the ones NGINX reads: several directives on a line, quotes, comments,
    /// `*:PORT`, a `map`'s key that spells `listen`, `unix:` left out.
    #[test]
    fn listens_are_read_as_nginx_reads_them() {
        let conf = "http { server { listen 127.0.0.1:1; listen \"127.0.0.1:2\" ssl; }\n\
                    # listen 3;\nserver {\n  listen *:4;\n  listen unix:/x.sock;\n  listen 5; }\n\
                    map $a $b { listen 6; } }\n";
        let got: Vec<(String, String)> = tcp_listens(conf);
        let addrs: Vec<&str> = got.iter().map(|(a, _)| a.as_str()).collect();
        assert_eq!(addrs, ["127.0.0.1:1", "127.0.0.1:2", "0.0.0.0:4", "0.0.0.0:5"]);
        assert_eq!(got[1].1, "listen 127.0.0.1:2 ssl");
    }
}
