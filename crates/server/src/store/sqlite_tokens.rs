//! Client tokens in the embedded SQLite store.

use super::sqlite::{from_sql_int, join_scopes, split_scopes, to_sql_int, SqliteStore};
use super::{BudgetOutcome, NewToken, StoreError, StoreFuture, TokenCaps, TokenRecord, TokenStore};
use crate::keys::KeyHash;
use attune_core::wire::Timestamp;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

const TOKEN_COLUMNS: &str = "t.id, t.account_id, t.key_id, k.status, t.scopes, t.created_at, \
     t.expires_at, t.revoked_at, t.max_duration_seconds, t.max_bytes, t.max_concurrent, \
     t.max_video_seconds, t.allowed_origins, t.video_seconds_used \
     FROM client_tokens t JOIN api_keys k ON k.id = t.key_id";

/// Milliseconds since the epoch back to a timestamp.
pub(super) fn timestamp(millis: i64) -> Result<Timestamp, StoreError> {
    Timestamp::from_unix_millis(millis)
        .ok_or_else(|| StoreError::Incompatible(format!("timestamp {millis} ms out of range")))
}

/// A token row as read, before its columns are checked.
struct TokenRow {
    id: String,
    account_id: i64,
    key_id: String,
    key_status: String,
    scopes: String,
    created_at: i64,
    expires_at: i64,
    revoked_at: Option<i64>,
    max_duration_seconds: Option<i64>,
    max_bytes: Option<i64>,
    max_concurrent: i64,
    max_video_seconds: Option<f64>,
    allowed_origins: Option<String>,
    video_seconds_used: f64,
}

impl TokenRow {
    fn read(row: &rusqlite::Row<'_>) -> rusqlite::Result<TokenRow> {
        Ok(TokenRow {
            id: row.get(0)?,
            account_id: row.get(1)?,
            key_id: row.get(2)?,
            key_status: row.get(3)?,
            scopes: row.get(4)?,
            created_at: row.get(5)?,
            expires_at: row.get(6)?,
            revoked_at: row.get(7)?,
            max_duration_seconds: row.get(8)?,
            max_bytes: row.get(9)?,
            max_concurrent: row.get(10)?,
            max_video_seconds: row.get(11)?,
            allowed_origins: row.get(12)?,
            video_seconds_used: row.get(13)?,
        })
    }

    fn into_record(self) -> Result<TokenRecord, StoreError> {
        let allowed_origins = self
            .allowed_origins
            .map(|text| {
                serde_json::from_str::<Vec<String>>(&text).map_err(|e| {
                    StoreError::Incompatible(format!("allowed_origins of {}: {e}", self.id))
                })
            })
            .transpose()?;
        Ok(TokenRecord {
            account_id: self.account_id,
            key_id: self.key_id,
            key_active: self.key_status == "active",
            scopes: split_scopes(&self.scopes)?,
            caps: TokenCaps {
                max_duration_seconds: self
                    .max_duration_seconds
                    .map(|v| from_sql_int(v, "max_duration_seconds"))
                    .transpose()?,
                max_bytes: self
                    .max_bytes
                    .map(|v| from_sql_int(v, "max_bytes"))
                    .transpose()?,
                max_concurrent: from_sql_int(self.max_concurrent, "max_concurrent")?,
                max_video_seconds: self.max_video_seconds,
                allowed_origins,
            },
            created_at: timestamp(self.created_at)?,
            expires_at: timestamp(self.expires_at)?,
            revoked_at: self.revoked_at.map(timestamp).transpose()?,
            video_seconds_used: self.video_seconds_used,
            id: self.id,
        })
    }
}

fn token_where(
    conn: &Connection,
    condition: &str,
    value: impl rusqlite::ToSql,
) -> Result<Option<TokenRecord>, StoreError> {
    conn.query_row(
        &format!("SELECT {TOKEN_COLUMNS} WHERE {condition}"),
        [value],
        TokenRow::read,
    )
    .optional()?
    .map(TokenRow::into_record)
    .transpose()
}

/// Gives `seconds` back to a token's budget; use never goes below zero.
pub(super) fn refund_token(
    conn: &Connection,
    token_id: &str,
    seconds: f64,
) -> Result<(), StoreError> {
    conn.execute(
        "UPDATE client_tokens SET video_seconds_used = max(0, video_seconds_used - ?2) \
         WHERE id = ?1",
        params![token_id, seconds],
    )?;
    Ok(())
}

