//! What a session is opened with: endpoint, model, limits.

use crate::access::Negotiated;
use crate::lifecycle::cadence::DEFAULT_PERIOD_SECONDS;
use crate::wire::{Endpoint, Model, Seconds};

/// The limits of one session. [`SessionLimits::default`] holds the
/// interface's reference values.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionLimits {
    /// Idle limit (`ih6003`); 0 disables. Reference 300.
    pub idle_timeout_seconds: u64,
    /// Maximum age (`ih6004`); 0 disables. Reference 3600.
    pub max_duration_seconds: u64,
    /// Longest drain after `session.close`.
    pub max_drain_seconds: u64,
    /// Smallest accepted binary frame (1).
    pub min_segment_size_bytes: u64,
    /// Largest accepted binary frame (`ih6002` above). Reference 33554432.
    pub max_segment_size_bytes: u64,
    /// Cumulative byte cap of a client token (`ih6008`), if any.
    pub max_bytes: Option<u64>,
    /// How long binary data may arrive with no decodable media (`ih6010`).
    pub hold_limit_seconds: Seconds,
    /// Length of one `conversation_quality.updated` period.
    pub quality_period_seconds: Seconds,
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits {
            idle_timeout_seconds: 300,
            max_duration_seconds: 3600,
            max_drain_seconds: 30,
            min_segment_size_bytes: 1,
            max_segment_size_bytes: 33_554_432,
            max_bytes: None,
            hold_limit_seconds: 30.0,
            quality_period_seconds: DEFAULT_PERIOD_SECONDS,
        }
    }
}

/// Everything a session is opened with.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionSetup {
    /// The endpoint.
    pub endpoint: Endpoint,
    /// The model settled by the handshake.
    pub model: Model,
    /// Models a v2 config frame may switch to.
    pub selectable_models: Vec<Model>,
    /// Limits.
    pub limits: SessionLimits,
    /// Base of error documentation links.
    pub docs_url: String,
    /// Session time at which the handshake was accepted (the age origin).
    pub opened_at: Seconds,
}

impl SessionSetup {
    /// A setup from a negotiated handshake with reference limits.
    pub fn new(endpoint: Endpoint, negotiated: Negotiated, docs_url: impl Into<String>) -> Self {
        SessionSetup {
            endpoint,
            model: negotiated.model,
            selectable_models: negotiated.selectable_models,
            limits: SessionLimits::default(),
            docs_url: docs_url.into(),
            opened_at: 0.0,
        }
    }
}
