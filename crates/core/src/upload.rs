//! Whole-file results of an upload, assembled from per-window results: the v2
//! job `result` and the v1 `AnalysisResult` body (minus its feedback, which
//! the caller decides).
//!
//! The CQI of an upload is computed once over the whole file: `overall` from
//! every window's engagement state and signals, and `timeline` in periods of
//! [`UPLOAD_TIMELINE_PERIOD_SECONDS`] (the same period as a stream's cadence,
//! so a file and a live session of the same media read alike), except that
//! a file with no detected signal scores the neutral block (see
//! [`whole_file_quality`]).

use crate::analysis::model_modality;
use crate::lifecycle::cadence::DEFAULT_PERIOD_SECONDS;
use crate::merge::{engagement_spans, merge_signals};
use crate::wire::{
    AnalysisResult, ConversationQuality, EngagementSpan, Feedback, IncludeFlag, Model,
    QualityValues, Seconds, Signal, TimelineEntry, UploadJobResult, UploadJobWindow,
};
use attune_cqi::{EngagementEvidence, QualityAccumulator, SignalEvidence};

/// Length of one upload CQI timeline period.
pub const UPLOAD_TIMELINE_PERIOD_SECONDS: Seconds = DEFAULT_PERIOD_SECONDS;

/// The optional sections a request asked for, from its `include[]` flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sections {
    /// `conversation_quality.overall`
    pub overall: bool,
    /// `conversation_quality.timeline`
    pub timeline: bool,
    /// The merged whole-file `signals` list (v2 only).
    pub signals: bool,
}

impl Sections {
    /// The sections named by a list of include flags.
    pub fn from_flags(flags: &[IncludeFlag]) -> Sections {
        Sections {
            overall: flags.contains(&IncludeFlag::ConversationQualityOverall),
            timeline: flags.contains(&IncludeFlag::ConversationQualityTimeline),
            signals: flags.contains(&IncludeFlag::Signals),
        }
    }

    /// Whether any CQI section was asked for.
    pub fn any_quality(&self) -> bool {
        self.overall || self.timeline
    }
}

/// The CQI evidence of a list of windows: each window's engagement state over
/// its span, and each of its signals over its span.
fn evidence(windows: &[UploadJobWindow]) -> (Vec<EngagementEvidence>, Vec<SignalEvidence>) {
    let engagement = windows
        .iter()
        .map(|w| EngagementEvidence {
            level: w.engagement_status,
            start: w.start_seconds,
            end: w.end_seconds,
        })
        .collect();
    let signals = windows
        .iter()
        .flat_map(|w| w.signals.iter())
        .map(|s| SignalEvidence {
            signal_type: s.signal_type,
            probability: s.probability,
            start: s.start,
            end: s.end,
        })
        .collect();
    (engagement, signals)
}

/// The CQI block over a whole file with only the requested sections, or
/// `None` when no CQI section was requested.
///
/// An upload in which no signal was detected scores the neutral block (every
/// dimension and the index 50, each timeline period too), as the interface
/// says for uploads: without a signal there is no diagnostic evidence, and
/// engagement alone would otherwise move the scores. Streams keep their own
/// rule (their timeline weighs engagement per period; see `attune_cqi`),
/// since a live session's early periods have no signals yet by nature.
pub fn whole_file_quality(
    windows: &[UploadJobWindow],
    duration: Seconds,
    sections: Sections,
) -> Option<ConversationQuality> {
    if !sections.any_quality() {
        return None;
    }
    let (engagement, signals) = evidence(windows);
    let neutral = signals.is_empty();
    let overall = sections.overall.then(|| {
        if neutral {
            return QualityValues::NEUTRAL;
        }
        let mut accumulator = QualityAccumulator::new();
        engagement
            .iter()
            .for_each(|e| accumulator.add_engagement(e));
        signals.iter().for_each(|s| accumulator.add_signal(s));
        accumulator.values()
    });
    let timeline = sections.timeline.then(|| {
        attune_cqi::timeline(
            UPLOAD_TIMELINE_PERIOD_SECONDS,
            duration,
            &engagement,
            &signals,
        )
        .into_iter()
        .map(|p| TimelineEntry {
            start: p.start,
            end: p.end,
            values: if neutral {
                QualityValues::NEUTRAL
            } else {
                p.values
            },
        })
        .collect()
    });
    Some(ConversationQuality { overall, timeline })
}

