//! Client tokens in the PostgreSQL store.

use super::postgres_base::{raw, PgStore};
use super::sqlite::{from_sql_int, join_scopes, split_scopes, to_sql_int};
use super::sqlite_tokens::timestamp;
use super::{BudgetOutcome, NewToken, StoreError, StoreFuture, TokenCaps, TokenRecord, TokenStore};
use crate::keys::KeyHash;
use attune_core::wire::Timestamp;
use tokio_postgres::types::ToSql;
use tokio_postgres::{GenericClient, Row};

const TOKEN_COLUMNS: &str = "t.id, t.account_id, t.key_id, k.status, t.scopes, t.created_at, \
     t.expires_at, t.revoked_at, t.max_duration_seconds, t.max_bytes, t.max_concurrent, \
     t.max_video_seconds, t.allowed_origins, t.video_seconds_used \
     FROM client_tokens t JOIN api_keys k ON k.id = t.key_id";

fn token_record(row: &Row) -> Result<TokenRecord, StoreError> {
    let id: String = row.try_get(0)?;
    let allowed_origins = row
        .try_get::<_, Option<String>>(12)?
        .map(|text| {
            serde_json::from_str::<Vec<String>>(&text)
                .map_err(|e| StoreError::Incompatible(format!("allowed_origins of {id}: {e}")))
        })
        .transpose()?;
    let key_status: String = row.try_get(3)?;
    let scopes: String = row.try_get(4)?;
    Ok(TokenRecord {
        account_id: row.try_get(1)?,
        key_id: row.try_get(2)?,
        key_active: key_status == "active",
        scopes: split_scopes(&scopes)?,
        caps: TokenCaps {
            max_duration_seconds: row
                .try_get::<_, Option<i64>>(8)?
                .map(|v| from_sql_int(v, "max_duration_seconds"))
                .transpose()?,
            max_bytes: row
                .try_get::<_, Option<i64>>(9)?
                .map(|v| from_sql_int(v, "max_bytes"))
                .transpose()?,
            max_concurrent: from_sql_int(row.try_get(10)?, "max_concurrent")?,
            max_video_seconds: row.try_get(11)?,
            allowed_origins,
        },
        created_at: timestamp(row.try_get(5)?)?,
        expires_at: timestamp(row.try_get(6)?)?,
        revoked_at: row
            .try_get::<_, Option<i64>>(7)?
            .map(timestamp)
            .transpose()?,
        video_seconds_used: row.try_get(13)?,
        id,
    })
}

async fn token_where(
    client: &impl GenericClient,
    condition: &str,
    value: &(dyn ToSql + Sync),
) -> Result<Option<TokenRecord>, StoreError> {
    client
        .query_opt(
            &format!("SELECT {TOKEN_COLUMNS} WHERE {condition}"),
            &[value],
        )
        .await?
        .as_ref()
        .map(token_record)
        .transpose()
}

/// Gives `seconds` back to a token's budget; use never goes below zero.
pub(super) async fn refund_token(
    client: &impl GenericClient,
    token_id: &str,
    seconds: f64,
) -> Result<(), StoreError> {
    client
        .execute(
            "UPDATE client_tokens SET video_seconds_used = GREATEST(0, video_seconds_used - $2) \
             WHERE id = $1",
            &[&token_id, &seconds],
        )
        .await?;
    Ok(())
}

