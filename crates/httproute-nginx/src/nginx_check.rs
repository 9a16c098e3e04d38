//! `generate --nginx PATH`: the configuration checked by the NGINX that will run it
//! (`PATH -t` in a scratch directory beside the output directory). The plan decides every
//! outcome, so a refusal is a gap in the model (a bug, logged as such). Two rules, each
//! decided from the plan, never from the written order or the line NGINX names:
//!
//! - a refusal naming a certificate or key file the writer wrote for a Secret: that Secret is
//!   left out ([`drop_secret`]: NGINX names the file, one Secret owns it, and loading it does
//!   not depend on other tenants), at most [`MAX_RETRIES`] times, unless OpenSSL says the
//!   machine failed to open or read it ([`machine_failed`]): then the run fails;
//! - any other: the objects of the newest tenant that are newer than every other tenant's
//!   (Gateway API's conflict order: [`newest_tenant_suffix`]) are left out, once. A line
//!   NGINX names may be an older tenant's whose object a newer tenant's breaks: that older
//!   object is never left out. A second such refusal, one tenant alone, or nothing newer
//!   than the others fails the run.
//!
//! What is left out becomes the plan's refusals (each with NGINX's complaint: the status
//! conditions say it), and the configuration is written and checked again. A run that fails
//! leaves the output directory untouched.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::emit::Options;
use crate::emit::{Output, Tree, certificate_files, emit_with};
use crate::message::escape_message;
use crate::plan::{Left, Plan, Unit};

/// How many Secrets NGINX's refusals may leave out in one run before it gives up (the
/// newest tenant's objects are left out once more at the most).
pub const MAX_RETRIES: usize = 16;

/// What NGINX said when it refused a configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The message of its first `[emerg]` (or `[alert]`, `[crit]`) line, without the
    /// `in FILE:LINE` at its end when FILE is the configuration checked.
    pub message: String,
    /// The line of the configuration checked the message names, if it names one (said in the
    /// warning and the error, for the operator: no rule reads it).
    pub line: Option<usize>,
}

