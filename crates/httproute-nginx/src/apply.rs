//! The operator's flow, as `generate -o DIR` and `apply` run it: a new generation of the
//! configuration staged in DIR ([`stage`]), then either put in place as it is, or checked with
//! `nginx -t` first and the running NGINX reloaded onto it ([`check_and_reload`]).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::output::{Reservation, Staged};
use crate::{BackendMap, Generated, Options};

/// Generates from `inputs` into a new generation of `dir` (its files written, nginx.conf
/// staged beside the current one, nothing in place yet). `opts.global.files_dir` is set to the
/// generation's. On an error nothing of the run is left in `dir`.
pub fn stage(
    dir: &Path,
    inputs: &[PathBuf],
    backends: &BackendMap,
    mut opts: Options,
    status: bool,
    check: Option<&Path>,
) -> Result<(Staged, Generated), String> {
    let in_dir = |e: std::io::Error| format!("{}: {e}", dir.display());
    let reservation = Reservation::take(dir).map_err(in_dir)?;
    opts.global.files_dir = Some(reservation.files_dir());
    let tree = crate::emit::Tree::Drop;
    let generated = match check {
        None => crate::generate_all_with(inputs, backends, &opts, tree, status)?,
        Some(nginx) => crate::generate_checked(inputs, backends, &opts, tree, status, nginx, dir)?,
    };
    let staged = reservation.stage(&generated.output).map_err(in_dir)?;
    Ok((staged, generated))
}

/// What [`check_and_reload`] did.
#[derive(Debug, PartialEq, Eq)]
pub enum Applied {
    /// In place, and the master named by `logs/nginx.pid` reloaded onto it (it started new
    /// worker processes).
    Reloaded,
    /// In place; no NGINX runs from the directory (`logs/nginx.pid` missing, empty (as
    /// `nginx -t` leaves it), or naming no process).
    NotRunning,
    /// `nginx -t` refused it: nothing changed; the refused file is kept here.
    Rejected { kept: PathBuf, nginx_said: String },
    /// `nginx -t` passed, but the running master could not apply it (a port another process
    /// holds, a file gone since the check) and keeps serving the configuration it had: that
    /// configuration is put back in place, and the refused one is kept here.
    ReloadRefused { kept: PathBuf, nginx_said: String },
    /// `nginx -t` passed, but the new configuration listens on a TCP address the running
    /// master does not hold and this process cannot bind (another process holds it): the
    /// master would refuse every reload, so nothing changed; the refused file is kept here.
    PortHeld { kept: PathBuf, held: String },
}

/// How long [`check_and_reload`] waits, by default, for the master to say how the reload
/// went (a product timeout: a master that reads a large configuration takes seconds).
pub const RELOAD_WAIT: Duration = Duration::from_secs(30);

/// `nginx -t` on the staged configuration; if it passes, the configuration is put in place,
/// the NGINX running from `dir` told to reload (`nginx -s reload`), and the reload verified
/// ([`watch_reload`]): when the master refuses the new configuration, the one it keeps serving
/// is put back in place. `Err`: nginx could not be run, a file could not be renamed, or the
/// master said nothing about the reload within `wait` (the new configuration is then in place,
/// since the master may still take it).
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
    let current = std::fs::read_to_string(dir.join("nginx.conf")).unwrap_or_default();
    let new = std::fs::read_to_string(staged.conf()).map_err(|e| e.to_string())?;
    let held = held_ports(&current, &new);
    if !held.is_empty() {
        let kept = staged.reject().map_err(|e| e.to_string())?;
        return Ok(Applied::PortHeld { kept, held: held.join("\n") });
    }
    // Where the master's answer to this reload will start: what the log holds now, and the
    // worker processes it has now.
    let log = dir.join(ERROR_LOG);
    let from = std::fs::metadata(&log).map_or(0, |m| m.len());
    let workers = children(master);
    let committed = staged.commit_undoable().map_err(|e| e.to_string())?;
    let (ok, said, sender) = signal_reload(nginx, dir)?;
    let verdict = if ok {
        watch_reload(&log, from, Sides { master, sender }, &workers, wait)
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
        Reload::Silent => {
            committed.keep();
            Err(format!(
                "{}/nginx.conf is in place and the master (pid {master}) was told to reload, but \
                 it said nothing about the reload in {} within {} s (is its error_log {ERROR_LOG} \
                 at level notice?): it may still apply it or refuse it",
                dir.display(),
                log.display(),
                wait.as_secs()
            ))
        }
    }
}

