//! The operator's regenerate-and-reload flow (issue #31), against a real NGINX, under steady
//! traffic from a client thread: 20 rounds, each changing a route and reloading, by the two
//! documented flows in turn (generate then `nginx -s reload`; apply: `nginx -t`, then the
//! reload). Every fifth round is a broken one: a route author's bad route (left out by the
//! generator), a refused input (nothing written) and a configuration `nginx -t` refuses
//! (apply keeps the one in place). Checked: every reload answers with the new route (waited
//! for, never slept on), no request failed or reached a backend its route did not name at
//! that time, the pid file is the master's, and the log files are the ones the master has
//! open, with the rounds' lines in them. Apart: a new listener on a port another process holds
//! is refused before it is installed; a configuration `nginx -t` passes and the master refuses
//! at the reload, applied while a client forges the log: apply reads the master's report
//! (`http_matches_reload_report`, never the log), puts the configuration it keeps serving back
//! in place; kill -9, then a fresh start from the same directory.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use common::{Nginx, Prefix, free_ports, patience, wait_until};
use httproute_nginx::apply::{Applied, check_and_reload, stage};
use httproute_nginx::emit_global::{Global, Workers};
use httproute_nginx::{BackendMap, Options};

const ROUNDS: usize = 20;
const BACKENDS: [&str; 3] = ["b0", "b1", "b2"];

/// A plain NGINX standing in for the Services: each server says its name.
fn backends(ports: &[u16]) -> (Nginx, BackendMap) {
    let named: Vec<(String, String)> = BACKENDS
        .iter()
        .map(|name| (format!("default/{name}:80"), format!("{name} $request_uri")))
        .collect();
    common::backend_servers("reload-backends", &named, ports)
}

/// The manifests of a round: `/stable` always to b0, `/moving` to `backend`, and (broken
/// rounds) a route the CRD refuses, which the generator leaves out.
fn manifests(port: u16, backend: &str, broken: bool) -> String {
    let mut y = format!(
        "kind: Gateway\nmetadata: {{name: gw, namespace: default}}\nspec:\n  listeners: [{{name: http, port: {port}, protocol: HTTP}}]\n---\n\
         kind: HTTPRoute\nmetadata: {{name: stable, namespace: default}}\nspec:\n  parentRefs: [{{name: gw}}]\n  rules:\n  - matches: [{{path: {{type: PathPrefix, value: /stable}}}}]\n    backendRefs: [{{name: b0, port: 80}}]\n---\n\
         kind: HTTPRoute\nmetadata: {{name: moving, namespace: default}}\nspec:\n  parentRefs: [{{name: gw}}]\n  rules:\n  - matches: [{{path: {{type: PathPrefix, value: /moving}}}}]\n    backendRefs: [{{name: {backend}, port: 80}}]\n---\n"
    );
    if broken {
        // A route author's mistake: port 0 in a backendRef (the CRD's minimum is 1).
        y.push_str(
            "kind: HTTPRoute\nmetadata: {name: typo, namespace: default}\nspec:\n  parentRefs: [{name: gw}]\n  rules:\n  - matches: [{path: {type: PathPrefix, value: /stable/typo}}]\n    backendRefs: [{name: b2, port: 0}]\n---\n",
        );
    }
    y
}

/// What a client may get from `/moving` now: the backends of the configuration in place and of
/// the one being put in place.
struct Allowed {
    moving: Vec<&'static str>,
}

/// The client thread's record.
#[derive(Default)]
struct Traffic {
    requests: usize,
    /// Requests that failed or were answered by a backend their route did not name.
    bad: Vec<String>,
}

fn get(port: u16, path: &str) -> Result<(u16, String), String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(patience())).map_err(|e| e.to_string())?;
    s.write_all(format!("GET {path} HTTP/1.0\r\nHost: gw.test\r\n\r\n").as_bytes())
        .map_err(|e| e.to_string())?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&buf).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    Ok((status, body.split(' ').next().unwrap_or("").to_owned()))
}