/// The first error of `nginx -t -e stderr`'s output (its stderr) on the configuration file
/// `conf`, as NGINX names it (`-p`'s prefix and `-c`'s name): the message and the line of
/// `conf` it names. A message that names another file, or none, has no line. An error is a
/// line NGINX starts with its level `[emerg]` (or `[alert]`, `[crit]`), in one of the two
/// forms it writes on stderr: `YYYY/MM/DD HH:MM:SS [emerg] PID#TID: ` while its log is stderr
/// (`-e stderr`: while it reads the configuration, whatever its version and build), and
/// `nginx: [emerg] ` once the configuration's own `error_log` is open (binding its sockets).
/// The same words inside another line (a tenant's value echoed in a `[warn]`) are none.
pub fn parse_refusal(stderr: &str, conf: &str) -> Option<Refusal> {
    let message = stderr.lines().find_map(error_message)?.trim_end();
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

/// The message of `line` when NGINX wrote it as an error: after its level, and in the
/// timestamped form after the time and the `PID#TID: ` (which would make the status differ
/// from run to run).
fn error_message(line: &str) -> Option<&str> {
    if let Some(rest) = line.strip_prefix("nginx: ") {
        return after_level(rest);
    }
    let (time, rest) = line.split_at_checked(19)?;
    let shape = time.bytes().zip(b"0000/00/00 00:00:00").all(|(b, s)| match s {
        b'0' => b.is_ascii_digit(),
        s => b == *s,
    });
    let rest = after_level(rest.strip_prefix(' ').filter(|_| shape)?)?;
    let (pid, message) = rest.split_once(": ")?;
    let (p, t) = pid.split_once('#')?;
    (digits(p) && digits(t)).then_some(message)
}

/// `s` after the error level it starts with.
fn after_level(s: &str) -> Option<&str> {
    ["[emerg] ", "[alert] ", "[crit] "].iter().find_map(|l| s.strip_prefix(l))
}

/// Whether `s` is one or more ASCII digits.
fn digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// Runs `nginx -t` on the configuration in `dir` (`nginx.conf` there): `Ok` when it loads,
/// else NGINX's output.
pub fn nginx_test(nginx: &Path, dir: &Path) -> Result<(), String> {
    // `-e stderr` last: a test's fake NGINX reads the prefix as `$4`.
    let out = Command::new(nginx)
        .args(["-t", "-q", "-p"])
        .arg(prefix(dir))
        .args(["-c", "nginx.conf", "-e", "stderr"])
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
    /// The objects left out because NGINX refused the configuration (the newest tenant's
    /// objects newer than every other's: [`newest_tenant_suffix`]), each with why.
    pub refused: Vec<(Unit, String)>,
    /// The TLS Secrets (`namespace/name`) left out because NGINX could not load their files,
    /// each with why (their listeners have the condition: [`drop_secret`]).
    pub refused_secrets: Vec<(String, String)>,
    /// How many times `nginx -t` ran (at most [`MAX_RETRIES`] + 2).
    pub checks: usize,
}

/// Writes the configuration of `plan`, checks it with `nginx` in a scratch directory beside
/// `out_dir` (removed afterwards) and, while NGINX refuses it, leaves objects out of `plan`
/// and tries again (see the module's documentation): a Secret ([`drop_secret`]: its
/// listeners' status says why), or the newest tenant's objects (added to [`Plan::refused`]).
/// `Err` says why the run cannot give a configuration that loads.
pub fn emit_checked(
    plan: &mut Plan,
    opts: &Options,
    tree: Tree,
    nginx: &Path,
    out_dir: &Path,
) -> Result<Checked, String> {
    let scratch = scratch_dir(out_dir)?;
    let mut run = Run { opts, tree, nginx, out_dir, scratch: &scratch, checks: 0 };
    let result = run.check_loop(plan);
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

/// One checked run's fixed parts and its count of `nginx -t` runs.
struct Run<'a> {
    opts: &'a Options,
    tree: Tree,
    nginx: &'a Path,
    out_dir: &'a Path,
    scratch: &'a Path,
    checks: usize,
}

impl Run<'_> {
    fn give_up<T>(&self, why: String) -> Result<T, String> {
        Err(format!(
            "nginx -t refused the configuration: {why}; {} is left as it was",
            self.out_dir.display()
        ))
    }

    /// `nginx -t` on `output`, written in the scratch directory: `None` when it loads; `Err`
    /// when NGINX said nothing read as a refusal.
    fn check(&mut self, output: &Output) -> Result<Option<Refusal>, String> {
        self.checks += 1;
        let _ = std::fs::remove_dir_all(self.scratch);
        crate::output::write_dir(self.scratch, output)
            .map_err(|e| format!("{}: {e}", self.scratch.display()))?;
        link_relative_module(&self.opts.module, self.out_dir, self.scratch);
        let stderr = match nginx_test(self.nginx, self.scratch) {
            Ok(()) => return Ok(None),
            Err(stderr) => stderr,
        };
        let conf = format!("{}nginx.conf", prefix(self.scratch));
        match parse_refusal(&stderr, &conf) {
            Some(r) => Ok(Some(r)),
            None => self.give_up(format!("{:?}", stderr.trim())),
        }
    }

    fn check_loop(&mut self, plan: &mut Plan) -> Result<Checked, String> {
        let mut refused: Vec<(Unit, String)> = Vec::new();
        let mut secrets: Vec<(String, String)> = Vec::new();
        let mut warnings: Vec<String> = Vec::new();
        // Each retry leaves out at least one object more (a Secret left out is not written
        // again; the newest tenant's objects are none left out, and only once), so the loop
        // ends: MAX_RETRIES + 2 checks at the most.
        loop {
            let mut output = emit_with(plan, self.opts, self.tree)?;
            let Some(refusal) = self.check(&output)? else {
                output.warnings.append(&mut warnings);
                let (refused_secrets, checks) = (secrets, self.checks);
                return Ok(Checked { output, refused, refused_secrets, checks });
            };
            let complaint = format!("nginx -t: {}", refusal.message);
            let at = refusal.line.map_or(String::new(), |l| format!(" (nginx.conf line {l})"));
            if machine_failed(&refusal.message) {
                return self.give_up(format!(
                    "{complaint}{at}: the machine, not the Secret (OpenSSL could not open or read \
                     a file the writer wrote): no Secret is left out for it"
                ));
            }
            if let Some(secret) = secret_named(&refusal.message, plan, self.opts) {
                if secrets.len() >= MAX_RETRIES {
                    return self.give_up(format!(
                        "{complaint}{at}; {MAX_RETRIES} Secrets are left out already, the most \
                         one run leaves out"
                    ));
                }
                // A certificate or key file NGINX could not load: the writer knows whose it is.
                let why = escape_message(&complaint);
                warnings.extend(drop_secret(plan, &secret, &why));
                secrets.push((secret, why));
                continue;
            }
            // A gap in the model, decided at once: never an older tenant's object.
            if !refused.is_empty() {
                return self.give_up(format!(
                    "{complaint}{at}: it stays with the newest tenant's objects left out (a gap \
                     in the model, or the run's own)"
                ));
            }
            let units = newest_tenant_suffix(plan);
            if units.is_empty() {
                return self.give_up(format!(
                    "{complaint}{at}: one tenant alone is written, or none newer than every \
                     other (a gap in the model, or the run's own)"
                ));
            }
            warnings.push(format!(
                "gap in the model: {complaint}{at}; {} objects of the newest tenant, newer than \
                 every other tenant's, are left out",
                units.len()
            ));
            let why = escape_message(&format!(
                "{complaint} (a gap in the model: the newest tenant's objects are left out)"
            ));
            refused = units.into_iter().map(|u| (u, why.clone())).collect();
            plan.refused.extend(refused.iter().cloned());
        }
    }
}

