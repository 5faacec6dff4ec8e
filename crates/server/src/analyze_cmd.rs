//! `attune analyze`: one local media file through exactly the analysis a v2
//! upload job runs, printed as the job's `result` JSON or as a readable
//! summary.
//!
//! The CLI and the server cannot disagree on what a file is: both check it
//! with [`attune_core::pipeline::validate`]'s rules (the deployment's
//! `max_media_duration_seconds` included), analyze it with
//! [`analyze_bytes_with_progress`] and build the result with
//! [`FileAnalysis::job_result`]; `include` values go through the upload
//! form's own parser. A refused file prints the server's `ErrorResponse`
//! (`--json`) or one line on standard error.
//!
//! Exit status: 0 analyzed; 1 the file was refused or could not be read (or
//! the output could not be written); 2 the command line is wrong (clap's
//! usage errors, such as an unknown `--model` or `--include` value).
//!
//! The upload byte limit (`max_upload_bytes`) is not applied: it bounds an
//! HTTP body, not what a file is, and a local file costs no upload.

use crate::config::Config;
use crate::ids::CorrelationId;
use crate::jobs::UploadRoute;
use crate::upload_form::RawUploadForm;
use attune_core::pipeline::{
    analyze_bytes_with_progress, AnalysisOptions, Diarization, FileAnalysis, Progress,
};
use attune_core::upload::Sections;
use attune_core::wire::{
    Dimension, IncludeFlag, Model, QualityValues, Seconds, Signal, UploadJobResult,
};
use attune_core::ServiceError;
use attune_cqi::Band;
use clap::builder::{PossibleValuesParser, TypedValueParser};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::fmt::Write as _;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Media at least this long gets a progress bar; shorter files finish before
/// a bar would be worth drawing.
pub const PROGRESS_MIN_SECONDS: Seconds = 60.0;

/// `attune analyze`'s arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct AnalyzeArgs {
    /// The media files, or directories whose files (not subdirectories, not
    /// hidden files) are analyzed; containers are recognised by content, not
    /// by name. More than one file, or a directory, needs `--out`.
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// The model: `inter-2` reads audio and video, `inter-2-audio` audio alone.
    #[arg(long, value_name = "MODEL", default_value = "inter-2", value_parser = model_parser())]
    pub model: Model,
    /// Optional result sections, comma-separated or repeated:
    /// conversation_quality_overall, conversation_quality_timeline, signals
    /// [default: all three]. An empty value (`--include ''`) asks for none,
    /// like an upload without `include[]`.
    #[arg(long, value_name = "SECTIONS", value_delimiter = ',', value_parser = include_value)]
    pub include: Option<Vec<String>>,
    /// Print the v2 job `result` JSON (or the `ErrorResponse` JSON of a
    /// refused file) on standard output instead of a summary.
    #[arg(long)]
    pub json: bool,
    /// Also write a self-contained HTML report: to PATH for one file, or,
    /// with `--out` and no PATH, one `<file>.html` per file into the output
    /// directory.
    #[arg(long, value_name = "PATH", num_args = 0..=1)]
    pub html: Option<Option<PathBuf>>,
    /// Also write the speaker turns (who speaks when, overlapped speech given to both
    /// speakers) as RTTM, the format diarization tools and scorers read, to PATH (one file
    /// only).
    #[arg(long, value_name = "PATH")]
    pub rttm: Option<PathBuf>,
    /// Also write what was said, to PATH (one file only): WebVTT with each voice named
    /// (`<v Speaker N>`) when PATH ends in `.vtt`, a JSON array of `{start, end, speaker, text}`
    /// (speaker from 1, 0 when unknown) when it ends in `.json`. With `--as-stream`, the
    /// transcript a live session's transcriber would have finalized.
    #[arg(long, value_name = "PATH")]
    pub transcript: Option<PathBuf>,
    /// Analyze the file as a live stream session would hear it: speakers labelled online, a
    /// step at a time, from what came before (uploads cluster the whole file).
    #[arg(long)]
    pub as_stream: bool,
    /// Batch mode: write `<file>.json` (the job result, or
    /// `<file>.error.json` with the `ErrorResponse` of a refused file) per
    /// file and `summary.csv` into DIR, created if missing.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Files analyzed at once in batch mode [default: the number of CPUs].
    #[arg(long, short = 'j', value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: Option<u16>,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
}

