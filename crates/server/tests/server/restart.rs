//! The real `attune` binary killed mid-job with SIGKILL and started again on
//! the same store: the interrupted job reads `failed` with `ih1004`.

use crate::common::{client, json, Form};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Longest wait for the server to start listening, for a job to start
/// running, or for a read to show the job failed; never reached when the
/// server behaves.
pub(crate) const PATIENCE: Duration = Duration::from_secs(60);

/// Pause between two reads of a job.
const POLL: Duration = Duration::from_millis(20);

/// Minutes of synthetic speech uploaded: long enough that the analysis is
/// still running when the job is first read `running`, under the 32 MB limit
/// at 16 kHz, 16-bit mono (28.8 MB for 15 minutes).
pub(crate) const SPEECH_MINUTES: u32 = 15;

const SAMPLE_RATE: u32 = 16_000;

/// A WAV of voiced-speech-like sound: phrases of harmonic tones (a gliding
/// pitch with five harmonics and a syllable-rate envelope) separated by
/// pauses. Deterministic, so every run uploads the same file.
pub(crate) fn synthetic_speech(minutes: u32) -> Vec<u8> {
    let samples = (minutes * 60 * SAMPLE_RATE) as usize;
    let mut pcm = Vec::with_capacity(samples * 2);
    // Phrase and pause lengths cycle through these, in seconds.
    let phrases = [2.4, 1.7, 3.1, 2.0, 2.8];
    let pauses = [0.6, 0.9, 0.4, 1.2, 0.7];
    let mut t = 0usize;
    let mut turn = 0usize;
    let mut phase = 0.0f64;
    while t < samples {
        let phrase = (phrases[turn % phrases.len()] * f64::from(SAMPLE_RATE)) as usize;
        let pause = (pauses[turn % pauses.len()] * f64::from(SAMPLE_RATE)) as usize;
        let base = 110.0 + 25.0 * (turn % 4) as f64;
        for n in 0..phrase.min(samples - t) {
            let s = n as f64 / f64::from(SAMPLE_RATE);
            let f0 = base * (1.0 + 0.12 * (std::f64::consts::TAU * 0.7 * s).sin());
            phase += std::f64::consts::TAU * f0 / f64::from(SAMPLE_RATE);
            let voice: f64 = (1..=5)
                .map(|h| (phase * f64::from(h)).sin() / f64::from(h))
                .sum();
            let syllables = 0.55 + 0.45 * (std::f64::consts::TAU * 4.0 * s).sin();
            let value = 0.25 * voice * syllables;
            pcm.extend_from_slice(&((value * f64::from(i16::MAX)) as i16).to_le_bytes());
        }
        t += phrase;
        let silence = pause.min(samples.saturating_sub(t));
        pcm.resize(pcm.len() + silence * 2, 0);
        t += silence;
        turn += 1;
    }
    let mut wav = Vec::with_capacity(44 + pcm.len());
    wav.extend_from_slice(b"RIFF");
    wav.extend_from_slice(&(36 + pcm.len() as u32).to_le_bytes());
    wav.extend_from_slice(b"WAVEfmt ");
    wav.extend_from_slice(&16u32.to_le_bytes());
    wav.extend_from_slice(&1u16.to_le_bytes()); // PCM
    wav.extend_from_slice(&1u16.to_le_bytes()); // mono
    wav.extend_from_slice(&SAMPLE_RATE.to_le_bytes());
    wav.extend_from_slice(&(SAMPLE_RATE * 2).to_le_bytes());
    wav.extend_from_slice(&2u16.to_le_bytes());
    wav.extend_from_slice(&16u16.to_le_bytes());
    wav.extend_from_slice(b"data");
    wav.extend_from_slice(&(pcm.len() as u32).to_le_bytes());
    wav.extend_from_slice(&pcm);
    wav
}

/// The `attune` binary with `args` and `env`, one worker, no transcription, with no other
/// `ATTUNE_*` setting of the environment the tests run in.
pub(crate) fn attune_with(env: &[(&str, &str)], args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_attune"));
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("ATTUNE_") {
            command.env_remove(name);
        }
    }
    command
        .args(args)
        .env("ATTUNE_WORKERS", "1")
        .env("ATTUNE_LOG", "info")
        // These servers test the job lifecycle (restarts, drains, full disks) on minutes of
        // synthetic audio: transcribing it would only stretch their waits (about 0.1 CPU s per
        // audio second in the test build). Words are tested in crates/core/tests/words.rs and
        // the CLI's tests; a test may set ATTUNE_TRANSCRIBE itself.
        .env("ATTUNE_TRANSCRIBE", "0")
        .envs(env.iter().copied());
    command
}

/// The `attune` binary with `args`, on the store at `store`.
pub(crate) fn attune(store: &Path, args: &[&str]) -> Command {
    let mut command = attune_with(&[], args);
    command.env("ATTUNE_STORE_PATH", store);
    command
}

