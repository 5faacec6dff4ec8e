//! Storage faults (issue 16, item 4) on the SQLite store of the real `attune` binary: SIGKILL
//! at random moments of uploads and job writes never corrupts the store, loses no finished
//! job and leaves every interrupted one `failed` with `ih1004`; a full disk refuses new work
//! with `ih1003` (503), keeps the process answering, and work resumes once space is back.

use crate::common::{client, Form};
use crate::restart::{attune, read_until, synthetic_speech, Serve, PATIENCE, SPEECH_MINUTES};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Kill rounds; each kills the server once with uploads and jobs in flight.
const ROUNDS: u64 = 8;

/// The seed of the kill delays, so a failing run can be repeated.
const SEED: u64 = 0x5eed_1604;

/// A small deterministic generator (xorshift64*): the delays need no more.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

fn create_key(store: &Path) -> String {
    let created = attune(
        store,
        &[
            "keys",
            "create",
            "--account",
            "faults",
            "--scopes",
            "service.upload,service.upload.inter-2-audio",
        ],
    )
    .output()
    .unwrap();
    assert!(created.status.success(), "{created:?}");
    String::from_utf8(created.stdout).unwrap().trim().to_owned()
}

/// Submits `wav`; answers the status and body.
async fn submit(base: &str, key: &str, wav: &[u8]) -> Option<(u16, serde_json::Value)> {
    let form = Form::new().text("model", "inter-2-audio").file("file", wav);
    let response = client()
        .post(format!("{base}/v2/upload/analyze"))
        .bearer_auth(key)
        .header("content-type", form.content_type())
        .body(form.into_body())
        .send()
        .await
        .ok()?;
    let status = response.status().as_u16();
    let bytes = response.bytes().await.ok()?;
    Some((status, serde_json::from_slice(&bytes).ok()?))
}

/// `PRAGMA integrity_check` of the store file, with no server running.
fn integrity(store: &Path) -> String {
    let conn = rusqlite::Connection::open(store).unwrap();
    conn.query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .unwrap()
}

#[tokio::test]
async fn sigkill_during_uploads_and_job_writes_never_corrupts_the_store_or_loses_a_job() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("attune.sqlite3");
    let key = create_key(&store);
    // A minute of speech: a few seconds of analysis, so kills land in uploads, in queued
    // and running jobs, and in completion writes.
    let wav = Arc::new(synthetic_speech(1));
    let mut rng = Rng(SEED);
    // Every job answered 202, and the ones read `completed` before a kill.
    let mut accepted: BTreeSet<String> = BTreeSet::new();
    let mut completed: BTreeMap<String, serde_json::Value> = BTreeMap::new();
    let mut interrupted = 0usize;

    for round in 0..ROUNDS {
        let serve = Serve::start(&store);
        // Every job of earlier rounds: finished, and the same as before.
        check_jobs(&serve, &key, &accepted, &completed, &mut interrupted).await;

        let answered = Arc::new(Mutex::new(Vec::new()));
        let mut uploads = Vec::new();
        for _ in 0..4 {
            let (base, key, wav, answered) = (
                serve.url(""),
                key.clone(),
                Arc::clone(&wav),
                Arc::clone(&answered),
            );
            uploads.push(tokio::spawn(async move {
                if let Some((202, body)) = submit(&base, &key, &wav).await {
                    answered
                        .lock()
                        .unwrap()
                        .push(body["job_id"].as_str().unwrap().to_owned());
                }
            }));
        }
        let delay = 20 + rng.next() % 1500;
        tokio::time::sleep(Duration::from_millis(delay)).await;
        // What is completed now must stay completed.
        for id in answered.lock().unwrap().clone() {
            accepted.insert(id);
        }
        for id in &accepted {
            if completed.contains_key(id) {
                continue;
            }
            let job = read_until(&serve, &key, id, |_| true).await;
            if job["status"] == "completed" {
                completed.insert(id.clone(), job);
            }
        }
        eprintln!(
            "round {round}: SIGKILL after {delay} ms; {} accepted, {} completed",
            accepted.len(),
            completed.len()
        );
        serve.kill();
        for upload in uploads {
            upload.await.unwrap();
        }
        // A 202 that reached the client before the kill is an accepted job too.
        for id in answered.lock().unwrap().drain(..) {
            accepted.insert(id);
        }
        assert_eq!(integrity(&store), "ok", "round {round}");
    }
    let serve = Serve::start(&store);
    check_jobs(&serve, &key, &accepted, &completed, &mut interrupted).await;
    eprintln!(
        "{} jobs accepted, {} completed before a kill, {interrupted} read ih1004",
        accepted.len(),
        completed.len()
    );
    assert!(
        interrupted > 0,
        "no kill interrupted a job: the test exercised nothing"
    );
}