/// The objects a refusal that is not a Secret's leaves out: those of the newest object's
/// tenant that are newer than every other tenant's object the plan writes (its servers' routes
/// and listeners, but what [`Plan::refused`] leaves out), in Gateway API's conflict order
/// ([`crate::plan::Ages`]), each as the unit that leaves all of it out (a route; a Gateway's
/// listener). A tenant is a namespace whose routes are written: a Gateway of a namespace with
/// none (the platform's) is no tenant, neither left out nor protecting one. Empty (the run
/// fails) when one tenant alone is written, or when the newest is as old as another tenant's
/// (unknown ages).
fn newest_tenant_suffix(plan: &Plan) -> Vec<Unit> {
    let left = Left::of(&plan.refused);
    let mut objects: std::collections::HashMap<Unit, (usize, String)> = Default::default();
    let written = plan.ports.iter().flat_map(|p| &p.servers).filter(|s| left.written(s));
    for s in written {
        if let Some(l) = &s.listener {
            objects.insert(Unit::Listener(l.clone()), (plan.ages.listener(l), l.namespace.clone()));
        }
        let off = left.at(s);
        let rules = s.rules.iter().filter(|r| !left.rule(&r.id)).map(|r| &r.id.route);
        for r in s.brought_by.iter().chain(rules).filter(|r| !off.route(r)) {
            objects.insert(Unit::Route(r.clone()), (plan.ages.route(r), r.namespace.clone()));
        }
    }
    let tenants: std::collections::HashSet<String> = objects
        .keys()
        .filter_map(|u| match u {
            Unit::Route(r) => Some(r.namespace.clone()),
            _ => None,
        })
        .collect();
    objects.retain(|_, (_, ns)| tenants.contains(ns));
    let Some((_, tenant)) = objects.values().max().cloned() else { return Vec::new() };
    // With one tenant written there is no one to protect: leaving out all of it would install
    // an empty configuration, so the run fails and the current one stays.
    let Some(older) = objects.values().filter(|(_, ns)| *ns != tenant).map(|(age, _)| *age).max()
    else {
        return Vec::new();
    };
    let mut suffix: Vec<(usize, Unit)> = objects
        .into_iter()
        .filter(|(_, (age, ns))| *ns == tenant && *age > older)
        .map(|(unit, (age, _))| (age, unit))
        .collect();
    suffix.sort_by_key(|(age, unit)| (std::cmp::Reverse(*age), format!("{unit:?}")));
    suffix.into_iter().map(|(_, unit)| unit).collect()
}

