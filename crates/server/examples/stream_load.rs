//! Load tool for the WebSocket streams: opens N concurrent sessions against a running
//! `attune serve`, each sending a real recording at real-time pace, and reports what a user
//! would feel: sessions held, latency from a chunk's arrival to the events it produced, and the
//! server's memory and CPU.
//!
//! Each session loops a continuous WebM (VP9 + Opus, 9 s, as a browser MediaRecorder records
//! it; `--file` another recording) as consecutive files in one stream, cut into chunks of one
//! second of media (the file's bytes spread evenly over its probed duration) sent once a second
//! (a browser's `timeslice` of 1000 ms), with both CQI include flags.
//!
//! Latency: from sending the chunk that completed a window to receiving the first of that
//! window's events (`signal.*`, `engagement.updated`, `conversation_quality.updated`; one sample
//! per window that produced events, drain events excluded). At one chunk a second the
//! triggering chunk is the last one sent before the event, so the measure is exact while latency
//! stays under a second (the tool counts the samples at or over a second).
//!
//! Usage: `cargo run --release -p attune-server --example stream_load -- --url ws://ADDR
//! --key KEY --sessions N --seconds S [--ramp S] [--server-pid PID] [--file PATH]
//! [--session-seconds S] [--stagger] [--slice S] [--model M]`.
//! `--model` streams on `/v2/stream/analyze?model=M` (e.g. `inter-2-audio`, which reads the
//! audio and leaves the VP9 pictures undecoded); without it, `/v1/stream/analyze`, whose
//! `inter-2` also decodes the pictures and reads the faces in them.
//! `benches/stream_load.sh` starts a server and runs this for 50, 200 and 500 sessions.
//!
//! Soak mode (`benches/soak.sh`): `--session-seconds` makes each of the N slots close its session
//! after that long and open a new one until `--seconds` have passed (sessions churn, as real
//! ones do, and the server's 60-minute session cap is never the reason a session ends);
//! `--slice` prints one line per slice of that many seconds: the latency percentiles of the
//! slice, the server's RSS, open descriptors and CPU over the slice, and the errors and
//! `coverage.dropped` events received in it.
//! `STREAM_LOAD_TRACE` (set to anything) prints to standard error, with the seconds since its
//! session opened, every chunk sent, every event received and each window's latency sample.
//! `--stagger` spreads the sessions' ends: slot `i` of N first holds its session for
//! `(i + 1) / N` of `--session-seconds`, then full lengths, so one session ends every
//! `S / N` seconds from the first minutes on, as in a population of sessions that did not all
//! start together. Without it, the slots start within `--ramp` seconds and every generation of
//! N sessions ends and reopens within those seconds too (a thundering herd at each reopening).

use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

#[derive(Debug, Clone)]
struct Args {
    url: String,
    key: String,
    sessions: usize,
    seconds: u64,
    ramp: f64,
    server_pid: Option<u32>,
    file: String,
    session_seconds: Option<u64>,
    stagger: bool,
    slice: Option<u64>,
    model: Option<String>,
}

/// The recording each session loops, cut into chunks of one second of media.
struct Recording {
    bytes: Vec<u8>,
    /// Its duration, seconds, probed from the file.
    seconds: f64,
    /// Bytes per chunk: the file's bytes spread evenly over its duration.
    chunk: usize,
}

impl Recording {
    fn read(path: &str) -> Result<Self, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
        let seconds = attune_media::probe(&bytes)
            .map_err(|e| format!("{path}: {e}"))?
            .duration;
        let chunk = (bytes.len() as f64 / seconds).ceil().max(1.0) as usize;
        Ok(Self {
            bytes,
            seconds,
            chunk,
        })
    }
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        url: "ws://127.0.0.1:8080".into(),
        key: String::new(),
        sessions: 50,
        seconds: 60,
        ramp: 10.0,
        server_pid: None,
        file: concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/segments/continuous.webm"
        )
        .into(),
        session_seconds: None,
        stagger: false,
        slice: None,
        model: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--url" => args.url = value()?,
            "--key" => args.key = value()?,
            "--sessions" => args.sessions = value()?.parse().map_err(|e| format!("{e}"))?,
            "--seconds" => args.seconds = value()?.parse().map_err(|e| format!("{e}"))?,
            "--ramp" => args.ramp = value()?.parse().map_err(|e| format!("{e}"))?,
            "--server-pid" => args.server_pid = Some(value()?.parse().map_err(|e| format!("{e}"))?),
            "--file" => args.file = value()?,
            "--session-seconds" => {
                args.session_seconds = Some(value()?.parse().map_err(|e| format!("{e}"))?)
            }
            "--stagger" => args.stagger = true,
            "--slice" => args.slice = Some(value()?.parse().map_err(|e| format!("{e}"))?),
            "--model" => args.model = Some(value()?),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if args.key.is_empty() {
        return Err("--key is required".into());
    }
    Ok(args)
}