/// What `--transcript` writes, by the file name's extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TranscriptFormat {
    /// `.vtt`: WebVTT with voice spans.
    WebVtt,
    /// `.json`: an array of segments.
    Json,
}

/// The format of a `--transcript` path (`None` for another extension).
pub fn transcript_format(path: &Path) -> Option<TranscriptFormat> {
    match path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .as_deref()
    {
        Some("vtt") => Some(TranscriptFormat::WebVtt),
        Some("json") => Some(TranscriptFormat::Json),
        _ => None,
    }
}

/// `--model` accepts the models the v2 upload route serves, and lists them
/// in `--help` and in its usage error.
fn model_parser() -> impl TypedValueParser<Value = Model> {
    PossibleValuesParser::new(Model::SERVED.iter().map(|model| model.as_str()))
        .try_map(|text| Model::parse(&text).ok_or("not a model"))
}

/// Checks one `--include` value with the upload form's parser, so the CLI
/// accepts exactly what `POST /v2/upload/analyze` accepts; a value it
/// refuses is a usage error quoting the server's message.
fn include_value(text: &str) -> Result<String, String> {
    include_flags(&[text.to_owned()])
        .map(|_| text.to_owned())
        .map_err(|error| error.message().to_owned())
}

/// The upload form's `include[]` parsing (`ih4005` for an unknown value).
fn include_flags(values: &[String]) -> Result<Vec<IncludeFlag>, ServiceError> {
    let form = RawUploadForm {
        include: values.to_vec(),
        ..RawUploadForm::default()
    };
    form.include(UploadRoute::V2)
}

/// What one run of `attune analyze` does, from its arguments.
#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    /// One file: a summary or JSON on standard output, and the HTML report
    /// at `html` if asked.
    Single {
        /// The file.
        file: PathBuf,
        /// Where the HTML report goes.
        html: Option<PathBuf>,
    },
    /// Several files into an output directory.
    Batch {
        /// The output directory.
        out: PathBuf,
        /// Whether each file also gets an HTML report.
        html: bool,
    },
}

impl AnalyzeArgs {
    /// Which mode the arguments ask for; a combination that makes no sense
    /// is a usage error with this message.
    pub fn mode(&self) -> Result<Mode, String> {
        let many = self.files.len() > 1 || self.files.iter().any(|f| f.is_dir());
        if self.rttm.is_some() && (many || self.out.is_some()) {
            return Err(
                "--rttm writes the turns of one file: give one file and no --out".to_owned(),
            );
        }
        if let Some(path) = &self.transcript {
            if many || self.out.is_some() {
                return Err(
                    "--transcript writes what was said in one file: give one file and no --out"
                        .to_owned(),
                );
            }
            if transcript_format(path).is_none() {
                return Err(format!(
                    "--transcript {}: the file name must end in .vtt (WebVTT) or .json",
                    path.display()
                ));
            }
        }
        match (&self.out, &self.html) {
            (Some(_), Some(Some(path))) => Err(format!(
                "--html {} with --out: reports go into the output directory; give --html without \
                 a path (and after the files)",
                path.display()
            )),
            (Some(out), html) => Ok(Mode::Batch {
                out: out.clone(),
                html: html.is_some(),
            }),
            (None, _) if many => {
                Err("several files or a directory need --out DIR for their results".to_owned())
            }
            (None, Some(None)) => {
                Err("--html needs the path of the report to write (or --out DIR)".to_owned())
            }
            (None, html) => Ok(Mode::Single {
                file: self.files[0].clone(),
                html: html.clone().flatten(),
            }),
        }
    }

