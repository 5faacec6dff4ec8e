//! API keys and scopes: minting keys, hashing them for storage, and the scope
//! vocabulary of the interface.

use crate::ids::{hex, random_bytes};
use sha2::{Digest, Sha256};
use std::fmt;

/// The scope vocabulary is attune-core's, where the rules that read it live.
pub use attune_core::access::{Scope, UnknownScope};

/// What every API key starts with, so a leaked key is recognisable to secret
/// scanners and to a person, and so client tokens can use another prefix.
pub const KEY_PREFIX: &str = "atk_";

/// Random bytes in a key: 256 bits, beyond any guessing.
const KEY_BYTES: usize = 32;

/// How much of a key `keys list` shows to tell keys apart: the prefix and 8
/// hex digits (32 of the 256 bits, leaving 224 unknown).
const DISPLAY_PREFIX_LEN: usize = KEY_PREFIX.len() + 8;

/// A freshly minted API key: the only moment the secret exists in the clear.
///
/// `Debug` does not print the secret, so a key inside a logged struct stays
/// out of the logs; [`ApiKey::expose`] is the one way to read it.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// A new random key: `atk_` and 64 lowercase hex digits.
    pub fn generate() -> ApiKey {
        ApiKey(format!("{KEY_PREFIX}{}", hex(&random_bytes::<KEY_BYTES>())))
    }

    /// The secret, to show once to whoever created the key.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The hash the store keeps instead of the key.
    pub fn hash(&self) -> KeyHash {
        KeyHash::of(&self.0)
    }

    /// The leading characters shown by `keys list` to tell keys apart.
    pub fn display_prefix(&self) -> &str {
        &self.0[..DISPLAY_PREFIX_LEN]
    }

    /// Whether `text` has the shape of an API key. Checking the shape first
    /// spares the store a lookup for credentials that cannot be keys.
    pub fn is_well_formed(text: &str) -> bool {
        text.strip_prefix(KEY_PREFIX).is_some_and(|digits| {
            digits.len() == KEY_BYTES * 2
                && digits
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        })
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ApiKey({}…)", self.display_prefix())
    }
}

/// SHA-256 of an API key, the only form in which the store keeps it.
///
/// A fast, unsalted hash is right here because keys are 256 random bits: no
/// hash speed makes searching that space feasible, and salts and slow hashes
/// (argon2, bcrypt) exist to protect low-entropy passwords. A deterministic
/// hash also lets the store find a presented key with one indexed lookup, so
/// no secret-dependent comparison runs on the key itself.
///
/// Constant time: a presented key is never compared with a stored one; only
/// its SHA-256 is looked up (the hashed-lookup way, rather than comparing keys
/// with `subtle`), and a timing difference in that lookup can reveal at most
/// a prefix of a hash, which says nothing usable about any key. Hashes
/// compared in memory use `subtle`'s constant-time equality all the same, so
/// no code path compares secret-derived bytes with an early exit.
#[derive(Clone, Copy)]
pub struct KeyHash([u8; 32]);

impl std::hash::Hash for KeyHash {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.hash(state);
    }
}

impl PartialEq for KeyHash {
    fn eq(&self, other: &KeyHash) -> bool {
        use subtle::ConstantTimeEq;
        self.0.ct_eq(&other.0).into()
    }
}

impl Eq for KeyHash {}

impl KeyHash {
    /// The hash of a presented credential.
    pub fn of(credential: &str) -> KeyHash {
        KeyHash(Sha256::digest(credential.as_bytes()).into())
    }

    /// The hash from its stored bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> KeyHash {
        KeyHash(bytes)
    }

    /// The digest bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl fmt::Debug for KeyHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeyHash({})", hex(&self.0[..4]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_round_trip_through_their_spelling() {
        for scope in Scope::ALL {
            assert_eq!(scope.as_str().parse::<Scope>(), Ok(scope));
        }
        assert_eq!(
            "service.upload.inter-2-deep".parse::<Scope>(),
            Err(UnknownScope("service.upload.inter-2-deep".into()))
        );
    }

    #[test]
    fn generated_keys_are_well_formed_distinct_and_hidden_from_debug() {
        let a = ApiKey::generate();
        let b = ApiKey::generate();
        assert!(ApiKey::is_well_formed(a.expose()));
        assert_ne!(a, b);
        assert_ne!(a.hash(), b.hash());
        assert!(!format!("{a:?}").contains(a.expose()));
        assert!(a.expose().starts_with(a.display_prefix()));
    }

    #[test]
    fn malformed_credentials_are_recognised() {
        assert!(!ApiKey::is_well_formed(""));
        assert!(!ApiKey::is_well_formed("atk_"));
        assert!(!ApiKey::is_well_formed(&format!("atk_{}", "A".repeat(64))));
        assert!(!ApiKey::is_well_formed(&format!("xyz_{}", "a".repeat(64))));
        assert!(!ApiKey::is_well_formed(&format!("atk_{}", "a".repeat(63))));
    }

    #[test]
    fn hashes_are_equal_exactly_when_their_keys_are() {
        let key = ApiKey::generate();
        assert_eq!(key.hash(), KeyHash::of(key.expose()));
        let mut other = *key.hash().as_bytes();
        other[31] ^= 1;
        assert_ne!(key.hash(), KeyHash::from_bytes(other));
    }

    #[test]
    fn the_hash_is_sha256_of_the_key_text() {
        // SHA-256("abc"), FIPS 180-2 appendix B.1.
        assert_eq!(
            hex(KeyHash::of("abc").as_bytes()),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
