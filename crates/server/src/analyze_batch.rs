//! `attune analyze --out DIR`: many files analyzed in parallel, one result
//! per file and a summary table.
//!
//! Each file goes through exactly the single-file analysis (same checks, same
//! result); a file the service would refuse gets its `ErrorResponse` as
//! `<file>.error.json` and in the summary, and the batch goes on. Workers
//! are plain threads pulling the next file from a shared counter: the
//! analysis is CPU-bound and synchronous, so an async runtime would add
//! nothing, and `--jobs` bounds how many files are held in memory at once.

use crate::analyze_cmd::{report_page, AnalyzeArgs, AnalyzeError, AnalyzeSettings, Outcome};
use crate::ids::CorrelationId;
use crate::report::{engagement_shares, signal_counts};
use attune_core::pipeline::{analyze_bytes, AnalysisOptions};
use attune_core::upload::Sections;
use attune_core::wire::{Dimension, SignalType, UploadJobResult};
use attune_core::{ErrorCode, ServiceError};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::collections::HashSet;
use std::io::Write;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Name of the summary table in the output directory.
pub const SUMMARY_FILE: &str = "summary.csv";

/// One input and the stem its outputs are named by.
#[derive(Debug, Clone)]
struct Input {
    path: PathBuf,
    /// `<stem>.json`, `<stem>.error.json`, `<stem>.html`; unique in the batch.
    stem: String,
}

/// How one file ended, as its summary row shows it.
#[derive(Debug)]
enum FileOutcome {
    Analyzed {
        result: Box<UploadJobResult>,
        output: String,
    },
    Refused {
        error: ServiceError,
        output: Option<String>,
    },
    /// Reading the file or writing its outputs failed on this machine.
    Failed { message: String },
}

/// The files named on the command line, directories expanded to their
/// regular, non-hidden files in name order.
fn inputs(paths: &[PathBuf]) -> Result<Vec<Input>, AnalyzeError> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            let read = |source| AnalyzeError::Read {
                path: path.clone(),
                source,
            };
            let mut entries = Vec::new();
            for entry in std::fs::read_dir(path).map_err(read)? {
                let entry = entry.map_err(read)?;
                let hidden = entry.file_name().to_string_lossy().starts_with('.');
                if !hidden && entry.path().is_file() {
                    entries.push(entry.path());
                }
            }
            entries.sort();
            files.extend(entries);
        } else {
            // A missing file stays in: it gets its error row like any other.
            files.push(path.clone());
        }
    }
    let mut taken = HashSet::new();
    Ok(files
        .into_iter()
        .map(|path| {
            let name = path
                .file_name()
                .map_or_else(|| "input".to_owned(), |n| n.to_string_lossy().into_owned());
            let mut stem = name.clone();
            let mut n = 2;
            while !taken.insert(stem.clone()) {
                stem = format!("{name}-{n}");
                n += 1;
            }
            Input { path, stem }
        })
        .collect())
}

/// Runs the batch: results into `out_dir`, one line on `out` at the end
/// naming the summary, a line on `err` per file that has no result.
pub fn analyze_batch(
    args: &AnalyzeArgs,
    out_dir: &Path,
    html: bool,
    settings: &AnalyzeSettings,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<Outcome, AnalyzeError> {
    let inputs = inputs(&args.files)?;
    std::fs::create_dir_all(out_dir).map_err(|source| AnalyzeError::WriteFile {
        path: out_dir.to_path_buf(),
        source,
    })?;
    let sections = args.sections();
    let options = AnalysisOptions {
        max_duration: settings.max_duration.as_secs_f64(),
        diarization: args.diarization(),
        ..AnalysisOptions::new(args.model)
    };
    let jobs = args
        .jobs
        .map(usize::from)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .clamp(1, inputs.len().max(1));

    let bar = ProgressBar::hidden();
    bar.set_length(inputs.len() as u64);
    if settings.progress_terminal && !args.quiet {
        bar.set_draw_target(ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template(
                "analyzing [{bar:40}] {pos}/{len} files [{elapsed}] {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
    }

    let next = AtomicUsize::new(0);
    let outcomes: Mutex<Vec<Option<FileOutcome>>> =
        Mutex::new((0..inputs.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(input) = inputs.get(i) else { break };
                let outcome = analyze_one(input, &sections, &options, html, out_dir, settings);
                bar.set_message(input.stem.clone());
                bar.inc(1);
                // A poisoned lock means another worker panicked outside the
                // analysis (which is caught); its slot stays empty and is
                // reported as failed below.
                if let Ok(mut slots) = outcomes.lock() {
                    slots[i] = Some(outcome);
                }
            });
        }
    });
    bar.finish_and_clear();
    let outcomes = outcomes.into_inner().unwrap_or_else(|p| p.into_inner());

    let summary_path = out_dir.join(SUMMARY_FILE);
    let write_error = |source: std::io::Error| AnalyzeError::WriteFile {
        path: summary_path.clone(),
        source,
    };
    let mut table =
        csv::Writer::from_path(&summary_path).map_err(|e| write_error(std::io::Error::other(e)))?;
    table
        .write_record(header())
        .map_err(|e| write_error(std::io::Error::other(e)))?;
    let (mut analyzed, mut failed) = (0, 0);
    for (input, outcome) in inputs.iter().zip(outcomes) {
        let outcome = outcome.unwrap_or_else(|| FileOutcome::Failed {
            message: "the analysis stopped unexpectedly".to_owned(),
        });
        match &outcome {
            FileOutcome::Analyzed { .. } => analyzed += 1,
            FileOutcome::Refused { error, .. } => {
                failed += 1;
                writeln!(
                    err,
                    "error: {}: {} [{}]",
                    input.path.display(),
                    error.message(),
                    error.code
                )?;
            }
            FileOutcome::Failed { message } => {
                failed += 1;
                writeln!(err, "error: {}: {message}", input.path.display())?;
            }
        }
        table
            .write_record(row(input, &outcome))
            .map_err(|e| write_error(std::io::Error::other(e)))?;
    }
    table.flush().map_err(write_error)?;
    writeln!(
        out,
        "analyzed {analyzed} of {} file(s); summary: {}",
        inputs.len(),
        summary_path.display()
    )?;
    out.flush()?;
    Ok(Outcome::Batch { analyzed, failed })
}

