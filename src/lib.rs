//! Attune as a library: conversation analysis in your own process, with no server and no
//! network. Recordings and live streams of conversations in, engagement states, social signals
//! and the Conversation Quality Index out, in the shapes of the public interface.
//!
//! This crate re-exports the workspace's library crates:
//! - [`core`] (`attune-core`): the analysis of files ([`core::pipeline::analyze_bytes`]) and of
//!   live sessions ([`core::session::StreamSession`], [`core::live::LiveAnalyzer`]), the wire
//!   model and the error catalog;
//! - [`media`] (`attune-media`): containers and codecs, from bytes to 16 kHz PCM and pictures;
//! - [`cqi`] (`attune-cqi`): the Conversation Quality Index.
//!
//! A live session, fed a recording in chunks as a WebSocket would deliver them: the session
//! engine decides what each frame means and what to send back, the analyzer turns media into
//! closed windows, and the caller carries out the engine's actions (`examples/stream_session.rs`
//! is the complete loop).
//!
//! ```
//! use attune::core::access::{negotiate, ALL_SCOPES};
//! use attune::core::live::LiveAnalyzer;
//! use attune::core::session::{Action, SessionSetup, StreamSession};
//! use attune::core::wire::{Endpoint, Model};
//! use std::collections::VecDeque;
//!
//! // Ten seconds of speech as raw 16 kHz PCM, sent in 8000-byte chunks.
//! let pcm = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/speech_16k_s16le.pcm"))?;
//! let scopes = ALL_SCOPES.iter().copied().collect();
//! let negotiated = negotiate(Endpoint::StreamV2, Some("inter-2-audio"), &scopes, Model::SERVED)
//!     .expect("every scope admits the session");
//! let setup = SessionSetup::new(Endpoint::StreamV2, negotiated, "https://docs.example");
//! let (mut session, first) = StreamSession::open(setup, 0.0);
//! let mut actions: VecDeque<Action> = first.into();
//! actions.extend(session.on_text(
//!     0.0,
//!     r#"{"audio_format": {"encoding": "pcm_s16le", "sample_rate": 16000, "channels": 1}}"#,
//! ));
//! let mut chunks = pcm.chunks(8000).map(<[u8]>::to_vec);
//! let mut analyzer = LiveAnalyzer::new(Model::Inter2Audio, Endpoint::StreamV2);
//! let mut sent = Vec::new();
//! let mut closed = false;
//! loop {
//!     let Some(action) = actions.pop_front() else {
//!         let now = analyzer.media_end();
//!         match chunks.next() {
//!             Some(chunk) => actions.extend(session.on_binary(now, chunk)),
//!             None if !closed => {
//!                 closed = true;
//!                 actions.extend(session.on_text(now, r#"{"type": "session.close"}"#));
//!             }
//!             None => break,
//!         }
//!         continue;
//!     };
//!     match action {
//!         Action::Send(event) => sent.push(event.type_name()),
//!         Action::SetAudioFormat(format) => analyzer.set_audio_format(format)?,
//!         Action::Media { segment, bytes } => {
//!             let output = analyzer.push(segment, &bytes, false);
//!             actions.extend(session.on_live_output(analyzer.media_end(), output));
//!         }
//!         Action::FinishMedia => {
//!             let output = analyzer.finish();
//!             actions.extend(session.on_live_output(analyzer.media_end(), output));
//!             actions.extend(session.on_drained());
//!         }
//!         Action::Recommend(_) => {}
//!         Action::Close { .. } => break,
//!     }
//! }
//! assert_eq!(sent.first(), Some(&"session.ready"));
//! assert!(sent.contains(&"engagement.updated"), "{sent:?}");
//! assert_eq!(sent.last(), Some(&"session.ended"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! For a whole file, [`core::pipeline::analyze_bytes`] is one call: see its example in
//! [`core`], or the README's (which runs as a doc-test of this crate).
#![deny(missing_docs)]
pub use attune_core as core;
pub use attune_cqi as cqi;
pub use attune_media as media;

/// The README's Rust example, compiled and run as a doc-test so it cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