/// The tenant Secret whose certificate or key file NGINX could not load, by `message`: one of
/// NGINX's certificate-loading complaints (`cannot load certificate "PATH": ...`,
/// `SSL_CTX_use_PrivateKey("PATH") failed`, ...; `ngx_event_openssl.c`), whose quoted PATH is a
/// Secret's file whole (`PREFIX/.../certs/NS_NAME.crt`). Any other message names no Secret, even
/// when a tenant's value echoed in it looks like one's path. Files given with `--certificate`
/// are the operator's: never a tenant's.
fn secret_named(message: &str, plan: &Plan, opts: &Options) -> Option<String> {
    let (path, _) = file_not_loaded(message)?;
    let is = |f: &String| {
        path.strip_suffix(f.as_str()).is_some_and(|d| d.is_empty() || d.ends_with('/'))
    };
    plan.secrets
        .keys()
        .filter(|s| !opts.certificates.contains_key(*s))
        .find(|s| {
            let (crt, key) = certificate_files(opts, s);
            is(&crt) || is(&key)
        })
        .cloned()
}

/// Whether NGINX's certificate-loading complaint `message` blames the machine, not the file's
/// bytes: OpenSSL's `system library` error (opening or reading the file failed: too many open
/// files, no memory, I/O) or a `malloc failure`, in the `(SSL: ...)` after the quoted path.
/// No tenant writes that text: the path is the writer's own file, of a Secret's DNS-label
/// name. Such a refusal is no Secret's, and the run fails (review 13).
fn machine_failed(message: &str) -> bool {
    file_not_loaded(message).is_some_and(|(_, after)| {
        after.split_once("(SSL: ").is_some_and(|(_, ssl)| {
            ssl.contains(":system library:") || ssl.contains(":malloc failure")
        })
    })
}

/// The file NGINX's certificate-loading complaint `message` names, whole, and the text after
/// it: the quoted PATH of `cannot load certificate "PATH": ...`,
/// `SSL_CTX_use_PrivateKey("PATH") failed` and the like (`ngx_event_openssl.c`); `None` for any
/// other message.
fn file_not_loaded(message: &str) -> Option<(&str, &str)> {
    const LOADING: [&str; 9] = [
        "cannot load certificate \"",
        "cannot load certificate key \"",
        "SSL_CTX_use_certificate(\"",
        "SSL_CTX_set0_chain(\"",
        "SSL_CTX_add_extra_chain_cert(\"",
        "SSL_CTX_use_PrivateKey(\"",
        "SSL_use_certificate(\"",
        "SSL_set0_chain(\"",
        "SSL_use_PrivateKey(\"",
    ];
    let quoted = LOADING.iter().find_map(|p| message.strip_prefix(p))?;
    quoted.split_once('"')
}

