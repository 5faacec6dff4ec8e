//! The production [`JobRunner`]: attune-core's library entry points, the same
//! ones an embedding service calls, behind the upload routes.

use crate::jobs::{JobInput, JobOutput, JobRunner, UploadRequest, UploadRoute, ValidatedMedia};
use crate::store::SpeakerTurn;
use attune_core::feedback::feedback;
use attune_core::pipeline::{analyze_bytes, validate, AnalysisOptions};
use attune_core::upload::V1Parts;
use attune_core::wire::Feedback;
use attune_core::ServiceError;
use std::time::Duration;

/// Analyzes uploads in-process with the rule analyzer.
#[derive(Debug, Clone)]
pub struct AnalyzerRunner {
    /// Longest accepted media on the v2 route (`ih4004` beyond).
    max_duration: Duration,
}

impl AnalyzerRunner {
    /// A runner that refuses v2 media longer than `max_duration`.
    pub fn new(max_duration: Duration) -> Self {
        AnalyzerRunner { max_duration }
    }

    /// The route's rules: v1 reads a video without audio from its picture
    /// and has its own maximum; v2 applies the model's rules and the
    /// deployment's maximum duration.
    ///
    /// An upload's words are recognized after its features, on its own executor thread: an
    /// upload holds one core, so it never crowds out the stream lane.
    fn options(&self, request: &UploadRequest) -> AnalysisOptions {
        let options = match request.route {
            UploadRoute::V1 => AnalysisOptions::v1_upload(),
            UploadRoute::V2 => AnalysisOptions {
                max_duration: self.max_duration.as_secs_f64(),
                ..AnalysisOptions::new(request.model)
            },
        };
        AnalysisOptions {
            words_beside: false,
            ..options
        }
    }
}

/// The speaker turns of an analysis, as the HTML report draws them (the same
/// list `attune analyze --html` draws).
pub(crate) fn speaker_turns(analysis: &attune_core::pipeline::FileAnalysis) -> Vec<SpeakerTurn> {
    analysis
        .speaker_turns
        .iter()
        .map(|t| SpeakerTurn {
            speaker: u32::from(t.speaker),
            start: t.start_s,
            end: t.end_s,
        })
        .collect()
}

impl JobRunner for AnalyzerRunner {
    fn validate(&self, request: &UploadRequest) -> Result<ValidatedMedia, ServiceError> {
        let info = validate(&request.file.bytes, &self.options(request))?;
        Ok(ValidatedMedia {
            duration_seconds: info.duration,
        })
    }

    fn run(&self, job: JobInput) -> Result<JobOutput, ServiceError> {
        let request = &job.request;
        let analysis = analyze_bytes(&request.file.bytes, &self.options(request))?;
        Ok(JobOutput {
            result: analysis.job_result(request.sections()),
            speaker_turns: speaker_turns(&analysis),
        })
    }

    fn feedback(&self, request: &UploadRequest, parts: &V1Parts) -> Result<Feedback, ServiceError> {
        Ok(feedback(
            &parts.signals,
            &request.goal_dimensions,
            request.conversation_context.as_deref(),
        ))
    }
}
