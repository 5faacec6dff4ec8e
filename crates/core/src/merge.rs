//! Whole-file results derived from per-window results: the merged signal list
//! of a v2 job (`include[]=signals`) and of the v1 upload, and the v1
//! `engagement_state` spans.
//!
//! Two windows are *adjacent* when their indexes are consecutive and the first
//! ends where the second starts (within [`TOUCH_TOLERANCE_SECONDS`]). Runs are
//! only ever joined across adjacent windows: a window without the signal type,
//! a missing index or a gap in time ends a run.

use crate::wire::{EngagementSpan, Modality, Probability, Seconds, Signal, UploadJobWindow};
use attune_cqi::SignalType;
use std::collections::BTreeMap;

/// How far apart the end of one window and the start of the next may be and
/// still touch. Window bounds are products of a window index and a fixed
/// length, so any real gap is far larger than float rounding.
pub const TOUCH_TOLERANCE_SECONDS: Seconds = 1e-6;

/// Builds the whole-file signal list from per-window signals.
///
/// - Same-type signals in adjacent windows merge into one entry from the first
///   one's start to the last one's end.
/// - The entry takes the highest probability among them and the rationale of
///   the signal that had it; on a tie the earliest such signal wins. A signal
///   without probability ranks below any with one, and when the winning signal
///   has no probability or no rationale the entry omits that field.
/// - `modality` is the union of the merged signals' modalities in the order
///   `audio`, `video`, `visual` ([`Modality::ALL`]); absent when none had one.
/// - Entries are ordered by start, then by signal type in the interface's
///   order (`agreement` ... `uncertainty`).
///
/// Windows are read in slice order (file order). Two same-type signals inside
/// one window are folded into one entry too.
pub fn merge_signals(windows: &[UploadJobWindow]) -> Vec<Signal> {
    let mut open: BTreeMap<SignalType, Run> = BTreeMap::new();
    let mut merged: Vec<Signal> = Vec::new();
    let mut previous: Option<&UploadJobWindow> = None;

    for window in windows {
        let continues = previous.is_some_and(|p| adjacent(p, window));
        // A run survives only into an adjacent window that has its type again.
        let ended: Vec<SignalType> = open
            .keys()
            .copied()
            .filter(|t| !continues || !window.signals.iter().any(|s| s.signal_type == *t))
            .collect();
        for signal_type in ended {
            if let Some(run) = open.remove(&signal_type) {
                merged.push(run.into_signal());
            }
        }
        for signal in &window.signals {
            match open.get_mut(&signal.signal_type) {
                Some(run) => run.absorb(signal),
                None => {
                    open.insert(signal.signal_type, Run::start(signal));
                }
            }
        }
        previous = Some(window);
    }
    merged.extend(open.into_values().map(Run::into_signal));
    merged.sort_by(|a, b| {
        a.start
            .total_cmp(&b.start)
            .then(a.signal_type.cmp(&b.signal_type))
    });
    merged
}

/// Joins consecutive windows with the same engagement state into the v1
/// `engagement_state` spans, in file order.
///
/// Spans join only across adjacent windows, so a hole in the windows (which
/// the analyzer never produces) shows as a hole between spans instead of
/// being claimed for a state nobody measured.
pub fn engagement_spans(windows: &[UploadJobWindow]) -> Vec<EngagementSpan> {
    let mut spans: Vec<EngagementSpan> = Vec::new();
    let mut previous: Option<&UploadJobWindow> = None;
    for window in windows {
        let joins = previous.is_some_and(|p| adjacent(p, window));
        match spans.last_mut() {
            Some(span) if joins && span.state == window.engagement_status => {
                span.end = window.end_seconds;
            }
            _ => spans.push(EngagementSpan {
                start: window.start_seconds,
                end: window.end_seconds,
                state: window.engagement_status,
            }),
        }
        previous = Some(window);
    }
    spans
}

/// Whether `next` directly follows `previous`: the next index, touching spans.
fn adjacent(previous: &UploadJobWindow, next: &UploadJobWindow) -> bool {
    previous.index.checked_add(1) == Some(next.index)
        && (next.start_seconds - previous.end_seconds).abs() <= TOUCH_TOLERANCE_SECONDS
}

/// A run of same-type signals being merged.
struct Run {
    signal_type: SignalType,
    start: Seconds,
    end: Seconds,
    probability: Option<Probability>,
    rationale: Option<String>,
    modality: Option<Vec<Modality>>,
}

impl Run {
    fn start(signal: &Signal) -> Run {
        let mut run = Run {
            signal_type: signal.signal_type,
            start: signal.start,
            end: signal.end,
            probability: signal.probability,
            rationale: signal.rationale.clone(),
            modality: None,
        };
        run.add_modality(signal.modality.as_deref());
        run
    }

