//! Byte-string equality for the short strings of the request path (header names, values,
//! keys, param names): most are under 16 bytes, where a call to `memcmp` (what `==` on slices
//! becomes) costs more than the comparison itself.

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
}
