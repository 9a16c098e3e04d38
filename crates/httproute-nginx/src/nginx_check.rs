//! `generate --nginx PATH`: the configuration checked by the NGINX that will run it.
//!
//! The output is written to a scratch directory beside the output directory and tested with
//! `PATH -t -p SCRATCH/ -c nginx.conf` (the output's own `load_module` line loads the module).
//! When NGINX refuses it, the line it names (`in FILE:LINE`) is mapped to the directive written
//! there and to the tenant object that directive was written for ([`Output::unit_at_line`],
//! from the writer's provenance); that object is left out with NGINX's complaint as its reason
//! ([`emit_dropping`]: a rule's `PartiallyInvalid`, a match's) and the configuration is
//! written and tested again. Each retry leaves out one more object than the one before, and
//! there are at most [`MAX_RETRIES`], so the loop ends. A refusal NGINX names no line for, a
//! line of the run's own (options, the generator's text), an object already left out, or the
//! bound reached is an error of the run: the output directory is not touched.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::emit::Options;
use crate::emit::{Output, Tree, Unit, emit_dropping};
use crate::message::escape_message;
use crate::plan::Plan;

/// How many objects NGINX's refusals may leave out in one run before it gives up.
pub const MAX_RETRIES: usize = 16;

/// What NGINX said when it refused a configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The message of its first `[emerg]` (or `[alert]`, `[crit]`) line, without the
    /// `in FILE:LINE` at its end when FILE is the configuration checked.
    pub message: String,
    /// The line of the configuration checked the message names, if it names one.
    pub line: Option<usize>,
}

/// The first error of `nginx -t`'s output (its stderr) on the configuration file `conf`, as
/// NGINX names it (`-p`'s prefix and `-c`'s name): the message and the line of `conf` it
/// names. A message that names another file, or none, has no line.
pub fn parse_refusal(stderr: &str, conf: &str) -> Option<Refusal> {
    let line = stderr
        .lines()
        .find(|l| ["[emerg]", "[alert]", "[crit]"].iter().any(|level| l.contains(level)))?;
    let message = line.split_once("] ").map_or(line, |(_, m)| m).trim_end();
    let at = message.rsplit_once(':').and_then(|(before, n)| {
        let n: usize = n.parse().ok()?;
        let text = before.strip_suffix(conf)?.strip_suffix(" in ")?;
        Some((text, n))
    });
    Some(match at {
        Some((text, n)) => Refusal { message: text.to_owned(), line: Some(n) },
        None => Refusal { message: message.to_owned(), line: None },
    })
}

/// Runs `nginx -t` on the configuration in `dir` (`nginx.conf` there): `Ok` when it loads,
/// else NGINX's output.
pub fn nginx_test(nginx: &Path, dir: &Path) -> Result<(), String> {
    let out = Command::new(nginx)
        .arg("-t")
        .arg("-q")
        .arg("-p")
        .arg(prefix(dir))
        .arg("-c")
        .arg("nginx.conf")
        .output()
        .map_err(|e| format!("--nginx {}: {e}", nginx.display()))?;
    if out.status.success() {
        Ok(())
    } else {
        let mut text = String::from_utf8_lossy(&out.stderr).into_owned();
        if text.trim().is_empty() {
            text = format!("nginx -t exited with {} and said nothing", out.status);
        }
        Err(text)
    }
}

/// What a checked run made: the output that loads and what NGINX's refusals left out.
pub struct Checked {
    pub output: Output,
    /// The objects left out because NGINX refused a line of theirs, each with why.
    pub refused: Vec<(Unit, String)>,
}