/// Every accepted job reads `completed` or `failed` with `ih1004` (never still queued or
/// running), and the ones read `completed` earlier read the same now.
async fn check_jobs(
    serve: &Serve,
    key: &str,
    accepted: &BTreeSet<String>,
    completed: &BTreeMap<String, serde_json::Value>,
    interrupted: &mut usize,
) {
    *interrupted = 0;
    for id in accepted {
        let job = read_until(serve, key, id, |_| true).await;
        match job["status"].as_str() {
            Some("completed") => {}
            Some("failed") => {
                assert_eq!(job["error"]["error_id"], "ih1004", "{job}");
                *interrupted += 1;
            }
            _ => panic!("a job of a killed server reads neither finished nor failed: {job}"),
        }
        if let Some(before) = completed.get(id) {
            assert_eq!(&job, before, "a completed job changed after a restart");
        }
    }
}

/// A size-limited tmpfs mounted for the test, unmounted when dropped.
struct SmallDisk {
    path: PathBuf,
    _dir: tempfile::TempDir,
}

impl SmallDisk {
    /// Mounts a tmpfs of `megabytes`; `Err` says why it cannot be made here.
    fn mount(megabytes: u32) -> Result<SmallDisk, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let path = dir.path().join("disk");
        std::fs::create_dir(&path).map_err(|e| e.to_string())?;
        let output = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={megabytes}m"), "tmpfs"])
            .arg(&path)
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !output.status.success() {
            return Err(format!(
                "mount -t tmpfs failed (root or CAP_SYS_ADMIN is needed): {}",
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        Ok(SmallDisk { path, _dir: dir })
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.path).status();
    }
}

/// Fills the file system under `path` with `filler` until it is full.
fn fill(filler: &Path) {
    use std::io::Write;
    let mut file = std::fs::File::create(filler).unwrap();
    for size in [1 << 16, 1 << 12, 1 << 9, 1] {
        let chunk = vec![0u8; size];
        while file.write_all(&chunk).is_ok() {}
    }
    let _ = file.sync_all();
}

#[tokio::test]
async fn a_full_disk_refuses_new_work_with_ih1003_and_work_resumes_when_space_returns() {
    let disk = match SmallDisk::mount(16) {
        Ok(disk) => disk,
        Err(reason) => {
            eprintln!("SKIPPED: no size-limited file system can be made here: {reason}");
            return;
        }
    };
    let store = disk.path.join("attune.sqlite3");
    let key = create_key(&store);
    let serve = Serve::start(&store);
    let wav = synthetic_speech(1);
    let (status, body) = submit(&serve.url(""), &key, &wav).await.unwrap();
    assert_eq!(status, 202, "{body}");
    let first = body["job_id"].as_str().unwrap().to_owned();
    read_until(&serve, &key, &first, |job| job["status"] == "completed").await;

    // A long analysis that ends while the disk is full: its outcome waits for space.
    let long = synthetic_speech(SPEECH_MINUTES);
    let (status, body) = submit(&serve.url(""), &key, &long).await.unwrap();
    assert_eq!(status, 202, "{body}");
    let running = body["job_id"].as_str().unwrap().to_owned();
    read_until(&serve, &key, &running, |job| job["status"] == "running").await;

    let filler = disk.path.join("filler");
    fill(&filler);
    // New work is refused cleanly once the store cannot write; the process stays up.
    let mut refused = None;
    for attempt in 1..=20 {
        let (status, body) = submit(&serve.url(""), &key, &wav)
            .await
            .expect("the server answers on a full disk");
        if status != 202 {
            eprintln!("full disk: submission {attempt} refused: {status} {body}");
            refused = Some((status, body));
            break;
        }
    }
    let (status, body) = refused.expect("20 submissions accepted on a full disk");
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error_id"], "ih1003", "{body}");
    let health = client().get(serve.url("/healthz")).send().await.unwrap();
    assert_eq!(health.status(), 200);
    // What was finished before stays readable.
    let job = read_until(&serve, &key, &first, |_| true).await;
    assert_eq!(job["status"], "completed", "{job}");

    // The analysis ends on the full disk: the job still reads `running` (its outcome is
    // held, not lost) for as long as the disk stays full.
    tokio::time::timeout(PATIENCE, async {
        while !serve.log().contains("job outcome not recorded yet") {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the analysis ended and its outcome met the full disk");
    let job = read_until(&serve, &key, &running, |_| true).await;
    assert_eq!(job["status"], "running", "{job}");

    // Space returns: the held outcome is recorded, and new work is accepted and runs to
    // completion, with no restart.
    std::fs::remove_file(&filler).unwrap();
    let job = read_until(&serve, &key, &running, |job| job["status"] != "running").await;
    assert_eq!(job["status"], "completed", "{job}");
    let (status, body) = tokio::time::timeout(PATIENCE, submit(&serve.url(""), &key, &wav))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status, 202, "{body}");
    let id = body["job_id"].as_str().unwrap().to_owned();
    let job = read_until(&serve, &key, &id, |job| {
        job["status"] != "queued" && job["status"] != "running"
    })
    .await;
    assert_eq!(job["status"], "completed", "{job}");
    drop(serve);
    assert_eq!(integrity(&store), "ok");
}
