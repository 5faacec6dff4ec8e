//! `attune analyze` as a user runs it: the built binary on committed
//! fixtures, its output compared with the library call the server's jobs
//! make.

use attune_core::pipeline::{analyze_bytes, validate, AnalysisOptions};
use attune_core::upload::Sections;
use attune_core::wire::{IncludeFlag, Model, UploadJobResult};
use attune_core::ErrorCode;
use attune_cqi::Band;
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Output};

const DOCS_URL: &str = "https://docs.example.com";

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name)
}

/// The binary with a known configuration: no file, the documentation base
/// set, the rest at its defaults whatever the caller's environment says.
fn attune(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_attune"));
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("ATTUNE_") {
            command.env_remove(name);
        }
    }
    command.env("ATTUNE_DOCS_URL", DOCS_URL).args(args);
    command
}

fn run(args: &[&str]) -> Output {
    attune(args).output().expect("the attune binary runs")
}

fn analyze(file: &str, extra: &[&str]) -> Output {
    let path = fixture(file);
    let mut args = vec!["analyze", path.to_str().unwrap()];
    args.extend_from_slice(extra);
    run(&args)
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

/// What the server's job would hold as `result` for this file.
fn library_result(file: &str, model: Model, flags: &[IncludeFlag]) -> UploadJobResult {
    let bytes = std::fs::read(fixture(file)).unwrap();
    analyze_bytes(&bytes, &AnalysisOptions::new(model))
        .unwrap()
        .job_result(Sections::from_flags(flags))
}

fn library_json(file: &str, model: Model, flags: &[IncludeFlag]) -> Value {
    serde_json::to_value(library_result(file, model, flags)).unwrap()
}

const ALL_SECTIONS: &[IncludeFlag] = &[
    IncludeFlag::ConversationQualityOverall,
    IncludeFlag::ConversationQualityTimeline,
    IncludeFlag::Signals,
];

fn json_of(output: &Output) -> Value {
    assert!(
        output.status.success(),
        "{:?}: {}",
        output.status,
        stderr(output)
    );
    serde_json::from_str(&stdout(output)).expect("stdout is one JSON document")
}

#[test]
fn json_is_the_job_result_of_the_library_for_video_and_audio_files() {
    let video = analyze("mp4_h264_aac.mp4", &["--json", "--model", "inter-2"]);
    assert_eq!(
        json_of(&video),
        library_json("mp4_h264_aac.mp4", Model::Inter2, ALL_SECTIONS)
    );
    assert!(stderr(&video).is_empty(), "{}", stderr(&video));

    let long = analyze("segments/continuous.webm", &["--json"]);
    let long_json = json_of(&long);
    assert_eq!(
        long_json,
        library_json("segments/continuous.webm", Model::Inter2, ALL_SECTIONS)
    );
    assert!(long_json["windows"].as_array().unwrap().len() >= 2);

    let audio = analyze(
        "speech/two_voices.wav",
        &["--model", "inter-2-audio", "--json"],
    );
    let audio_json = json_of(&audio);
    assert_eq!(
        audio_json,
        library_json("speech/two_voices.wav", Model::Inter2Audio, ALL_SECTIONS)
    );
    assert!(audio_json["conversation_quality"]["overall"]["quality_index"].is_number());
    assert!(audio_json["signals"].is_array());
}

#[test]
fn include_narrows_the_result_as_the_upload_form_does() {
    let only_signals = analyze(
        "speech/hesitant.wav",
        &["--model=inter-2-audio", "--include", "signals", "--json"],
    );
    let json = json_of(&only_signals);
    assert_eq!(
        json,
        library_json(
            "speech/hesitant.wav",
            Model::Inter2Audio,
            &[IncludeFlag::Signals]
        )
    );
    assert!(json.get("conversation_quality").is_none());

    let timeline = analyze(
        "speech/hesitant.wav",
        &[
            "--model=inter-2-audio",
            "--include=conversation_quality_timeline",
            "--json",
        ],
    );
    let json = json_of(&timeline);
    assert!(json["conversation_quality"].get("overall").is_none());
    assert!(json["conversation_quality"]["timeline"].is_array());
    assert!(json.get("signals").is_none());

    let none = analyze(
        "speech/hesitant.wav",
        &["--model=inter-2-audio", "--include=", "--json"],
    );
    assert_eq!(
        json_of(&none),
        library_json("speech/hesitant.wav", Model::Inter2Audio, &[])
    );
}

/// The `ErrorResponse` the server would answer for `file` under `model`.
fn server_refusal(file: &str, model: Model) -> (ErrorCode, Value) {
    let bytes = std::fs::read(fixture(file)).unwrap();
    let error = validate(&bytes, &AnalysisOptions::new(model)).unwrap_err();
    let body = serde_json::to_value(error.to_response("cid", DOCS_URL)).unwrap();
    (error.code, body)
}

#[test]
fn a_refused_file_prints_the_servers_error_response_and_fails() {
    for (file, model, code) in [
        ("short_2s.mp4", "inter-2", "ih4007"),
        ("short_2s.wav", "inter-2-audio", "ih4007"),
        ("wav_pcm_s16le.wav", "inter-2", "ih4002"),
        ("video_only.mp4", "inter-2", "ih5008"),
        ("audio_only_for_inter2.mp4", "inter-2", "ih5001"),
        ("random.bin", "inter-2-audio", "ih5002"),
    ] {
        let output = analyze(file, &["--json", "--model", model]);
        assert_eq!(output.status.code(), Some(1), "{file}");
        let mut body: Value = serde_json::from_str(&stdout(&output)).unwrap();
        assert_eq!(body["error_id"], code, "{file}");
        let correlation_id = body["correlation_id"].as_str().unwrap().to_owned();
        assert!(!correlation_id.is_empty());
        body["correlation_id"] = "cid".into();
        let (_, expected) = server_refusal(file, Model::parse(model).unwrap());
        assert_eq!(body, expected, "{file}");
        assert!(body["link"].as_str().unwrap().starts_with(DOCS_URL));
    }
}

#[test]
fn a_refused_file_without_json_is_one_line_on_stderr() {
    let output = analyze("short_2s.mp4", &[]);
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty());
    let err = stderr(&output);
    assert_eq!(err.lines().count(), 1, "{err}");
    let (code, body) = server_refusal("short_2s.mp4", Model::Inter2);
    assert!(err.contains(code.as_str()), "{err}");
    assert!(err.contains(body["message"].as_str().unwrap()), "{err}");
}