impl TokenStore for SqliteStore {
    fn create_token(&self, token: NewToken) -> StoreFuture<'_, TokenRecord> {
        self.errors.op("create_token").run(self.call(move |conn| {
            let origins = token
                .caps
                .allowed_origins
                .as_ref()
                .map(|origins| serde_json::to_string(origins).expect("strings serialise"));
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            tx.execute(
                "INSERT INTO client_tokens (id, token_hash, account_id, key_id, scopes, \
                 created_at, expires_at, max_duration_seconds, max_bytes, max_concurrent, \
                 max_video_seconds, allowed_origins) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                params![
                    token.id,
                    token.hash.as_bytes(),
                    token.account_id,
                    token.key_id,
                    join_scopes(&token.scopes),
                    token.created_at.unix_millis(),
                    token.expires_at.unix_millis(),
                    token.caps.max_duration_seconds.map(to_sql_int),
                    token.caps.max_bytes.map(to_sql_int),
                    i64::from(token.caps.max_concurrent),
                    token.caps.max_video_seconds,
                    origins,
                ],
            )?;
            let record = token_where(&tx, "t.id = ?1", &token.id)?.ok_or_else(|| {
                StoreError::Incompatible(format!("token `{}` vanished after insert", token.id))
            })?;
            tx.commit()?;
            Ok(record)
        }))
    }

    fn find_token(&self, hash: KeyHash) -> StoreFuture<'_, Option<TokenRecord>> {
        self.errors.op("find_token").run(
            self.call(move |conn| {
                token_where(conn, "t.token_hash = ?1", hash.as_bytes().as_slice())
            }),
        )
    }

    fn revoke_token(&self, hash: KeyHash, account_id: i64, at: Timestamp) -> StoreFuture<'_, bool> {
        let revocations = self.revocation_counter();
        self.errors.op("revoke_token").run(self.call(move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let found: bool = tx.query_row(
                "SELECT EXISTS (SELECT 1 FROM client_tokens WHERE token_hash = ?1 \
                 AND account_id = ?2)",
                params![hash.as_bytes(), account_id],
                |row| row.get(0),
            )?;
            tx.execute(
                "UPDATE client_tokens SET revoked_at = ?3 \
                 WHERE token_hash = ?1 AND account_id = ?2 AND revoked_at IS NULL",
                params![hash.as_bytes(), account_id, at.unix_millis()],
            )?;
            tx.commit()?;
            revocations.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
            Ok(found)
        }))
    }

    fn consume_video_seconds<'a>(
        &'a self,
        token_id: &'a str,
        seconds: f64,
    ) -> StoreFuture<'a, BudgetOutcome> {
        let token_id = token_id.to_owned();
        self.errors
            .op("consume_video_seconds")
            .run(self.call(move |conn| {
                let seconds = seconds.max(0.0);
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                let row: Option<(Option<f64>, f64)> = tx
                .query_row(
                    "SELECT max_video_seconds, video_seconds_used FROM client_tokens WHERE id = ?1",
                    [&token_id],
                    |row| Ok((row.get(0)?, row.get(1)?)),
                )
                .optional()?;
                let Some((budget, used)) = row else {
                    return Err(StoreError::UnknownKey(token_id));
                };
                if let Some(budget) = budget {
                    let remaining = (budget - used).max(0.0);
                    if seconds > remaining {
                        return Ok(BudgetOutcome::Exhausted { remaining });
                    }
                }
                tx.execute(
                    "UPDATE client_tokens SET video_seconds_used = video_seconds_used + ?2 \
                 WHERE id = ?1",
                    params![token_id, seconds],
                )?;
                tx.commit()?;
                Ok(BudgetOutcome::Granted {
                    remaining: budget.map(|budget| (budget - used - seconds).max(0.0)),
                })
            }))
    }

    fn refund_video_seconds<'a>(&'a self, token_id: &'a str, seconds: f64) -> StoreFuture<'a, ()> {
        let token_id = token_id.to_owned();
        self.errors
            .op("refund_video_seconds")
            .run(self.call(move |conn| refund_token(conn, &token_id, seconds.max(0.0))))
    }
}
