//! Writing a configuration into its directory so that the NGINX running from it can be
//! reloaded at any moment, and is never given half of one configuration and half of another.
//!
//! The directory (`-o DIR`, NGINX's prefix): `nginx.conf`, replaced by a rename as the last
//! step; `generations/N/`, the files configuration N names (`matches.json`, `certs/`), written
//! whole before its nginx.conf is renamed into place and never changed after (the one before
//! the current is kept, a reload may be reading it; older ones are removed); `logs/`, `tmp/`:
//! NGINX's own, created when missing and never touched.
//!
//! [`Reservation::take`] locks DIR (`flock` on `DIR/.lock`, one run at a time) and takes the
//! next generation number; [`Reservation::stage`] writes everything but nginx.conf's rename
//! ([`Staged::conf`], for `nginx -t`), [`Staged::commit`] renames. Dropping either before the
//! commit removes what it wrote.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::emit::{Output, Streams};

/// The directory of the generations, in DIR.
pub const GENERATIONS: &str = "generations";

/// The lock file in DIR ([`Reservation::take`]).
pub const LOCK: &str = ".lock";

/// The runtime directories NGINX writes in (created when missing, never touched again).
pub const RUNTIME_DIRS: [&str; 2] = ["logs", "tmp"];

/// A generation number taken in DIR: its directory exists (empty) until [`Reservation::stage`]
/// fills it; dropped unstaged, it is removed.
pub struct Reservation {
    dir: PathBuf,
    number: u64,
    done: bool,
    /// `dir` did not exist before: a run that writes nothing leaves none.
    fresh: bool,
    /// `DIR/.lock`, locked: passed on to [`Staged`], then [`Committed`].
    lock: Option<Lock>,
}

impl Reservation {
    /// Locks `dir` ([`LOCK`]; `WouldBlock` if another run holds it), removes what a killed run
    /// left ([`remove_killed`]), and takes the number after the highest generation in `dir` (1
    /// in a new directory).
    pub fn take(dir: &Path) -> std::io::Result<Reservation> {
        let root = dir.join(GENERATIONS);
        let fresh = !dir.exists();
        std::fs::create_dir_all(&root)?;
        let lock = Some(lock(dir)?);
        remove_killed(dir);
        let mut number = generations(&root)?.last().map_or(1, |n| n + 1);
        loop {
            match std::fs::create_dir(root.join(number.to_string())) {
                Ok(()) => {
                    let dir = dir.to_owned();
                    return Ok(Reservation { dir, number, done: false, fresh, lock });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => number += 1,
                Err(e) => return Err(e),
            }
        }
    }

    /// The generation's directory relative to nginx.conf: what
    /// [`crate::emit_global::Global::files_dir`] must be for the configuration written here.
    pub fn files_dir(&self) -> String {
        format!("{GENERATIONS}/{}", self.number)
    }

    /// The generation's number ([`crate::emit_global::Global::generation`]).
    pub fn number(&self) -> u64 {
        self.number
    }

    /// Writes `out` (made with [`Reservation::files_dir`]) except the final rename: the
    /// generation's files, and nginx.conf beside the current one.
    pub fn stage(self, out: &Output) -> std::io::Result<Staged> {
        let write = |s: Streams<'_>| {
            s.conf.write_all(out.nginx_conf.as_bytes())?;
            s.matches.write_all(out.matches_json.as_bytes()).map(|()| out)
        };
        let write = |s: Streams<'_>| write(s).map_err(|e| e.to_string());
        Ok(self.stage_streamed(write, |o| *o).map_err(std::io::Error::other)?.0)
    }