/// What all sessions report.
#[derive(Default)]
struct Stats {
    ready: AtomicUsize,
    held: AtomicUsize,
    refused: AtomicUsize,
    dropped_early: AtomicUsize,
    events: AtomicU64,
    errors: AtomicU64,
    coverage_dropped: AtomicU64,
    late: AtomicU64,
    latencies_ms: Mutex<Vec<f64>>,
}

/// Process CPU time (user + system) in seconds and resident memory in KiB, from /proc.
fn process_usage(pid: u32) -> Option<(f64, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    // USER_HZ is 100 on Linux.
    Some((ticks / 100.0, rss))
}

/// Open descriptors of process `pid`, from /proc.
fn open_fds(pid: u32) -> Option<usize> {
    Some(std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count())
}

/// One slot: sessions of `--session-seconds` (or one of `--seconds`) back to back until
/// `--seconds` have passed since the slot started; the first one `first_seconds` long when
/// given (`--stagger`).
async fn slot(
    args: Arc<Args>,
    media: Arc<Recording>,
    stats: Arc<Stats>,
    start_delay: Duration,
    mut first_seconds: Option<u64>,
) {
    tokio::time::sleep(start_delay).await;
    let end = Instant::now() + Duration::from_secs(args.seconds);
    loop {
        let left = end.saturating_duration_since(Instant::now()).as_secs();
        if left == 0 {
            break;
        }
        let length = first_seconds.take().or(args.session_seconds);
        let seconds = length.map_or(left, |s| s.min(left));
        session(&args, Arc::clone(&media), Arc::clone(&stats), seconds).await;
    }
}

/// The first session's length of slot `i` of `n` under `--stagger`: `(i + 1) / n` of the
/// session length (at least 1 s), so that the slots' sessions end evenly spread over it.
fn staggered_first(session_seconds: u64, i: usize, n: usize) -> u64 {
    let n = n.max(1) as u64;
    (session_seconds * (i as u64 + 1)).div_ceil(n).max(1)
}