/// Writes the configuration of `plan`, checks it with `nginx` in a scratch directory beside
/// `out_dir` (removed afterwards) and, while NGINX refuses a tenant object's line, leaves that
/// object out and tries again (see the module's documentation). `Err` says why the run cannot
/// give a configuration that loads.
pub fn emit_checked(
    plan: &Plan,
    opts: &Options,
    tree: Tree,
    nginx: &Path,
    out_dir: &Path,
) -> Result<Checked, String> {
    let scratch = scratch_dir(out_dir)?;
    let result = check_loop(plan, opts, tree, nginx, out_dir, &scratch);
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

fn check_loop(
    plan: &Plan,
    opts: &Options,
    tree: Tree,
    nginx: &Path,
    out_dir: &Path,
    scratch: &Path,
) -> Result<Checked, String> {
    let mut drops: Vec<(Unit, String)> = Vec::new();
    loop {
        let output = emit_dropping(plan, opts, tree, &drops)?;
        let _ = std::fs::remove_dir_all(scratch);
        crate::output::write_dir(scratch, &output)
            .map_err(|e| format!("{}: {e}", scratch.display()))?;
        link_relative_module(&opts.module, out_dir, scratch);
        let stderr = match nginx_test(nginx, scratch) {
            Ok(()) => return Ok(Checked { output, refused: drops }),
            Err(stderr) => stderr,
        };
        let give_up = |why: String| {
            Err(format!(
                "nginx -t refused the configuration: {why}; {} is left as it was",
                out_dir.display()
            ))
        };
        let conf = format!("{}nginx.conf", prefix(scratch));
        let Some(refusal) = parse_refusal(&stderr, &conf) else {
            return give_up(format!("{:?}", stderr.trim()));
        };
        let complaint = format!("nginx -t: {}", refusal.message);
        let Some(line) = refusal.line else {
            return give_up(format!("{complaint} (no line of nginx.conf named)"));
        };
        let Some(unit) = output.unit_at_line(line) else {
            return give_up(format!("{complaint} (nginx.conf line {line}, the run's own)"));
        };
        if drops.iter().any(|(u, _)| u == unit) {
            return give_up(format!(
                "{complaint} (nginx.conf line {line}, of an object already left out)"
            ));
        }
        if drops.len() >= MAX_RETRIES {
            return give_up(format!(
                "{complaint} (nginx.conf line {line}); {MAX_RETRIES} objects are left out \
                 already, the most one run leaves out"
            ));
        }
        drops.push((unit.clone(), escape_message(&complaint)));
    }
}

/// The `-p` NGINX is given for `dir`.
fn prefix(dir: &Path) -> String {
    format!("{}/", dir.display())
}

/// `.NAME.check-PID` beside `out_dir`.
fn scratch_dir(out_dir: &Path) -> Result<PathBuf, String> {
    let parent = out_dir.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    let parent = std::fs::canonicalize(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    let name = out_dir.file_name().map_or("out".into(), |n| n.to_string_lossy().into_owned());
    Ok(parent.join(format!(".{name}.check-{}", std::process::id())))
}

/// A relative `--module` is looked up under the prefix: in the scratch directory it is a
/// link to the one under the output directory, where NGINX will look for it.
fn link_relative_module(module: &str, out_dir: &Path, scratch: &Path) {
    let m = Path::new(module);
    if m.is_absolute() {
        return;
    }
    let Ok(target) = std::fs::canonicalize(out_dir.join(m)) else { return };
    let link = scratch.join(m);
    if let Some(d) = link.parent() {
        let _ = std::fs::create_dir_all(d);
    }
    #[cfg(unix)]
    let _ = std::os::unix::fs::symlink(target, link);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_read_with_their_line() {
        let conf = "/tmp/d/nginx.conf";
        let r = parse_refusal(
            "nginx: [warn] something else in /tmp/d/nginx.conf:3\nnginx: [emerg] duplicate \
             location \"/_x/0\" in /tmp/d/nginx.conf:37\nnginx: configuration file \
             /tmp/d/nginx.conf test failed\n",
            conf,
        )
        .unwrap();
        assert_eq!(r, Refusal { message: "duplicate location \"/_x/0\"".into(), line: Some(37) });
        // " in " and ":" in the message and in the path.
        let conf = "/t/x in y:1/nginx.conf";
        let r = parse_refusal("nginx: [emerg] bad \"a in b:4\" in /t/x in y:1/nginx.conf:5", conf);
        assert_eq!(r, Some(Refusal { message: "bad \"a in b:4\"".into(), line: Some(5) }));
        // Another file's line is not one of the configuration's.
        let r = parse_refusal("nginx: [emerg] bad in /etc/other.conf:5", conf).unwrap();
        assert_eq!(r.line, None);
        let r = parse_refusal(
            "nginx: [emerg] could not build server_names_hash, you should increase \
             server_names_hash_bucket_size: 64\n",
            conf,
        )
        .unwrap();
        assert_eq!(r.line, None);
        assert!(r.message.starts_with("could not build server_names_hash"), "{r:?}");
        assert_eq!(parse_refusal("nginx: [warn] x in /t/x in y:1/nginx.conf:1\n", conf), None);
    }
}
