//! Checked configuration values: secrets that never print, URLs, model
//! names and counts that must be at least one.

use super::ConfigError;
use serde::Deserialize;

/// The demo's API key as configured (`demo_api_key`). It only ever leaves the
/// process as a hash lookup: `Debug` prints a placeholder, so a logged
/// configuration does not carry it.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct DemoApiKey(pub(super) String);

impl DemoApiKey {
    /// The key, for the one place that authenticates with it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl From<String> for DemoApiKey {
    fn from(key: String) -> DemoApiKey {
        DemoApiKey(key)
    }
}

impl std::fmt::Debug for DemoApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(crate::redact::REDACTED)
    }
}

/// A PostgreSQL store URL as configured (`store_url`). It may carry a
/// password, so `Debug` prints a placeholder.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct StoreUrl(pub(super) String);

impl StoreUrl {
    /// The URL, for the one place that connects with it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl From<String> for StoreUrl {
    fn from(url: String) -> StoreUrl {
        StoreUrl(url)
    }
}

impl std::fmt::Debug for StoreUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(crate::redact::REDACTED)
    }
}

pub(super) fn store_url(url: Option<StoreUrl>) -> Result<Option<StoreUrl>, ConfigError> {
    match url {
        Some(url) if !crate::store::is_postgres_url(url.expose()) => Err(ConfigError::Invalid(
            "store_url must be a PostgreSQL URL (`postgres://user:password@host:port/db`)".into(),
        )),
        other => Ok(other),
    }
}

pub(super) fn check_url(key: &str, url: &str, schemes: &[&str]) -> Result<String, ConfigError> {
    let url = url.trim().trim_end_matches('/');
    let has_host = schemes.iter().any(|scheme| {
        url.strip_prefix(scheme)
            .and_then(|rest| rest.strip_prefix("://"))
            .is_some_and(|rest| !rest.is_empty())
    });
    if has_host {
        Ok(url.to_owned())
    } else {
        Err(ConfigError::Invalid(format!(
            "{key} `{url}` must be an absolute {} URL",
            schemes.join(" or ")
        )))
    }
}

/// The stream models setting, checked: each a model this server can analyze.
pub(super) fn stream_models(models: Option<Vec<String>>) -> Result<Vec<String>, ConfigError> {
    let Some(models) = models else {
        return Ok(attune_core::wire::Model::SERVED
            .iter()
            .map(ToString::to_string)
            .collect());
    };
    for model in &models {
        let served = attune_core::wire::Model::parse(model)
            .is_some_and(|m| attune_core::wire::Model::SERVED.contains(&m));
        if !served {
            return Err(ConfigError::Invalid(format!(
                "stream_models: `{model}` is not a model this server analyzes (inter-2, inter-2-audio)"
            )));
        }
    }
    Ok(models)
}

/// The demo key setting, checked: empty means unset (so an exported but empty
/// variable disables the demo), anything else must have an API key's shape,
/// which a client token (`att_`) or a pasted placeholder does not.
pub(super) fn demo_api_key(key: Option<DemoApiKey>) -> Result<Option<DemoApiKey>, ConfigError> {
    let Some(DemoApiKey(key)) = key else {
        return Ok(None);
    };
    let key = key.trim();
    if key.is_empty() {
        return Ok(None);
    }
    if !crate::keys::ApiKey::is_well_formed(key) {
        return Err(ConfigError::Invalid(
            "demo_api_key must be an API key (`atk_` and 64 hex digits, as `attune keys create` \
             prints it)"
                .into(),
        ));
    }
    Ok(Some(DemoApiKey(key.to_owned())))
}

pub(super) fn at_least_one<T: PartialOrd + From<u8>>(
    key: &str,
    value: T,
) -> Result<T, ConfigError> {
    if value >= T::from(1) {
        Ok(value)
    } else {
        Err(ConfigError::Invalid(format!("{key} must be at least 1")))
    }
}