    fn absorb(&mut self, signal: &Signal) {
        self.start = self.start.min(signal.start);
        self.end = self.end.max(signal.end);
        // Strictly greater: on a tie the earlier signal's rationale stays.
        // `None < Some(_)`, so a signal with a probability beats one without.
        if signal.probability > self.probability {
            self.probability = signal.probability;
            self.rationale = signal.rationale.clone();
        }
        self.add_modality(signal.modality.as_deref());
    }

    fn add_modality(&mut self, modality: Option<&[Modality]>) {
        let Some(modality) = modality else { return };
        let union = self.modality.get_or_insert_with(Vec::new);
        union.extend_from_slice(modality);
        union.sort();
        union.dedup();
    }

    fn into_signal(self) -> Signal {
        Signal {
            signal_type: self.signal_type,
            start: self.start,
            end: self.end,
            probability: self.probability,
            rationale: self.rationale,
            modality: self.modality,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::EngagementLevel;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn signal(t: SignalType, p: Option<Probability>, rationale: Option<&str>) -> Signal {
        Signal {
            signal_type: t,
            start: 0.0,
            end: 0.0,
            probability: p,
            rationale: rationale.map(str::to_owned),
            modality: Some(vec![Modality::Video]),
        }
    }

    /// Windows laid end to end on the 5 s grid, each signal given the window span.
    fn windows(per_window: Vec<Vec<Signal>>) -> Vec<UploadJobWindow> {
        per_window
            .into_iter()
            .enumerate()
            .map(|(i, signals)| {
                let start = i as f64 * 5.0;
                let end = start + 5.0;
                UploadJobWindow {
                    index: i as u32,
                    start_seconds: start,
                    end_seconds: end,
                    engagement_status: EngagementLevel::Neutral,
                    signals: signals
                        .into_iter()
                        .map(|s| Signal { start, end, ..s })
                        .collect(),
                }
            })
            .collect()
    }

    use Probability::{High, Low, Medium};
    use SignalType::{Agreement, Confusion, Hesitation, Interest, Stress};

    #[test]
    fn a_run_of_three_windows_merges_into_one_span() {
        let w = windows(vec![
            vec![signal(Interest, Some(Low), Some("leans in"))],
            vec![signal(Interest, Some(Low), Some("asks follow-ups"))],
            vec![signal(Interest, Some(Low), Some("nods"))],
        ]);
        let merged = merge_signals(&w);
        assert_eq!(merged.len(), 1);
        assert_eq!((merged[0].start, merged[0].end), (0.0, 15.0));
        assert_eq!(merged[0].signal_type, Interest);
    }

    #[test]
    fn highest_probability_wins_with_its_rationale() {
        let w = windows(vec![
            vec![signal(Stress, Some(Low), Some("slightly raised pitch"))],
            vec![signal(Stress, Some(High), Some("pitch and loudness spike"))],
            vec![signal(Stress, Some(Medium), Some("pitch stays raised"))],
        ]);
        let merged = merge_signals(&w);
        assert_eq!(merged.len(), 1);
        assert_eq!(merged[0].probability, Some(High));
        assert_eq!(
            merged[0].rationale.as_deref(),
            Some("pitch and loudness spike")
        );
    }

    #[test]
    fn a_tie_keeps_the_earliest_rationale() {
        let w = windows(vec![
            vec![signal(Hesitation, Some(Low), Some("one filler"))],
            vec![signal(
                Hesitation,
                Some(Medium),
                Some("long pause before answering"),
            )],
            vec![signal(Hesitation, Some(Medium), Some("many fillers"))],
        ]);
        let merged = merge_signals(&w);
        assert_eq!(merged[0].probability, Some(Medium));
        assert_eq!(
            merged[0].rationale.as_deref(),
            Some("long pause before answering")
        );
    }

    #[test]
    fn a_window_without_the_type_splits_the_run() {
        let w = windows(vec![
            vec![signal(Confusion, Some(High), Some("rising questions"))],
            vec![signal(Agreement, Some(Low), Some("nods"))],
            vec![signal(Confusion, Some(Low), Some("asks to repeat"))],
        ]);
        let merged = merge_signals(&w);
        let confusion: Vec<(f64, f64, Option<Probability>)> = merged
            .iter()
            .filter(|s| s.signal_type == Confusion)
            .map(|s| (s.start, s.end, s.probability))
            .collect();
        assert_eq!(
            confusion,
            vec![(0.0, 5.0, Some(High)), (10.0, 15.0, Some(Low))]
        );
    }

    #[test]
    fn a_gap_in_time_or_index_splits_the_run() {
        let mut w = windows(vec![
            vec![signal(Interest, Some(Low), Some("a"))],
            vec![signal(Interest, Some(Low), Some("b"))],
        ]);
        w[1].start_seconds = 6.0;
        w[1].signals[0].start = 6.0;
        assert_eq!(merge_signals(&w).len(), 2);

        let mut w = windows(vec![
            vec![signal(Interest, Some(Low), Some("a"))],
            vec![signal(Interest, Some(Low), Some("b"))],
        ]);
        w[1].index = 2;
        assert_eq!(merge_signals(&w).len(), 2);
    }

    #[test]
    fn missing_probability_and_rationale_are_omitted_not_null() {
        let w = windows(vec![vec![Signal {
            modality: None,
            ..signal(Stress, None, None)
        }]]);
        let merged = merge_signals(&w);
        assert_eq!(
            serde_json::to_value(&merged).unwrap(),
            json!([{"type": "stress", "start": 0.0, "end": 5.0}])
        );
    }

    #[test]
    fn a_signal_with_probability_outranks_one_without() {
        let w = windows(vec![
            vec![signal(Stress, None, Some("no level"))],
            vec![signal(Stress, Some(Low), Some("low level"))],
        ]);
        let merged = merge_signals(&w);
        assert_eq!(merged[0].probability, Some(Low));
        assert_eq!(merged[0].rationale.as_deref(), Some("low level"));
    }

    #[test]
    fn modality_is_the_union_in_a_stable_order() {
        let w = windows(vec![
            vec![Signal {
                modality: Some(vec![Modality::Visual]),
                ..signal(Interest, Some(Low), Some("a"))
            }],
            vec![Signal {
                modality: Some(vec![Modality::Audio, Modality::Visual]),
                ..signal(Interest, Some(Low), Some("b"))
            }],
            vec![Signal {
                modality: None,
                ..signal(Interest, Some(Low), Some("c"))
            }],
        ]);
        assert_eq!(
            merge_signals(&w)[0].modality,
            Some(vec![Modality::Audio, Modality::Visual])
        );
    }

    #[test]
    fn entries_are_ordered_by_start_then_type() {
        let w = windows(vec![
            vec![
                signal(Stress, Some(Low), Some("s")),
                signal(Agreement, Some(Low), Some("a")),
            ],
            vec![
                signal(Stress, Some(Low), Some("s")),
                signal(Confusion, Some(Low), Some("c")),
            ],
        ]);
        let order: Vec<(SignalType, f64, f64)> = merge_signals(&w)
            .iter()
            .map(|s| (s.signal_type, s.start, s.end))
            .collect();
        assert_eq!(
            order,
            vec![
                (Agreement, 0.0, 5.0),
                (Stress, 0.0, 10.0),
                (Confusion, 5.0, 10.0)
            ]
        );
    }

    #[test]
    fn concatenating_window_signals_is_not_the_merged_list() {
        let w = windows(vec![
            vec![signal(Interest, Some(Medium), Some("leans in"))],
            vec![
                signal(Interest, Some(High), Some("asks follow-ups")),
                signal(Agreement, Some(Low), Some("nods")),
            ],
            vec![signal(Interest, Some(Low), Some("smiles"))],
        ]);
        let concatenated: Vec<Signal> = w.iter().flat_map(|w| w.signals.clone()).collect();
        let merged = merge_signals(&w);
        assert_ne!(concatenated, merged);
        assert_eq!(concatenated.len(), 4);
        assert_eq!(
            serde_json::to_value(&merged).unwrap(),
            json!([
                {"type": "interest", "start": 0.0, "end": 15.0, "probability": "high",
                 "rationale": "asks follow-ups", "modality": ["video"]},
                {"type": "agreement", "start": 5.0, "end": 10.0, "probability": "low",
                 "rationale": "nods", "modality": ["video"]}
            ])
        );
    }

    #[test]
    fn no_windows_or_no_signals_give_an_empty_list() {
        assert!(merge_signals(&[]).is_empty());
        assert!(merge_signals(&windows(vec![vec![], vec![]])).is_empty());
    }

    #[test]
    fn engagement_spans_join_equal_neighbours() {
        let mut w = windows(vec![vec![], vec![], vec![], vec![]]);
        let states = [
            EngagementLevel::Engaged,
            EngagementLevel::Engaged,
            EngagementLevel::Neutral,
            EngagementLevel::Engaged,
        ];
        for (window, state) in w.iter_mut().zip(states) {
            window.engagement_status = state;
        }
        let last = w.last_mut().unwrap();
        last.end_seconds = 18.5;
        assert_eq!(
            serde_json::to_value(engagement_spans(&w)).unwrap(),
            json!([
                {"start": 0.0, "end": 10.0, "state": "engaged"},
                {"start": 10.0, "end": 15.0, "state": "neutral"},
                {"start": 15.0, "end": 18.5, "state": "engaged"}
            ])
        );
        assert!(engagement_spans(&[]).is_empty());
    }
}
