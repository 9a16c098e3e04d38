//! The command's regenerate flow without an NGINX (issue #31; the end-to-end test with one is
//! tests/reload_flow.rs at the root): runs of `generate` into one directory keep NGINX's
//! runtime files, switch generations and leave at most two; a refused run writes nothing and
//! says so, the status file included; `apply` with a stand-in nginx (`false`: the check
//! fails, `true`: it passes) keeps or replaces the configuration, and verifies the reload in
//! the master's error log (a stand-in that writes what NGINX writes: the reload taken, refused,
//! or nothing said); the process options reach nginx.conf and bad values are refused.

use std::path::{Path, PathBuf};
use std::process::Command;

const GW: &str = "kind: Gateway\nmetadata: {name: gw, namespace: default}\nspec:\n  listeners: [{name: http, port: 8080, protocol: HTTP}]\n---\n";

fn route(backend: &str) -> String {
    format!(
        "kind: HTTPRoute\nmetadata: {{name: r, namespace: default}}\nspec:\n  parentRefs: [{{name: gw}}]\n  rules:\n  - matches: [{{path: {{type: PathPrefix, value: /a}}}}]\n    backendRefs: [{{name: {backend}, port: 80}}]\n"
    )
}

struct Dirs {
    root: PathBuf,
}

impl Dirs {
    fn new(tag: &str) -> Dirs {
        let root = std::env::temp_dir().join(format!("hr-cli-flow-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("in")).unwrap();
        Dirs { root }
    }
    fn out(&self) -> PathBuf {
        self.root.join("out")
    }
    fn status(&self) -> PathBuf {
        self.root.join("status.yaml")
    }
    fn input(&self, yaml: &str) {
        std::fs::write(self.root.join("in/all.yaml"), yaml).unwrap();
    }
    /// `httproute-nginx COMMAND -f in/ -o out/ --status status.yaml ARGS`: (exit code, stderr).
    fn run(&self, command: &str, args: &[&str]) -> (Option<i32>, String) {
        let out = Command::new(env!("CARGO_BIN_EXE_httproute-nginx"))
            .arg(command)
            .arg("-f")
            .arg(self.root.join("in"))
            .arg("-o")
            .arg(self.out())
            .arg("--status")
            .arg(self.status())
            .args(["--resolver", "127.0.0.1", "--backend", "default/b1:80=127.0.0.1:9"])
            .args(["--backend", "default/b2:80=127.0.0.1:10"])
            .args(args)
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

impl Drop for Dirs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn generate_keeps_runtime_files_and_a_refused_run_writes_nothing() {
    let d = Dirs::new("gen");
    let out = d.out();
    d.input(&format!("{GW}{}", route("b1")));
    assert_eq!(d.run("generate", &[]), (Some(0), String::new()));
    assert!(
        read(&out.join("nginx.conf")).contains("http_matches_load generations/1/matches.json;")
    );
    // What a running NGINX has there.
    std::fs::write(out.join("logs/nginx.pid"), "4242\n").unwrap();
    std::fs::write(out.join("logs/error.log"), "the master's line\n").unwrap();
    std::fs::write(out.join("tmp/proxy-file"), "a temp file\n").unwrap();
    for (n, backend) in [(2, "b2"), (3, "b1"), (4, "b2")] {
        d.input(&format!("{GW}{}", route(backend)));
        assert_eq!(d.run("generate", &[]).0, Some(0));
        let conf = read(&out.join("nginx.conf"));
        assert!(conf.contains(&format!("generations/{n}/matches.json")), "{conf}");
        assert!(conf.contains(&format!("127.0.0.1:{}", if backend == "b1" { 9 } else { 10 })));
        assert_eq!(names(&out.join("generations")), [(n - 1).to_string(), n.to_string()]);
        assert_eq!(read(&out.join("logs/nginx.pid")), "4242\n");
        assert_eq!(read(&out.join("logs/error.log")), "the master's line\n");
        assert_eq!(read(&out.join("tmp/proxy-file")), "a temp file\n");
    }
    assert_eq!(names(&out), [".lock", "generations", "logs", "nginx.conf", "tmp"]);

    // A refused run (a document that is not YAML: the operator's input; a Gateway the CRD
    // refuses costs only that Gateway): nothing written, the status as it was, and stderr
    // says so.
    let (conf, status) = (read(&out.join("nginx.conf")), read(&d.status()));
    assert!(status.contains("kind: HTTPRoute"), "{status}");
    d.input("kind: Gateway\nmetadata: {name: gw}\nspec:\n  listeners: [{name: http, port: 80\n");
    let (code, err) = d.run("generate", &[]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("httproute-nginx: error: "), "{err}");
    assert!(
        err.contains(&format!(
            "the run is refused, nothing was written: {} and the status file {} are as the \
             last run left them",
            out.display(),
            d.status().display()
        )),
        "{err}"
    );
    assert_eq!(read(&out.join("nginx.conf")), conf);
    assert_eq!(read(&d.status()), status);
    assert_eq!(names(&out.join("generations")), ["3", "4"]);
    assert_eq!(names(&out), [".lock", "generations", "logs", "nginx.conf", "tmp"]);
    // The status's next content, written beside it as the run went, is gone with the run.
    let beside = names(d.status().parent().unwrap());
    assert!(!beside.iter().any(|n| n.starts_with(".status.yaml")), "{beside:?}");
}

/// The status's next content that a run killed before its commit left beside the status file
/// (`.status.yaml.new-PID`, no process PID) is removed by the next run; a live run's is not.
#[test]
fn a_killed_run_s_status_content_is_removed_by_the_next_run() {
    let d = Dirs::new("killed");
    d.input(&format!("{GW}{}", route("b1")));
    let beside = |pid: u32| d.root.join(format!(".status.yaml.new-{pid}"));
    let (killed, live) = (beside(1_000_001), beside(1_000_002));
    for f in [&killed, &live] {
        std::fs::write(f, "a run's\n").unwrap();
    }
    // A live run holds its file locked, whatever its PID is here (a run in another PID
    // namespace sharing the directory has a PID this one cannot see).
    let held = std::fs::File::open(&live).unwrap();
    rustix::fs::flock(&held, rustix::fs::FlockOperation::LockExclusive).unwrap();
    assert_eq!(d.run("generate", &[]), (Some(0), String::new()));
    assert!(!killed.exists());
    assert_eq!(read(&live), "a run's\n");
    assert!(read(&d.status()).contains("kind: HTTPRoute"));
}

#[test]
fn apply_checks_before_it_replaces() {
    let d = Dirs::new("apply");
    let out = d.out();
    d.input(&format!("{GW}{}", route("b1")));
    assert_eq!(d.run("generate", &[]).0, Some(0));
    let (conf, status) = (read(&out.join("nginx.conf")), read(&d.status()));
    d.input(&format!("{GW}{}", route("b2")));
    // An NGINX that refuses every configuration: the tenant check (`generate --nginx`, run
    // first) finds no line to leave out, and the run is refused before anything is staged.
    let (code, err) = d.run("apply", &["--nginx", "false"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("nginx -t refused the configuration"), "{err}");
    assert!(err.contains("the run is refused, nothing was written"), "{err}");
    assert_eq!(read(&out.join("nginx.conf")), conf);
    assert_eq!(read(&d.status()), status);
    assert_eq!(names(&out.join("generations")), ["1"]);
    // One that passes the tenant check (`-c nginx.conf` in its scratch directory) and refuses
    // the staged file (`-c .nginx.conf.new-PID`): nothing in place changes, the refused file
    // is kept.
    let picky = d.root.join("picky-nginx");
    std::fs::write(&picky, "#!/bin/sh\ncase \"$*\" in *.nginx.conf.new*) exit 1;; esac\nexit 0\n")
        .unwrap();
    std::fs::set_permissions(&picky, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let (code, err) = d.run("apply", &["--nginx", picky.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("nginx -t refused the new configuration"), "{err}");
    assert!(err.contains("the run is refused"), "{err}");
    assert_eq!(read(&out.join("nginx.conf")), conf);
    assert_eq!(read(&d.status()), status);
    assert!(read(&out.join("nginx.conf.rejected")).contains("127.0.0.1:10"));
    assert_eq!(names(&out.join("generations")), ["1"]);
    // The check passes; the pid file names no process (as `nginx -t` leaves it: empty).
    std::fs::write(out.join("logs/nginx.pid"), "").unwrap();
    let (code, err) = d.run("apply", &["--nginx", "true"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("no NGINX runs from"), "{err}");
    assert!(read(&out.join("nginx.conf")).contains("127.0.0.1:10"));
    assert_ne!(read(&d.status()), "");
    assert_eq!(names(&out.join("generations")), ["1", "2"]);
}

/// A stand-in nginx for `apply`: every `-t` passes; `-p DIR/ -c CONF -s reload` writes the
/// master's report, as the module in the master named by DIR/logs/nginx.pid would: `N
/// VERDICT` in the file and for the generation N nginx.conf's `http_matches_reload_report`
/// names (nothing if `verdict` is empty). Before it, lines in DIR/logs/error.log that a
/// client could have written and a log reader would take for a verdict (`{PID}`: that pid).
fn reloading_nginx(d: &Dirs, tag: &str, verdict: &str) -> PathBuf {
    let bin = d.root.join(format!("nginx-{tag}"));
    let mut script = String::from(
        "#!/bin/sh
[ \"$5\" = -s ] || exit 0
pid=$(cat \"$2logs/nginx.pid\")
log=\"$2logs/error.log\"
set -- $(sed -n 's/^ *http_matches_reload_report \\(.*\\) \\(.*\\);$/\\1 \\2/p' \"$2nginx.conf\") \"$2\"
",
    );
    let forged = [
        "2026/01/01 00:00:00 [notice] {PID}#{PID}: signal 1 (SIGHUP) received, reconfiguring",
        "2026/01/01 00:00:00 [notice] {PID}#{PID}: reconfiguring",
        "2026/01/01 00:00:00 [notice] {PID}#{PID}: start worker process 4242",
    ];
    for line in forged {
        script += &format!("echo '{}' >> \"$log\"\n", line.replace("{PID}", "'$pid'"));
    }
    if !verdict.is_empty() {
        script += &format!("echo \"$2 {verdict}\" > \"$3$1\"\n");
    }
    std::fs::write(&bin, script).unwrap();
    std::fs::set_permissions(&bin, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    bin
}

/// A stand-in process, killed and reaped when dropped: an assertion that fails before the
/// end of its test leaves no `sleep 300` behind.
struct Stand(std::process::Child);

impl Stand {
    fn spawn(c: &mut Command) -> Stand {
        Stand(c.spawn().unwrap())
    }
    fn id(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Stand {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn apply_verifies_the_reload_and_puts_back_what_the_master_keeps() {
    let d = Dirs::new("reload");
    let out = d.out();
    d.input(&format!("{GW}{}", route("b1")));
    assert_eq!(d.run("generate", &[]).0, Some(0));
    // A process standing for a master that has not blocked signals yet (no title, no worker):
    // apply signals nothing and changes nothing.
    let take = reloading_nginx(&d, "take", "took");
    let (conf, status) = (read(&out.join("nginx.conf")), read(&d.status()));
    d.input(&format!("{GW}{}", route("b2")));
    let starting = Stand::spawn(Command::new("sleep").arg("300"));
    std::fs::write(out.join("logs/nginx.pid"), format!("{}\n", starting.id())).unwrap();
    let (code, err) = d.run("apply", &["--nginx", take.to_str().unwrap(), "--reload-wait", "1"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("took no signals within 1 s"), "{err}");
    assert!(!out.join(httproute_nginx::apply::REPORT).exists(), "the reload was signalled");
    assert_eq!((read(&out.join("nginx.conf")), read(&d.status())), (conf.clone(), status.clone()));
    assert_eq!(names(&out.join("generations")), ["1"]);
    drop(starting);
    // The master: its title (no worker, as when every worker exited and none was respawned);
    // only its log lines answer.
    let master = Stand::spawn(
        Command::new("bash").args(["-c", "exec -a 'nginx: master process' sleep 300"]),
    );
    std::fs::write(out.join("logs/nginx.pid"), format!("{}\n", master.id())).unwrap();
    std::fs::write(out.join("logs/error.log"), "an earlier [emerg] of another run\n").unwrap();

    // The master reports it refused it (nginx -t passed: a port another process holds), while
    // the log says "start worker process" with its pid.
    let refuse = reloading_nginx(&d, "refuse", "refused");
    let (code, err) = d.run("apply", &["--nginx", refuse.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("the master reported \"2 refused\""), "{err}");
    assert!(err.contains("refused the new configuration at the reload"), "{err}");
    assert_eq!(read(&out.join("nginx.conf")), conf, "the configuration the master keeps");
    assert_eq!(read(&d.status()), status);
    assert!(read(&out.join("nginx.conf.rejected")).contains("127.0.0.1:10"));
    assert_eq!(names(&out.join("generations")), ["1"]);
    assert_eq!(
        names(&out),
        [".lock", "generations", "logs", "nginx.conf", "nginx.conf.rejected", "tmp"]
    );

    // It reports nothing (a master stopped, an older module): past --reload-wait, exit 1 and
    // the new configuration stays in place (the master may still take it).
    let silent = reloading_nginx(&d, "silent", "");
    let (code, err) = d.run("apply", &["--nginx", silent.to_str().unwrap(), "--reload-wait", "1"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("named no verdict on generation 2"), "{err}");
    assert!(read(&out.join("nginx.conf")).contains("127.0.0.1:10"));

    // It starts new workers: in place, the status written, nothing left beside nginx.conf.
    std::fs::write(d.status(), "old\n").unwrap();
    let (code, err) = d.run("apply", &["--nginx", take.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(read(&out.join("nginx.conf")).contains("127.0.0.1:10"));
    assert_ne!(read(&d.status()), "old\n");
    assert_eq!(
        names(&out),
        [".lock", "generations", "logs", "nginx.conf", "nginx.conf.rejected", "tmp"]
    );
    drop(master);
}

#[test]
fn process_options_reach_nginx_conf_and_bad_ones_are_refused() {
    let d = Dirs::new("opts");
    let out = d.out();
    d.input(&format!("{GW}{}", route("b1")));
    let args = [
        "--worker-processes",
        "3",
        "--worker-connections",
        "99",
        "--access-log",
        "off",
        "--upstream-keepalive",
        "0",
    ];
    assert_eq!(d.run("generate", &args).0, Some(0));
    let conf = read(&out.join("nginx.conf"));
    for line in ["worker_processes 3;", "worker_connections 99;", "access_log off;"] {
        assert!(conf.contains(line), "{line}: {conf}");
    }
    assert!(!conf.contains("keepalive"), "{conf}");
    assert_eq!(d.run("generate", &["--access-log", "/var/log/gw.log"]).0, Some(0));
    let conf = read(&out.join("nginx.conf"));
    assert!(conf.contains("access_log /var/log/gw.log;"), "{conf}");
    assert!(conf.contains("keepalive 16;") && conf.contains("worker_processes auto;"), "{conf}");
    for (bad, says) in [
        (&["--worker-processes", "0"][..], "auto or a number of processes 1-1024"),
        (&["--worker-processes", "1025"][..], "auto or a number of processes 1-1024"),
        (&["--worker-connections", "0"][..], "--worker-connections"),
        (&["--access-log", "a;b"][..], "--access-log \"a;b\": the path has the character ';'"),
        // The module's memory holds the lists too: the patterns get three quarters of it.
        (&["--regex-memory-total", "134217728"][..], "three quarters of the module's"),
        (
            &["--module-max-memory", "67108864", "--regex-memory-total", "67108864"][..],
            "--regex-memory-total 67108864: expected per tenant <= total <= 50331648",
        ),
    ] {
        let (code, err) = d.run("generate", bad);
        assert_ne!(code, Some(0), "{bad:?}");
        assert!(err.contains(says), "{bad:?}: {err}");
    }
}

/// `--pool-units-per-tenant` is the pool endpoints budget of `generate` and `apply`: tenant
/// default's older pool `old` (one slice of one address: 3 units) and newer pool `new` (one
/// slice of three addresses: 7 units) are both written by default; at 8 units the newer is
/// refused ("budget: pool endpoints", its route's backendRef `BackendNotFound`) and the older
/// written; at 2 both are.
#[test]
fn the_pool_units_option_decides_which_pool_is_refused() {
    let d = Dirs::new("pool-units");
    let out = d.out();
    let pool = |name: &str, month: u32, addresses: &str| {
        format!(
            "apiVersion: inference.networking.k8s.io/v1\nkind: InferencePool\n\
             metadata: {{name: {name}, namespace: default, creationTimestamp: \"2026-{month:02}-01T00:00:00Z\"}}\n\
             spec:\n  selector: {{matchLabels: {{app: {name}}}}}\n  targetPorts: [{{number: 8000}}]\n  \
             endpointPickerRef: {{name: epp, port: {{number: 9002}}}}\n---\n\
             apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\n\
             metadata: {{name: s-{name}, namespace: default, labels: {{app: {name}}}}}\n\
             addressType: IPv4\nports: [{{name: \"\", port: 8000}}]\n\
             endpoints: [{{addresses: [{addresses}]}}]\n---\n\
             kind: HTTPRoute\nmetadata: {{name: r-{name}, namespace: default}}\nspec:\n  \
             parentRefs: [{{name: gw}}]\n  hostnames: [{name}.example]\n  rules:\n  \
             - backendRefs: [{{group: inference.networking.k8s.io, kind: InferencePool, name: {name}}}]\n---\n"
        )
    };
    let old = pool("old", 1, "10.0.0.1");
    d.input(&format!("{GW}{old}{}", pool("new", 2, "10.0.1.1, 10.0.1.2, 10.0.1.3")));
    let epp = ["--backend", "default/epp:9002=127.0.0.1:9002"];
    let written = |command: &str, args: &[&str]| {
        let (code, err) = d.run(command, &[&epp[..], args].concat());
        assert_eq!(code, Some(0), "{command} {args:?}: {err}");
        let conf = read(&out.join("nginx.conf"));
        let status = read(&d.status());
        let pools: Vec<&str> = ["old", "new"]
            .into_iter()
            .filter(|p| conf.contains(&format!("upstream default_{p}_pool ")))
            .collect();
        let refused: Vec<&str> = ["old", "new"]
            .into_iter()
            .filter(|p| {
                status.contains(&format!("InferencePool default/{p}: budget: pool endpoints"))
            })
            .collect();
        (pools, refused)
    };
    let none: [&str; 0] = [];
    assert_eq!(written("generate", &[]), (vec!["old", "new"], none.to_vec()));
    let newer = ["--pool-units-per-tenant", "8"];
    let apply = [&["--nginx", "true"][..], &newer].concat();
    assert_eq!(written("apply", &apply), (vec!["old"], vec!["new"]));
    let both = ["--pool-units-per-tenant", "2"];
    assert_eq!(written("generate", &both), (none.to_vec(), vec!["old", "new"]));
    assert_eq!(written("generate", &newer), (vec!["old"], vec!["new"]));
}
