//! Unguessable identifiers: random bytes from the operating system and the
//! per-request correlation id.

use std::fmt;

/// `N` random bytes from the operating system's CSPRNG.
pub(crate) fn random_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    // Without OS randomness no id or key handed out here would be safe to use,
    // and there is no weaker source worth falling back to.
    getrandom::fill(&mut bytes).expect("the operating system's random source failed");
    bytes
}

/// Lowercase hexadecimal of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    out
}

/// A new v2 job id: 128 random bits as 32 lowercase hex characters, so job
/// ids cannot be guessed or enumerated.
pub fn new_job_id() -> String {
    hex(&random_bytes::<16>())
}

/// Whether `text` has the shape of a job id; other paths are answered
/// without a store lookup.
pub fn is_job_id(text: &str) -> bool {
    text.len() == 32
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The id of one HTTP request, sent back in `X-Correlation-ID` and written in
/// every log line about the request, so a user quoting it to support leads
/// straight to those lines.
///
/// 128 random bits in 32 lowercase hex characters: unguessable, so knowing one
/// request's id tells nothing about another's.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CorrelationId(String);

impl CorrelationId {
    /// A fresh id.
    pub fn new() -> CorrelationId {
        CorrelationId(hex(&random_bytes::<16>()))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for CorrelationId {
    fn default() -> Self {
        CorrelationId::new()
    }
}

impl fmt::Display for CorrelationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_spells_every_nibble() {
        assert_eq!(hex(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
    }

    #[test]
    fn job_ids_are_32_lowercase_hex_characters_and_differ() {
        let a = new_job_id();
        assert!(is_job_id(&a), "{a}");
        assert_ne!(a, new_job_id());
        assert!(!is_job_id(&"A".repeat(32)));
        assert!(!is_job_id(&a[1..]));
    }

    #[test]
    fn correlation_ids_are_32_hex_characters_and_differ() {
        let a = CorrelationId::new();
        let b = CorrelationId::new();
        assert_eq!(a.as_str().len(), 32);
        assert!(a.as_str().bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }
}