/// Sends requests to `/stable` and `/moving` in turn until `stop`.
fn client(
    port: u16,
    stop: Arc<AtomicBool>,
    allowed: Arc<Mutex<Allowed>>,
    traffic: Arc<Mutex<Traffic>>,
) {
    let mut n = 0usize;
    while !stop.load(Ordering::SeqCst) {
        let path = if n % 2 == 0 { "/stable/x" } else { "/moving/y" };
        n += 1;
        // What was allowed when the request was sent, or when its answer came: a round may
        // narrow the set while the answer is on its way.
        let before = allowed.lock().unwrap().moving.clone();
        let got = get(port, path);
        let ok = match (&got, path) {
            (Ok((200, b)), "/stable/x") => b == "b0",
            (Ok((200, b)), _) => {
                let b = b.as_str();
                before.contains(&b) || allowed.lock().unwrap().moving.contains(&b)
            }
            _ => false,
        };
        let mut t = traffic.lock().unwrap();
        t.requests += 1;
        if !ok {
            t.bad.push(format!("{path}: {got:?}"));
        }
    }
}

/// The file names a process has open that were deleted (a log replaced under it).
fn deleted_open_files(pid: u32) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| {
            d.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
                .map(|p| p.display().to_string())
                .filter(|p| p.ends_with(" (deleted)"))
                .collect()
        })
        .unwrap_or_default()
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

