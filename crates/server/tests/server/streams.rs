//! The WebSocket streams over loopback with a real client: handshake and both credential
//! forms, every row of the interface's "Stream and realtime session" table, every event
//! type, v1 vs v2, the three ways media arrives, the closing sequence, limits and faults.
//! Time-driven rules run on a sped-up session clock (`stream_time_scale`), never by sleeping
//! for minutes.

use crate::common::{client, mint_token, url, Harness};
use crate::ws::{connect, connect_with, errors, raw_upgrade, types, Auth, Ws};
use attune_server::{KeyStore, Scope};
use serde_json::{json, Value};

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/../../tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// About 31 s of speech (three espeak-ng fixtures back to back) as raw s16le at 16 kHz.
fn speech_pcm() -> Vec<u8> {
    let mut bytes = Vec::new();
    for name in ["baseline", "hesitant", "two_voices"] {
        bytes.extend_from_slice(&fixture(&format!("speech/{name}.wav"))[44..]);
    }
    bytes
}

const PCM_FORMAT: &str =
    r#"{"audio_format":{"encoding":"pcm_s16le","sample_rate":16000,"channels":1}}"#;

async fn stream_key(h: &Harness) -> String {
    h.key("streamer", &Scope::ALL).await
}

/// Event types between `session.ready` and the close, in order.
fn count(events: &[Value], kind: &str) -> usize {
    events.iter().filter(|e| e["type"] == kind).count()
}

#[tokio::test]
async fn session_ready_comes_once_first_with_the_reference_values() {
    let h = Harness::new().await;
    let server = h.start().await;
    let key = stream_key(&h).await;

    let mut v1 = connect(&server, "/v1/stream/analyze", Auth::Header(&key)).await;
    assert!(v1.correlation_id.is_some());
    let ready = v1.ready().await;
    assert_eq!(ready["session_idle_timeout_seconds"], 300);
    assert_eq!(ready["session_max_duration_seconds"], 3600);
    assert_eq!(ready["max_segment_size_bytes"], 33_554_432);
    assert_eq!(ready["min_segment_size_bytes"], 1);
    assert!(ready["max_segment_duration_seconds"].is_null());
    let options = &ready["supported_session_config_options"];
    assert_eq!(
        options["include"],
        json!([
            "conversation_quality_overall",
            "conversation_quality_timeline"
        ])
    );
    assert!(
        options["model"].is_null(),
        "v1 advertises no models: {options}"
    );
    let (events, code) = v1.close_gracefully().await;
    assert_eq!(types(&events), ["session.closing", "session.ended"]);
    assert_eq!(events[1]["data"]["reason"], "client_shutdown");
    assert_eq!(code, 1000);

    let mut v2 = connect(&server, "/v2/stream/analyze", Auth::Header(&key)).await;
    let ready = v2.ready().await;
    assert_eq!(
        ready["supported_session_config_options"]["model"],
        json!(["inter-2", "inter-2-audio"])
    );
    // A key with only the plain stream scope may select inter-2 alone.
    let plain = h.key("plain", &[Scope::Stream]).await;
    let mut v2 = connect(&server, "/v2/stream/analyze", Auth::Header(&plain)).await;
    assert_eq!(
        v2.ready().await["supported_session_config_options"]["model"],
        json!(["inter-2"])
    );
    server.shutdown().await;
}