    /// [`Reservation::stage`] of a configuration written as it is made: `write` gets the
    /// streams of nginx.conf and matches.json and a scratch file, all in the generation's
    /// directory (removed with it if anything fails), and `output` says which [`Output`] of
    /// what it made (its texts empty) names the files. No text of the configuration is held
    /// in memory whole.
    pub fn stage_streamed<T>(
        mut self,
        write: impl FnOnce(Streams<'_>) -> Result<T, String>,
        output: impl FnOnce(&T) -> &Output,
    ) -> Result<(Staged, T), String> {
        let root = self.dir.join(self.files_dir());
        let io = |e: std::io::Error| format!("{}: {e}", root.display());
        let (conf_new, matches_new) =
            (root.join(".nginx.conf.new"), root.join(".matches.json.new"));
        let mut conf = new_file(&conf_new, false).map_err(io)?;
        let mut matches = new_file(&matches_new, false).map_err(io)?;
        let scratch_path = root.join(".servers");
        let mut scratch = new_file(&scratch_path, false).map_err(io)?;
        // Nothing names it but this handle: freed when it is closed, whatever happens.
        std::fs::remove_file(&scratch_path).map_err(io)?;
        let made =
            write(Streams { conf: &mut conf, matches: &mut matches, scratch: &mut scratch })?;
        drop(scratch);
        let out = output(&made);
        if !out.matches_file.starts_with(&format!("{}/", self.files_dir())) {
            return Err(format!(
                "generator bug: the configuration reads {}, not from {}",
                out.matches_file,
                self.files_dir()
            ));
        }
        conf.sync_all().and_then(|()| matches.sync_all()).map_err(io)?;
        std::fs::rename(&matches_new, self.dir.join(&out.matches_file)).map_err(io)?;
        for (rel, bytes) in &out.files {
            replace(&self.dir.join(rel), bytes, true).map_err(io)?;
        }
        sync_dir(&root);
        for d in RUNTIME_DIRS {
            std::fs::create_dir_all(self.dir.join(d)).map_err(io)?;
        }
        let conf = self.dir.join(format!(".nginx.conf.new-{}", std::process::id()));
        let _ = std::fs::remove_file(&conf);
        std::fs::rename(&conf_new, &conf).map_err(io)?;
        self.done = true;
        let (dir, generation, lock) = (self.dir.clone(), Some(self.number), self.lock.take());
        Ok((Staged { dir, conf, generation, done: false, lock }, made))
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if !self.done {
            remove_generation(&self.dir, Some(self.number));
            let root = self.dir.join(GENERATIONS);
            if self.fresh {
                // Not recursive: only what this run made, and only if nothing else is there
                // (the lock while held: a run that opened it meanwhile finds it gone, [`lock`]).
                let _ = std::fs::remove_dir(&root);
                let _ = std::fs::remove_file(self.dir.join(LOCK));
                let _ = std::fs::remove_dir(&self.dir);
            }
        }
    }
}

/// A configuration written but not yet in place: [`Staged::commit`] renames its nginx.conf
/// over the current one; dropped uncommitted, its files are removed and the current
/// configuration stays as it was.
pub struct Staged {
    dir: PathBuf,
    conf: PathBuf,
    generation: Option<u64>,
    done: bool,
    /// The directory's lock ([`Reservation::take`]), released when this is dropped.
    lock: Option<Lock>,
}

impl Staged {
    /// The staged nginx.conf, in DIR (so relative paths in it resolve as in nginx.conf):
    /// `nginx -t -p DIR/ -c` this file checks exactly what [`Staged::commit`] puts in place.
    pub fn conf(&self) -> &Path {
        &self.conf
    }

    /// Its generation's number (`None`: written without one).
    pub fn generation(&self) -> Option<u64> {
        self.generation
    }

    /// Puts the configuration in place (one rename), then removes the generations older than
    /// the one it replaces.
    pub fn commit(mut self) -> std::io::Result<()> {
        std::fs::rename(&self.conf, self.dir.join("nginx.conf"))?;
        self.done = true;
        sync_dir(&self.dir);
        prune(&self.dir.join(GENERATIONS), self.generation)
    }