#[test]
fn regenerate_and_reload_under_traffic() {
    let ports = free_ports(BACKENDS.len() + 2);
    let (backend, map) = backends(&ports);
    let port = ports[BACKENDS.len() + 1];
    let src = Prefix::scratch("reload-in");
    std::fs::create_dir_all(&src).unwrap();
    let dir = Prefix::scratch("reload-out");
    let nginx_bin = common::nginx_binary();
    let opts = || Options {
        global: Global { worker_processes: Workers::Count(2), ..Global::default() },
        ..common::generator_options()
    };
    let inputs: Vec<PathBuf> = vec![src.join("routes.yaml")];
    let write_round = |backend: &str, broken: bool| {
        std::fs::write(&inputs[0], manifests(port, backend, broken)).unwrap();
    };

    // Round 0: generate, start.
    write_round(BACKENDS[0], false);
    let (staged, _) = stage(&dir, &inputs, &map, opts(), None, None).expect("generate");
    staged.commit().unwrap();
    let gateway = Prefix::existing(dir.clone(), "nginx.conf", port).start();
    let pid_file = dir.join("logs/nginx.pid");
    let master: u32 = read(&pid_file).trim().parse().expect("a pid in logs/nginx.pid");
    // NGINX names its master after it writes the pid file.
    let cmdline = || read(Path::new(&format!("/proc/{master}/cmdline")));
    wait_until(format_args!("{master} named master"), || {
        cmdline().starts_with("nginx: master process")
    });
    let error_log = dir.join("logs/error.log");
    let inode = |p: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap());
    let error_log_inode = inode(&error_log);
    assert_eq!(get(port, "/moving/").unwrap(), (200, "b0".to_owned()));

    let stop = Arc::new(AtomicBool::new(false));
    let allowed = Arc::new(Mutex::new(Allowed { moving: vec![BACKENDS[0]] }));
    let traffic = Arc::new(Mutex::new(Traffic::default()));
    let thread = {
        let (stop, allowed, traffic) = (stop.clone(), allowed.clone(), traffic.clone());
        std::thread::spawn(move || client(port, stop, allowed, traffic))
    };

    let mut reloads = 0usize;
    // The httproute-nginx command (HTTPROUTE_NGINX_BIN, as scripts/test.sh builds and names
    // it; else the one next to this test's directory, which a workspace build makes and which
    // may be older than this checkout), for rounds 1, 5, 9, ...: the library calls it makes
    // are the other rounds'.
    let command = std::env::var_os("HTTPROUTE_NGINX_BIN")
        .map(std::path::PathBuf::from)
        .or_else(|| {
            std::env::current_exe()
                .ok()
                .and_then(|e| Some(e.parent()?.parent()?.join("httproute-nginx")))
        })
        .filter(|c| c.exists());
    if command.is_none() {
        eprintln!(
            "reload_flow: no target/*/httproute-nginx (cargo build --release -p httproute-nginx): \
             every round through the library"
        );
    }
    let version = common::nginx_version();
    let mut commands = 0usize;
    let mut current = BACKENDS[0];
    for round in 1..=ROUNDS {
        let broken = round % 5 == 0;
        if broken {
            // An input the generator refuses (a document that is not YAML: the operator's
            // own input; a Gateway the CRD refuses would cost only that Gateway): nothing
            // written, nothing changed.
            let conf_before = read(&dir.join("nginx.conf"));
            std::fs::write(
                &inputs[0],
                "kind: Gateway\nmetadata: {name: gw}\nspec:\n  listeners: [{name: http, port: 80\n",
            )
            .unwrap();
            let e = stage(&dir, &inputs, &map, opts(), None, None).err().expect("refused");
            assert!(e.contains("routes.yaml"), "round {round}: {e}");
            // A configuration nginx -t refuses (a module that is not there): apply keeps the
            // one in place.
            write_round(current, false);
            let bad =
                Options { module: "/nonexistent/ngx_http_matches_module.so".into(), ..opts() };
            let (staged, _) = stage(&dir, &inputs, &map, bad, None, None).expect("generated");
            match check_and_reload(staged, &dir, &nginx_bin, patience()).unwrap() {
                Applied::Rejected { kept, nginx_said } => {
                    assert!(nginx_said.contains("nonexistent"), "{nginx_said}");
                    assert!(read(&kept).contains("/nonexistent/"));
                }
                other => panic!("round {round}: nginx -t passed a missing module: {other:?}"),
            }
            assert_eq!(read(&dir.join("nginx.conf")), conf_before, "round {round}");
            let generations: Vec<_> = std::fs::read_dir(dir.join("generations")).unwrap().collect();
            assert!(generations.len() <= 2, "round {round}: {generations:?}");
        }
        // The route changes (in a broken round: it stays, and a bad route comes beside it).
        let next = if broken { current } else { BACKENDS[round % BACKENDS.len()] };
        allowed.lock().unwrap().moving = vec![current, next];
        write_round(next, broken);
        let (staged, generated) = stage(&dir, &inputs, &map, opts(), None, None).expect("generate");
        if broken {
            let w = generated.warnings.join("\n");
            assert!(w.contains("typo"), "round {round}: the bad route is not refused: {w}");
        } else {
            assert!(generated.warnings.is_empty(), "{:?}", generated.warnings);
        }
        if let (1, Some(command)) = (round % 4, &command) {
            // The command itself: httproute-nginx apply ... --nginx NGINX.
            drop(staged);
            let out = std::process::Command::new(command)
                .arg("apply")
                .arg("-f")
                .arg(&inputs[0])
                .arg("-o")
                .arg(&dir)
                .arg("--module")
                .arg(common::module_path())
                .args(["--listen-address", "127.0.0.1", "--worker-processes", "2"])
                .arg("--nginx-version")
                .arg(format!("{}.{}.{}", version.0, version.1, version.2))
                .args(map.iter().flat_map(|(k, v)| ["--backend".to_owned(), format!("{k}={v}")]))
                .arg("--nginx")
                .arg(&nginx_bin)
                .arg("--reload-wait")
                .arg(patience().as_secs().min(3600).to_string())
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "round {round}: httproute-nginx apply: {err}");
            commands += 1;
        } else if round % 2 == 0 {
            // generate -o DIR, then nginx -p DIR/ -c nginx.conf -s reload.
            staged.commit().unwrap();
            let (ok, said) = gateway.signal("reload");
            assert!(ok, "round {round}: nginx -s reload: {said}");
        } else {
            assert_eq!(
                check_and_reload(staged, &dir, &nginx_bin, patience()),
                Ok(Applied::Reloaded)
            );
        }
        reloads += 1;
        // The reload took: the new workers answer with the new route (for a broken round,
        // the typo route is not served and the others are).
        wait_until(format!("round {round}'s workers"), || {
            read(&error_log).matches("(SIGHUP) received").count() == reloads
        });
        wait_until(format!("round {round}: /moving answered by {next}"), || {
            get(port, "/moving/z").is_ok_and(|(s, b)| s == 200 && b == next)
        });
        // The old workers are gone, so from now on only the new route may answer.
        wait_until(format!("round {round}'s old workers to exit"), || {
            read(&error_log).matches("exited with code 0").count() >= 2 * reloads
        });
        allowed.lock().unwrap().moving = vec![next];
        if broken {
            assert_eq!(get(port, "/stable/typo").unwrap(), (200, "b0".to_owned()));
        }
        current = next;
        let t = traffic.lock().unwrap();
        assert!(t.bad.is_empty(), "round {round}: {:#?}", t.bad);
    }
    // Some traffic in the last round too.
    let before = traffic.lock().unwrap().requests;
    wait_until("traffic after the last round", || traffic.lock().unwrap().requests > before + 20);
    stop.store(true, Ordering::SeqCst);
    thread.join().unwrap();

    let t = traffic.lock().unwrap();
    assert!(t.bad.is_empty(), "{:#?}", t.bad);
    assert!(t.requests > ROUNDS * 2, "too little traffic: {}", t.requests);
    eprintln!(
        "reload_flow: {} requests over {ROUNDS} rounds, {reloads} reloads ({commands} by the \
         httproute-nginx command), 0 failed",
        t.requests
    );
    // The runtime files are NGINX's own: the pid file still names the master, the error log
    // is the file it was at the start and has every reload, the access log has the traffic,
    // and the master has no deleted file open.
    assert_eq!(read(&pid_file).trim(), master.to_string());
    assert_eq!(inode(&error_log), error_log_inode, "logs/error.log was replaced");
    let log = read(&error_log);
    assert_eq!(log.matches("(SIGHUP) received").count(), reloads, "{log}");
    let access = read(&dir.join("logs/access.log"));
    assert!(
        access.lines().count() >= t.requests,
        "{} lines for {} requests",
        access.lines().count(),
        t.requests
    );
    assert_eq!(deleted_open_files(master), Vec::<String>::new());
    // Two generations at most: the one in place and the one before it.
    let mut gens: Vec<String> = std::fs::read_dir(dir.join("generations"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    gens.sort();
    assert_eq!(gens.len(), 2, "{gens:?}");
    drop(t);
    gateway.finish();
    backend.finish();
}

/// `nginx -t` does not bind the ports (a port in use passes it), the reload does. As `apply`
/// plans (its probe of the ports: `apply::port_probe`), a new listener on a port another
/// process holds is refused (`PortUnavailable`) and the rest of the change reloads: one
/// tenant's listener never stops another's change. Planned without the probe (the library's
/// `stage` alone), the configuration is refused before it is installed (`held_ports`, the net
/// behind it) and the old generation keeps serving.
#[test]
fn a_reload_the_master_refuses_is_put_back() {
    let ports = free_ports(BACKENDS.len() + 3);
    let (backend, map) = backends(&ports);
    let (port, taken) = (ports[BACKENDS.len() + 1], ports[BACKENDS.len() + 2]);
    let holder = std::net::TcpListener::bind(("127.0.0.1", taken)).expect("hold the port");
    let src = Prefix::scratch("refused-reload-in");
    std::fs::create_dir_all(&src).unwrap();
    let dir = Prefix::scratch("refused-reload-out");
    let nginx_bin = common::nginx_binary();
    let opts = || common::generator_options();
    let inputs: Vec<PathBuf> = vec![src.join("routes.yaml")];
    let write = |backend: &str, extra_port: Option<u16>| {
        let mut y = manifests(port, backend, false);
        if let Some(p) = extra_port {
            let one = format!("listeners: [{{name: http, port: {port}, protocol: HTTP}}]");
            let two = format!(
                "listeners: [{{name: http, port: {port}, protocol: HTTP}}, {{name: taken, port: {p}, protocol: HTTP}}]"
            );
            assert!(y.contains(&one));
            y = y.replace(&one, &two);
        }
        std::fs::write(&inputs[0], y).unwrap();
    };
    write(BACKENDS[0], None);
    let (staged, _) = stage(&dir, &inputs, &map, opts(), None, None).expect("generate");
    staged.commit().unwrap();
    let gateway = Prefix::existing(dir.clone(), "nginx.conf", port).start();
    wait_until("the gateway", || get(port, "/moving/").is_ok_and(|(s, _)| s == 200));
    let before = read(&dir.join("nginx.conf"));

    // b1 for /moving, and a listener on the port held.
    write(BACKENDS[1], Some(taken));
    let (staged, _) = stage(&dir, &inputs, &map, opts(), None, None).expect("generate");
    match check_and_reload(staged, &dir, &nginx_bin, patience()).expect("apply") {
        Applied::PortHeld { kept, held } => {
            assert!(held.contains(&format!("port 127.0.0.1:{taken} ")), "{held}");
            assert!(read(&kept).contains(&format!("127.0.0.1:{taken}")));
        }
        other => panic!("a new listener on a held port: {other:?}"),
    }
    assert_eq!(read(&dir.join("nginx.conf")), before, "the configuration the master serves");
    let generations: Vec<_> = std::fs::read_dir(dir.join("generations")).unwrap().collect();
    assert_eq!(generations.len(), 1, "{generations:?}");
    assert_eq!(get(port, "/moving/").unwrap(), (200, "b0".to_owned()), "the old one serves");

    // The same change as apply plans it: the listener on the held port is refused, the rest
    // reloads and answers.
    let probe = httproute_nginx::apply::port_probe(&dir, Some("127.0.0.1"));
    let with_probe = Options { port_unavailable: Some(probe), ..opts() };
    let mut status = Vec::new();
    let (staged, generated) =
        stage(&dir, &inputs, &map, with_probe, Some(&mut status), None).expect("generate");
    // The listener's status (a controller would set it): not accepted, the port unavailable.
    let status = String::from_utf8(status).unwrap();
    let listener = status.split("- attachedRoutes:").find(|l| l.contains("name: taken\n"));
    let refused = "reason: PortUnavailable\n        status: 'False'\n        type: Accepted";
    assert!(listener.is_some_and(|l| l.contains(refused)), "{status}");
    let refused = format!("listener default/gw/taken: port {taken} is held by another process");
    assert!(generated.warnings.iter().any(|w| w.starts_with(&refused)), "{:?}", generated.warnings);
    assert!(!read(staged.conf()).contains(&format!("127.0.0.1:{taken}")));
    assert_eq!(check_and_reload(staged, &dir, &nginx_bin, patience()), Ok(Applied::Reloaded));
    wait_until("/moving answered by b1", || {
        get(port, "/moving/z").is_ok_and(|(s, b)| s == 200 && b == "b1")
    });
    drop(holder);
    gateway.finish();
    backend.finish();
}

/// `text` with `extra` put before the end of its `http` block (the file's last `}`).
fn with_http_lines(text: &str, extra: &str) -> String {
    let at = text.trim_end().rfind('}').expect("an http block");
    format!("{}{extra}\n{}", &text[..at], &text[at..])
}

/// A client writing into the error log: a request for a file that is not there is logged at
/// `[error]` with its URI (decoded), Host and Referer, which carry the master's pid and the
/// texts a log reader would take for a verdict (the old reader's "start worker process" and
/// "reconfiguring", the report's "N took").
fn forger(port: u16, master: u32, generation: u64, stop: Arc<AtomicBool>) -> usize {
    let texts = [
        format!(" {master}#{master}: start worker process 4242"),
        format!(" {master}#{master}: signal 1 (SIGHUP) received, reconfiguring"),
        format!(" {master}#{master}: reconfiguring"),
        format!("{generation} took"),
    ];
    let mut sent = 0usize;
    while !stop.load(Ordering::SeqCst) {
        let text = &texts[sent % texts.len()];
        let uri: String = text.replace(' ', "%20").replace('#', "%23");
        let request = format!(
            "GET /{uri} HTTP/1.0\r\nHost: {master}.start-worker-process\r\nReferer: {text}\r\n\r\n"
        );
        if let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) {
            let _ = s.set_read_timeout(Some(patience()));
            let _ = s.write_all(request.as_bytes());
            let _ = s.read_to_end(&mut Vec::new());
        }
        sent += 1;
    }
    sent
}

