//! The explainable rule analyzer: cues against population norms and each
//! speaker's running baseline, weighted per signal by the model's
//! [`ModelParams`].

use super::arousal::ArousalModel;
use super::cues::{ConversationBaselines, Cue, Evidence};
use super::features::WindowFeatures;
use super::params::{ModelParams, SignalRule};
use super::{Channel, Finding, WindowAnalyzer, WindowResult};
use crate::wire::{EngagementLevel, Probability};

/// Most cue sentences quoted in one rationale.
const MAX_QUOTED: usize = 3;

/// The rule analyzer of one conversation (one session or one file): it keeps
/// the running baselines, so windows must be given in media order.
#[derive(Debug, Clone)]
pub struct RuleAnalyzer {
    params: &'static ModelParams,
    baselines: ConversationBaselines,
}

impl RuleAnalyzer {
    /// An analyzer with fresh baselines and the given parameters.
    pub fn new(params: &'static ModelParams) -> Self {
        RuleAnalyzer {
            params,
            baselines: ConversationBaselines::default(),
        }
    }

    /// An analyzer that reads vocal arousal with `model` instead of the
    /// committed one (for leave-one-speaker-out evaluations).
    pub fn with_arousal(params: &'static ModelParams, model: &'static ArousalModel) -> Self {
        RuleAnalyzer {
            params,
            baselines: ConversationBaselines::with_arousal(model),
        }
    }
}

fn score<'e>(weights: &[(Cue, f64)], evidence: &'e [Evidence]) -> (f64, Vec<(f64, &'e Evidence)>) {
    let mut parts: Vec<(f64, &Evidence)> = evidence
        .iter()
        .filter_map(|e| {
            weights
                .iter()
                .find(|(cue, _)| *cue == e.cue)
                .map(|(_, w)| (w * e.strength, e))
        })
        .filter(|(contribution, _)| *contribution > 0.0)
        .collect();
    // Strongest evidence first; ties keep the weight table's order stable.
    parts.sort_by(|a, b| b.0.total_cmp(&a.0));
    (parts.iter().map(|(c, _)| c).sum(), parts)
}

fn level(rule: &SignalRule, score: f64) -> Option<Probability> {
    let [low, medium, high] = rule.thresholds;
    let level = if score >= high && !rule.cap_medium {
        Probability::High
    } else if score >= medium {
        Probability::Medium
    } else if score >= low {
        Probability::Low
    } else {
        return None;
    };
    Some(level)
}

/// What the rule analyzer weighed in one window: the verdict with every cue
/// found (quoted or not) and the two engagement scores, for evaluations and
/// debugging (`RuleAnalyzer::explain`).
#[derive(Debug, Clone, PartialEq)]
pub struct Explanation {
    /// The verdict, as [`WindowAnalyzer::analyze`] returns it.
    pub verdict: WindowResult,
    /// Every cue at or above the strength floor, in the order found.
    pub evidence: Vec<Evidence>,
    /// Score toward `engaged`.
    pub engaged_score: f64,
    /// Score toward `disengaged`.
    pub disengaged_score: f64,
}

impl RuleAnalyzer {
    /// Analyzes the next window like [`WindowAnalyzer::analyze`] and also
    /// returns the evidence and scores behind the verdict.
    pub fn explain(&mut self, window: &WindowFeatures) -> Explanation {
        self.baselines.rebase(window);
        let evidence = self.baselines.cues(window);
        self.baselines.observe(window);

        let mut findings = Vec::new();
        for rule in self.params.signals {
            let present = |group: Option<&[Cue]>| {
                group.is_none_or(|g| evidence.iter().any(|e| g.contains(&e.cue)))
            };
            if !present(rule.requires) || !present(rule.requires_also) {
                continue;
            }
            if evidence.iter().any(|e| rule.vetoes.contains(&e.cue)) {
                continue;
            }
            let (total, parts) = score(rule.cues, &evidence);
            let Some(probability) = level(rule, total) else {
                continue;
            };
            let quoted = &parts[..parts.len().min(MAX_QUOTED)];
            // The channels are those of the quoted evidence only, so a
            // finding never names a channel its rationale does not show.
            let mut channels = Vec::new();
            if quoted.iter().any(|(_, e)| !e.cue.is_visual()) {
                channels.push(Channel::Audio);
            }
            if quoted.iter().any(|(_, e)| e.cue.is_visual()) {
                channels.push(Channel::Visual);
            }
            let quoted: Vec<&str> = quoted.iter().map(|(_, e)| e.text.as_str()).collect();
            findings.push(Finding {
                signal: rule.signal,
                probability,
                rationale: capitalize(&quoted.join("; ")),
                channels,
            });
        }

        let rule = &self.params.engagement;
        let (engaged, _) = score(rule.engaged, &evidence);
        let (against, _) = score(rule.against_engaged, &evidence);
        let engaged = engaged - against;
        let (disengaged, _) = score(rule.disengaged, &evidence);
        let engagement = if engaged >= rule.threshold && engaged > disengaged {
            EngagementLevel::Engaged
        } else if disengaged >= rule.threshold && disengaged > engaged {
            EngagementLevel::Disengaged
        } else {
            EngagementLevel::Neutral
        };
        Explanation {
            verdict: WindowResult {
                start: window.start,
                end: window.end,
                engagement,
                findings,
            },
            evidence,
            engaged_score: engaged,
            disengaged_score: disengaged,
        }
    }
}

impl WindowAnalyzer for RuleAnalyzer {
    fn analyze(&mut self, window: &WindowFeatures) -> WindowResult {
        self.explain(window).verdict
    }
}

fn capitalize(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}