    /// [`Staged::commit`], keeping the nginx.conf it replaces (a hard link beside it) so that
    /// [`Committed::roll_back`] can put it back: a reload NGINX refused. The generation of
    /// that configuration is kept by the commit anyway (the one before the current).
    pub fn commit_undoable(mut self) -> std::io::Result<Committed> {
        let current = self.dir.join("nginx.conf");
        let previous = self.dir.join(format!(".nginx.conf.previous-{}", std::process::id()));
        let _ = std::fs::remove_file(&previous);
        let previous = match std::fs::hard_link(&current, &previous) {
            Ok(()) => Some(previous),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        let (dir, generation, lock) = (self.dir.clone(), self.generation, self.lock.take());
        let committed = Committed { dir, previous, generation, done: false, _lock: lock };
        self.commit()?;
        Ok(committed)
    }

    /// Leaves the current configuration in place and keeps the staged nginx.conf as
    /// `nginx.conf.rejected` (for its line numbers in `nginx -t`'s message); its generation's
    /// files are removed.
    pub fn reject(mut self) -> std::io::Result<PathBuf> {
        let to = self.dir.join("nginx.conf.rejected");
        std::fs::rename(&self.conf, &to)?;
        self.done = true;
        remove_generation(&self.dir, self.generation);
        Ok(to)
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.done {
            let _ = std::fs::remove_file(&self.conf);
            remove_generation(&self.dir, self.generation);
        }
    }
}

/// A configuration put in place by [`Staged::commit_undoable`]: [`Committed::keep`] it, or
/// [`Committed::roll_back`] to the one it replaced. Dropped, it is kept.
pub struct Committed {
    dir: PathBuf,
    /// The replaced nginx.conf (a hard link), if there was one.
    previous: Option<PathBuf>,
    generation: Option<u64>,
    done: bool,
    /// The directory's lock, held until the run ends (kept or rolled back).
    _lock: Option<Lock>,
}

impl Committed {
    /// Keeps the new configuration (the link to the old one is removed).
    pub fn keep(mut self) {
        self.forget();
    }

    /// Puts the replaced nginx.conf back in place (one rename) and removes the new
    /// configuration's generation; the new nginx.conf is kept as `nginx.conf.rejected`. Where
    /// there was no nginx.conf before, the new one is only renamed to that name.
    pub fn roll_back(mut self) -> std::io::Result<PathBuf> {
        let conf = self.dir.join("nginx.conf");
        let rejected = self.dir.join("nginx.conf.rejected");
        let _ = std::fs::remove_file(&rejected);
        match self.previous.take() {
            Some(previous) => {
                std::fs::hard_link(&conf, &rejected)?;
                std::fs::rename(&previous, &conf)?;
            }
            None => std::fs::rename(&conf, &rejected)?,
        }
        self.done = true;
        sync_dir(&self.dir);
        remove_generation(&self.dir, self.generation);
        Ok(rejected)
    }