/// The error log the generated configuration names (`error_log logs/error.log notice`).
pub const ERROR_LOG: &str = "logs/error.log";

/// How a reload went, as the master said it.
#[derive(Debug, PartialEq, Eq)]
pub enum Reload {
    /// It started new worker processes: the new configuration serves.
    Took,
    /// It logged an error (`[emerg]`, `[alert]`, `[crit]`) and keeps the old configuration:
    /// its lines.
    Refused(String),
    /// Neither within the wait.
    Silent,
}

/// The two processes of a reload: the master, and the `nginx -s reload` that signalled it.
#[derive(Debug, Clone, Copy)]
pub struct Sides {
    pub master: u32,
    pub sender: u32,
}

/// Waits for the master to answer the reload `sides.sender` signalled: reads the lines `log`
/// gets from byte `from` on (from its start if it is shorter: rotated). Only the master's own
/// lines (`PID#TID:`) count, in the order NGINX writes them (at level `notice`, as the
/// generated configuration's `error_log` has it):
/// 1. `signal 1 (SIGHUP) received from SENDER, reconfiguring` (the signal handler's);
/// 2. `reconfiguring` (the master loop, as it starts reading the configuration; lines between
///    1 and 2 are the end of an earlier reload still running);
/// 3. `[emerg]`, `[alert]` or `[crit]`: refused (`ngx_init_cycle` failed; the master keeps
///    the running configuration); or `start worker process` (or, after 2, a child process of
///    the master not among `workers`): it took.
///
/// Events, not a sleep: the log and /proc are looked at every 20 ms until they answer or
/// `wait` has passed ([`Reload::Silent`]).
pub fn watch_reload(
    log: &Path,
    from: u64,
    sides: Sides,
    workers: &[u32],
    wait: Duration,
) -> Reload {
    let start = Instant::now();
    let own = format!(" {}#", sides.master);
    let signalled = format!("received from {},", sides.sender);
    // 0: before our signal's line, 1: before the master's "reconfiguring", 2: reading.
    let mut stage = 0;
    let mut pos = from;
    let mut pending = String::new();
    let mut refused: Vec<String> = Vec::new();
    loop {
        let (text, next) = read_from(log, pos);
        pos = next;
        pending.push_str(&text);
        // Whole lines only; a partial last line waits for its end.
        while let Some(end) = pending.find('\n') {
            let line: String = pending.drain(..=end).collect();
            let line = line.trim_end();
            if !line.contains(&own) {
                continue;
            }
            match stage {
                0 if line.contains("(SIGHUP) received")
                    && (line.contains(&signalled) || !line.contains(" from ")) =>
                {
                    stage = 1;
                }
                1 if line.ends_with(": reconfiguring") => stage = 2,
                2 if ["[emerg]", "[alert]", "[crit]"].iter().any(|l| line.contains(l)) => {
                    refused.push(line.to_owned());
                }
                2 if line.contains("start worker process") && refused.is_empty() => {
                    return Reload::Took;
                }
                _ => {}
            }
        }
        if !refused.is_empty() {
            return Reload::Refused(refused.join("\n"));
        }
        if stage == 2 && children(sides.master).iter().any(|c| !workers.contains(c)) {
            return Reload::Took;
        }
        if start.elapsed() >= wait {
            return Reload::Silent;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// What `path` holds from byte `pos` (from 0 if it is shorter now), and the position after.
fn read_from(path: &Path, pos: u64) -> (String, u64) {
    use std::io::{Read as _, Seek as _};
    let Ok(mut f) = std::fs::File::open(path) else { return (String::new(), pos) };
    let len = f.metadata().map_or(0, |m| m.len());
    let pos = if len < pos { 0 } else { pos };
    let mut bytes = Vec::new();
    if f.seek(std::io::SeekFrom::Start(pos)).is_err() || f.read_to_end(&mut bytes).is_err() {
        return (String::new(), pos);
    }
    (String::from_utf8_lossy(&bytes).into_owned(), pos + bytes.len() as u64)
}

/// The processes whose parent is `pid`, from /proc (empty where there is none).
pub fn children(pid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|e| {
        let e = e.ok()?;
        let child: u32 = e.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
        // `PID (COMM) STATE PPID ...`: COMM may hold spaces and parentheses.
        let after = &stat[stat.rfind(')')? + 1..];
        let ppid: u32 = after.split_whitespace().nth(1)?.parse().ok()?;
        (ppid == pid).then_some(child)
    })
    .collect()
}

/// The TCP addresses `new` listens on that `current` does not (the running master holds
/// those it listens on) and that cannot be bound now, each with its `listen` line (1-based,
/// in `new`) and the error. A bound address is released at once.
pub fn held_ports(current: &str, new: &str) -> Vec<String> {
    let old: std::collections::BTreeSet<String> =
        tcp_listens(current).into_iter().map(|(_, a)| a).collect();
    let mut seen = std::collections::BTreeSet::new();
    tcp_listens(new)
        .into_iter()
        .filter(|(_, a)| !old.contains(a) && seen.insert(a.clone()))
        .filter_map(|(line, a)| {
            let e = std::net::TcpListener::bind(a.as_str()).err()?;
            Some(format!("port {a} (nginx.conf line {line}, a Gateway listener's): {e}"))
        })
        .collect()
}

/// The TCP addresses of `text`'s `listen` lines (`PORT` as `0.0.0.0:PORT`), with their line
/// numbers (1-based); `unix:` sockets are left out.
fn tcp_listens(text: &str) -> Vec<(usize, String)> {
    text.lines()
        .enumerate()
        .filter_map(|(i, l)| {
            let word = l.trim_start().strip_prefix("listen ")?.split_whitespace().next()?;
            let word = word.trim_end_matches(';').trim_matches(['"', '\'']);
            if word.starts_with("unix:") {
                return None;
            }
            let addr = if word.bytes().all(|b| b.is_ascii_digit()) {
                format!("0.0.0.0:{word}")
            } else {
                word.to_owned()
            };
            Some((i + 1, addr))
        })
        .collect()
}

/// The pid in `DIR/logs/nginx.pid`, if it names a process (where /proc tells). `nginx -t`
/// creates the file empty when it is missing, so its existence says nothing.
pub fn running_master(dir: &Path) -> Option<u32> {
    let text = std::fs::read_to_string(dir.join("logs/nginx.pid")).ok()?;
    let pid: u32 = text.trim().parse().ok()?;
    let proc = Path::new("/proc");
    (!proc.is_dir() || proc.join(pid.to_string()).exists()).then_some(pid)
}

/// `nginx -p DIR/ -c nginx.conf -s reload`: (success, what it printed, its pid: the sender
/// the master's log names).
fn signal_reload(binary: &Path, dir: &Path) -> Result<(bool, String, u32), String> {
    let child = std::process::Command::new(binary)
        .arg("-p")
        .arg(format!("{}/", dir.display()))
        .args(["-c", "nginx.conf", "-s", "reload"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("{}: {e}", binary.display()))?;
    let sender = child.id();
    let out = child.wait_with_output().map_err(|e| format!("{}: {e}", binary.display()))?;
    let mut text = String::from_utf8_lossy(&out.stderr).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stdout));
    Ok((out.status.success(), text, sender))
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
