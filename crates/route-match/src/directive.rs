//! The arguments of the module's directives, read without NGINX: what they mean is decided
//! here, the glue (`src/conf/directives.rs`) only hands them over.

use crate::Syntax;

/// A directive's arguments (after its name) split into its `syntax=` option (`Auto` when
/// none, the last one when several) and the others; `Err`: why a `syntax=` is refused.
pub fn split_syntax<'a>(
    args: impl IntoIterator<Item = &'a [u8]>,
) -> Result<(Syntax, Vec<&'a [u8]>), String> {
    let mut syntax = Syntax::Auto;
    let mut rest = Vec::new();
    for a in args {
        let Some(v) = a.strip_prefix(b"syntax=") else {
            rest.push(a);
            continue;
        };
        let Some(s) = core::str::from_utf8(v).ok().and_then(Syntax::from_name) else {
            let v = String::from_utf8_lossy(v);
            return Err(format!("invalid \"syntax={v}\": use auto, typed or untyped"));
        };
        syntax = s;
    }
    Ok((syntax, rest))
}

/// `http_matches_max_memory SIZE [pattern=SIZE]`'s arguments (after its name): the bound of
/// the configuration's lists (`off`: `usize::MAX`) and, if given, one pattern's; `size` reads
/// a size (NGINX's grammar), none of 0. `Err`: the first argument refused.
pub fn memory_args<'a>(
    args: &[&'a [u8]],
    size: impl Fn(&[u8]) -> Option<usize>,
) -> Result<(usize, Option<usize>), &'a [u8]> {
    let size = |v| size(v).filter(|&n| n > 0);
    let (all, pattern) = match *args {
        [all] => (all, None),
        [all, pattern] => (all, Some(pattern)),
        _ => return Err(args.get(2).copied().unwrap_or_default()),
    };
    let all = if all == b"off" { usize::MAX } else { size(all).ok_or(all)? };
    let pattern = match pattern {
        Some(v) => Some(v.strip_prefix(b"pattern=").and_then(size).ok_or(v)?),
        None => None,
    };
    Ok((all, pattern))
}

/// Whether a directive's inline list is the empty JSON array (`[]`, JSON whitespace allowed
/// inside): no entry, never a winner (no list is compiled for it).
pub fn is_empty_list(json: &[u8]) -> bool {
    let rest = json.iter().filter(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'));
    rest.eq(b"[]".iter())
}