/// A running `attune serve`, killed when dropped so a failing test leaves no
/// process behind.
pub(crate) struct Serve {
    child: Child,
    base_url: String,
    /// Everything the process logged so far.
    log: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Serve {
    /// Starts `attune serve` on a free port and waits until it listens.
    pub(crate) fn start(store: &Path) -> Serve {
        Serve::start_command(attune(store, &["serve", "--bind", "127.0.0.1:0"]))
    }

    /// Starts `command`, an `attune serve` on port 0, and waits until it
    /// listens.
    pub(crate) fn start_command(mut command: Command) -> Serve {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("attune serve starts");
        let stderr = child.stderr.take().unwrap();
        let (addr_tx, addr_rx) = mpsc::channel();
        let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let kept = std::sync::Arc::clone(&log);
        // Reads the log until the process ends, so it never blocks on a full
        // pipe; the `listening` line says which port port 0 became.
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Ok(mut kept) = kept.lock() {
                    kept.push_str(&line);
                    kept.push('\n');
                }
                if let Some(rest) = line.split("listening addr=").nth(1) {
                    let addr = rest.split_whitespace().next().unwrap_or("").to_owned();
                    let _ = addr_tx.send(addr);
                }
            }
        });
        let mut serve = Serve {
            child,
            base_url: String::new(),
            log,
        };
        let addr = addr_rx
            .recv_timeout(PATIENCE)
            .expect("attune serve logs the address it listens on");
        serve.base_url = format!("http://{addr}");
        serve
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }

    /// What the process logged so far.
    pub(crate) fn log(&self) -> String {
        self.log.lock().map(|log| log.clone()).unwrap_or_default()
    }

    /// The server's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `host:port`.
    pub(crate) fn addr(&self) -> &str {
        self.base_url.trim_start_matches("http://")
    }

    /// SIGTERM, as a service manager stops an instance: the graceful
    /// shutdown begins.
    pub(crate) fn terminate(&self) {
        let sent = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(sent.success(), "SIGTERM not delivered");
    }

    /// Waits (at most [`PATIENCE`]) for the process to exit on its own and
    /// answers its status.
    pub(crate) fn wait_exit(mut self) -> std::process::ExitStatus {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("the server is waited for") {
                return status;
            }
            assert!(
                started.elapsed() < PATIENCE,
                "the server did not exit: {}",
                self.log()
            );
            std::thread::sleep(POLL);
        }
    }

    /// SIGKILL: no shutdown code runs.
    pub(crate) fn kill(mut self) {
        self.child.kill().expect("the server is killed");
        self.child.wait().expect("the killed server is reaped");
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reads the job until `done` accepts its envelope, or [`PATIENCE`] passes.
pub(crate) async fn read_until(
    serve: &Serve,
    key: &str,
    job_id: &str,
    done: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let started = Instant::now();
    loop {
        let response = client()
            .get(serve.url(&format!("/v2/upload/jobs/{job_id}")))
            .bearer_auth(key)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let envelope = json(response).await;
        if done(&envelope) {
            return envelope;
        }
        assert!(
            started.elapsed() < PATIENCE,
            "the job never got there: {envelope}"
        );
        tokio::time::sleep(POLL).await;
    }
}

#[tokio::test]
async fn a_job_running_when_the_server_is_killed_reads_failed_with_ih1004_after_restart() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("attune.sqlite3");
    let created = attune(
        &store,
        &[
            "keys",
            "create",
            "--account",
            "acme",
            "--scopes",
            "service.upload,service.upload.inter-2-audio",
        ],
    )
    .output()
    .expect("attune keys create runs");
    assert!(created.status.success(), "{created:?}");
    let key = String::from_utf8(created.stdout).unwrap().trim().to_owned();

    let serve = Serve::start(&store);
    let form = Form::new()
        .text("model", "inter-2-audio")
        .text("include[]", "signals")
        .file("file", &synthetic_speech(SPEECH_MINUTES));
    let response = client()
        .post(serve.url("/v2/upload/analyze"))
        .bearer_auth(&key)
        .header("content-type", form.content_type())
        .body(form.into_body())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 202);
    let job_id = json(response).await["job_id"].as_str().unwrap().to_owned();

    let running = read_until(&serve, &key, &job_id, |job| job["status"] != "queued").await;
    assert_eq!(
        running["status"], "running",
        "the analysis must still run when the server is killed: {running}"
    );
    serve.kill();

    let serve = Serve::start(&store);
    let job = read_until(&serve, &key, &job_id, |_| true).await;
    assert_eq!(job["status"], "failed", "{job}");
    assert_eq!(job["error"]["error_id"], "ih1004", "{job}");
    assert!(job.get("result").is_none(), "{job}");
    let message = job["error"]["message"].as_str().unwrap();
    assert!(message.contains("Resubmit"), "{message}");
}