#[tokio::test]
async fn browsers_authenticate_with_the_subprotocol_pair_and_only_access_token_is_echoed() {
    let h = Harness::new().await;
    let server = h.start().await;
    let key = stream_key(&h).await;
    let token = mint_token(&server, &key, json!({"scopes": ["service.stream"]})).await;

    let mut ws = connect(&server, "/v2/stream/analyze", Auth::Subprotocol(&token)).await;
    assert_eq!(ws.protocol.as_deref(), Some("access_token"));
    ws.ready().await;

    // Both present: Authorization wins (here a good key beside a bad token) and no
    // subprotocol is acknowledged (a strict client then refuses the connection, so the
    // handshake is read raw).
    let response = raw_upgrade(
        &server,
        "/v2/stream/analyze",
        &[
            ("authorization", &format!("Bearer {key}")),
            (
                "sec-websocket-protocol",
                "access_token, att_not_a_real_token",
            ),
        ],
    )
    .await;
    assert!(response.starts_with("HTTP/1.1 101"), "{response}");
    assert!(
        !response
            .to_ascii_lowercase()
            .contains("sec-websocket-protocol"),
        "{response}"
    );
    // The credential is never echoed.
    let response = raw_upgrade(
        &server,
        "/v2/stream/analyze",
        &[("sec-websocket-protocol", &format!("access_token, {token}"))],
    )
    .await;
    assert!(!response.contains(&token), "{response}");
    // And a bad Authorization is not rescued by a good subprotocol credential.
    let response = raw_upgrade(
        &server,
        "/v2/stream/analyze",
        &[
            ("authorization", "Bearer atk_bogus"),
            ("sec-websocket-protocol", &format!("access_token, {token}")),
        ],
    )
    .await;
    assert!(response.starts_with("HTTP/1.1 101"), "{response}");
    assert!(response.contains(r#""code":"ih2001""#), "{response}");
    server.shutdown().await;
}

/// Connects, expects exactly one `error` event and the close code.
async fn refused(ws: &mut Ws) -> (String, u16) {
    let (events, code) = ws.rest().await;
    assert_eq!(types(&events), ["error"], "{events:?}");
    (events[0]["data"]["code"].as_str().unwrap().to_owned(), code)
}

#[tokio::test]
async fn handshake_refusals_send_the_error_envelope_then_the_close_code() {
    let h = Harness::new().await;
    let server = h
        .start_with(
            |c| c.stream_models = Some(vec!["inter-2".into()]),
            h.services(),
        )
        .await;
    let key = stream_key(&h).await;
    let upload_only = h.key("uploader", &[Scope::Upload]).await;
    let no_audio_scope = h.key("plain", &[Scope::Stream]).await;
    let v2 = "/v2/stream/analyze";
    let cases: Vec<(String, Auth<'_>, &str, u16)> = vec![
        (v2.into(), Auth::Nothing, "ih2002", 4001),
        (v2.into(), Auth::Header("atk_0000"), "ih2001", 4001),
        (
            "/v1/stream/analyze".into(),
            Auth::Header(&upload_only),
            "ih2003",
            4003,
        ),
        (
            format!("{v2}?model=inter-2-audio"),
            Auth::Header(&no_audio_scope),
            "ih2003",
            4003,
        ),
        (
            format!("{v2}?model=inter-3"),
            Auth::Header(&key),
            "ih4005",
            1008,
        ),
        (
            format!("{v2}?model=inter-2-deep"),
            Auth::Header(&key),
            "ih4005",
            1008,
        ),
        // This instance serves inter-2 only.
        (
            format!("{v2}?model=inter-2-audio"),
            Auth::Header(&key),
            "ih1003",
            1013,
        ),
    ];
    for (path, auth, code, close) in cases {
        let mut ws = connect(&server, &path, auth).await;
        assert_eq!(refused(&mut ws).await, (code.to_owned(), close), "{path}");
    }
    // v1 reads no model parameter.
    let mut ws = connect(
        &server,
        "/v1/stream/analyze?model=inter-3",
        Auth::Header(&key),
    )
    .await;
    ws.ready().await;
    // A plain GET is told to upgrade.
    let response = client()
        .get(url(&server, "/v2/stream/analyze"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 426);
    server.shutdown().await;
}

#[tokio::test]
async fn client_token_refusals_origin_revoked_budget_and_byte_cap() {
    let h = Harness::new().await;
    let server = h.start().await;
    let key = stream_key(&h).await;
    let path = "/v2/stream/analyze";

    let browser = mint_token(
        &server,
        &key,
        json!({"allowed_origins": ["https://app.example"]}),
    )
    .await;
    let mut ws = connect(&server, path, Auth::Subprotocol(&browser)).await;
    assert_eq!(refused(&mut ws).await, ("ih2013".to_owned(), 4003));
    let mut ws = connect_with(
        &server,
        path,
        Auth::Subprotocol(&browser),
        &[("origin", "https://app.example")],
    )
    .await;
    ws.ready().await;
    drop(ws);

    let revoked = mint_token(&server, &key, json!({})).await;
    let answer = client()
        .post(url(&server, "/v1/client_tokens/revoke"))
        .bearer_auth(&key)
        .header("content-type", "application/json")
        .body(json!({"token": revoked}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let mut ws = connect(&server, path, Auth::Subprotocol(&revoked)).await;
    assert_eq!(refused(&mut ws).await, ("ih2014".to_owned(), 4001));

    // The byte cap closes the session with ih6008 once passed.
    let capped = mint_token(&server, &key, json!({"max_bytes": 50_000})).await;
    let mut ws = connect(&server, path, Auth::Subprotocol(&capped)).await;
    ws.ready().await;
    let media = fixture("segments/continuous.webm");
    ws.binary(&media[..60_000]).await;
    ws.binary(&media[60_000..]).await;
    let (events, code) = ws.rest().await;
    assert_eq!(errors(&events).last().unwrap().0, "ih6008");
    assert_eq!(code, 1008);

    // A video budget of 4 s: the first 5 s window of analysis exhausts it (ih3006, 4029),
    // and the next session on the token is refused at the handshake.
    let budget = mint_token(&server, &key, json!({"max_video_seconds": 4})).await;
    let mut ws = connect(&server, path, Auth::Subprotocol(&budget)).await;
    ws.ready().await;
    ws.binary(&media).await;
    let (events, code) = ws.rest().await;
    assert_eq!(errors(&events).last().unwrap().0, "ih3006", "{events:?}");
    assert_eq!(code, 4029);
    server.shutdown().await;
}

#[tokio::test]
async fn config_frames_on_v1_and_v2() {
    let h = Harness::new().await;
    let server = h.start().await;
    let key = stream_key(&h).await;
    let plain = h.key("plain", &[Scope::Stream]).await;

    // v2: include replaces the set, unknown values are ignored, model is echoed.
    let mut ws = connect(&server, "/v2/stream/analyze", Auth::Header(&key)).await;
    ws.ready().await;
    ws.json(json!({"include": ["conversation_quality_overall", "nonsense"]}))
        .await;
    let updated = ws.until("session.updated").await;
    assert_eq!(
        updated["data"],
        json!({"include": ["conversation_quality_overall"], "model": "inter-2"})
    );
    ws.json(json!({})).await;
    assert_eq!(
        ws.until("session.updated").await["data"]["include"],
        json!([])
    );
    // An unknown field on v2 is a non-fatal error; the session stays open.
    ws.json(json!({"color": "blue"})).await;
    let error = ws.until("error").await;
    assert_eq!(error["data"]["code"], "ih6001");
    ws.json(json!({"model": "inter-2-audio"})).await;
    assert_eq!(
        ws.until("session.updated").await["data"]["model"],
        "inter-2-audio"
    );
    // After the first chunk the model is locked.
    ws.binary(&fixture("segments/seg0.webm")).await;
    ws.json(json!({"model": "inter-2"})).await;
    let error = ws.until("error").await;
    assert_eq!(error["data"]["code"], "ih4005");
    let (events, code) = ws.close_gracefully().await;
    assert_eq!(code, 1000, "{events:?}");

    // A model the credential lacks: non-fatal ih2003, the session continues.
    let mut ws = connect(&server, "/v2/stream/analyze", Auth::Header(&plain)).await;
    ws.ready().await;
    ws.json(json!({"model": "inter-2-audio"})).await;
    assert_eq!(ws.until("error").await["data"]["code"], "ih2003");
    ws.json(json!({"include": []})).await;
    assert_eq!(
        ws.until("session.updated").await["data"]["model"],
        "inter-2"
    );

    // v1: session.updated carries no model; a frame naming model is fatal ih6001.
    let mut ws = connect(&server, "/v1/stream/analyze", Auth::Header(&key)).await;
    ws.ready().await;
    ws.json(json!({"include": ["conversation_quality_timeline"]}))
        .await;
    let updated = ws.until("session.updated").await;
    assert_eq!(
        updated["data"],
        json!({"include": ["conversation_quality_timeline"], "model": null})
    );
    ws.json(json!({"model": "inter-2"})).await;
    let (events, code) = ws.rest().await;
    assert_eq!(errors(&events)[0].0, "ih6001");
    assert_eq!(code, 1008);
    server.shutdown().await;
}

#[tokio::test]
async fn raw_pcm_cut_at_odd_offsets_is_analyzed_into_events() {
    let h = Harness::new().await;
    let server = h.start().await;
    let key = stream_key(&h).await;
    let mut ws = connect(
        &server,
        "/v2/stream/analyze?model=inter-2-audio",
        Auth::Header(&key),
    )
    .await;
    ws.ready().await;
    // Each config frame replaces the whole config: the format and the flags go together.
    ws.json(json!({
        "include": ["conversation_quality_overall", "conversation_quality_timeline"],
        "audio_format": {"encoding": "pcm_s16le", "sample_rate": 16000, "channels": 1},
    }))
    .await;
    ws.until("session.updated").await;
    let pcm = speech_pcm();
    let mut at = 0;
    for size in [4097usize, 1, 333, 16_001].iter().cycle() {
        if at >= pcm.len() {
            break;
        }
        let end = (at + size).min(pcm.len());
        ws.binary(&pcm[at..end]).await;
        at = end;
    }
    let (events, code) = ws.close_gracefully().await;
    assert_eq!(code, 1000);
    assert!(errors(&events).is_empty(), "{:?}", errors(&events));
    let kinds = types(&events);
    assert_eq!(kinds.last().map(String::as_str), Some("session.ended"));
    assert!(count(&events, "engagement.updated") >= 1, "{kinds:?}");
    assert!(count(&events, "signal.detected") >= 1, "{kinds:?}");
    // An active signal's evidence changes from one window to the next (v2 reports a new
    // rationale as an update).
    assert!(count(&events, "signal.updated") >= 1, "{kinds:?}");
    assert!(
        count(&events, "conversation_quality.updated") >= 2,
        "{kinds:?}"
    );
    // Every detected signal ends before the session does, on the session clock.
    assert_eq!(
        count(&events, "signal.detected"),
        count(&events, "signal.ended"),
        "{kinds:?}"
    );
    for event in &events {
        let data = &event["data"];
        if event["type"] == "signal.detected" {
            // v2 stream events leave modality out (docs/INTERFACE.md).
            assert!(data.get("modality").is_none(), "{data}");
            assert!(data["rationale"].as_str().unwrap().len() > 20, "{data}");
            let start = data["start"].as_f64().unwrap();
            assert!((0.0..32.0).contains(&start), "{start}");
        }
        if event["type"] == "conversation_quality.updated" {
            let timeline = data["timeline"].as_array().unwrap();
            assert_eq!(timeline.len(), 1, "one period per event: {data}");
            assert!(data["overall"]["quality_index"].is_number(), "{data}");
        }
    }
}

#[tokio::test]
async fn continuous_webm_cut_anywhere_and_three_second_segments_both_stream() {
    let h = Harness::new().await;
    let server = h.start().await;
    let key = stream_key(&h).await;

    let media = fixture("segments/continuous.webm");
    let mut ws = connect(&server, "/v1/stream/analyze", Auth::Header(&key)).await;
    ws.ready().await;
    let mut at = 0usize;
    let mut seed = 7u64;
    while at < media.len() {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let size = 1 + (seed >> 33) as usize % 9000;
        let end = (at + size).min(media.len());
        ws.binary(&media[at..end]).await;
        at = end;
    }
    let (continuous, code) = ws.close_gracefully().await;
    assert_eq!(code, 1000);
    assert!(errors(&continuous).is_empty(), "{continuous:?}");
    assert!(count(&continuous, "engagement.updated") >= 1);

    let mut ws = connect(&server, "/v1/stream/analyze", Auth::Header(&key)).await;
    ws.ready().await;
    for name in ["seg0", "seg1", "seg2"] {
        ws.binary(&fixture(&format!("segments/{name}.webm"))).await;
    }
    let (segments, code) = ws.close_gracefully().await;
    assert_eq!(code, 1000);
    assert!(errors(&segments).is_empty(), "{segments:?}");
    let engagement: Vec<&Value> = segments
        .iter()
        .filter(|e| e["type"] == "engagement.updated")
        .collect();
    assert!(!engagement.is_empty());
    // Times are session-cumulative: the second window starts at 5 s of the joined segments.
    for e in &engagement {
        let start = e["data"]["start"].as_f64().unwrap();
        assert!(start == 0.0 || start == 5.0, "{start}");
    }
}

#[tokio::test]
async fn media_problems_are_non_fatal_and_name_their_segment() {
    let h = Harness::new().await;
    let server = h.start().await;
    let key = stream_key(&h).await;
    let mut ws = connect(&server, "/v2/stream/analyze", Auth::Header(&key)).await;
    ws.ready().await;
    ws.binary(&[]).await; // segment 0: empty
    ws.binary(&vec![0u8; 33_554_433]).await; // segment 1: above 32 MiB
    ws.binary(&fixture("text.txt")).await; // segment 2: not media
    ws.binary(&fixture("segments/seg0.webm")).await; // segment 3: fine
    ws.binary(&fixture("webm_opus.webm")).await; // segment 4: audio without video
    let (events, code) = ws.close_gracefully().await;
    assert_eq!(code, 1000, "{events:?}");
    let errs = errors(&events);
    assert_eq!(
        errs,
        vec![
            ("ih6007".to_owned(), json!(0)),
            ("ih6002".to_owned(), json!(1)),
            ("ih6007".to_owned(), json!(2)),
            ("ih5001".to_owned(), json!(4)),
        ]
    );
    // The audio-only segment left its window without video: coverage.degraded.
    let degraded = events
        .iter()
        .find(|e| e["type"] == "coverage.degraded")
        .expect("coverage.degraded");
    assert_eq!(degraded["data"]["reason"], "video_gap");
    assert!(!degraded["data"]["ranges"].as_array().unwrap().is_empty());
}

#[tokio::test]
async fn the_closing_phase_follows_the_table() {
    let h = Harness::new().await;
    let server = h.start().await;
    let key = stream_key(&h).await;
    let mut ws = connect(&server, "/v2/stream/analyze", Auth::Header(&key)).await;
    ws.ready().await;
    // session.close with extra fields: non-fatal error, still open.
    ws.json(json!({"type": "session.close", "now": true})).await;
    assert_eq!(ws.until("error").await["data"]["code"], "ih4005");
    ws.binary(&fixture("segments/seg0.webm")).await;
    ws.json(json!({"type": "session.close"})).await;
    let closing = ws.until("session.closing").await;
    assert_eq!(closing["data"]["max_drain_seconds"], 30);
    // Binary after close: ih6009 once, then silence; config and junk text are answered.
    ws.binary(&fixture("segments/seg1.webm")).await;
    ws.binary(&fixture("segments/seg2.webm")).await;
    ws.json(json!({"include": []})).await;
    ws.text("{not json").await;
    ws.json(json!({"type": "session.close"})).await; // duplicate: ignored
    let (events, code) = ws.rest().await;
    assert_eq!(code, 1000);
    let errs = errors(&events);
    assert_eq!(errs[0], ("ih6009".to_owned(), json!(1)), "{events:?}");
    assert_eq!(errs.iter().filter(|e| e.0 == "ih6009").count(), 1);
    assert!(errs.iter().any(|e| e.0 == "ih4006"), "{errs:?}");
    assert_eq!(count(&events, "session.updated"), 1);
    assert_eq!(
        count(&events, "session.closing"),
        0,
        "duplicate close ignored"
    );
    let kinds = types(&events);
    let ended = kinds.iter().position(|k| k == "session.ended").unwrap();
    assert_eq!(ended, kinds.len() - 1);
    assert!(kinds[..ended]
        .iter()
        .all(|k| k != "signal.detected" || kinds[..ended].contains(&"signal.ended".to_owned())));
}

#[tokio::test]
async fn time_driven_limits_on_a_fast_session_clock() {
    let h = Harness::new().await;
    // 1 real second = 200 session seconds: idle 300 s = 1.5 s, hold 30 s = 0.15 s.
    let server = h
        .start_with(|c| c.stream_time_scale = Some(200), h.services())
        .await;
    let key = stream_key(&h).await;
    let path = "/v2/stream/analyze";

    let mut idle = connect(&server, path, Auth::Header(&key)).await;
    assert_eq!(idle.ready().await["session_idle_timeout_seconds"], 300);
    let (events, code) = idle.rest().await;
    assert_eq!(errors(&events)[0].0, "ih6003");
    assert_eq!(code, 4008);

    // Bytes that never become media: ih6010 after the hold limit.
    let mut stuck = connect(&server, path, Auth::Header(&key)).await;
    stuck.ready().await;
    stuck.binary(&[0x1a, 0x45, 0xdf, 0xa3]).await; // an EBML magic and nothing after it
    let (events, code) = stuck.rest().await;
    assert_eq!(errors(&events).last().unwrap().0, "ih6010", "{events:?}");
    assert_eq!(code, 1008);
    server.shutdown().await;

    // Maximum duration: 3600 s = 18 s real at 200x; kept busy so idle never fires.
    let server = h
        .start_with(
            |c| {
                c.stream_time_scale = Some(200);
                c.stream_max_duration_seconds = Some(600);
            },
            h.services(),
        )
        .await;
    let mut long = connect(&server, path, Auth::Header(&key)).await;
    assert_eq!(long.ready().await["session_max_duration_seconds"], 600);
    let ping = async {
        loop {
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
    };
    let mut ws_events = Vec::new();
    tokio::select! {
        () = ping => {}
        result = async {
            loop {
                long.json(json!({})).await;
                tokio::time::sleep(std::time::Duration::from_millis(300)).await;
                match tokio::time::timeout(std::time::Duration::from_millis(10), long.event()).await {
                    Ok(Some(event)) => ws_events.push(event),
                    Ok(None) => break,
                    Err(_) => {}
                }
            }
        } => result,
    }
    let (rest, code) = long.rest().await;
    ws_events.extend(rest);
    assert_eq!(errors(&ws_events).last().unwrap().0, "ih6004");
    assert_eq!(code, 1008);
    server.shutdown().await;
}

#[tokio::test]
async fn server_shutdown_warns_then_goes_away() {
    let h = Harness::new().await;
    // Notice 300 s at 100x = 3 s real; the second warning 30 s before the end.
    let mut server = h
        .start_with(
            |c| {
                c.stream_time_scale = Some(100);
                c.stream_shutdown_notice_seconds = Some(300);
                // Idle would end the session at the same moment as the shutdown.
                c.stream_idle_timeout_seconds = Some(0);
            },
            h.services(),
        )
        .await;
    let key = stream_key(&h).await;
    let mut ws = connect(&server, "/v2/stream/analyze", Auth::Header(&key)).await;
    ws.ready().await;
    server.begin_shutdown();
    let (events, code) = ws.rest().await;
    let warnings: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "error" && e["data"]["code"] == "ih6006")
        .collect();
    assert_eq!(warnings.len(), 2, "{events:?}");
    let first = warnings[0]["data"]["seconds_remaining"].as_u64().unwrap();
    let second = warnings[1]["data"]["seconds_remaining"].as_u64().unwrap();
    assert!((290..=300).contains(&first), "{first}");
    assert!(second <= 30, "{second}");
    assert_eq!(errors(&events).last().unwrap().0, "ih6005");
    assert_eq!(code, 1001);
    server.stopped().await;
}

#[tokio::test]
async fn a_session_behind_its_stream_drops_video_and_says_so() {
    let h = Harness::new().await;
    // Any wait for analysis counts as behind.
    let server = h
        .start_with(|c| c.stream_max_lag_ms = Some(0), h.services())
        .await;
    let key = stream_key(&h).await;
    let mut ws = connect(&server, "/v1/stream/analyze", Auth::Header(&key)).await;
    ws.ready().await;
    for name in ["seg0", "seg1", "seg2"] {
        ws.binary(&fixture(&format!("segments/{name}.webm"))).await;
    }
    let (events, code) = ws.close_gracefully().await;
    assert_eq!(code, 1000);
    let dropped: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "coverage.dropped")
        .collect();
    assert!(!dropped.is_empty(), "{events:?}");
    assert_eq!(dropped[0]["data"]["ranges"][0]["start"], 0.0);
}

/// A small deterministic generator for the fuzz test.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

#[tokio::test]
async fn thousands_of_random_and_mutated_frames_never_wedge_a_session() {
    let h = Harness::new().await;
    let server = h.start().await;
    let key = stream_key(&h).await;
    let mut ws = connect(&server, "/v2/stream/analyze", Auth::Header(&key)).await;
    ws.ready().await;
    let seeds: Vec<Vec<u8>> = vec![
        br#"{"include":["conversation_quality_overall"]}"#.to_vec(),
        br#"{"model":"inter-2-audio"}"#.to_vec(),
        PCM_FORMAT.as_bytes().to_vec(),
        br#"{"type":"transcript.updated","transcript":[]}"#.to_vec(),
        br#"{"type":"session.close","x":1}"#.to_vec(),
    ];
    let media = fixture("segments/seg0.webm");
    let mut rng = Lcg(42);
    let reader = async |ws: &mut Ws| {
        // Drain what is waiting without blocking the sender for long.
        while let Ok(Some(_)) =
            tokio::time::timeout(std::time::Duration::from_millis(1), ws.event()).await
        {}
    };
    for case in 0..3000u32 {
        if case % 3 == 0 {
            // Binary: a slice of media with a few bytes flipped, or random bytes.
            let start = rng.next() as usize % media.len();
            let len = 1 + rng.next() as usize % 4000;
            let mut bytes = media[start..(start + len).min(media.len())].to_vec();
            for _ in 0..(rng.next() % 8) {
                let i = rng.next() as usize % bytes.len();
                bytes[i] ^= 1 << (rng.next() % 8);
            }
            ws.binary(&bytes).await;
        } else {
            let seed = &seeds[rng.next() as usize % seeds.len()];
            let mut text = seed.clone();
            for _ in 0..(rng.next() % 4) {
                let i = rng.next() as usize % text.len();
                match rng.next() % 3 {
                    0 => text[i] = b"{}[]\",:0a-"[rng.next() as usize % 10],
                    1 => {
                        text.remove(i);
                    }
                    _ => text.insert(i, b" x\"9"[rng.next() as usize % 4]),
                }
            }
            ws.text(&String::from_utf8_lossy(&text)).await;
        }
        if case % 50 == 0 {
            reader(&mut ws).await;
        }
    }
    // Still answering: a valid config frame is acknowledged, then a clean close.
    ws.json(json!({"include": []})).await;
    let mut acknowledged = false;
    while let Some(event) = ws.event().await {
        if event["type"] == "session.updated" && event["data"]["include"] == json!([]) {
            acknowledged = true;
            break;
        }
    }
    assert!(
        acknowledged,
        "the session stopped answering: {:?}",
        ws.closed
    );
    let (_, code) = ws.close_gracefully().await;
    assert_eq!(code, 1000);
    server.shutdown().await;
}

#[tokio::test]
async fn uploads_and_streams_share_a_client_tokens_video_budget() {
    let h = Harness::new().await;
    let server = h.start().await;
    let key = stream_key(&h).await;
    let scopes = json!(["service.upload", "service.upload.inter-2", "service.stream"]);
    let media = fixture("segments/continuous.webm"); // 9 s: windows of 5 s and 4 s

    // 20 s of budget covers the 9 s stream alone...
    let alone = mint_token(
        &server,
        &key,
        json!({"scopes": scopes, "max_video_seconds": 20}),
    )
    .await;
    let mut ws = connect(&server, "/v2/stream/analyze", Auth::Subprotocol(&alone)).await;
    ws.ready().await;
    ws.binary(&media).await;
    let (events, code) = ws.close_gracefully().await;
    assert_eq!(code, 1000, "{events:?}");

    // ...but not after a 12 s upload on the same token: the stream's second window finds 3 s.
    let shared = mint_token(
        &server,
        &key,
        json!({"scopes": scopes, "max_video_seconds": 20}),
    )
    .await;
    let upload = crate::common::submit(&server, &shared, "inter-2", &[]).await;
    assert_eq!(upload.status(), 202);
    let mut ws = connect(&server, "/v2/stream/analyze", Auth::Subprotocol(&shared)).await;
    ws.ready().await;
    ws.binary(&media).await;
    ws.json(json!({"type": "session.close"})).await;
    let (events, code) = ws.rest().await;
    assert_eq!(errors(&events).last().unwrap().0, "ih3006", "{events:?}");
    assert_eq!(code, 4029);
    // The window the budget covered was reported before the refusal.
    assert!(count(&events, "engagement.updated") >= 1, "{events:?}");
    server.shutdown().await;
}

#[tokio::test]
async fn a_client_token_opens_as_many_sessions_at_once_as_its_cap() {
    let h = Harness::new().await;
    let server = h.start().await;
    let key = stream_key(&h).await;
    let token = mint_token(&server, &key, json!({"max_concurrent": 1})).await;
    let path = "/v2/stream/analyze";
    let mut first = connect(&server, path, Auth::Subprotocol(&token)).await;
    first.ready().await;
    let mut second = connect(&server, path, Auth::Subprotocol(&token)).await;
    assert_eq!(refused(&mut second).await, ("ih3002".to_owned(), 4029));
    let (_, code) = first.close_gracefully().await;
    assert_eq!(code, 1000);
    // The place is given back when the session ends (the handler may need a moment).
    let mut reopened = None;
    for _ in 0..50 {
        let mut ws = connect(&server, path, Auth::Subprotocol(&token)).await;
        let event = ws.event().await.expect("an event");
        if event["type"] == "session.ready" {
            reopened = Some(ws);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(
        reopened.is_some(),
        "the token's session place was not given back"
    );
    server.shutdown().await;
}

/// Issue 11, defect 7: a message over the socket's read cap (lowered here from 64 MiB) is
/// answered with an `ih6002` envelope and close 1009, not a silent 1000; whether it comes as
/// one frame or as fragments that add up to more than the cap.
#[tokio::test]
async fn a_message_over_the_socket_cap_answers_ih6002_and_closes_1009() {
    use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};
    use tokio_tungstenite::tungstenite::protocol::frame::Frame;
    let h = Harness::new().await;
    let server = h
        .start_with(|c| c.stream_max_message_bytes = Some(1 << 20), h.services())
        .await;
    let key = stream_key(&h).await;

    let mut ws = connect(&server, "/v2/stream/analyze", Auth::Header(&key)).await;
    ws.ready().await;
    ws.binary(&vec![0x1a; 3 << 20]).await;
    let (events, code) = ws.rest().await;
    assert_eq!(errors(&events), [("ih6002".to_owned(), Value::Null)]);
    assert_eq!(code, 1009);

    // Three fragments of 600 KiB: each under the cap, the message over it.
    let mut ws = connect(&server, "/v1/stream/analyze", Auth::Header(&key)).await;
    ws.ready().await;
    let part = vec![0x1a; 600 << 10];
    ws.frame(Frame::message(
        part.clone(),
        OpCode::Data(Data::Binary),
        false,
    ))
    .await;
    ws.frame(Frame::message(
        part.clone(),
        OpCode::Data(Data::Continue),
        false,
    ))
    .await;
    ws.frame(Frame::message(part, OpCode::Data(Data::Continue), true))
        .await;
    let (events, code) = ws.rest().await;
    let data = &events.iter().find(|e| e["type"] == "error").unwrap()["data"];
    assert_eq!(data["code"], "ih6002", "{events:?}");
    assert!(
        data["link"]
            .as_str()
            .unwrap()
            .ends_with("#ih6002-message-too-large"),
        "{data}"
    );
    assert_eq!(code, 1009);
    server.shutdown().await;
}

/// Issue 11, defect 4: revoking a client token (through the API) or the key behind a
/// session ends the live session at its next chunk, with `ih2014` (token) or `ih2001`
/// (key) and close 4001, not only the next handshake.
#[tokio::test]
async fn a_revoked_credential_ends_a_live_session_at_its_next_chunk() {
    let h = Harness::new().await;
    let server = h.start().await;
    let minting = stream_key(&h).await;
    let media = fixture("segments/continuous.webm");

    let token = mint_token(&server, &minting, json!({})).await;
    let mut ws = connect(&server, "/v2/stream/analyze", Auth::Subprotocol(&token)).await;
    ws.ready().await;
    ws.binary(&media[..20_000]).await;
    let answer = client()
        .post(url(&server, "/v1/client_tokens/revoke"))
        .header("content-type", "application/json")
        .body(json!({"api_key": minting, "token": token}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    ws.binary(&media[20_000..40_000]).await;
    let (events, code) = ws.rest().await;
    assert_eq!(errors(&events), [("ih2014".to_owned(), Value::Null)]);
    assert_eq!(code, 4001);

    // A session on the key itself, then the key revoked (as `attune keys revoke` does).
    let key = h.key("revoker", &Scope::ALL).await;
    let key_id = h
        .store
        .list_keys()
        .await
        .unwrap()
        .into_iter()
        .last()
        .unwrap()
        .id;
    // And a token minted from that key, in a second session.
    let child = mint_token(&server, &key, json!({"max_concurrent": 2})).await;
    let mut on_key = connect(&server, "/v1/stream/analyze", Auth::Header(&key)).await;
    on_key.ready().await;
    let mut on_child = connect(&server, "/v1/stream/analyze", Auth::Subprotocol(&child)).await;
    on_child.ready().await;
    on_key.binary(&media[..20_000]).await;
    on_child.binary(&media[..20_000]).await;
    h.store.revoke_key(&key_id).await.unwrap();
    on_key.binary(&media[20_000..40_000]).await;
    on_child.binary(&media[20_000..40_000]).await;
    let (events, code) = on_key.rest().await;
    assert_eq!(errors(&events), [("ih2001".to_owned(), Value::Null)]);
    assert_eq!(code, 4001);
    let (events, code) = on_child.rest().await;
    assert_eq!(errors(&events), [("ih2014".to_owned(), Value::Null)]);
    assert_eq!(code, 4001);
    server.shutdown().await;
}

/// Issue 11, defect 4, found by the official client: a key revoked by another process
/// (`attune keys revoke` on the same store file) ends a session that has stopped sending and
/// is only waiting, within the recheck interval (5 s), rather than at an idle timeout minutes
/// later.
#[tokio::test]
async fn a_key_revoked_elsewhere_ends_an_idle_session_within_the_recheck_interval() {
    let h = Harness::new().await;
    let server = h.start().await;
    let key = h.key("idle-revoked", &Scope::ALL).await;
    let key_id = h
        .store
        .list_keys()
        .await
        .unwrap()
        .into_iter()
        .last()
        .unwrap()
        .id;
    let media = fixture("segments/continuous.webm");
    let mut ws = connect(&server, "/v2/stream/analyze", Auth::Header(&key)).await;
    ws.ready().await;
    ws.binary(&media[..20_000]).await;
    // Another process on the same file: its revocation moves no counter in this server.
    let elsewhere = attune_server::SqliteStore::open(h.dir.path().join("attune.sqlite3"))
        .await
        .unwrap();
    elsewhere.revoke_key(&key_id).await.unwrap();
    // Nothing more is sent: the session must notice on its own.
    let (events, code) = ws.rest().await;
    assert_eq!(errors(&events), [("ih2001".to_owned(), Value::Null)]);
    assert_eq!(code, 4001);
    server.shutdown().await;
}

/// Issue 11, defect 6, over a socket: with a queue bound of one byte every frame that meets
/// a backlog is decoded without analysis. A continuous WebM sent in a burst still goes
/// through whole: no `ih1002`, no unreadable frame, a graceful end, and whatever was
/// skipped is reported as `coverage.dropped` inside the media. (The exact windows are
/// checked deterministically in `streams::analysis::tests`.)
#[tokio::test]
async fn a_saturated_continuous_webm_stream_loses_no_bytes() {
    let h = Harness::new().await;
    let server = h
        .start_with(|c| c.stream_max_queued_bytes = Some(1), h.services())
        .await;
    let key = stream_key(&h).await;
    let media = fixture("segments/continuous.webm");
    let mut ws = connect(&server, "/v1/stream/analyze", Auth::Header(&key)).await;
    ws.ready().await;
    for chunk in media.chunks(2_000) {
        ws.binary(chunk).await;
    }
    let (events, code) = ws.close_gracefully().await;
    assert_eq!(code, 1000);
    assert!(errors(&events).is_empty(), "{events:?}");
    assert_eq!(
        types(&events).last().map(String::as_str),
        Some("session.ended")
    );
    for event in events.iter().filter(|e| e["type"] == "coverage.dropped") {
        for range in event["data"]["ranges"].as_array().unwrap() {
            assert!(range["end"].as_f64().unwrap() <= 9.5, "{range}");
        }
    }
}