async fn session(args: &Args, media: Arc<Recording>, stats: Arc<Stats>, seconds: u64) {
    let base = args.url.trim_end_matches('/');
    let url = match &args.model {
        Some(model) => format!("{base}/v2/stream/analyze?model={model}"),
        None => format!("{base}/v1/stream/analyze"),
    };
    let Ok(mut request) = url.into_client_request() else {
        return;
    };
    request.headers_mut().insert(
        "authorization",
        format!("Bearer {}", args.key)
            .parse()
            .expect("a valid header"),
    );
    let Ok((ws, _)) = tokio_tungstenite::connect_async(request).await else {
        stats.refused.fetch_add(1, Ordering::Relaxed);
        return;
    };
    let (mut tx, mut rx) = ws.split();
    let last_sent = Arc::new(Mutex::new(None::<Instant>));
    let reader_stats = Arc::clone(&stats);
    let reader_last = Arc::clone(&last_sent);
    let trace = std::env::var_os("STREAM_LOAD_TRACE").is_some();
    let t0 = Instant::now();
    let reader = tokio::spawn(async move {
        let mut closed_normally = false;
        let mut last_measured: Option<Instant> = None;
        let mut ready = false;
        while let Some(Ok(message)) = rx.next().await {
            let text = match message {
                Message::Text(text) => text,
                Message::Close(frame) => {
                    closed_normally = frame.is_some_and(|f| u16::from(f.code) == 1000);
                    break;
                }
                _ => continue,
            };
            let Ok(event) = serde_json::from_str::<Value>(&text) else {
                continue;
            };
            reader_stats.events.fetch_add(1, Ordering::Relaxed);
            if trace {
                eprintln!("{:8.3} recv {}", t0.elapsed().as_secs_f64(), event["type"]);
            }
            match event["type"].as_str().unwrap_or_default() {
                "session.ready" => {
                    ready = true;
                    reader_stats.ready.fetch_add(1, Ordering::Relaxed);
                }
                "error" => {
                    reader_stats.errors.fetch_add(1, Ordering::Relaxed);
                }
                "coverage.dropped" => {
                    reader_stats
                        .coverage_dropped
                        .fetch_add(1, Ordering::Relaxed);
                }
                "signal.detected"
                | "signal.updated"
                | "signal.ended"
                | "engagement.updated"
                | "conversation_quality.updated" => {
                    // One sample per chunk that closed a window: the first of its events.
                    let sent = *reader_last.lock().expect("not poisoned");
                    if let Some(sent) = sent.filter(|s| Some(*s) != last_measured) {
                        last_measured = Some(sent);
                        let ms = sent.elapsed().as_secs_f64() * 1000.0;
                        if trace {
                            eprintln!(
                                "{:8.3} window latency {ms:.1} ms",
                                t0.elapsed().as_secs_f64()
                            );
                        }
                        if ms >= 1000.0 {
                            reader_stats.late.fetch_add(1, Ordering::Relaxed);
                        }
                        reader_stats
                            .latencies_ms
                            .lock()
                            .expect("not poisoned")
                            .push(ms);
                    }
                }
                _ => {}
            }
        }
        (ready, closed_normally)
    });

    let config = r#"{"include":["conversation_quality_overall","conversation_quality_timeline"]}"#;
    if tx.send(Message::text(config)).await.is_err() {
        return;
    }
    let mut ticker = tokio::time::interval(Duration::from_secs(1));
    let started = Instant::now();
    'outer: while started.elapsed().as_secs() < seconds {
        for piece in media.bytes.chunks(media.chunk) {
            ticker.tick().await;
            if started.elapsed().as_secs() >= seconds {
                break 'outer;
            }
            // Stamped before sending: an event the chunk triggers may arrive before the send
            // call returns.
            *last_sent.lock().expect("not poisoned") = Some(Instant::now());
            if trace {
                eprintln!(
                    "{:8.3} send {} bytes",
                    t0.elapsed().as_secs_f64(),
                    piece.len()
                );
            }
            if tx.send(Message::binary(piece.to_vec())).await.is_err() {
                break 'outer;
            }
        }
    }
    // Events of the drain are not window latencies: stop measuring.
    *last_sent.lock().expect("not poisoned") = None;
    let _ = tx.send(Message::text(r#"{"type":"session.close"}"#)).await;
    match tokio::time::timeout(Duration::from_secs(60), reader).await {
        Ok(Ok((true, true))) => {
            stats.held.fetch_add(1, Ordering::Relaxed);
        }
        _ => {
            stats.dropped_early.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Every `slice` seconds, one line on what that slice saw (soak mode).
async fn slice_reporter(stats: Arc<Stats>, pid: Option<u32>, slice: u64) {
    println!(
        "slice  minute  samples  p50_ms  p99_ms  max_ms  rss_mib  fds  cpu_cores  errors  coverage_dropped  sessions_ready"
    );
    let start = Instant::now();
    let mut seen = 0usize;
    let (mut errors, mut dropped) = (0u64, 0u64);
    let mut cpu_before = pid.and_then(process_usage).map(|u| u.0);
    let mut ticker = tokio::time::interval(Duration::from_secs(slice));
    ticker.tick().await;
    for index in 1.. {
        ticker.tick().await;
        let mut window: Vec<f64> = {
            let all = stats.latencies_ms.lock().expect("not poisoned");
            let window = all[seen..].to_vec();
            seen = all.len();
            window
        };
        window.sort_by(f64::total_cmp);
        let usage = pid.and_then(process_usage);
        let cpu = match (cpu_before, usage) {
            (Some(a), Some((b, _))) => (b - a) / slice as f64,
            _ => f64::NAN,
        };
        cpu_before = usage.map(|u| u.0);
        let e = stats.errors.load(Ordering::Relaxed);
        let d = stats.coverage_dropped.load(Ordering::Relaxed);
        println!(
            "{index:>5}  {:>6.1}  {:>7}  {:>6.1}  {:>6.1}  {:>6.1}  {:>7.1}  {:>3}  {:>9.2}  {:>6}  {:>16}  {:>14}",
            start.elapsed().as_secs_f64() / 60.0,
            window.len(),
            percentile(&window, 50.0),
            percentile(&window, 99.0),
            window.last().copied().unwrap_or(f64::NAN),
            usage.map_or(f64::NAN, |u| u.1 as f64 / 1024.0),
            pid.and_then(open_fds).map_or(-1, |n| n as i64),
            cpu,
            e - errors,
            d - dropped,
            stats.ready.load(Ordering::Relaxed),
        );
        (errors, dropped) = (e, d);
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Arc::new(parse_args()?);
    // Paced by the recording's own duration: a chunk a second, each one second of media.
    let media = Arc::new(Recording::read(&args.file)?);
    let stats = Arc::new(Stats::default());
    let before = args.server_pid.and_then(process_usage);
    let wall = Instant::now();

    // Peak RSS while the sessions run.
    let peak_rss = Arc::new(AtomicU64::new(0));
    let sampler = args.server_pid.map(|pid| {
        let peak = Arc::clone(&peak_rss);
        tokio::spawn(async move {
            loop {
                if let Some((_, rss)) = process_usage(pid) {
                    peak.fetch_max(rss, Ordering::Relaxed);
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        })
    });

    let reporter = args.slice.map(|slice| {
        let stats = Arc::clone(&stats);
        let pid = args.server_pid;
        tokio::spawn(slice_reporter(stats, pid, slice))
    });

    let mut tasks = Vec::with_capacity(args.sessions);
    for i in 0..args.sessions {
        let delay = Duration::from_secs_f64(args.ramp * i as f64 / args.sessions.max(1) as f64);
        tasks.push(tokio::spawn(slot(
            Arc::clone(&args),
            Arc::clone(&media),
            Arc::clone(&stats),
            delay,
            args.session_seconds
                .filter(|_| args.stagger)
                .map(|s| staggered_first(s, i, args.sessions)),
        )));
    }
    for task in tasks {
        let _ = task.await;
    }
    let elapsed = wall.elapsed().as_secs_f64();
    if let Some(sampler) = sampler {
        sampler.abort();
    }
    if let Some(reporter) = reporter {
        reporter.abort();
    }
    let after = args.server_pid.and_then(process_usage);

    let mut latencies = stats.latencies_ms.lock().expect("not poisoned").clone();
    latencies.sort_by(f64::total_cmp);
    let n = args.sessions;
    println!(
        "sessions          {n} ({} s each, ramp {} s; a {:.1} s recording looped, one second a second)",
        args.seconds, args.ramp, media.seconds
    );
    println!(
        "ready / held      {} / {} (refused {}, ended early {})",
        stats.ready.load(Ordering::Relaxed),
        stats.held.load(Ordering::Relaxed),
        stats.refused.load(Ordering::Relaxed),
        stats.dropped_early.load(Ordering::Relaxed)
    );
    println!(
        "events            {} ({} errors, {} coverage.dropped)",
        stats.events.load(Ordering::Relaxed),
        stats.errors.load(Ordering::Relaxed),
        stats.coverage_dropped.load(Ordering::Relaxed)
    );
    println!(
        "latency ms        p50 {:.1}  p99 {:.1}  max {:.1}  ({} samples, {} at or over 1 s)",
        percentile(&latencies, 50.0),
        percentile(&latencies, 99.0),
        latencies.last().copied().unwrap_or(f64::NAN),
        latencies.len(),
        stats.late.load(Ordering::Relaxed)
    );
    if let (Some((cpu0, _)), Some((cpu1, _))) = (before, after) {
        let peak = peak_rss.load(Ordering::Relaxed);
        let base = before.map_or(0, |b| b.1);
        println!(
            "server CPU        {:.2} cores on average over {:.0} s",
            (cpu1 - cpu0) / elapsed,
            elapsed
        );
        println!(
            "server RSS        peak {:.1} MiB, {:.0} KiB per session above the idle {:.1} MiB",
            peak as f64 / 1024.0,
            peak.saturating_sub(base) as f64 / n.max(1) as f64,
            base as f64 / 1024.0
        );
    }
    Ok(())
}