/// Leaves the Secret `secret` (`namespace/name`) out of `plan` because NGINX could not load
/// it (`why`), as the certificate check leaves out one it refuses: its files are not written,
/// the servers that named it lose it (a server left with none refuses the TLS handshake), and
/// each listener of those servers gets `ResolvedRefs: False, InvalidCertificateRef` (and
/// `Programmed: False` when it has no certificate left). The warnings to print.
pub fn drop_secret(plan: &mut Plan, secret: &str, why: &str) -> Vec<String> {
    use crate::plan::{Condition, ConditionType, ListenerId, Reason};
    plan.secrets.remove(secret);
    // The listeners of the servers that named it, and whether each keeps a certificate.
    let mut listeners: Vec<(ListenerId, bool)> = Vec::new();
    for server in plan.ports.iter_mut().flat_map(|p| p.servers.iter_mut()) {
        if !server.certificates.iter().any(|c| c == secret) {
            continue;
        }
        server.certificates.retain(|c| c != secret);
        let Some(l) = &server.listener else { continue };
        let left = !server.certificates.is_empty();
        match listeners.iter_mut().find(|(id, _)| id == l) {
            Some((_, any)) => *any |= left,
            None => listeners.push((l.clone(), left)),
        }
    }
    plan.remerge();
    let refs = format!("tls.certificateRefs: Secret {secret}: {why}");
    let mut warnings = Vec::new();
    for (id, left) in listeners {
        warnings.push(format!("listener {id}: {refs}; ignored"));
        if !left {
            warnings.push(format!(
                "listener {id}: no usable certificate; its hosts refuse the TLS handshake"
            ));
        }
        let Some(st) = plan.status.listeners.iter_mut().find(|l| l.id == id) else { continue };
        for c in &mut st.conditions {
            if c.kind == ConditionType::ResolvedRefs && c.ok {
                *c = Condition::no(c.kind, Reason::InvalidCertificateRef, refs.clone());
            } else if c.kind == ConditionType::Programmed && c.ok && !left {
                *c = Condition::no(
                    c.kind,
                    Reason::Invalid,
                    "no usable certificate: its hosts refuse the TLS handshake".to_owned(),
                );
            }
        }
    }
    warnings
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
    // A killed run's are removed by the next run, with the directory locked
    // (`output::Reservation::take`).
    let ours = crate::output::check_prefix(out_dir);
    Ok(parent.join(format!("{ours}{}", std::process::id())))
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

    /// A line as `nginx -t -e stderr` writes it.
    fn said(level: &str, message: &str) -> String {
        format!("2026/12/07 10:24:05 [{level}] 13416#13416: {message}\n")
    }

    #[test]
    fn refusals_are_read_with_their_line() {
        let conf = "/tmp/d/nginx.conf";
        let out = said("warn", "something else in /tmp/d/nginx.conf:3")
            + &said("emerg", "duplicate location \"/_x/0\" in /tmp/d/nginx.conf:37")
            + "nginx: configuration file /tmp/d/nginx.conf test failed\n";
        let r = parse_refusal(&out, conf).unwrap();
        assert_eq!(r, Refusal { message: "duplicate location \"/_x/0\"".into(), line: Some(37) });
        // " in " and ":" in the message and in the path.
        let conf = "/t/x in y:1/nginx.conf";
        let r = parse_refusal(&said("crit", "bad \"a in b:4\" in /t/x in y:1/nginx.conf:5"), conf);
        assert_eq!(r, Some(Refusal { message: "bad \"a in b:4\"".into(), line: Some(5) }));
        // Another file's line is not one of the configuration's.
        let r = parse_refusal(&said("alert", "bad in /etc/other.conf:5"), conf).unwrap();
        assert_eq!(r.line, None);
        let hash = "could not build server_names_hash, you should increase \
                    server_names_hash_bucket_size: 64";
        let r = parse_refusal(&said("emerg", hash), conf).unwrap();
        assert_eq!(r, Refusal { message: hash.into(), line: None });
        assert_eq!(parse_refusal(&said("warn", "x in /t/x in y:1/nginx.conf:1"), conf), None);
        // Only NGINX's own shape is an error: its time, level and `PID#TID: `.
        // The form NGINX writes once the configuration's own error log is open.
        let r = parse_refusal("nginx: [emerg] bind() to 10.0.0.1:80 failed (99: x)\n", conf);
        assert_eq!(
            r,
            Some(Refusal { message: "bind() to 10.0.0.1:80 failed (99: x)".into(), line: None })
        );
        for not in [
            "nginx: [warn] bad in /t/x in y:1/nginx.conf:3\n",
            "nginx:  [emerg] bad\n",
            "2026/12/07 10:24:05 [emerg] bad\n",
            "2026/12/07 10:24:05 [emerg] 12#a: bad\n",
            "2026-12-07 10:24:05 [emerg] 1#1: bad\n",
            " 2026/12/07 10:24:05 [emerg] 1#1: bad\n",
            "2026/12/07 10:24:0",
            "",
        ] {
            assert_eq!(parse_refusal(not, conf), None, "{not:?}");
        }
        // Review 13: an error's words inside another line (a tenant's value NGINX echoes in a
        // warning) are not the error; the line NGINX starts with its level is.
        let echoed = said("emerg", "cannot load certificate \"/p/certs/v_c.crt\": a");
        let out = said("warn", &format!("x \"{}\"", echoed.trim_end()))
            + &said("emerg", "bad in /t/x in y:1/nginx.conf:3");
        let r = parse_refusal(&out, conf);
        assert_eq!(r, Some(Refusal { message: "bad".into(), line: Some(3) }));
    }

    /// Review 12's M2: only NGINX's certificate-loading complaints name a file, and their
    /// quoted path whole; a tenant's value NGINX echoes in another message names none.
    #[test]
    fn only_a_certificate_loading_complaint_names_a_file() {
        let f = "/p/generations/3/certs/t_c.crt";
        let named = |m: &str| file_not_loaded(m).map(|(path, _)| path.to_owned());
        for m in [
            format!("cannot load certificate \"{f}\": PEM_read_bio_X509_AUX() failed"),
            format!("cannot load certificate key \"{f}\": PEM_read_bio_PrivateKey() failed"),
            format!("SSL_CTX_use_certificate(\"{f}\") failed (SSL: error:0A00018F:ca md too weak)"),
            format!("SSL_CTX_use_PrivateKey(\"{f}\") failed"),
        ] {
            assert_eq!(named(&m).as_deref(), Some(f), "{m}");
        }
        // The same path echoed by a message that loads no certificate (a tenant's hostname,
        // path or header value quoted back), or not first: no file.
        for m in [
            format!("invalid server name \"{f}\""),
            format!("unknown directive \"x\" near cannot load certificate \"{f}\""),
            format!("duplicate location \"/{f}\""),
            format!("SSL_CTX_use_certificate(\"{f}"),
        ] {
            assert_eq!(named(&m), None, "{m}");
        }
    }

    /// OpenSSL's own reason after the quoted path tells the machine's failure (as NGINX 1.28
    /// with OpenSSL 3 prints it under `ulimit -n 5`) from the file's; the same words anywhere
    /// else (a message that loads no certificate) do not.
    #[test]
    fn a_system_library_error_loading_a_certificate_is_the_machine_s() {
        let f = "/p/generations/3/certs/t_c.crt";
        let emfile = format!(
            "cannot load certificate \"{f}\": BIO_new_file() failed (SSL: error:80000018:system \
             library::Too many open files:calling fopen({f}, r) error:10080002:BIO routines::system lib)"
        );
        let malloc = format!(
            "cannot load certificate key \"{f}\": PEM_read_bio_PrivateKey() failed (SSL: \
             error:0A0C0100:SSL routines::malloc failure)"
        );
        assert!(machine_failed(&emfile) && machine_failed(&malloc));
        for m in [
            format!(
                "cannot load certificate \"{f}\": PEM_read_bio_X509_AUX() failed (SSL: error:0480006C:PEM routines::no start line)"
            ),
            format!(
                "SSL_CTX_use_certificate(\"{f}\") failed (SSL: error:0A00018F:SSL routines::ee key too small)"
            ),
            format!("invalid server name \"{f} (SSL: error:80000018:system library::\""),
        ] {
            assert!(!machine_failed(&m), "{m}");
        }
    }
}
