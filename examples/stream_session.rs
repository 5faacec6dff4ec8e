//! A live stream session inside your own service, with no server and no socket: the same
//! session engine and streaming analyzer the reference server runs, fed a file in chunks
//! as if they arrived over a WebSocket, printing every event envelope as a JSON line.
//!
//! Run: `cargo run --release --example stream_session -- [FILE] [CHUNK_BYTES]`
//! (default: the bundled 9 s WebM, 4096-byte chunks). A `.pcm` file is sent as raw s16le
//! 16 kHz audio on the `inter-2-audio` model, anything else as container media on `inter-2`.
//!
//! The embedding service owns the loop: it hands the engine what happened (a text frame, a
//! binary frame, the analyzer's output, the passing of time) and carries out the returned
//! actions. Here analysis runs inline; a service with many sessions would run
//! [`LiveAnalyzer`] on worker threads, as `attune serve` does.

use attune::core::access::{negotiate, ALL_SCOPES};
use attune::core::live::LiveAnalyzer;
use attune::core::session::{Action, SessionSetup, StreamSession};
use attune::core::wire::{Endpoint, Event, Model, Timestamp};
use std::collections::VecDeque;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().unwrap_or_else(|| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/segments/continuous.webm"
        )
        .to_owned()
    });
    let chunk: usize = args.next().map_or(Ok(4096), |a| a.parse())?;
    let media = std::fs::read(&path)?;
    let raw_pcm = path.ends_with(".pcm");
    let model = if raw_pcm { "inter-2-audio" } else { "inter-2" };

    // The handshake's decisions: this credential holds every scope.
    let scopes = ALL_SCOPES.iter().copied().collect();
    let negotiated = negotiate(Endpoint::StreamV2, Some(model), &scopes, Model::SERVED)
        .map_err(|refusal| refusal.error.to_string())?;
    let setup = SessionSetup::new(Endpoint::StreamV2, negotiated, "https://docs.example");
    let (mut session, first) = StreamSession::open(setup, 0.0);
    let mut analyzer: Option<LiveAnalyzer> = None;

    // What "arrives from the client", in order.
    let mut inbound: VecDeque<Inbound> = VecDeque::new();
    let mut config = serde_json::json!({
        "include": ["conversation_quality_overall", "conversation_quality_timeline"]
    });
    if raw_pcm {
        config["audio_format"] =
            serde_json::json!({"encoding": "pcm_s16le", "sample_rate": 16000, "channels": 1});
    }
    inbound.push_back(Inbound::Text(config.to_string()));
    inbound.extend(
        media
            .chunks(chunk.max(1))
            .map(|c| Inbound::Binary(c.to_vec())),
    );
    inbound.push_back(Inbound::Text(r#"{"type":"session.close"}"#.to_owned()));

    // Session time: here, media seconds read so far stand in for the clock.
    let now = |analyzer: &Option<LiveAnalyzer>| analyzer.as_ref().map_or(0.0, |a| a.media_end());
    let mut actions: VecDeque<Action> = first.into();
    loop {
        let Some(action) = actions.pop_front() else {
            let Some(next) = inbound.pop_front() else {
                break;
            };
            let t = now(&analyzer);
            actions.extend(match next {
                Inbound::Text(text) => session.on_text(t, &text),
                Inbound::Binary(bytes) => session.on_binary(t, bytes),
            });
            continue;
        };
        match action {
            Action::Send(data) => {
                let event = Event {
                    timestamp: Timestamp::now(),
                    correlation_id: "example".to_owned(),
                    data,
                };
                println!("{}", event.to_json());
            }
            Action::Media { segment, bytes } => {
                let live = analyzer
                    .get_or_insert_with(|| LiveAnalyzer::new(session.model(), Endpoint::StreamV2));
                let output = live.push(segment, &bytes, false);
                let t = live.media_end();
                actions.extend(session.on_live_output(t, output));
            }
            Action::SetAudioFormat(format) => {
                let live = analyzer
                    .get_or_insert_with(|| LiveAnalyzer::new(session.model(), Endpoint::StreamV2));
                live.set_audio_format(format)?;
            }
            Action::FinishMedia => {
                if let Some(live) = analyzer.as_mut() {
                    let output = live.finish();
                    let t = live.media_end();
                    actions.extend(session.on_live_output(t, output));
                }
                actions.extend(session.on_drained());
            }
            // Streams never ask for recommendations; realtime sessions would call a
            // `Recommender` here and hand its text to `session.on_recommendation`.
            Action::Recommend(_) => {}
            Action::Close { code, reason } => {
                eprintln!("closed: {code} {reason}");
                break;
            }
        }
    }
    Ok(())
}

enum Inbound {
    Text(String),
    Binary(Vec<u8>),
}
