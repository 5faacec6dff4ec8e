//! Analyzes a recording with the library alone (no server, no network) and
//! prints each window's engagement state and signals with their evidence,
//! then the v2 job result as JSON.
//!
//! Run: `cargo run --release --example analyze_file -- FILE [inter-2|inter-2-audio]`

use attune::core::pipeline::{analyze_bytes, AnalysisOptions};
use attune::core::upload::Sections;
use attune::core::wire::{IncludeFlag, Model};
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: analyze_file FILE [inter-2|inter-2-audio]");
        return ExitCode::from(2);
    };
    let model = match args.next().as_deref().map(Model::parse) {
        None => Model::Inter2,
        Some(Some(model)) => model,
        Some(None) => {
            eprintln!("unknown model; use inter-2 or inter-2-audio");
            return ExitCode::from(2);
        }
    };
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) => {
            eprintln!("{path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let analysis = match analyze_bytes(&bytes, &AnalysisOptions::new(model)) {
        Ok(analysis) => analysis,
        Err(e) => {
            eprintln!("{path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    for window in &analysis.windows {
        println!(
            "{:6.1}-{:6.1} s  {}",
            window.start_seconds, window.end_seconds, window.engagement_status
        );
        for signal in &window.signals {
            println!(
                "    {} ({}): {}",
                signal.signal_type,
                signal.probability.map(|p| p.as_str()).unwrap_or("-"),
                signal.rationale.as_deref().unwrap_or("")
            );
        }
    }
    let result = analysis.job_result(Sections::from_flags(&[
        IncludeFlag::ConversationQualityOverall,
        IncludeFlag::Signals,
    ]));
    if let Some(overall) = result.conversation_quality.as_ref().and_then(|q| q.overall) {
        println!(
            "CQI {} (clarity {}, authority {}, energy {}, rapport {}, learning {})",
            overall.quality_index,
            overall.clarity,
            overall.authority,
            overall.energy,
            overall.rapport,
            overall.learning
        );
    }
    ExitCode::SUCCESS
}
