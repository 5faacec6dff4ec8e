//! Attune's sans-I/O heart: the wire model of the interface, the error
//! catalog, the per-session event state machines, whole-file merging and the
//! window plan. No sockets, no async runtime, no clocks: callers feed inputs
//! and send the outputs wherever they like.
//!
//! A whole file is one call, [`pipeline::analyze_bytes`]: media bytes in, the
//! windows of an upload job out (a live session fed in chunks is the
//! [`session::StreamSession`] example of the `attune` crate).
//!
//! ```
//! use attune_core::pipeline::{analyze_bytes, AnalysisOptions};
//! use attune_core::upload::Sections;
//! use attune_core::wire::{IncludeFlag, Model};
//!
//! // A bundled ten-second exchange between two voices.
//! let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/speech/two_voices.wav");
//! let bytes = std::fs::read(path)?;
//! let analysis = analyze_bytes(&bytes, &AnalysisOptions::new(Model::Inter2Audio))?;
//! assert_eq!(analysis.windows.len(), 2, "5 s windows");
//! assert!(analysis.params_version.starts_with("inter-2-audio/rules-"));
//! // The v2 job result, as the server answers it, with the sections asked for.
//! let result = analysis.job_result(Sections::from_flags(&[IncludeFlag::ConversationQualityOverall]));
//! let overall = result.conversation_quality.and_then(|q| q.overall).expect("asked for");
//! assert!((0.0..=100.0).contains(&overall.quality_index));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The state machines a stream session's events come from:
//!
//! ```
//! use attune_core::lifecycle::signals::{Detection, UpdatePolicy};
//! use attune_core::lifecycle::{ClosedWindow, SessionLifecycle};
//! use attune_core::wire::{
//!     EngagementLevel, Event, IncludeFlag, Modality, Probability, SignalType, Timestamp,
//! };
//!
//! // One v2 stream session that asked for the cumulative CQI.
//! let mut session = SessionLifecycle::new(
//!     UpdatePolicy::V2Stream,
//!     10.0,
//!     &[IncludeFlag::ConversationQualityOverall],
//! );
//! let hesitant = ClosedWindow {
//!     start: 0.0,
//!     end: 5.0,
//!     engagement: EngagementLevel::Neutral,
//!     detections: vec![Detection {
//!         signal_type: SignalType::Hesitation,
//!         probability: Probability::Medium,
//!         rationale: "3 pauses over 1.2 s".into(),
//!         modality: vec![Modality::Video],
//!     }],
//! };
//! let events = session.observe_window(&hesitant);
//! let types: Vec<_> = events.iter().map(|e| e.type_name()).collect();
//! assert_eq!(types, ["signal.detected", "engagement.updated"]);
//!
//! // Closing ends every open signal before `session.ended`.
//! let closing = session.close();
//! let types: Vec<_> = closing.iter().map(|e| e.type_name()).collect();
//! assert_eq!(types, ["conversation_quality.updated", "signal.ended", "session.ended"]);
//!
//! // Each payload goes on the socket inside the interface's envelope.
//! let envelope = Event {
//!     timestamp: Timestamp::now(),
//!     correlation_id: "conn-1".into(),
//!     data: closing[1].clone(),
//! };
//! let json: serde_json::Value = serde_json::from_str(&envelope.to_json()).unwrap();
//! assert_eq!(json["type"], "signal.ended");
//! assert_eq!(json["data"]["signal_type"], "hesitation");
//! assert_eq!(json["data"]["end"], 5.0);
//! ```
//!
//! Modules:
//! - [`wire`]: every resource, event and client frame of the interface, with
//!   serde spellings exactly as the interface gives them.
//! - [`error`]: the catalog of `ih` codes and [`ServiceError`].
//! - [`lifecycle`]: signal, engagement and CQI-cadence state machines, and
//!   their composition for one session.
//! - [`merge`] and [`upload`]: whole-file results from per-window results.
//! - [`window`]: how media is cut into analysis windows.
#![deny(missing_docs)]

pub mod access;
pub mod analysis;
pub mod backlog;
pub mod billing;
pub mod diarization;
pub mod error;
pub mod features;
pub mod feedback;
pub mod lifecycle;
pub mod live;
pub mod merge;
pub mod pipeline;
pub mod recommend;
pub mod session;
pub mod step;
pub mod transcript;
pub mod upload;
pub mod visual;
pub mod warm;
pub mod window;
pub mod wire;

pub use error::{ErrorCode, ServiceError};
pub use warm::{warm_up, WarmedUp};
