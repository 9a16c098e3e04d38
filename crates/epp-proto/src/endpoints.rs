//! The EndpointPicker's endpoint list read against an allowed set (the module's
//! `http_matches_epp_endpoints`: the `upstream` block's own servers): which elements become
//! the request's tries, in the list's order. No NGINX, no I/O; bounded by construction: at
//! most the block's size + [`SLACK`] elements are read and looked up, whatever the list's
//! length (tests/endpoints.rs counts it).

use std::net::SocketAddr;

/// Why an element of the EPP's list is not a try.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal<'a> {
    NotIpPort(&'a [u8]),
    Outside(SocketAddr),
    Repeated(SocketAddr),
    /// More elements than the block has addresses and [`SLACK`].
    TooLong(usize),
}

/// How many elements past the block's size are read: a few refused ones (a stale or outside
/// address, a repeat) do not hide a member after them; the work stays O(block).
pub const SLACK: usize = 4;

/// What [`choose`] made of a list: how many tries it wrote, how many elements it refused, the
/// first refusal, and whether an element read was not `ip:port` (a malformed list, unlike
/// an address outside the block or repeated: an EPP's stale view).
#[derive(Debug, PartialEq, Eq)]
pub struct Choice<'a> {
    pub kept: usize,
    pub refused: usize,
    pub first: Option<Refusal<'a>>,
    pub malformed: bool,
}

impl Choice<'_> {
    /// What a log line says of the refused elements: the first, how many more, then what the
    /// request does (its tries, or round robin); `None` when none was refused.
    pub fn refusals(&self) -> Option<String> {
        let first = self.first.as_ref()?;
        let n = self.refused.saturating_sub(1);
        let more = if n > 0 { format!(" (and {n} more)") } else { String::new() };
        let then =
            if self.kept == 0 { "round robin".to_owned() } else { format!("{} tries", self.kept) };
        Some(format!("{first}{more}; {then}"))
    }
}

/// How many tries a list can give a block of `n` addresses: its elements among the first
/// `n` + [`SLACK`], at most `n` (the length of [`choose`]'s `out`). Reads only those
/// elements' bytes.
pub fn room(list: &[u8], n: usize) -> usize {
    list.split(|&b| b == b',').take(n + SLACK).count().min(n)
}

/// Reads `list` (`ip:port` elements separated by commas, spaces and tabs around each allowed)
/// for a block of `n` addresses (at most `n` + [`SLACK`] elements are read) into `out`
/// ([`room`] long), keeping, in order, the first occurrence of each address `lookup` knows
/// (an index below `n`); `seen` marks the kept indexes (one bit each, `n` bits, cleared by
/// the caller). Work: O(`n`) lookups, whatever `list` is.
pub fn choose<'a>(
    list: &'a [u8],
    n: usize,
    lookup: impl Fn(&SocketAddr) -> Option<u32>,
    out: &mut [u32],
    seen: &mut [u8],
) -> Choice<'a> {
    let mut c = Choice { kept: 0, refused: 0, first: None, malformed: false };
    let refuse = |c: &mut Choice<'a>, r| {
        c.refused += 1;
        c.first.get_or_insert(r);
    };
    let read = n + SLACK;
    let mut items = list.split(|&b| b == b',');
    for item in items.by_ref().take(read) {
        let one = crate::destination::trim(item);
        let Some(addr) = crate::destination::address(one) else {
            c.malformed = true;
            refuse(&mut c, Refusal::NotIpPort(one));
            continue;
        };
        let Some(i) = lookup(&addr) else {
            refuse(&mut c, Refusal::Outside(addr));
            continue;
        };
        let (byte, bit) = (i as usize / 8, 1u8 << (i % 8));
        match (seen.get_mut(byte), out.get_mut(c.kept)) {
            // `out` full ([`room`]): every element read so far is kept, this one a repeat.
            (Some(w), Some(slot)) if *w & bit == 0 => {
                *w |= bit;
                *slot = i;
                c.kept += 1;
            }
            _ => refuse(&mut c, Refusal::Repeated(addr)),
        }
    }
    if items.next().is_some() {
        refuse(&mut c, Refusal::TooLong(read));
    }
    c
}

impl core::fmt::Display for Refusal<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Refusal::NotIpPort(b"") => f.write_str("an empty element"),
            Refusal::NotIpPort(b) => {
                let more = if b.len() > 64 { "..." } else { "" };
                write!(f, "\"{}{more}\" is not ip:port", b[..b.len().min(64)].escape_ascii())
            }
            Refusal::Outside(a) => write!(f, "{a} is not a server of the block"),
            Refusal::Repeated(a) => write!(f, "{a} is repeated"),
            Refusal::TooLong(n) => {
                write!(f, "more than {n} elements (the block's addresses + {SLACK})")
            }
        }
    }
}