    fn forget(&mut self) {
        if let Some(p) = self.previous.take() {
            let _ = std::fs::remove_file(p);
        }
        self.done = true;
    }
}

impl Drop for Committed {
    fn drop(&mut self) {
        if !self.done {
            self.forget();
        }
    }
}

/// Writes `out` into `dir` and puts it in place, the flat layout (no generations: its files
/// each replaced by a rename next to nginx.conf). The runtime directories are created when
/// missing and never touched.
pub fn write_dir(dir: &Path, out: &Output) -> std::io::Result<()> {
    for d in RUNTIME_DIRS {
        std::fs::create_dir_all(dir.join(d))?;
    }
    let conf = dir.join(format!(".nginx.conf.new-{}", std::process::id()));
    let staged = Staged { dir: dir.to_owned(), conf, generation: None, done: false, lock: None };
    replace(&dir.join(&out.matches_file), out.matches_json.as_bytes(), false)?;
    for (rel, bytes) in &out.files {
        replace(&dir.join(rel), bytes, true)?;
    }
    if let Some(g) = dir.join(&out.matches_file).parent() {
        sync_dir(g);
    }
    let _ = std::fs::remove_file(&staged.conf);
    write_new(&staged.conf, out.nginx_conf.as_bytes(), false)?;
    staged.commit()
}

/// `path` with `bytes`, by a rename of a file written and synced beside it (mode 0600 when
/// `private`: keys).
pub fn replace(path: &Path, bytes: &[u8], private: bool) -> std::io::Result<()> {
    let mut p = Pending::create(path, private)?;
    p.writer().write_all(bytes)?;
    p.commit()
}

/// A file's next content, written beside it (`.NAME.new-PID`) as it is made, and put in its
/// place by a rename once [`Pending::commit`] is called: a reader sees the old file or the
/// new one. Dropped before that, the new content is removed and the file stays as it was.
pub struct Pending {
    path: PathBuf,
    tmp: PathBuf,
    file: std::io::BufWriter<std::fs::File>,
    done: bool,
}

impl Pending {
    /// The next content of `path` (mode 0600 when `private`), empty so far.
    pub fn create(path: &Path, private: bool) -> std::io::Result<Pending> {
        let (parent, prefix) = pending_prefix(path);
        std::fs::create_dir_all(parent)?;
        let tmp = parent.join(format!("{prefix}{}", std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        let file = new_file(&tmp, private)?;
        // Held until the process ends: the run is alive (see `remove_abandoned`).
        rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)?;
        let file = std::io::BufWriter::new(file);
        Ok(Pending { path: path.to_owned(), tmp, file, done: false })
    }

    /// The file it replaces.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where the content is written.
    pub fn writer(&mut self) -> &mut dyn std::io::Write {
        &mut self.file
    }

    /// Syncs the content and puts it in place.
    pub fn commit(mut self) -> std::io::Result<()> {
        self.file.flush()?;
        self.file.get_ref().sync_all()?;
        std::fs::rename(&self.tmp, &self.path)?;
        self.done = true;
        Ok(())
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if !self.done {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// `path`'s directory and the prefix of its [`Pending`] contents there (`.NAME.new-`).
fn pending_prefix(path: &Path) -> (&Path, String) {
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    (parent, format!(".{name}.new-"))
}

/// Removes the [`Pending`] contents of `path` that runs killed before their commit left beside
/// it (SIGKILL: no destructor ran): the files `.NAME.new-PID` no process holds locked. A live
/// run holds its own (`flock`, which, unlike a PID, any process sharing the directory sees).
pub fn remove_abandoned(path: &Path) {
    let (parent, prefix) = pending_prefix(path);
    for e in pid_named(parent, &[&prefix]).filter(|e| e.file_type().is_ok_and(|t| t.is_file())) {
        let Ok(f) = std::fs::File::open(e.path()) else { continue };
        if rustix::fs::flock(&f, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_ok() {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// A new file (refused if it exists), written and synced.
fn write_new(path: &Path, bytes: &[u8], private: bool) -> std::io::Result<()> {
    let mut f = new_file(path, private)?;
    f.write_all(bytes)?;
    f.sync_all()
}

/// A new file (refused if it exists), open for reading and writing (mode 0600 when
/// `private`).
fn new_file(path: &Path, private: bool) -> std::io::Result<std::fs::File> {
    let mut o = std::fs::OpenOptions::new();
    o.read(true).write(true).create_new(true);
    #[cfg(unix)]
    if private {
        std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    }
    o.open(path)
}

/// Removes generation `n` of `dir` (none: nothing), with what it holds.
fn remove_generation(dir: &Path, n: Option<u64>) {
    if let Some(n) = n {
        let _ = std::fs::remove_dir_all(dir.join(GENERATIONS).join(n.to_string()));
    }
}

/// Syncs a directory's entries (renames in it) where the platform allows it.
fn sync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

/// The generation numbers in `root`, ascending (other names are ignored).
fn generations(root: &Path) -> std::io::Result<Vec<u64>> {
    let mut out: Vec<u64> = std::fs::read_dir(root)?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    out.sort_unstable();
    Ok(out)
}

/// `dir`'s [`LOCK`], created if missing and locked (`flock`, exclusive): `WouldBlock` while
/// another run holds it, or when the file was removed (a run that created `dir` and wrote
/// nothing) after this one opened it. Released when the [`Lock`] is dropped, or the process dies.
fn lock(dir: &Path) -> std::io::Result<Lock> {
    use std::os::unix::fs::MetadataExt as _;
    let path = dir.join(LOCK);
    let busy = || {
        let held = format!("{} is held by another run; try again when it ends", path.display());
        std::io::Error::new(std::io::ErrorKind::WouldBlock, held)
    };
    let file = std::fs::OpenOptions::new().write(true).create(true).truncate(false).open(&path)?;
    match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => {}
        Err(e) if e == rustix::io::Errno::WOULDBLOCK => return Err(busy()),
        Err(e) => return Err(e.into()),
    }
    let (held, named) = (file.metadata()?, std::fs::metadata(&path).map_err(|_| busy())?);
    if (held.dev(), held.ino()) != (named.dev(), named.ino()) {
        return Err(busy());
    }
    Ok(Lock(file))
}

/// A held [`lock`]: unlocked when dropped, before its file is closed. A child process being
/// started (`nginx -t`, openssl) holds a copy of every descriptor until it execs; closing ours
/// alone would leave the lock held through that copy, and the next run refused.
struct Lock(std::fs::File);

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = rustix::fs::flock(&self.0, rustix::fs::FlockOperation::Unlock);
    }
}

/// What a run killed before its commit left in `dir` (SIGKILL: no destructor ran), removed by
/// the next run, with `dir`'s [`lock`] held (so no live run's): the generations after the one nginx.conf
/// names (`http_matches_reload_report ... N`; with no nginx.conf, every one: none was put in
/// place), which were never read and would otherwise be kept by [`prune`] as "the previous
/// one" in place of the one NGINX may be reading; its staged nginx.conf and the link to
/// the one it replaced (`.nginx.conf.new-PID`, `.nginx.conf.previous-PID`); and its `nginx -t`
/// scratch directory beside `dir` (`.NAME.check-PID`, nginx_check.rs's). Only those
/// names: one listing of `dir`, `dir/generations` and `dir`'s parent, nginx.conf's first 64 KiB.
fn remove_killed(dir: &Path) {
    let parent = dir.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    remove_pid_named(parent, &[&check_prefix(dir)]);
    let named = match std::fs::File::open(dir.join("nginx.conf")) {
        Ok(f) => {
            let mut head = Vec::new();
            let _ = std::io::Read::read_to_end(&mut std::io::Read::take(f, 64 * 1024), &mut head);
            match named_generation(&String::from_utf8_lossy(&head)) {
                Some(n) => Some(n),
                // A configuration without generations: they are not this layout's to judge.
                None => return,
            }
        }
        Err(_) => None,
    };
    let root = dir.join(GENERATIONS);
    for n in generations(&root).unwrap_or_default().into_iter().filter(|n| Some(*n) > named) {
        let _ = std::fs::remove_dir_all(root.join(n.to_string()));
    }
    remove_pid_named(dir, &[".nginx.conf.new-", ".nginx.conf.previous-"]);
}

/// The prefix of the `nginx -t` scratch directories of `dir`'s runs, beside it
/// (`.NAME.check-PID`).
pub fn check_prefix(dir: &Path) -> String {
    let name = dir.file_name().map_or("out".into(), |n| n.to_string_lossy().into_owned());
    format!(".{name}.check-")
}

/// The entries of `dir` named one of `prefixes` then a process id (digits).
fn pid_named<'a>(
    dir: &Path,
    prefixes: &'a [&str],
) -> impl Iterator<Item = std::fs::DirEntry> + use<'a> {
    let entries = std::fs::read_dir(dir).into_iter().flatten().flatten();
    entries.filter(move |e| {
        let name = e.file_name();
        let pid = prefixes.iter().find_map(|p| name.to_str()?.strip_prefix(p));
        pid.is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// Removes the entries of `dir` named one of `prefixes` then a process id (digits).
fn remove_pid_named(dir: &Path, prefixes: &[&str]) {
    for e in pid_named(dir, prefixes) {
        let path = e.path();
        let _ = std::fs::remove_dir_all(&path).or_else(|_| std::fs::remove_file(&path));
    }
}

/// The generation a configuration names (`http_matches_reload_report REPORT N`).
fn named_generation(conf: &str) -> Option<u64> {
    let at = conf.find("http_matches_reload_report ")?;
    let line = conf[at..].split(';').next()?;
    line.split_whitespace().last()?.parse().ok()
}

/// After generation `current` is in place (`None`: a configuration without one): keeps it and
/// the newest complete generation before it (the configuration it replaced, which a reload
/// may be reading), and removes the older ones. Generations after `current` (another run's)
/// are left alone.
fn prune(root: &Path, current: Option<u64>) -> std::io::Result<()> {
    let Ok(all) = generations(root) else { return Ok(()) };
    let before: Vec<u64> = all.into_iter().filter(|n| current.is_none_or(|c| *n < c)).collect();
    let previous =
        before.iter().rev().find(|n| root.join(n.to_string()).join("matches.json").exists());
    for n in &before {
        if Some(n) != previous {
            std::fs::remove_dir_all(root.join(n.to_string()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output(files_dir: Option<&str>, text: &str) -> Output {
        let g = crate::emit_global::Global {
            files_dir: files_dir.map(str::to_owned),
            ..Default::default()
        };
        Output {
            nginx_conf: format!("# {text}\n"),
            tree: Vec::new(),
            matches_json: format!("{{\"{text}\":[]}}\n"),
            matches_file: crate::emit_global::matches_file(&g),
            files: [(crate::emit_global::file(&g, "certs/a.key"), text.as_bytes().to_vec())].into(),
            warnings: Vec::new(),
            dropped: Vec::new(),
            work: Default::default(),
        }
    }

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("hr-output-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn generations_replace_the_configuration_and_keep_the_runtime_files() {
        let dir = scratch("gen");
        for round in 1..=5u64 {
            // NGINX's own files, as a running NGINX has them.
            if round > 1 {
                std::fs::write(dir.join("logs/nginx.pid"), "42\n").unwrap();
                let mut log = std::fs::OpenOptions::new()
                    .append(true)
                    .create(true)
                    .open(dir.join("logs/error.log"))
                    .unwrap();
                writeln!(log, "round {round}").unwrap();
            }
            let r = Reservation::take(&dir).unwrap();
            assert_eq!(r.files_dir(), format!("generations/{round}"));
            let out = output(Some(&r.files_dir()), &format!("r{round}"));
            r.stage(&out).unwrap().commit().unwrap();
            assert_eq!(std::fs::read_to_string(dir.join("nginx.conf")).unwrap(), out.nginx_conf);
            let g = dir.join(format!("generations/{round}"));
            assert_eq!(std::fs::read_to_string(g.join("matches.json")).unwrap(), out.matches_json);
            let want: Vec<String> =
                (round.saturating_sub(1).max(1)..=round).map(|n| n.to_string()).collect();
            assert_eq!(names(&dir.join("generations")), want, "round {round}");
            if round > 1 {
                assert_eq!(std::fs::read_to_string(dir.join("logs/nginx.pid")).unwrap(), "42\n");
                let log = std::fs::read_to_string(dir.join("logs/error.log")).unwrap();
                assert_eq!(log.lines().count() as u64, round - 1, "{log}");
            }
            // Nothing else is left beside nginx.conf (no temporary file).
            assert_eq!(names(&dir), [".lock", "generations", "logs", "nginx.conf", "tmp"]);
        }
        use std::os::unix::fs::PermissionsExt as _;
        let key = dir.join("generations/5/certs/a.key");
        assert_eq!(std::fs::metadata(&key).unwrap().permissions().mode() & 0o777, 0o600);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_abandoned_or_rejected_generation_leaves_the_current_one() {
        let dir = scratch("abandon");
        let r = Reservation::take(&dir).unwrap();
        let first = output(Some(&r.files_dir()), "first");
        r.stage(&first).unwrap().commit().unwrap();
        // A run that fails before it writes: its number is given back.
        drop(Reservation::take(&dir).unwrap());
        assert_eq!(names(&dir.join("generations")), ["1"]);
        // A run refused after staging (nginx -t failed).
        let r = Reservation::take(&dir).unwrap();
        let bad = output(Some(&r.files_dir()), "bad");
        let rejected = r.stage(&bad).unwrap().reject().unwrap();
        assert_eq!(std::fs::read_to_string(rejected).unwrap(), bad.nginx_conf);
        // A run dropped after staging (an error before the check).
        let r = Reservation::take(&dir).unwrap();
        let other = output(Some(&r.files_dir()), "other");
        drop(r.stage(&other).unwrap());
        assert_eq!(std::fs::read_to_string(dir.join("nginx.conf")).unwrap(), first.nginx_conf);
        assert_eq!(names(&dir.join("generations")), ["1"]);
        assert_eq!(
            names(&dir),
            [".lock", "generations", "logs", "nginx.conf", "nginx.conf.rejected", "tmp"]
        );
        // A configuration that does not name the reserved generation is refused.
        let r = Reservation::take(&dir).unwrap();
        assert!(r.stage(&output(Some("generations/1"), "x")).is_err());
        assert_eq!(names(&dir.join("generations")), ["1"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A run killed after staging (no destructor runs: `mem::forget`, as SIGKILL) leaves its
    /// generation and staged nginx.conf; the next run removes them (and another killed run's
    /// staged files), and nothing it did not create. Before, generation 2 stayed: the next run
    /// took 3, and its commit kept 2 (complete) as "the previous one" and removed 1, the one
    /// the running NGINX read.
    #[test]
    fn the_next_run_removes_what_a_killed_run_left() {
        let dir = scratch("killed");
        let report = |n: u64| format!("http_matches_reload_report logs/reload.report {n};");
        let r = Reservation::take(&dir).unwrap();
        let out = output(Some(&r.files_dir()), &report(1));
        r.stage(&out).unwrap().commit().unwrap();
        let r = Reservation::take(&dir).unwrap();
        let out = output(Some(&r.files_dir()), &report(2));
        let mut killed = r.stage(&out).unwrap();
        drop(killed.lock.take()); // The kernel releases a killed process's locks.
        std::mem::forget(killed);
        let theirs = [".nginx.conf.new-x", "generations/keep", "notes"];
        for f in [".nginx.conf.new-99999999", ".nginx.conf.previous-99999998"].iter().chain(&theirs)
        {
            std::fs::write(dir.join(f), "x").unwrap();
        }
        assert_eq!(names(&dir.join("generations")), ["1", "2", "keep"]);
        let r = Reservation::take(&dir).unwrap();
        assert_eq!(r.number(), 2);
        let out = output(Some(&r.files_dir()), &report(2));
        r.stage(&out).unwrap().commit().unwrap();
        assert_eq!(names(&dir.join("generations")), ["1", "2", "keep"]);
        assert_eq!(
            names(&dir),
            [".lock", ".nginx.conf.new-x", "generations", "logs", "nginx.conf", "notes", "tmp"]
        );
        // Without nginx.conf (a first run killed), no generation was put in place.
        std::fs::remove_file(dir.join("nginx.conf")).unwrap();
        drop(Reservation::take(&dir).unwrap());
        assert_eq!(names(&dir.join("generations")), ["keep"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Two runs in one directory: while the first holds it (reserved, staged, committed
    /// undoably), the second is refused and removes none of the first's files (its generation,
    /// staged nginx.conf, `nginx -t` scratch directory); once the first ends, the next takes
    /// the number after it. Before, the second run's cleanup removed them all and took the
    /// first's generation number again (review MED-3).
    #[test]
    fn a_second_run_cannot_remove_a_live_runs_files() {
        let dir = scratch("two-runs");
        let report = |n: u64| format!("http_matches_reload_report logs/reload.report {n};");
        let r = Reservation::take(&dir).unwrap();
        let out = output(Some(&r.files_dir()), &report(1));
        r.stage(&out).unwrap().commit().unwrap();
        let first = Reservation::take(&dir).unwrap();
        let check = dir.with_file_name(format!("{}{}", check_prefix(&dir), std::process::id()));
        std::fs::create_dir_all(&check).unwrap();
        let refused = |what: &str| {
            let e = Reservation::take(&dir).err().unwrap_or_else(|| panic!("{what}: taken"));
            assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock, "{what}: {e}");
            assert!(e.to_string().contains(".lock is held by another run"), "{e}");
            assert!(dir.join("generations/2").is_dir(), "{what}");
            assert!(check.is_dir(), "{what}");
        };
        refused("reserved");
        let out = output(Some(&first.files_dir()), &report(2));
        let staged = first.stage(&out).unwrap();
        refused("staged");
        assert!(staged.conf().exists());
        let committed = staged.commit_undoable().unwrap();
        refused("committed");
        committed.keep();
        std::fs::remove_dir_all(&check).unwrap();
        assert_eq!(Reservation::take(&dir).unwrap().number(), 3);
        assert_eq!(names(&dir.join("generations")), ["1", "2"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A run's lock is released when the run ends even while a copy of its descriptor lives
    /// on (a child process another thread is starting holds one until it execs). Before, the
    /// lock went with the last descriptor: the next run was refused ("held by another run"),
    /// which failed these tests now and then beside the certificate tests' openssl children.
    #[test]
    fn a_lock_is_released_while_a_copy_of_its_descriptor_lives() {
        let dir = scratch("lock-copy");
        let r = Reservation::take(&dir).unwrap();
        let out = output(Some(&r.files_dir()), "");
        let staged = r.stage(&out).unwrap();
        let copy = staged.lock.as_ref().map(|l| l.0.try_clone().unwrap());
        staged.commit().unwrap();
        let next = Reservation::take(&dir);
        assert!(next.is_ok(), "{:?}", next.err());
        drop((next, copy));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A killed run's `nginx -t` scratch directory (`.out.check-PID`, beside the output
    /// directory) is removed by the next run's reservation; other names beside it stay.
    /// Before, each stayed for ever.
    #[test]
    fn a_killed_runs_scratch_directory_is_removed_by_the_next() {
        let parent = scratch("check-killed");
        for d in [".out.check-1234567/x", ".out.check-x", ".other.check-12", "out"] {
            std::fs::create_dir_all(parent.join(d)).unwrap();
        }
        drop(Reservation::take(&parent.join("out")).unwrap());
        assert_eq!(names(&parent), [".other.check-12", ".out.check-x", "out"]);
        std::fs::remove_dir_all(&parent).unwrap();
    }

    #[test]
    fn the_flat_layout_replaces_files_in_place() {
        let dir = scratch("flat");
        write_dir(&dir, &output(None, "one")).unwrap();
        std::fs::write(dir.join("logs/nginx.pid"), "7\n").unwrap();
        let two = output(None, "two");
        write_dir(&dir, &two).unwrap();
        assert_eq!(std::fs::read_to_string(dir.join("logs/nginx.pid")).unwrap(), "7\n");
        assert_eq!(std::fs::read_to_string(dir.join("matches.json")).unwrap(), two.matches_json);
        assert_eq!(names(&dir), ["certs", "logs", "matches.json", "nginx.conf", "tmp"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
