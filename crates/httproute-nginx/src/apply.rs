//! The operator's flow, as `generate -o DIR` and `apply` run it: a new generation of the
//! configuration staged in DIR ([`stage`]), then either put in place as it is, or checked with
//! `nginx -t` first and the running NGINX reloaded onto it ([`check_and_reload`]).

use std::path::{Path, PathBuf};

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
    /// In place, and the master named by `logs/nginx.pid` was told to reload.
    Reloaded,
    /// In place; no NGINX runs from the directory (`logs/nginx.pid` missing, empty (as
    /// `nginx -t` leaves it), or naming no process).
    NotRunning,
    /// `nginx -t` refused it: nothing changed; the refused file is kept here.
    Rejected { kept: PathBuf, nginx_said: String },
}

/// `nginx -t` on the staged configuration; if it passes, the configuration is put in place and
/// the NGINX running from `dir` reloaded (`nginx -s reload`), else it is rejected and the
/// configuration in place stays. `Err`: nginx could not be run, a file could not be renamed,
/// or the reload signal failed (the configuration is then in place).
pub fn check_and_reload(staged: Staged, dir: &Path, nginx: &Path) -> Result<Applied, String> {
    let conf = staged.conf().file_name().map(PathBuf::from).unwrap_or_default();
    let (ok, said) = run_nginx(nginx, dir, &conf, &["-t", "-q"])?;
    if !ok {
        let kept = staged.reject().map_err(|e| e.to_string())?;
        return Ok(Applied::Rejected { kept, nginx_said: said });
    }
    staged.commit().map_err(|e| e.to_string())?;
    if running_master(dir).is_none() {
        return Ok(Applied::NotRunning);
    }
    let (ok, said) = run_nginx(nginx, dir, Path::new("nginx.conf"), &["-s", "reload"])?;
    if !ok {
        return Err(format!(
            "{}/nginx.conf is in place, but the reload failed: {said}",
            dir.display()
        ));
    }
    Ok(Applied::Reloaded)
}

/// The pid in `DIR/logs/nginx.pid`, if it names a process (where /proc tells). `nginx -t`
/// creates the file empty when it is missing, so its existence says nothing.
pub fn running_master(dir: &Path) -> Option<u32> {
    let text = std::fs::read_to_string(dir.join("logs/nginx.pid")).ok()?;
    let pid: u32 = text.trim().parse().ok()?;
    let proc = Path::new("/proc");
    (!proc.is_dir() || proc.join(pid.to_string()).exists()).then_some(pid)
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
