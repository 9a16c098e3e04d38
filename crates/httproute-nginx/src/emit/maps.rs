//! The `map` blocks of the `http` block that are not a rule's own.

use crate::conf::{Arg, Directive, Node, code, var};

use super::state::{HOSTNAME_FIELD, Http, d, empty, entry_of, quoted};

impl Http {
    /// The `map` `m` that defines `$var`, unless it is defined already (by the same rule,
    /// written in another server: the same map).
    pub(super) fn push_map(&mut self, var: &str, m: Directive) {
        if !self.defined.insert(var.to_owned()) {
            return;
        }
        self.map_n += 1;
        self.maps.push(Node::Blank);
        self.maps.push(m.into());
    }

    /// `$httproute_sni_PORT`: the tag of the listener whose server NGINX picks for the TLS
    /// handshake's SNI on an HTTPS port (`$httproute_sni_name_PORT`, `hostnames` giving
    /// NGINX's own order: exact, then the longest wildcard; empty once the request fell
    /// back): the listener's hostname, `-` for one of none or an SNI no server names, empty
    /// without SNI. `names`: the port's servers' names written, with their tags.
    pub(super) fn sni_map(&mut self, port: u16, names: Vec<(&str, &str)>) {
        let mut entries: Vec<Node> = vec![
            d("hostnames").into(),
            entry_of(Arg::code("default"), Arg::code("-").quoted()),
            entry_of(empty(), empty()),
        ];
        for (h, tag) in names {
            entries.push(entry_of(Arg::data(HOSTNAME_FIELD, h), quoted(HOSTNAME_FIELD, tag)));
        }
        let name = format!("httproute_sni_name_{port}");
        self.push_map(&name, d("map").var("ssl_server_name").var(name.clone()).block(entries));
        // A request that came to a server by `http_matches_fallback` (the module sets
        // `$matches_fallback`) was checked where it arrived: the server it falls back to, of
        // the same listener, takes it whatever the SNI (empty passes every server's check).
        // `volatile`: read again after the fallback, not the value cached before it.
        let v = format!("httproute_sni_{port}");
        let wrapper = d("map").var("matches_fallback").var(v.clone()).block(vec![
            d("volatile").into(),
            entry_of(empty(), Arg::var(name)),
            entry_of(Arg::code("default"), empty()),
        ]);
        self.push_map(&v, wrapper);
    }
}

/// `$httproute_raw_path`: the client's raw path, `$request_uri` without its query.
pub(super) fn raw_path_map() -> Node {
    d("map")
        .var("request_uri")
        .var("httproute_raw_path")
        .block(vec![entry_of(
            Arg::code("~^(?<httproute_p>[^?]*)").quoted(),
            Arg::var("httproute_p"),
        )])
        .into()
}

/// `Connection` to the backend: `upgrade` when the client asks for one (WebSocket), else
/// empty, so backend connections can be kept alive.
pub(super) fn upgrade_map() -> Node {
    d("map")
        .var("http_upgrade")
        .var("httproute_connection")
        .block(vec![
            entry_of(Arg::code("default"), Arg::code("upgrade")),
            entry_of(empty(), empty()),
        ])
        .into()
}

/// A CORS preflight: OPTIONS with Access-Control-Request-Method.
pub(super) fn preflight_map() -> Node {
    d("map")
        .arg(
            Arg::parts(vec![
                var("request_method"),
                code(":"),
                var("http_access_control_request_method"),
            ])
            .quoted(),
        )
        .var("httproute_preflight")
        .block(vec![
            entry_of(Arg::code("default"), empty()),
            entry_of(Arg::code("~^OPTIONS:.").quoted(), Arg::code("1")),
        ])
        .into()
}