#[test]
fn the_configured_duration_limit_applies_as_on_the_server() {
    let output = attune(&[
        "analyze",
        fixture("mp4_h264_aac.mp4").to_str().unwrap(),
        "--json",
    ])
    .env("ATTUNE_MAX_MEDIA_DURATION_SECONDS", "4")
    .output()
    .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let body: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(body["error_id"], "ih4004");
}

#[test]
fn the_summary_shows_the_timeline_signals_and_the_cqi_band() {
    let file = "speech/two_voices.wav";
    let output = analyze(file, &["--model", "inter-2-audio"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        output.stderr.is_empty(),
        "no progress bar off a terminal: {}",
        stderr(&output)
    );
    let text = stdout(&output);
    let expected = library_result(file, Model::Inter2Audio, ALL_SECTIONS);

    assert!(text.contains("two_voices.wav"), "{text}");
    assert!(text.contains("inter-2-audio"), "{text}");
    let timeline: Vec<&str> = text
        .lines()
        .skip_while(|line| *line != "Timeline")
        .skip(1)
        .take_while(|line| !line.is_empty())
        .collect();
    let states: Vec<&str> = timeline
        .iter()
        .filter(|line| !line.starts_with("      "))
        .filter_map(|line| line.split_whitespace().nth(1))
        .collect();
    let expected_states: Vec<&str> = expected
        .windows
        .iter()
        .map(|w| w.engagement_status.as_str())
        .collect();
    assert_eq!(states, expected_states, "{text}");
    for signal in expected.windows.iter().flat_map(|w| &w.signals) {
        assert!(text.contains(signal.signal_type.as_str()), "{text}");
        assert!(
            text.contains(signal.rationale.as_deref().unwrap()),
            "{text}"
        );
    }

    let overall = expected
        .conversation_quality
        .as_ref()
        .and_then(|q| q.overall)
        .unwrap();
    let index_line = text
        .lines()
        .find(|line| line.trim_start().starts_with("quality index"))
        .unwrap_or_else(|| panic!("no quality index line: {text}"));
    assert!(
        index_line.ends_with(Band::of(overall.quality_index).label()),
        "{index_line}"
    );
    assert!(
        index_line.contains(&format!("{:.1}", overall.quality_index)),
        "{index_line}"
    );
    for dimension in attune_core::wire::Dimension::ALL {
        let line = text
            .lines()
            .find(|line| line.trim_start().starts_with(dimension.as_str()))
            .unwrap_or_else(|| panic!("no {dimension} line: {text}"));
        assert!(
            line.ends_with(Band::of(overall.get(*dimension)).label()),
            "{line}"
        );
    }
}

#[test]
fn the_summary_leaves_out_sections_not_asked_for() {
    let output = analyze(
        "speech/two_voices.wav",
        &["--model", "inter-2-audio", "--include", "signals"],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("Signals over the file"), "{text}");
    assert!(!text.contains("quality index"), "{text}");
}

#[test]
fn bad_arguments_are_usage_errors() {
    let file = fixture("mp4_h264_aac.mp4");
    let file = file.to_str().unwrap();
    for args in [
        vec!["analyze", file, "--model", "inter-3"],
        vec!["analyze", file, "--model", "inter-2-deep"],
        vec!["analyze", file, "--include", "cqi", "--json"],
        vec!["analyze", "--json"],
    ] {
        let output = run(&args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(output.stdout.is_empty(), "{args:?}");
        assert!(!output.stderr.is_empty(), "{args:?}");
    }
    let unknown_model = run(&["analyze", file, "--model", "inter-3"]);
    assert!(
        stderr(&unknown_model).contains("inter-2-audio"),
        "{}",
        stderr(&unknown_model)
    );
}

#[test]
fn an_unreadable_file_fails_with_nothing_on_stdout() {
    let output = analyze("no-such-file.mp4", &["--json"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty());
    assert!(
        stderr(&output).contains("no-such-file.mp4"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn the_html_report_draws_the_speaker_turns_of_a_two_voice_conversation() {
    // c06: two voices of different register taking turns (RTTM beside the file).
    let name = "conversations/c06_uncertain_m2_f4";
    let rttm = std::fs::read_to_string(fixture(&format!("{name}.rttm"))).unwrap();
    let voices: std::collections::BTreeSet<&str> = rttm
        .lines()
        .filter_map(|l| l.split_whitespace().nth(7))
        .collect();
    assert_eq!(voices.len(), 2, "the fixture has two speakers");

    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("report.html");
    let output = analyze(
        &format!("{name}.wav"),
        &["--model", "inter-2-audio", "--html", html.to_str().unwrap()],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        !page.contains("speaker turns: not known"),
        "a file analysis knows its turns"
    );
    assert_eq!(
        page.matches("<g class=\"speaker-lane\"").count(),
        voices.len(),
        "one lane per voice"
    );
    for voice in 1..=2 {
        let turns = page.matches(&format!("<title>Voice {voice}: ")).count();
        assert!(turns >= 2, "voice {voice} has {turns} turn(s) drawn");
    }
}

#[test]
fn a_batch_over_a_directory_with_a_broken_file_reports_every_file() {
    let input = tempfile::tempdir().unwrap();
    for name in ["speech/hesitant.wav", "speech/two_voices.wav", "random.bin"] {
        let from = fixture(name);
        std::fs::copy(&from, input.path().join(from.file_name().unwrap())).unwrap();
    }
    let out = tempfile::tempdir().unwrap();
    let output = run(&[
        "analyze",
        input.path().to_str().unwrap(),
        "--model",
        "inter-2-audio",
        "--out",
        out.path().to_str().unwrap(),
        "--jobs",
        "2",
        "--html",
    ]);
    // The broken file fails the run, after the batch went on.
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("random.bin"),
        "{}",
        stderr(&output)
    );

    for good in ["hesitant.wav", "two_voices.wav"] {
        let json: Value = serde_json::from_slice(
            &std::fs::read(out.path().join(format!("{good}.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(
            json,
            library_json(&format!("speech/{good}"), Model::Inter2Audio, ALL_SECTIONS)
        );
        let page = std::fs::read_to_string(out.path().join(format!("{good}.html"))).unwrap();
        assert!(page.contains(good), "the report names its file");
    }
    let (_, refusal) = server_refusal("random.bin", Model::Inter2Audio);
    let error: Value =
        serde_json::from_slice(&std::fs::read(out.path().join("random.bin.error.json")).unwrap())
            .unwrap();
    assert_eq!(error["error_id"], refusal["error_id"]);

    let mut table = csv::Reader::from_path(out.path().join("summary.csv")).unwrap();
    let header = table.headers().unwrap().clone();
    let column = |name: &str| header.iter().position(|h| h == name).unwrap();
    let rows: Vec<csv::StringRecord> = table.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 3);
    let files: Vec<&str> = rows.iter().map(|r| &r[column("file")]).collect();
    assert!(
        files[0].ends_with("hesitant.wav") && files[2].ends_with(".wav"),
        "{files:?}"
    );
    for row in &rows {
        let file = &row[column("file")];
        if file.ends_with("random.bin") {
            assert_eq!(&row[column("status")], "refused");
            assert_eq!(
                &row[column("error_id")],
                refusal["error_id"].as_str().unwrap()
            );
            assert_eq!(
                &row[column("error_message")],
                refusal["message"].as_str().unwrap()
            );
        } else {
            assert_eq!(&row[column("status")], "analyzed", "{row:?}");
            let name = file.rsplit('/').next().unwrap();
            let expected =
                library_result(&format!("speech/{name}"), Model::Inter2Audio, ALL_SECTIONS);
            let overall = expected.conversation_quality.unwrap().overall.unwrap();
            assert_eq!(
                row[column("quality_index")].parse::<f64>().unwrap(),
                overall.quality_index
            );
            let detections: usize = expected.windows.iter().map(|w| w.signals.len()).sum();
            assert_eq!(
                row[column("signal_windows")].parse::<usize>().unwrap(),
                detections
            );
            let shares: f64 = ["engaged_share", "neutral_share", "disengaged_share"]
                .iter()
                .map(|c| row[column(c)].parse::<f64>().unwrap())
                .sum();
            assert!((shares - 1.0).abs() < 1e-3, "{shares}");
        }
    }
}

#[test]
fn several_files_without_out_is_a_usage_error() {
    let a = fixture("speech/hesitant.wav");
    let output = run(&["analyze", a.to_str().unwrap(), a.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("--out"), "{}", stderr(&output));
}

#[test]
fn a_store_that_cannot_be_created_fails_at_start_with_one_clear_message() {
    // Issue 16: a store directory that cannot be written (here: its parent is a file, which
    // holds even for root) stops the server at start, naming the path once, not mid-request.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-directory");
    std::fs::write(&file, b"x").unwrap();
    let store = file.join("attune.sqlite3");
    let output = attune(&["serve", "--bind", "127.0.0.1:0"])
        .env("ATTUNE_STORE_PATH", &store)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let message = stderr(&output);
    let path = file.display().to_string();
    assert!(message.contains("the store is unavailable"), "{message}");
    assert_eq!(message.matches(&path).count(), 1, "{message}");
}

/// A binary run away from its models (or pointed at the wrong folder) still analyzes, but says
/// on standard error that it read no words and how to point it at the model; switched off on
/// purpose (`ATTUNE_TRANSCRIBE=0`) it says nothing.
#[test]
fn a_missing_speech_model_is_named_on_stderr_and_the_analysis_goes_on() {
    let empty = std::env::temp_dir().join(format!("attune-no-models-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    let file = fixture("real/sample.wav");
    let args = [
        "analyze",
        file.to_str().unwrap(),
        "--model",
        "inter-2-audio",
        "--json",
    ];
    let output = attune(&args).env("ATTUNE_MODELS", &empty).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(err.contains("no words read"), "{err}");
    assert!(err.contains("ATTUNE_MODELS"), "{err}");
    assert!(
        err.contains(
            &empty
                .join("whisper-tiny-en.safetensors")
                .display()
                .to_string()
        ),
        "{err}"
    );
    assert!(json_of(&output)["windows"]
        .as_array()
        .is_some_and(|w| !w.is_empty()));

    let off = attune(&args)
        .env("ATTUNE_MODELS", &empty)
        .env("ATTUNE_TRANSCRIBE", "0")
        .output()
        .unwrap();
    assert_eq!(off.status.code(), Some(0));
    assert!(!stderr(&off).contains("no words read"), "{}", stderr(&off));
    std::fs::remove_dir_all(&empty).unwrap();
}