    /// How speakers are found: online with `--as-stream`, whole-file otherwise.
    pub fn diarization(&self) -> Diarization {
        if self.as_stream {
            Diarization::Online
        } else {
            Diarization::WholeFile
        }
    }

    /// The requested result sections: every section when `--include` is not
    /// given (a person at a terminal wants the whole picture, and the JSON is
    /// then a superset of any narrower request), otherwise exactly the named
    /// ones, as the server reads `include[]`.
    pub fn sections(&self) -> Result<Sections, ServiceError> {
        match &self.include {
            None => Ok(Sections {
                overall: true,
                timeline: true,
                signals: true,
            }),
            Some(values) => include_flags(values).map(|flags| Sections::from_flags(&flags)),
        }
    }
}

/// What the deployment's configuration contributes, so the CLI refuses what
/// the server configured the same way would refuse.
#[derive(Debug, Clone, PartialEq)]
pub struct AnalyzeSettings {
    /// Longest accepted media (`ih4004` beyond).
    pub max_duration: Duration,
    /// Base of an `ErrorResponse`'s `link`.
    pub docs_url: String,
    /// Whether standard error is a terminal a progress bar may draw on.
    pub progress_terminal: bool,
}

impl AnalyzeSettings {
    /// The settings of a loaded configuration; the progress bar draws when
    /// standard error is a terminal.
    pub fn from_config(config: &Config) -> AnalyzeSettings {
        AnalyzeSettings {
            max_duration: config.max_media_duration,
            docs_url: config.docs_url.clone(),
            progress_terminal: std::io::stderr().is_terminal(),
        }
    }
}

/// How an analysis ended, when nothing went wrong on this machine.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Outcome {
    /// The result was printed.
    Analyzed,
    /// The service would refuse the file (or the request); the refusal was
    /// printed.
    Refused(ServiceError),
    /// A batch ran to its end; `failed` of its files have an error in the
    /// summary instead of a result.
    Batch {
        /// Files analyzed.
        analyzed: usize,
        /// Files refused or unreadable.
        failed: usize,
    },
}