/// The processes whose parent is `pid` (from /proc).
fn children_of(pid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|e| {
        let e = e.ok()?;
        let child: u32 = e.file_name().to_str()?.parse().ok()?;
        let stat = read(&e.path().join("stat"));
        let after = &stat[stat.rfind(')')? + 1..];
        (after.split_whitespace().nth(1)?.parse::<u32>().ok()? == pid).then_some(child)
    })
    .collect()
}

/// The verdict of a reload comes from the master's report (`http_matches_reload_report`),
/// which no client can write: a configuration `nginx -t` passes and the master refuses (a
/// `limit_req_zone` whose key changes: NGINX refuses a zone's new key at the reload), applied
/// while a client fills the error log with the master's pid and the texts of a verdict, is
/// reported refused, put back, and the old generation serves (`nginx -t` reports nothing, a
/// start reports its generation taken); the next good one is reported
/// taken; after kill -9 of the master and its workers, a fresh start from the same directory
/// starts (nothing stale blocks it) and reports its generation taken.
#[test]
fn a_reload_verdict_no_client_can_forge() {
    let ports = free_ports(BACKENDS.len() + 3);
    let (backend, map) = backends(&ports);
    let (port, forge_port) = (ports[BACKENDS.len() + 1], ports[BACKENDS.len() + 2]);
    let src = Prefix::scratch("forged-reload-in");
    std::fs::create_dir_all(&src).unwrap();
    let dir = Prefix::scratch("forged-reload-out");
    let nginx_bin = common::nginx_binary();
    let inputs: Vec<PathBuf> = vec![src.join("routes.yaml")];
    let report = dir.join("logs/reload.report");
    // Each configuration: the generated one, a limit_req zone keyed by `key`, and a server
    // that answers every request 404 and logs it.
    let stage_with = |backend: &str, key: &str| {
        std::fs::write(&inputs[0], manifests(port, backend, false)).unwrap();
        let (staged, _) =
            stage(&dir, &inputs, &map, common::generator_options(), None, None).expect("generate");
        let extra = format!(
            "    limit_req_zone {key} zone=gv_zone:1m rate=1000r/s;\n    server {{ listen \
             127.0.0.1:{forge_port}; root {}/nothing; }}",
            dir.display()
        );
        std::fs::write(staged.conf(), with_http_lines(&read(staged.conf()), &extra)).unwrap();
        let generation = staged.generation().expect("a generation");
        (staged, generation)
    };
    let (staged, first) = stage_with(BACKENDS[0], "$binary_remote_addr");
    staged.commit().unwrap();
    // nginx -t runs the module's init_module too: it reports nothing.
    let (ok, said) = Prefix::existing(dir.clone(), "nginx.conf", port).test();
    assert!(ok, "{said}");
    assert!(!report.exists(), "nginx -t wrote {:?}", read(&report));
    let gateway = Prefix::existing(dir.clone(), "nginx.conf", port).start();
    wait_until("the start's report", || read(&report) == format!("{first} took\n"));
    let master: u32 = read(&dir.join("logs/nginx.pid")).trim().parse().unwrap();
    wait_until("the gateway", || get(port, "/moving/").is_ok_and(|(s, _)| s == 200));
    let before = read(&dir.join("nginx.conf"));

    // Refused at the reload, under forgery.
    let (staged, refused) = stage_with(BACKENDS[1], "$uri");
    let stop = Arc::new(AtomicBool::new(false));
    let thread = {
        let stop = stop.clone();
        std::thread::spawn(move || forger(forge_port, master, refused, stop))
    };
    let log = dir.join("logs/error.log");
    let forged = format!(" {master}#{master}: start worker process 4242");
    wait_until("the forged lines", || read(&log).contains(&forged));
    let from = read(&log).len();
    let verdict = check_and_reload(staged, &dir, &nginx_bin, patience()).expect("apply");
    // The forgery went on through the reload: forged lines after the master's refusal.
    let emerg = |l: &str| l.contains("[emerg]") && l.contains("limit_req \"gv_zone\" uses");
    wait_until("forged lines after the refusal", || {
        let text = read(&log);
        let tail = &text[from..];
        tail.find("limit_req \"gv_zone\" uses").is_some_and(|at| tail[at..].contains(&forged))
    });
    stop.store(true, Ordering::SeqCst);
    let sent = thread.join().unwrap();
    match verdict {
        Applied::ReloadRefused { kept, nginx_said } => {
            assert!(nginx_said.contains(&format!("\"{refused} refused\"")), "{nginx_said}");
            assert!(read(&kept).contains("$uri zone=gv_zone"));
        }
        other => panic!("a reload the master refused, under {sent} forged requests: {other:?}"),
    }
    assert!(read(&log).lines().any(emerg), "the reason stays in the log for people");
    assert_eq!(read(&report), format!("{refused} refused\n"));
    assert_eq!(read(&dir.join("nginx.conf")), before, "the configuration the master serves");
    assert_eq!(get(port, "/moving/").unwrap(), (200, "b0".to_owned()), "the old one serves");

    // The next good change is reported taken and serves.
    let (staged, took) = stage_with(BACKENDS[1], "$binary_remote_addr");
    assert_eq!(check_and_reload(staged, &dir, &nginx_bin, patience()), Ok(Applied::Reloaded));
    assert_eq!(read(&report), format!("{took} took\n"));
    wait_until("/moving answered by b1", || {
        get(port, "/moving/z").is_ok_and(|(s, b)| s == 200 && b == "b1")
    });

    // kill -9 of the master and its workers (as the OOM killer would), then a fresh start.
    let workers = children_of(master);
    gateway.kill("KILL");
    for w in workers {
        let _ = std::process::Command::new("kill").arg("-KILL").arg(w.to_string()).status();
    }
    wait_until("the port to be free", || TcpStream::connect(("127.0.0.1", port)).is_err());
    drop(gateway);
    std::fs::remove_file(&report).unwrap();
    let gateway = Prefix::existing(dir.clone(), "nginx.conf", port).start();
    wait_until("the fresh start's report", || read(&report) == format!("{took} took\n"));
    wait_until("/moving answered by b1", || {
        get(port, "/moving/z").is_ok_and(|(s, b)| s == 200 && b == "b1")
    });
    gateway.finish();
    backend.finish();
}

