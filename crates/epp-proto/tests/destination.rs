//! `destination`: the directive's URL, the destination list's elements and its preferred one,
//! as both `http_matches_epp` modes and `http_matches_epp_endpoints` read them.

use epp_proto::destination::{
    BODY_SHOWN, BodyHead, IGNORED, Mode, address, check_url, first, joined,
};
use epp_proto::endpoints::{Refusal, choose};
use proptest::prelude::*;

#[test]
fn the_shim_s_answer_kept_its_lines_joined_its_body_s_head_bounded() {
    let lines: [&[u8]; 3] = [b"10.0.0.1:80", b"", b"10.0.0.2:80"];
    assert_eq!(joined(lines[..1].iter().copied()), b"10.0.0.1:80");
    assert_eq!(joined(lines.iter().copied()), b"10.0.0.1:80, , 10.0.0.2:80");
    assert_eq!(joined(core::iter::empty()), b"");
    let mut head = BodyHead::default();
    assert!(!head.feed(b"no "));
    assert!(!head.feed(&[b'x'; BODY_SHOWN - 3]));
    assert_eq!(head.shown().0.len(), BODY_SHOWN);
    assert!(!head.shown().1);
    assert!(head.feed(b"y"));
    assert!(head.feed(b""));
    let (shown, more) = head.shown();
    assert!(shown.starts_with(b"no xx") && shown.len() == BODY_SHOWN && more);
}

#[test]
fn a_url_selects_its_mode_and_has_no_path_query_or_variable() {
    let ok = [
        ("http://127.0.0.1:54800", Mode::Shim),
        ("https://shim", Mode::Shim),
        ("grpc://epp:9002", Mode::Grpc { tls: false }),
        ("grpcs://[::1]:9002", Mode::Grpc { tls: true }),
    ];
    for (url, mode) in ok {
        assert_eq!(check_url(url.as_bytes()), Ok(mode), "{url}");
    }
    for (url, why) in [
        ("127.0.0.1:1", "expected http://"),
        ("unix:/run/shim.sock", "expected http://"),
        ("http://", "no host"),
        ("http://shim/path", "a path"),
        ("grpc://$host", "variables"),
        ("http://shim?x=1", "a query"),
        ("http://shim#f", "a query or fragment"),
    ] {
        let e = check_url(url.as_bytes()).unwrap_err();
        assert!(e.starts_with(why), "{url}: {e}");
    }
}

#[test]
fn an_element_is_an_ip_literal_and_a_port() {
    for ok in ["10.0.0.1:80", "[::1]:8080", "[2001:db8::1]:1"] {
        assert!(address(ok.as_bytes()).is_some(), "{ok}");
    }
    for bad in
        ["", "10.0.0.1", "10.0.0.1:0", "host:80", "[fe80::1%eth0]:80", "unix:/x", "1.2.3.4:80/"]
    {
        assert_eq!(address(bad.as_bytes()), None, "{bad}");
    }
}

#[test]
fn the_first_element_is_preferred_and_every_one_must_be_an_address() {
    let list = b" 10.0.0.2:80 ,\t[::1]:81, 10.0.0.3:82";
    assert_eq!(&list[first(list).unwrap()], b"10.0.0.2:80");
    for bad in [&b""[..], b"10.0.0.1:80,", b"10.0.0.1:80,unix:/x", b"x\n:1", b",10.0.0.1:80"]
        .into_iter()
        .chain([&b"10.0.0.1:80\r\n"[..], b"\x0c10.0.0.1:80"])
    {
        assert!(first(bad).is_err(), "{}", bad.escape_ascii());
    }
    let shown = |list: &[u8]| Refusal::NotIpPort(first(list).unwrap_err()).to_string();
    assert_eq!(shown(b"10.0.0.1:80, unix:/run/x.sock"), "\"unix:/run/x.sock\" is not ip:port");
    assert_eq!(shown(b"10.0.0.1:80, ,"), "an empty element");
}

proptest! {
    /// The list `http_matches_epp` accepts is one the balancer reads whole, as addresses, and
    /// the preferred element is the balancer's first try; it holds no control byte (a CR or
    /// LF around an element is refused, not carried into `$inference_workload_endpoints`).
    #[test]
    fn first_and_choose_read_the_same_elements(items in prop::collection::vec(
        prop_oneof![
            (0u8..4, 1u16..4).prop_map(|(h, p)| format!("10.0.0.{h}:{p}")),
            Just("[::1]:1".to_owned()),
            Just("x:1".to_owned()),
            Just(String::new()),
        ], 1..6), joiners in prop::collection::vec(
            prop::sample::select(vec![",", " , ", ",\t", "\r\n,", ",\x0c", " ,\n"]), 6)) {
        let mut list = String::new();
        for (i, item) in items.iter().enumerate() {
            list.push_str(if i == 0 { "" } else { joiners[i] });
            list.push_str(item);
        }
        let n = 20;
        let mut out = vec![0u32; n];
        let mut seen = vec![0u8; 4];
        let index = |a: &std::net::SocketAddr| Some(u32::from(a.port()) * 5 + u32::from(match a.ip() {
            std::net::IpAddr::V4(v) => v.octets()[3],
            std::net::IpAddr::V6(_) => 4,
        }));
        let c = choose(list.as_bytes(), n, index, &mut out, &mut seen);
        match first(list.as_bytes()) {
            Ok(at) => {
                prop_assert!(!c.malformed);
                prop_assert!(list.bytes().all(|b| b == b'\t' || !b.is_ascii_control()), "{:?}", list);
                let a = address(&list.as_bytes()[at]).unwrap();
                prop_assert_eq!(out[0], index(&a).unwrap());
            }
            Err(_) => prop_assert!(c.malformed),
        }
    }
}

#[test]
fn each_mode_runs_its_proxys_pass_then_ignores_the_shims_redirects() {
    let names = |mode: Mode| -> Vec<(String, Vec<String>, bool)> {
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        let c = mode.commands(b"URL");
        c.iter()
            .map(|c| (text(c.name), c.values.iter().map(|v| text(v)).collect(), c.kept))
            .collect()
    };
    let ignored: Vec<String> = IGNORED.iter().map(|h| String::from_utf8_lossy(h).into()).collect();
    assert!(ignored.contains(&"X-Accel-Redirect".to_owned()), "{ignored:?}");
    let shim = names(Mode::Shim);
    assert_eq!(Mode::Shim.module(), c"ngx_http_proxy_module");
    assert_eq!(shim[0], ("proxy_pass".into(), vec!["URL".into()], false));
    assert_eq!(shim[1], ("proxy_ignore_headers".into(), ignored.clone(), false));
    // Unbuffered, an operator's own refused.
    assert_eq!(shim[2], ("proxy_buffering".into(), vec!["off".into()], false));
    assert_eq!(shim.len(), 3);
    let grpc = names(Mode::Grpc { tls: false });
    assert_eq!(Mode::Grpc { tls: true }.module(), c"ngx_http_grpc_module");
    assert_eq!(grpc[0], ("grpc_pass".into(), vec!["URL".into()], false));
    assert_eq!(grpc[1], ("grpc_ignore_headers".into(), ignored, false));
    assert_eq!(grpc.len(), 2);
    // Over TLS the EPP's certificate is verified, an operator's own setting kept.
    let tls = names(Mode::Grpc { tls: true });
    assert_eq!(tls[..2], grpc[..]);
    assert_eq!(tls[2], ("grpc_ssl_verify".into(), vec!["on".into()], true));
}