impl TokenStore for PgStore {
    fn create_token(&self, token: NewToken) -> StoreFuture<'_, TokenRecord> {
        self.errors.op("create_token").run(async move {
            let origins = token
                .caps
                .allowed_origins
                .as_ref()
                .map(|origins| serde_json::to_string(origins).expect("strings serialise"));
            let client = self.pool.get().await?;
            client
                .execute(
                    "INSERT INTO client_tokens (id, token_hash, account_id, key_id, scopes, \
                     created_at, expires_at, max_duration_seconds, max_bytes, max_concurrent, \
                     max_video_seconds, allowed_origins) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
                    &[
                        &token.id,
                        &token.hash.as_bytes().as_slice(),
                        &token.account_id,
                        &token.key_id,
                        &join_scopes(&token.scopes),
                        &token.created_at.unix_millis(),
                        &token.expires_at.unix_millis(),
                        &token.caps.max_duration_seconds.map(to_sql_int),
                        &token.caps.max_bytes.map(to_sql_int),
                        &i64::from(token.caps.max_concurrent),
                        &token.caps.max_video_seconds,
                        &origins,
                    ],
                )
                .await?;
            token_where(&**client, "t.id = $1", &token.id)
                .await?
                .ok_or_else(|| {
                    StoreError::Incompatible(format!("token `{}` vanished after insert", token.id))
                })
        })
    }

    fn find_token(&self, hash: KeyHash) -> StoreFuture<'_, Option<TokenRecord>> {
        self.errors.op("find_token").run(async move {
            let client = self.pool.get().await?;
            // Prepared once per connection: every token request looks it up.
            let statement = client
                .prepare_cached(&format!("SELECT {TOKEN_COLUMNS} WHERE t.token_hash = $1"))
                .await?;
            client
                .query_opt(&statement, &[&hash.as_bytes().as_slice()])
                .await?
                .as_ref()
                .map(token_record)
                .transpose()
        })
    }

    fn revoke_token(&self, hash: KeyHash, account_id: i64, at: Timestamp) -> StoreFuture<'_, bool> {
        self.errors.op("revoke_token").run(async move {
            let client = self.pool.get().await?;
            let hash = hash.as_bytes().as_slice();
            let found = client
                .query_opt(
                    "SELECT 1 FROM client_tokens WHERE token_hash = $1 AND account_id = $2",
                    &[&hash, &account_id],
                )
                .await?
                .is_some();
            client
                .execute(
                    "UPDATE client_tokens SET revoked_at = $3 \
                     WHERE token_hash = $1 AND account_id = $2 AND revoked_at IS NULL",
                    &[&hash, &account_id, &at.unix_millis()],
                )
                .await?;
            Ok(found)
        })
    }

    fn consume_video_seconds<'a>(
        &'a self,
        token_id: &'a str,
        seconds: f64,
    ) -> StoreFuture<'a, BudgetOutcome> {
        self.errors.op("consume_video_seconds").run(async move {
            let seconds = seconds.max(0.0);
            let mut client = self.pool.get().await?;
            let tx = raw(&mut client).transaction().await?;
            // The row lock makes check-and-take atomic across instances.
            let row = tx
                .query_opt(
                    "SELECT max_video_seconds, video_seconds_used FROM client_tokens \
                     WHERE id = $1 FOR UPDATE",
                    &[&token_id],
                )
                .await?;
            let Some(row) = row else {
                return Err(StoreError::UnknownKey(token_id.to_owned()));
            };
            let budget: Option<f64> = row.try_get(0)?;
            let used: f64 = row.try_get(1)?;
            if let Some(budget) = budget {
                let remaining = (budget - used).max(0.0);
                if seconds > remaining {
                    return Ok(BudgetOutcome::Exhausted { remaining });
                }
            }
            tx.execute(
                "UPDATE client_tokens SET video_seconds_used = video_seconds_used + $2 \
                 WHERE id = $1",
                &[&token_id, &seconds],
            )
            .await?;
            tx.commit().await?;
            Ok(BudgetOutcome::Granted {
                remaining: budget.map(|budget| (budget - used - seconds).max(0.0)),
            })
        })
    }

    fn refund_video_seconds<'a>(&'a self, token_id: &'a str, seconds: f64) -> StoreFuture<'a, ()> {
        self.errors.op("refund_video_seconds").run(async move {
            let client = self.pool.get().await?;
            refund_token(&**client, token_id, seconds.max(0.0)).await
        })
    }
}