/// The report is written through no link: a link planted at the master's temporary file
/// (`<report>.tmp<pid>`, a name anyone who can write the directory can guess) or at the report
/// itself is replaced, and the file it points at keeps its text.
#[test]
fn the_report_follows_no_link() {
    let body = |generation: u32| {
        format!(
            "http_matches_reload_report logs/r.report {generation};\n\
             server {{ listen 127.0.0.1:{{PORT}}; location / {{ return 200 \"ok\\n\"; }} }}"
        )
    };
    let gateway = Nginx::start("report-link", &body(1), &[]);
    let logs = gateway.prefix.dir.join("logs");
    let report = logs.join("r.report");
    wait_until("the start's report", || read(&report) == "1 took\n");
    let master = common::master::pid(&gateway);
    let (victim, other) = (gateway.prefix.dir.join("victim"), gateway.prefix.dir.join("other"));
    std::fs::write(&victim, "victim\n").unwrap();
    std::fs::write(&other, "other\n").unwrap();
    std::os::unix::fs::symlink(&victim, logs.join(format!("r.tmp{master}"))).unwrap();
    std::fs::remove_file(&report).unwrap();
    std::os::unix::fs::symlink(&other, &report).unwrap();
    gateway.prefix.write_conf(&body(2));
    gateway.hup();
    // On a failure, what the report says and NGINX's log. (It waited in vain twice, beside
    // heavy jobs: the HUP had come before the master blocked signals, so NGINX acted on it
    // only at a next signal that never came; `Prefix::start` now waits until it takes signals.)
    let says = || format!("the reload's report (it says {:?})", read(&report));
    wait_until(gateway.with_log(LazyText(&says)), || read(&report) == "2 took\n");
    assert_eq!((read(&victim), read(&other)), ("victim\n".to_owned(), "other\n".to_owned()));
    assert!(std::fs::symlink_metadata(&report).unwrap().file_type().is_file());
    gateway.finish();
}

/// A text made when it is shown (a wait's message is formatted only when the wait fails).
struct LazyText<'a>(&'a dyn Fn() -> String);

impl std::fmt::Display for LazyText<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&(self.0)())
    }
}