fn analyze_one(
    input: &Input,
    sections: &Result<Sections, ServiceError>,
    options: &AnalysisOptions,
    html: bool,
    out_dir: &Path,
    settings: &AnalyzeSettings,
) -> FileOutcome {
    let refused = |error: ServiceError| {
        let body = error.to_response(CorrelationId::new().as_str(), &settings.docs_url);
        let name = format!("{}.error.json", input.stem);
        let written = serde_json::to_vec_pretty(&body)
            .map_err(std::io::Error::from)
            .and_then(|json| std::fs::write(out_dir.join(&name), json));
        FileOutcome::Refused {
            error,
            output: written.ok().map(|()| name),
        }
    };
    let sections = match sections {
        Ok(sections) => *sections,
        Err(error) => return refused(error.clone()),
    };
    let bytes = match std::fs::read(&input.path) {
        Ok(bytes) => bytes,
        Err(error) => {
            return FileOutcome::Failed {
                message: format!("reading: {error}"),
            }
        }
    };
    // A panic in the analysis fails this file as the server fails its job
    // (`ih1001`), and the other files go on.
    let analysis =
        match std::panic::catch_unwind(AssertUnwindSafe(|| analyze_bytes(&bytes, options))) {
            Ok(Ok(analysis)) => analysis,
            Ok(Err(error)) => return refused(error),
            Err(_) => {
                return refused(ServiceError::with_message(
                    ErrorCode::Ih1001,
                    "the analysis of this file failed unexpectedly",
                ))
            }
        };
    let result = analysis.job_result(sections);
    let name = format!("{}.json", input.stem);
    let write = || -> std::io::Result<()> {
        let json = serde_json::to_vec_pretty(&result)?;
        std::fs::write(out_dir.join(&name), json)?;
        if html {
            let page = report_page(&input.path, &analysis, &result);
            std::fs::write(out_dir.join(format!("{}.html", input.stem)), page)?;
        }
        Ok(())
    };
    match write() {
        Ok(()) => FileOutcome::Analyzed {
            result: Box::new(result),
            output: name,
        },
        Err(error) => FileOutcome::Failed {
            message: format!("writing its result: {error}"),
        },
    }
}

/// The summary's columns: file and outcome, media facts, engagement shares,
/// one count per signal type (windows it was detected in), the whole-file
/// CQI, and the error of a file without a result.
fn header() -> Vec<String> {
    let mut columns: Vec<String> = [
        "file",
        "status",
        "output",
        "duration_seconds",
        "windows",
        "engaged_share",
        "neutral_share",
        "disengaged_share",
        "signal_windows",
    ]
    .map(str::to_owned)
    .to_vec();
    columns.extend(SignalType::ALL.iter().map(|t| format!("signal_{t}")));
    columns.push("quality_index".to_owned());
    columns.extend(Dimension::ALL.iter().map(|d| d.as_str().to_owned()));
    columns.extend(["error_id", "error_message"].map(str::to_owned));
    columns
}

fn row(input: &Input, outcome: &FileOutcome) -> Vec<String> {
    let width = header().len();
    let mut row = vec![input.path.display().to_string()];
    match outcome {
        FileOutcome::Analyzed { result, output } => {
            row.push("analyzed".to_owned());
            row.push(output.clone());
            row.push(format!("{}", result.duration_seconds));
            row.push(result.windows.len().to_string());
            for (_, share) in engagement_shares(result) {
                row.push(format!("{share:.4}"));
            }
            let counts = signal_counts(result);
            row.push(counts.values().sum::<usize>().to_string());
            for signal_type in SignalType::ALL {
                row.push(counts.get(signal_type).copied().unwrap_or(0).to_string());
            }
            match result
                .conversation_quality
                .as_ref()
                .and_then(|q| q.overall.as_ref())
            {
                Some(overall) => {
                    row.push(format!("{:.1}", overall.quality_index));
                    for dimension in Dimension::ALL {
                        row.push(format!("{}", overall.get(*dimension)));
                    }
                }
                None => row.extend(std::iter::repeat_n(String::new(), 6)),
            }
            row.extend([String::new(), String::new()]);
        }
        FileOutcome::Refused { error, output } => {
            row.push("refused".to_owned());
            row.push(output.clone().unwrap_or_default());
            row.resize(width - 2, String::new());
            row.push(error.code.as_str().to_owned());
            row.push(error.message().to_owned());
        }
        FileOutcome::Failed { message } => {
            row.push("failed".to_owned());
            row.resize(width - 1, String::new());
            row.push(message.clone());
        }
    }
    row
}
