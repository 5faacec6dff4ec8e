//! Whether the credential a session was opened with still authenticates, checked at each
//! chunk and window without a store query per frame.
//!
//! The store is read again only when a revocation happened in this process since the last
//! read (the store's revocation counter moved: `POST /v1/client_tokens/revoke`, a key revoked
//! through the same store), or when the last read is older than the recheck interval
//! (revocations made by another process, such as `attune keys revoke` on the same file). So a
//! revocation through this server ends its sessions at their very next chunk or window, and
//! one made elsewhere within the interval.

use crate::keys::KeyHash;
use crate::store::{KeyStatus, KeyStore, TokenStore};
use attune_core::session::Revoked;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// A session's credential, re-read from the store when it may have changed.
pub(crate) struct CredentialWatch {
    keys: Arc<dyn KeyStore>,
    tokens: Arc<dyn TokenStore>,
    /// The credential's hash (never the credential itself).
    hash: KeyHash,
    kind: Revoked,
    /// The store's revocation counter at the last read.
    generation: u64,
    checked: Instant,
    recheck: Duration,
}

impl CredentialWatch {
    /// Watches the credential whose hash is `hash`, of `kind`, authenticated just now.
    pub(crate) fn new(
        keys: Arc<dyn KeyStore>,
        tokens: Arc<dyn TokenStore>,
        hash: KeyHash,
        kind: Revoked,
        recheck: Duration,
    ) -> CredentialWatch {
        let generation = keys.revocations();
        CredentialWatch {
            keys,
            tokens,
            hash,
            kind,
            generation,
            checked: Instant::now(),
            recheck,
        }
    }

    /// When [`check`](Self::check) next reads the store even without a local revocation: the
    /// session loop wakes then, so a session that sends nothing more (or waits on its last
    /// windows) still ends within the interval of a revocation made by another process.
    pub(crate) fn due(&self) -> Instant {
        self.checked + self.recheck
    }

    /// `Err` when the credential no longer authenticates: the token or the key behind it
    /// was revoked, or the key was. A store that cannot answer does not end a session.
    pub(crate) async fn check(&mut self) -> Result<(), Revoked> {
        let generation = self.keys.revocations();
        if generation == self.generation && self.checked.elapsed() < self.recheck {
            return Ok(());
        }
        let valid = match self.kind {
            Revoked::Key => self
                .keys
                .find_key(self.hash)
                .await
                .map(|record| record.is_some_and(|r| r.status == KeyStatus::Active)),
            Revoked::Token => self
                .tokens
                .find_token(self.hash)
                .await
                .map(|record| record.is_some_and(|r| r.revoked_at.is_none() && r.key_active)),
        };
        match valid {
            Ok(true) => {
                self.generation = generation;
                self.checked = Instant::now();
                Ok(())
            }
            Ok(false) => {
                tracing::info!(kind = ?self.kind, "stream session credential revoked: ending the session");
                Err(self.kind)
            }
            Err(error) => {
                // Try again at the next chunk or interval rather than end a session on a
                // store hiccup.
                tracing::warn!(%error, "cannot recheck a stream session's credential");
                self.checked = Instant::now();
                Ok(())
            }
        }
    }
}
