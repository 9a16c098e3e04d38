//! Byte-string equality for the short strings of the request path (header names, values,
//! keys, param names): most are under 16 bytes, where a call to `memcmp` (what `==` on slices
//! becomes) costs more than the comparison itself. And [`escape`]: such bytes made safe for
//! one log line.

/// `a == b`, without a library call for strings of up to 16 bytes.
#[inline]
pub(crate) fn eq(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    match n {
        0 => true,
        // First, middle and last byte cover every position of 1 to 3 bytes.
        1..=3 => a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1],
        // Two overlapping words cover every byte.
        4..=8 => {
            let w = |s: &[u8], i: usize| {
                s.get(i..i + 4).and_then(|c| c.try_into().ok()).map_or(0, u32::from_ne_bytes)
            };
            w(a, 0) == w(b, 0) && w(a, n - 4) == w(b, n - 4)
        }
        9..=16 => {
            let w = |s: &[u8], i: usize| {
                s.get(i..i + 8).and_then(|c| c.try_into().ok()).map_or(0, u64::from_ne_bytes)
            };
            w(a, 0) == w(b, 0) && w(a, n - 8) == w(b, n - 8)
        }
        _ => a == b,
    }
}

/// What malloc (glibc) holds for a request of `size` bytes: an 8-byte header, 16-byte
/// granules, 32 bytes at least.
pub(crate) fn malloc_size(size: usize) -> usize {
    ((size + 8).div_ceil(16) * 16).max(32)
}

/// "0000" to "9999", four digits each: [`small_decimal`]'s table (40 KB of read-only data in
/// the module, shared by every worker).
static FOUR_DIGITS: [u8; 40_000] = {
    let mut t = [0u8; 40_000];
    let mut i = 0;
    while i < 10_000 {
        t[4 * i] = b'0' + (i / 1000) as u8;
        t[4 * i + 1] = b'0' + (i / 100 % 10) as u8;
        t[4 * i + 2] = b'0' + (i / 10 % 10) as u8;
        t[4 * i + 3] = b'0' + (i % 10) as u8;
        i += 1;
    }
    t
};

/// The decimal text of `n` below 10,000, a static (no allocation, no copy: the module's
/// `$matches_entry`); `None` from 10,000 on ([`decimal`]).
#[inline]
pub fn small_decimal(n: usize) -> Option<&'static [u8]> {
    let digits = match n {
        0..10 => 1,
        10..100 => 2,
        100..1000 => 3,
        1000..10_000 => 4,
        _ => return None,
    };
    FOUR_DIGITS.get(4 * n + 4 - digits..4 * n + 4)
}

/// The decimal text of `n`, written at the end of `buf`.
pub fn decimal(n: usize, buf: &mut [u8; 20]) -> &[u8] {
    let (mut i, mut rest) = (buf.len(), n);
    loop {
        i -= 1;
        buf[i] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            return &buf[i..];
        }
    }
}

/// Bytes that may come from a client, made safe for one log line: printable ASCII stays
/// (a backslash is doubled), every other byte is `\xHH`, and at most `max` bytes are
/// shown, followed by how many there were.
pub fn escape(bytes: &[u8], max: usize) -> String {
    use core::fmt::Write;
    let mut out = String::with_capacity(bytes.len().min(max) + 16);
    for &b in bytes.iter().take(max) {
        match b {
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(char::from(b)),
            _ => {
                let _ = write!(out, "\\x{b:02x}");
            }
        }
    }
    if bytes.len() > max {
        let _ = write!(out, "...({} bytes)", bytes.len());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::eq;

    #[test]
    fn agrees_with_slice_equality_at_every_length_and_position() {
        for n in 0..40usize {
            let a: Vec<u8> = (0..n).map(|i| (i * 7 + 3) as u8).collect();
            assert!(eq(&a, &a.clone()), "{n}");
            for i in 0..n {
                let mut b = a.clone();
                b[i] ^= 0x20;
                assert!(!eq(&a, &b), "{n} {i}");
            }
            if n > 0 {
                assert!(!eq(&a, &a[..n - 1]), "{n}");
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn is_slice_equality(
            a in proptest::collection::vec(0u8..3, 0..24),
            b in proptest::collection::vec(0u8..3, 0..24),
        ) {
            proptest::prop_assert_eq!(eq(&a, &b), a == b);
        }
    }

    #[test]
    fn decimals_small_and_large() {
        for n in [0, 7, 10, 42, 99, 100, 999, 1000, 9999, 10_000, 12_345, usize::MAX] {
            let want = n.to_string();
            assert_eq!(super::decimal(n, &mut [0; 20]), want.as_bytes());
            let small = super::small_decimal(n);
            assert_eq!(small, (n < 10_000).then_some(want.as_bytes()));
        }
    }

    #[test]
    fn escape_keeps_printable_ascii_and_bounds_the_rest() {
        assert_eq!(super::escape(b"a b\\c", 16), "a b\\\\c");
        assert_eq!(super::escape(b"\n\xff\"", 16), "\\x0a\\xff\"");
        assert_eq!(super::escape(b"abcdef", 3), "abc...(6 bytes)");
    }
}