/// The v2 job `result`: windows in file order, the CQI block when requested,
/// and the merged whole-file signals when `signals` was requested (an empty
/// list when nothing was detected).
pub fn job_result(
    windows: Vec<UploadJobWindow>,
    duration: Seconds,
    window_seconds: Seconds,
    sections: Sections,
) -> UploadJobResult {
    let conversation_quality = whole_file_quality(&windows, duration, sections);
    let signals = sections.signals.then(|| merge_signals(&windows));
    UploadJobResult {
        duration_seconds: duration,
        window_seconds,
        windows,
        conversation_quality,
        signals,
    }
}

/// The parts of the v1 `AnalysisResult` that follow from the windows: the
/// merged signals, the contiguous engagement spans and the CQI block.
#[derive(Debug, Clone, PartialEq)]
pub struct V1Parts {
    /// Whole-file signals.
    pub signals: Vec<Signal>,
    /// Contiguous engagement spans.
    pub engagement_state: Vec<EngagementSpan>,
    /// The requested CQI sections, if any.
    pub conversation_quality: Option<ConversationQuality>,
}

/// Derives the v1 result parts from the same windows a v2 job reports. Every
/// v1 signal carries a `modality`: the v1 model's (`inter-2`: `video`) when
/// the merged windows gave it none.
pub fn v1_parts(windows: &[UploadJobWindow], duration: Seconds, sections: Sections) -> V1Parts {
    let mut signals = merge_signals(windows);
    for signal in &mut signals {
        signal
            .modality
            .get_or_insert_with(|| model_modality(Model::Inter2));
    }
    V1Parts {
        signals,
        engagement_state: engagement_spans(windows),
        conversation_quality: whole_file_quality(windows, duration, sections),
    }
}