/// Why `attune analyze` could not do its work at all (exit status 1, with
/// nothing printed on standard output).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AnalyzeError {
    /// The file could not be read.
    #[error("reading {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The result could not be written (e.g. a closed pipe).
    #[error("writing the result: {0}")]
    Write(#[from] std::io::Error),
    /// An output file (report, result, summary) could not be written.
    #[error("writing {}: {source}", path.display())]
    WriteFile {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// Runs `attune analyze` on one file: the result goes to `out`, a refusal
/// to `out` (`--json`) or `err` (one line), the HTML report to `html` when
/// given, the progress bar to the process's standard error when `settings`
/// allows it and `--quiet` is not given.
pub fn analyze(
    args: &AnalyzeArgs,
    file: &Path,
    html: Option<&Path>,
    settings: &AnalyzeSettings,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<Outcome, AnalyzeError> {
    let sections = match args.sections() {
        Ok(sections) => sections,
        Err(error) => return refuse(args, file, settings, error, out, err),
    };
    let bytes = std::fs::read(file).map_err(|source| AnalyzeError::Read {
        path: file.to_path_buf(),
        source,
    })?;
    let options = AnalysisOptions {
        max_duration: settings.max_duration.as_secs_f64(),
        diarization: args.diarization(),
        ..AnalysisOptions::new(args.model)
    };
    let mut bar = ProgressDisplay::new(settings.progress_terminal && !args.quiet);
    let analysis = analyze_bytes_with_progress(&bytes, &options, &mut |p| bar.update(p));
    bar.finish();
    match analysis {
        Ok(analysis) => {
            // Speech the recognizer cannot read gives no words: say so, once per file.
            if let Some(language) = analysis.language.as_ref().filter(|l| !l.transcribed()) {
                writeln!(err, "{}: {}", file.display(), language.describe())?;
            }
            // No recognizer although transcription is on: say why, rather than leave the
            // words out without a word.
            if analysis.language.is_none() {
                if let Some(why) = attune_core::transcript::why_no_words() {
                    writeln!(err, "{}: no words read: {why}", file.display())?;
                }
            }
            let result = analysis.job_result(sections);
            if let Some(path) = html {
                let page = report_page(file, &analysis, &result);
                std::fs::write(path, page).map_err(|source| AnalyzeError::WriteFile {
                    path: path.to_path_buf(),
                    source,
                })?;
            }
            if let Some(path) = &args.rttm {
                let name = file.file_stem().map(|s| s.to_string_lossy().into_owned());
                let text = attune_core::diarization::rttm(
                    name.as_deref().unwrap_or("file"),
                    &analysis.voice_turns,
                );
                std::fs::write(path, text).map_err(|source| AnalyzeError::WriteFile {
                    path: path.clone(),
                    source,
                })?;
            }
            if let Some(path) = &args.transcript {
                let text = match transcript_format(path) {
                    Some(TranscriptFormat::WebVtt) => {
                        attune_core::transcript::webvtt(&analysis.transcript)
                    }
                    _ => attune_core::transcript::json(&analysis.transcript),
                };
                std::fs::write(path, text).map_err(|source| AnalyzeError::WriteFile {
                    path: path.clone(),
                    source,
                })?;
            }
            if args.json {
                serde_json::to_writer(&mut *out, &result).map_err(std::io::Error::from)?;
                writeln!(out)?;
            } else {
                out.write_all(summary(file, &analysis, &result).as_bytes())?;
            }
            out.flush()?;
            Ok(Outcome::Analyzed)
        }
        Err(error) => refuse(args, file, settings, error, out, err),
    }
}

/// The HTML report of one analyzed file.
pub fn report_page(file: &Path, analysis: &FileAnalysis, result: &UploadJobResult) -> String {
    let title = file.file_name().map_or_else(
        || file.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let turns = crate::analyzer_runner::speaker_turns(analysis);
    crate::report::render(&crate::report::ReportInput {
        title: &title,
        model: analysis.model,
        params_version: analysis.params_version,
        result,
        turns: Some(&turns),
        transcript: Some(&analysis.transcript),
        language: analysis.language.as_ref(),
    })
}

/// Prints a refusal the way the server would answer it.
fn refuse(
    args: &AnalyzeArgs,
    file: &Path,
    settings: &AnalyzeSettings,
    error: ServiceError,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<Outcome, AnalyzeError> {
    if args.json {
        // The body `HttpError::into_response` writes (a media refusal has no
        // `reset_time`), under a correlation id of this run.
        let body = error.to_response(CorrelationId::new().as_str(), &settings.docs_url);
        serde_json::to_writer(&mut *out, &body).map_err(std::io::Error::from)?;
        writeln!(out)?;
        out.flush()?;
    } else {
        writeln!(
            err,
            "error: {}: {} [{}]",
            file.display(),
            error.message(),
            error.code
        )?;
    }
    Ok(Outcome::Refused(error))
}

/// The progress bar on standard error: hidden unless allowed and the media is
/// long; a spinner while decoding, then a bar over the windows.
struct ProgressDisplay {
    bar: ProgressBar,
    allowed: bool,
}

impl ProgressDisplay {
    fn new(allowed: bool) -> ProgressDisplay {
        ProgressDisplay {
            bar: ProgressBar::hidden(),
            allowed,
        }
    }

    fn update(&mut self, progress: Progress) {
        match progress {
            Progress::Validated { duration, windows } => {
                self.bar.set_length(windows);
                if self.allowed && duration >= PROGRESS_MIN_SECONDS {
                    self.bar.set_draw_target(ProgressDrawTarget::stderr());
                    self.bar.set_style(
                        ProgressStyle::with_template("{spinner} {msg} [{elapsed}]")
                            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                    );
                    self.bar.enable_steady_tick(Duration::from_millis(100));
                }
                self.bar
                    .set_message(format!("decoding {}", clock(duration, 0)));
            }
            Progress::Decoded => self.bar.set_message("extracting features"),
            Progress::FeaturesExtracted => {
                self.bar.set_style(
                    ProgressStyle::with_template(
                        "{msg} [{bar:40}] {pos}/{len} windows [{elapsed}]",
                    )
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
                );
                self.bar.set_message("analyzing");
            }
            Progress::Windows { done, total } => {
                self.bar.set_length(total);
                self.bar.set_position(done);
            }
            // A stage added later needs no drawing of its own.
            _ => {}
        }
    }

    /// Removes the bar, so the summary starts on a clean line.
    fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// `seconds` as `m:ss` (or `h:mm:ss` past an hour) with `decimals` tenths.
fn clock(seconds: Seconds, decimals: usize) -> String {
    let seconds = if seconds.is_finite() {
        seconds.max(0.0)
    } else {
        0.0
    };
    let scale = 10f64.powi(decimals as i32);
    let total = (seconds * scale).round() / scale;
    let whole = total.trunc() as u64;
    let (hours, minutes) = (whole / 3600, whole / 60 % 60);
    let secs = total - (whole - whole % 60) as f64;
    let width = if decimals == 0 { 2 } else { 3 + decimals };
    if hours > 0 {
        format!("{hours}:{minutes:02}:{secs:0width$.decimals$}")
    } else {
        format!("{minutes}:{secs:0width$.decimals$}")
    }
}

fn span(start: Seconds, end: Seconds) -> String {
    format!("{}-{}", clock(start, 1), clock(end, 1))
}

/// One signal on one line: type, probability and modality when known.
fn signal_line(signal: &Signal) -> String {
    let mut line = signal.signal_type.as_str().to_owned();
    if let Some(probability) = signal.probability {
        let _ = write!(line, " ({probability})");
    }
    if let Some(modality) = signal.modality.as_ref().filter(|m| !m.is_empty()) {
        let names: Vec<&str> = modality.iter().map(|m| m.as_str()).collect();
        let _ = write!(line, " [{}]", names.join(", "));
    }
    line
}

/// One score and its band; the index keeps its decimal (it is a mean of
/// whole dimension scores), the dimensions are whole numbers.
fn quality_line(label: &str, score: f64, decimals: usize) -> String {
    format!("  {label:<15} {score:>5.decimals$}  {}\n", Band::of(score))
}

/// The readable summary: file, model and duration; each window's time,
/// engagement and signals with their rationale; the merged signals; the CQI
/// with its bands, for the sections the result has.
pub fn summary(file: &Path, analysis: &FileAnalysis, result: &UploadJobResult) -> String {
    let mut s = String::new();
    let windows = result.windows.len();
    let _ = writeln!(s, "File      {}", file.display());
    let _ = writeln!(
        s,
        "Model     {} (parameters {})",
        analysis.model, analysis.params_version
    );
    let _ = writeln!(
        s,
        "Duration  {} ({windows} window{} of {} s)",
        clock(result.duration_seconds, 1),
        if windows == 1 { "" } else { "s" },
        result.window_seconds
    );

    s.push_str("\nTimeline\n");
    for window in &result.windows {
        let _ = writeln!(
            s,
            "  {}  {}",
            span(window.start_seconds, window.end_seconds),
            window.engagement_status
        );
        if window.signals.is_empty() {
            s.push_str("      no signals\n");
        }
        for signal in &window.signals {
            let _ = writeln!(s, "      {}", signal_line(signal));
            if let Some(rationale) = &signal.rationale {
                let _ = writeln!(s, "          {rationale}");
            }
        }
    }

    if let Some(signals) = &result.signals {
        s.push_str("\nSignals over the file\n");
        if signals.is_empty() {
            s.push_str("  none detected\n");
        }
        for signal in signals {
            let _ = writeln!(
                s,
                "  {}  {}",
                span(signal.start, signal.end),
                signal_line(signal)
            );
        }
    }

    if let Some(quality) = &result.conversation_quality {
        if let Some(overall) = &quality.overall {
            s.push_str("\nConversation quality (whole file)\n");
            s.push_str(&quality_block(overall));
        }
        if let Some(timeline) = &quality.timeline {
            s.push_str("\nConversation quality over time\n");
            for entry in timeline {
                let v = &entry.values;
                let _ = write!(
                    s,
                    "  {}  index {:>4.1} {:<13}",
                    span(entry.start, entry.end),
                    v.quality_index,
                    Band::of(v.quality_index).label()
                );
                for dimension in Dimension::ALL {
                    let _ = write!(s, " {} {}", dimension, v.get(*dimension));
                }
                s.push('\n');
            }
        }
    }
    s
}

/// The index and the five dimensions, each with its band.
fn quality_block(values: &QualityValues) -> String {
    let mut block = quality_line("quality index", values.quality_index, 1);
    for dimension in Dimension::ALL {
        block.push_str(&quality_line(dimension.as_str(), values.get(*dimension), 0));
    }
    block
}

#[cfg(test)]
mod tests {
    use super::*;
    use attune_core::pipeline::analyze_bytes;
    use attune_core::ErrorCode;

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures")
            .join(name)
    }

    fn args(file: &str, model: Model, include: Option<&[&str]>, json: bool) -> AnalyzeArgs {
        AnalyzeArgs {
            files: vec![fixture(file)],
            model,
            include: include.map(|v| v.iter().map(|s| (*s).to_owned()).collect()),
            json,
            html: None,
            rttm: None,
            transcript: None,
            as_stream: false,
            out: None,
            jobs: None,
            quiet: true,
        }
    }

    #[test]
    fn rttm_writes_the_speaker_turns_of_the_upload_or_of_a_stream() {
        let dir = std::env::temp_dir().join(format!("attune-rttm-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut a = args("speech/two_voices.wav", Model::Inter2Audio, None, true);
        let path = dir.join("two.rttm");
        a.rttm = Some(path.clone());
        let (outcome, _, _) = run(&a);
        assert_eq!(outcome, Outcome::Analyzed);
        let upload = std::fs::read_to_string(&path).unwrap();
        let turns = attune_core::diarization::parse_rttm(&upload);
        let mut speakers: Vec<&str> = turns.iter().map(|t| t.speaker.as_str()).collect();
        speakers.sort_unstable();
        speakers.dedup();
        assert_eq!(speakers, ["s0", "s1"], "{upload}");
        assert!(upload
            .lines()
            .all(|l| l.starts_with("SPEAKER two_voices 1 ")));
        // As a stream hears it: the same two voices, labelled online.
        a.as_stream = true;
        run(&a);
        let stream = std::fs::read_to_string(&path).unwrap();
        let d = attune_core::diarization::diarization_error_rate(
            &turns,
            &attune_core::diarization::parse_rttm(&stream),
            0.25,
        );
        assert!(d.rate() < 0.2, "{stream}\nvs\n{upload}");
        // One file only.
        a.files.push(fixture("speech/hesitant.wav"));
        assert!(a.mode().unwrap_err().contains("--rttm"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn transcript_writes_what_was_said_as_webvtt_or_json() {
        let dir = std::env::temp_dir().join(format!("attune-transcript-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut a = args("real/sample.wav", Model::Inter2Audio, None, true);
        let vtt = dir.join("call.vtt");
        a.transcript = Some(vtt.clone());
        assert_eq!(run(&a).0, Outcome::Analyzed);
        let text = std::fs::read_to_string(&vtt).unwrap();
        assert!(text.starts_with("WEBVTT\n"), "{text}");
        // The two women of the call, each named as a voice, and what they said.
        assert!(
            text.contains("<v Speaker 1>") && text.contains("<v Speaker 2>"),
            "{text}"
        );
        assert!(
            text.contains("New Jersey") && text.contains("Chicago"),
            "{text}"
        );
        assert!(text.contains(" --> "));
        // The HTML report shows it beside the timeline.
        let html = dir.join("call.html");
        let (mut out, mut err) = (Vec::new(), Vec::new());
        analyze(
            &a,
            &a.files[0],
            Some(&html),
            &settings(),
            &mut out,
            &mut err,
        )
        .unwrap();
        let page = std::fs::read_to_string(&html).unwrap();
        assert!(
            page.contains("<h2>What was said</h2>"),
            "no transcript section"
        );
        assert!(page.contains("speaker 2") && page.contains("Chicago"));
        // JSON, as a live session would have finalized it.
        let json = dir.join("call.json");
        a.transcript = Some(json.clone());
        a.as_stream = true;
        assert_eq!(run(&a).0, Outcome::Analyzed);
        let segments: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let segments = segments.as_array().unwrap();
        // Finalized at pauses: fewer, longer segments than the whole file gives.
        assert!(segments.len() >= 3, "{segments:?}");
        assert!(segments
            .iter()
            .any(|s| s["text"].as_str().unwrap().contains("Chicago")));
        for s in segments {
            assert!(s["start"].as_f64().unwrap() <= s["end"].as_f64().unwrap());
            assert!(s["end"].as_f64().unwrap() <= 30.01);
            assert!(s["speaker"].as_u64().unwrap() <= 2);
        }
        // Another extension, or several files, is a usage error.
        a.transcript = Some(dir.join("call.txt"));
        assert!(a.mode().unwrap_err().contains(".vtt"));
        a.transcript = Some(json);
        a.files.push(fixture("speech/hesitant.wav"));
        assert!(a.mode().unwrap_err().contains("--transcript"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Speech in another language (espeak-ng German, `tests/fixtures/whisper/german.wav`) is
    /// not transcribed, and the user is told why: a line on standard error, an empty
    /// transcript, and a note in the report where the words would be.
    #[test]
    fn another_language_is_not_transcribed_and_says_so() {
        let dir = std::env::temp_dir().join(format!("attune-german-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut a = args("whisper/german.wav", Model::Inter2Audio, None, true);
        let json = dir.join("german.json");
        a.transcript = Some(json.clone());
        let html = dir.join("german.html");
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let outcome = analyze(
            &a,
            &a.files[0],
            Some(&html),
            &settings(),
            &mut out,
            &mut err,
        )
        .unwrap();
        assert_eq!(outcome, Outcome::Analyzed);
        let err = String::from_utf8(err).unwrap();
        assert!(
            err.contains("speech identified as 'de'") && err.contains("not transcribed"),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(&json).unwrap().trim(), "[]");
        let page = std::fs::read_to_string(&html).unwrap();
        assert!(
            page.contains("Not transcribed: speech identified as &#39;de&#39;"),
            "{page}"
        );
        // English keeps its words and says nothing of languages (the test above).
        let (_, _, err) = run(&args("real/sample.wav", Model::Inter2Audio, None, true));
        assert!(!err.contains("identified"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn settings() -> AnalyzeSettings {
        AnalyzeSettings {
            max_duration: Duration::from_secs(1800),
            docs_url: "https://docs.example".into(),
            progress_terminal: false,
        }
    }

    fn run(args: &AnalyzeArgs) -> (Outcome, String, String) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let outcome = analyze(args, &args.files[0], None, &settings(), &mut out, &mut err).unwrap();
        (
            outcome,
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    }

    #[test]
    fn clock_reads_minutes_and_hours() {
        assert_eq!(clock(0.0, 1), "0:00.0");
        assert_eq!(clock(65.25, 1), "1:05.3");
        assert_eq!(clock(59.96, 1), "1:00.0");
        assert_eq!(clock(3725.0, 0), "1:02:05");
        assert_eq!(clock(f64::NAN, 1), "0:00.0");
    }

    #[test]
    fn include_follows_the_upload_form() {
        let mut a = args("wav_pcm_s16le.wav", Model::Inter2Audio, None, true);
        assert_eq!(
            a.sections().unwrap(),
            Sections {
                overall: true,
                timeline: true,
                signals: true
            }
        );
        a.include = Some(vec!["signals".into(), "signals".into()]);
        assert_eq!(
            a.sections().unwrap(),
            Sections {
                signals: true,
                ..Sections::default()
            }
        );
        a.include = Some(vec![String::new()]);
        assert_eq!(a.sections().unwrap(), Sections::default());
        a.include = Some(vec!["cqi".into()]);
        assert_eq!(a.sections().unwrap_err().code, ErrorCode::Ih4005);
        assert!(include_value("cqi").unwrap_err().contains("`signals`"));
        assert_eq!(
            include_value("conversation_quality_timeline").as_deref(),
            Ok("conversation_quality_timeline")
        );
    }

    #[test]
    fn an_unknown_include_built_in_code_is_refused_like_the_server() {
        let a = args(
            "wav_pcm_s16le.wav",
            Model::Inter2Audio,
            Some(&["cqi"]),
            true,
        );
        let (outcome, out, _) = run(&a);
        assert!(matches!(outcome, Outcome::Refused(e) if e.code == ErrorCode::Ih4005));
        let body: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(body["error_id"], "ih4005");
    }

    #[test]
    fn json_is_the_library_job_result() {
        let a = args(
            "wav_pcm_s16le.wav",
            Model::Inter2Audio,
            Some(&["signals"]),
            true,
        );
        let (outcome, out, err) = run(&a);
        assert_eq!(outcome, Outcome::Analyzed);
        assert!(err.is_empty());
        let bytes = std::fs::read(&a.files[0]).unwrap();
        let expected = analyze_bytes(&bytes, &AnalysisOptions::new(Model::Inter2Audio))
            .unwrap()
            .job_result(a.sections().unwrap());
        assert_eq!(
            out,
            format!("{}\n", serde_json::to_string(&expected).unwrap())
        );
        assert!(!out.contains("conversation_quality"));
    }

    #[test]
    fn a_lower_configured_duration_limit_refuses_what_the_default_accepts() {
        let a = args("wav_pcm_s16le.wav", Model::Inter2Audio, None, false);
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let strict = AnalyzeSettings {
            max_duration: Duration::from_secs(4),
            ..settings()
        };
        let outcome = analyze(&a, &a.files[0], None, &strict, &mut out, &mut err).unwrap();
        assert!(matches!(outcome, Outcome::Refused(e) if e.code == ErrorCode::Ih4004));
        assert!(out.is_empty());
        let err = String::from_utf8(err).unwrap();
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.ends_with("[ih4004]\n"), "{err}");
    }

    #[test]
    fn an_unreadable_file_is_an_error_not_a_refusal() {
        let a = args("no-such-file.mp4", Model::Inter2, None, true);
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let error = analyze(&a, &a.files[0], None, &settings(), &mut out, &mut err).unwrap_err();
        assert!(matches!(error, AnalyzeError::Read { .. }));
        assert!(out.is_empty() && err.is_empty());
    }

    #[test]
    fn the_progress_bar_follows_the_windows_while_hidden() {
        let bytes = std::fs::read(fixture("segments/continuous.webm")).unwrap();
        let mut display = ProgressDisplay::new(false);
        let analysis =
            analyze_bytes_with_progress(&bytes, &AnalysisOptions::new(Model::Inter2), &mut |p| {
                display.update(p)
            })
            .unwrap();
        let windows = analysis.windows.len() as u64;
        assert!(windows >= 2);
        assert_eq!(display.bar.length(), Some(windows));
        assert_eq!(display.bar.position(), windows);
        assert!(display.bar.is_hidden());
    }
}
