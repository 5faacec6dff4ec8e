//! The production [`JobRunner`]: attune-core's library entry points, the same
//! ones an embedding service calls, behind the upload routes.

use crate::jobs::{JobInput, JobRunner, UploadRequest, ValidatedMedia};
use attune_core::feedback::feedback;
use attune_core::pipeline::{analyze_bytes, validate, AnalysisOptions};
use attune_core::upload::V1Parts;
use attune_core::wire::{Feedback, UploadJobResult};
use attune_core::ServiceError;
use std::time::Duration;

/// Analyzes uploads in-process with the rule analyzer.
#[derive(Debug, Clone)]
pub struct AnalyzerRunner {
    /// Longest accepted media (`ih4004` beyond).
    max_duration: Duration,
}

impl AnalyzerRunner {
    /// A runner that refuses media longer than `max_duration`.
    pub fn new(max_duration: Duration) -> Self {
        AnalyzerRunner { max_duration }
    }

    fn options(&self, request: &UploadRequest) -> AnalysisOptions {
        AnalysisOptions {
            max_duration: self.max_duration.as_secs_f64(),
            ..AnalysisOptions::new(request.model)
        }
    }
}

impl JobRunner for AnalyzerRunner {
    fn validate(&self, request: &UploadRequest) -> Result<ValidatedMedia, ServiceError> {
        let info = validate(&request.file.bytes, &self.options(request))?;
        Ok(ValidatedMedia {
            duration_seconds: info.duration,
        })
    }

    fn run(&self, job: JobInput) -> Result<UploadJobResult, ServiceError> {
        let request = &job.request;
        let analysis = analyze_bytes(&request.file.bytes, &self.options(request))?;
        Ok(analysis.job_result(request.sections()))
    }

    fn feedback(&self, request: &UploadRequest, parts: &V1Parts) -> Result<Feedback, ServiceError> {
        Ok(feedback(
            &parts.signals,
            &request.goal_dimensions,
            request.conversation_context.as_deref(),
        ))
    }
}