/// The v1 `AnalysisResult` body: the parts and the feedback.
pub fn v1_result(parts: V1Parts, feedback: Feedback) -> AnalysisResult {
    AnalysisResult {
        signals: parts.signals,
        engagement_state: parts.engagement_state,
        conversation_quality: parts.conversation_quality,
        feedback,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{EngagementLevel, Probability, SignalType};

    fn window(
        index: u32,
        level: EngagementLevel,
        found: &[(SignalType, Probability)],
    ) -> UploadJobWindow {
        let start = f64::from(index) * 5.0;
        UploadJobWindow {
            index,
            start_seconds: start,
            end_seconds: start + 5.0,
            engagement_status: level,
            signals: found
                .iter()
                .map(|&(signal_type, probability)| Signal {
                    signal_type,
                    start,
                    end: start + 5.0,
                    probability: Some(probability),
                    rationale: Some(format!("{signal_type} at {start}")),
                    modality: None,
                })
                .collect(),
        }
    }

    #[test]
    fn no_flags_means_no_quality_block_and_no_signal_list() {
        let windows = vec![window(
            0,
            EngagementLevel::Engaged,
            &[(SignalType::Interest, Probability::High)],
        )];
        let result = job_result(windows, 5.0, 5.0, Sections::default());
        assert!(result.conversation_quality.is_none());
        assert!(result.signals.is_none());
        let json = serde_json::to_value(&result).unwrap();
        assert!(json.get("conversation_quality").is_none());
        assert!(json.get("signals").is_none());
    }

    #[test]
    fn upload_without_signals_scores_neutral_cqi() {
        // Engaged and disengaged windows alike: without a signal, engagement
        // alone does not move an upload's scores.
        for level in [EngagementLevel::Engaged, EngagementLevel::Disengaged] {
            let windows: Vec<_> = (0..4).map(|i| window(i, level, &[])).collect();
            let sections = Sections::from_flags(&[
                IncludeFlag::ConversationQualityOverall,
                IncludeFlag::ConversationQualityTimeline,
            ]);
            let quality = job_result(windows.clone(), 20.0, 5.0, sections)
                .conversation_quality
                .unwrap();
            assert_eq!(quality.overall, Some(QualityValues::NEUTRAL), "{level:?}");
            let timeline = quality.timeline.as_ref().unwrap();
            assert_eq!(timeline.len(), 2);
            assert!(
                timeline.iter().all(|p| p.values == QualityValues::NEUTRAL),
                "{level:?}"
            );
            let v1 = v1_parts(&windows, 20.0, sections).conversation_quality;
            assert_eq!(v1, Some(quality), "v1 and v2 score alike");
        }
    }

    #[test]
    fn no_signals_and_neutral_engagement_still_yield_an_all_50_block() {
        let windows: Vec<_> = (0..4)
            .map(|i| window(i, EngagementLevel::Neutral, &[]))
            .collect();
        let sections = Sections::from_flags(&[
            IncludeFlag::ConversationQualityOverall,
            IncludeFlag::ConversationQualityTimeline,
            IncludeFlag::Signals,
        ]);
        let result = job_result(windows, 20.0, 5.0, sections);
        let quality = result.conversation_quality.unwrap();
        assert_eq!(quality.overall, Some(QualityValues::NEUTRAL));
        let timeline = quality.timeline.unwrap();
        assert_eq!(timeline.len(), 2, "20 s in 10 s periods");
        assert!(timeline.iter().all(|p| p.values == QualityValues::NEUTRAL));
        assert_eq!(result.signals, Some(Vec::new()), "requested but empty: []");
    }

    #[test]
    fn engaged_interested_file_scores_above_a_disengaged_one() {
        let lively: Vec<_> = (0..6)
            .map(|i| {
                window(
                    i,
                    EngagementLevel::Engaged,
                    &[(SignalType::Interest, Probability::High)],
                )
            })
            .collect();
        let flat: Vec<_> = (0..6)
            .map(|i| {
                window(
                    i,
                    EngagementLevel::Disengaged,
                    &[(SignalType::Disengagement, Probability::Medium)],
                )
            })
            .collect();
        let sections = Sections::from_flags(&[IncludeFlag::ConversationQualityOverall]);
        let lively = whole_file_quality(&lively, 30.0, sections)
            .unwrap()
            .overall
            .unwrap();
        let flat = whole_file_quality(&flat, 30.0, sections)
            .unwrap()
            .overall
            .unwrap();
        assert!(
            lively.energy > 65.0 && flat.energy < 35.0,
            "{lively:?} vs {flat:?}"
        );
        assert!(lively.quality_index > flat.quality_index);
    }

    #[test]
    fn v1_signals_without_a_modality_get_the_v1_models() {
        let mut window = UploadJobWindow {
            index: 0,
            start_seconds: 0.0,
            end_seconds: 5.0,
            engagement_status: crate::wire::EngagementLevel::Neutral,
            signals: vec![Signal {
                signal_type: crate::wire::SignalType::Interest,
                start: 0.0,
                end: 5.0,
                probability: None,
                rationale: None,
                modality: None,
            }],
        };
        let parts = v1_parts(std::slice::from_ref(&window), 5.0, Sections::default());
        assert_eq!(
            parts.signals[0].modality,
            Some(vec![crate::wire::Modality::Video])
        );
        window.signals[0].modality = Some(vec![crate::wire::Modality::Audio]);
        let parts = v1_parts(&[window], 5.0, Sections::default());
        assert_eq!(
            parts.signals[0].modality,
            Some(vec![crate::wire::Modality::Audio])
        );
    }

    #[test]
    fn v1_parts_merge_signals_and_join_engagement_spans() {
        let windows = vec![
            window(
                0,
                EngagementLevel::Engaged,
                &[(SignalType::Hesitation, Probability::Low)],
            ),
            window(
                1,
                EngagementLevel::Engaged,
                &[(SignalType::Hesitation, Probability::High)],
            ),
            window(2, EngagementLevel::Neutral, &[]),
        ];
        let parts = v1_parts(&windows, 15.0, Sections::default());
        assert_eq!(parts.signals.len(), 1);
        assert_eq!((parts.signals[0].start, parts.signals[0].end), (0.0, 10.0));
        assert_eq!(parts.signals[0].probability, Some(Probability::High));
        assert_eq!(parts.engagement_state.len(), 2);
        assert_eq!(parts.engagement_state[0].end, 10.0);
        assert!(parts.conversation_quality.is_none());
    }
}
