//! Character classes of Gateway API fields, below both the objects ([`super::types`]) and
//! their checks (`validate`), so that neither imports the other back.

/// A character of an RFC 3986 path as the HTTPRoute CRD allows it unescaped (pchar and `/`).
pub(crate) fn path_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-._~!$&'()*+,;=:@/".contains(c)
}
