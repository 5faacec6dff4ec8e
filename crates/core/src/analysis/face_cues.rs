//! Cues from faces: nods, head shakes, a face turned away or toward the camera, eyes closed,
//! a smile, raised or lowered brows, and a person who left the picture; each judged per face,
//! against absolute norms where the literature gives one and the face's own running baseline
//! where faces differ (mouth and brow geometry). Thresholds and sources: `docs/ANALYZER.md`.
//!
//! Only live pictures count: a picture identical to the one before (frozen) and a black one
//! (camera off, which the visual track does not record at all) show no behaviour, so a window
//! whose pictures are mostly frozen yields no face cue, and no whole-frame cue either.
//!
//! With several faces, each cue is carried by the face that shows it most clearly, and the
//! rationale names it: `face N` counts faces from 1 in order of first appearance in the video,
//! with its place in the picture (left, centre, right) when the window holds more than one.

use std::collections::BTreeMap;

use super::baseline::{Baseline, Prior};
use super::cues::{Cue, Evidence};
use super::features::{FaceMeasures, FaceSample, FaceWindow, GestureMeasure};

/// Live pictures a window needs before its faces are judged (about a second at 5 a second).
pub const MIN_LIVE_PICTURES: u32 = 5;
/// Share of a window's pictures that must be frozen for the window to show nothing.
pub const FROZEN_SHARE: f64 = 0.8;
/// A face's samples in a window before its expression and direction are judged.
pub const MIN_FACE_SAMPLES: usize = 3;
/// Frontal samples a face needs in a window (2 s at 5 a second) before its expression is judged
/// against the window's own low, when no baseline of its own is established yet: with fewer,
/// the low and the high are single samples, and the coding noise of the picture decides
/// whether their difference passes the floor (a face seen for 1 s while it nodded read as
/// smiling in H.264 and VP9 but not in VP8).
pub const MIN_WINDOW_REFERENCE_SAMPLES: usize = 10;
/// A face turned at least this far from the camera axis is turned away, degrees.
pub const AWAY_DEGREES: f64 = 30.0;
/// A face within this angle of the camera axis is looking toward the camera, degrees.
pub const TOWARD_DEGREES: f64 = 15.0;
/// Eye aspect ratio under which the eyes are closed (Soukupová & Čech 2016).
pub const EYES_CLOSED_EAR: f64 = 0.15;
/// Mouth-corner lift above the face's reference, in inter-ocular distances, at which a smile is
/// clearly present (strength 1; half of it is the floor).
pub const SMILE_LIFT: f64 = 0.06;
/// Brow height above the face's reference at which a raise is clearly present (strength 1).
pub const BROW_RAISE: f64 = 0.06;
/// Brow height below the face's reference at which a lowering is clearly present (strength 1).
pub const BROW_LOWER: f64 = 0.04;
/// Expression is read only from samples turned less than this from the camera, degrees: the
/// mesh's mouth and brow points shift when the head turns far.
pub const EXPRESSION_MAX_AWAY: f64 = 20.0;

/// Mouth and brow references of one face: running means of its per-window medians.
#[derive(Debug, Clone)]
struct FaceBaseline {
    smile: Baseline,
    brow: Baseline,
}

impl Default for FaceBaseline {
    fn default() -> Self {
        let prior = |sd, sd_floor| Prior {
            mean: 0.0,
            sd,
            weight: 0.0,
            sd_floor,
        };
        FaceBaseline {
            smile: Baseline::new(prior(0.03, 0.01)),
            brow: Baseline::new(prior(0.03, 0.01)),
        }
    }
}

/// The running face baselines of one video, by face id.
#[derive(Debug, Clone, Default)]
pub struct FaceBaselines {
    faces: BTreeMap<u32, FaceBaseline>,
}

fn frontal(f: &FaceWindow) -> impl Iterator<Item = &FaceSample> {
    f.samples.iter().filter(|s| s.away < EXPRESSION_MAX_AWAY)
}

/// The `q` quantile (0..=1) of the finite values.
fn quantile(values: impl Iterator<Item = f64>, q: f64) -> Option<f64> {
    let mut v: Vec<f64> = values.filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let i = ((v.len() - 1) as f64 * q).round() as usize;
    v.get(i).copied()
}

/// Whether a window's pictures can show behaviour at all.
pub fn is_live(m: &FaceMeasures) -> bool {
    m.live() >= MIN_LIVE_PICTURES
        && f64::from(m.frozen) < FROZEN_SHARE * f64::from(m.pictures.max(1))
}

fn name(f: &FaceWindow, several: bool) -> String {
    let n = f.id + 1;
    if !several {
        return format!("face {n}");
    }
    let place = if f.x < 0.4 {
        "left"
    } else if f.x > 0.6 {
        "right"
    } else {
        "centre"
    };
    format!("face {n} ({place})")
}

fn plural(n: u32, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Strength of a movement: more nods or shakes and a wider swing read clearer.
fn gesture_strength(count: u32, amplitude: f64, base: f64) -> f64 {
    (base + 0.3 * f64::from(count.min(3))) * (amplitude / 10.0).clamp(0.7, 1.2)
}

fn gestures(list: &[GestureMeasure]) -> Option<(u32, f64, f64, f64)> {
    let count: u32 = list.iter().map(|g| g.count).sum();
    let start = list.iter().map(|g| g.start).fold(f64::MAX, f64::min);
    let end = list.iter().map(|g| g.end).fold(f64::MIN, f64::max);
    let amplitude = list.iter().map(|g| g.amplitude).fold(0.0, f64::max);
    (count > 0).then_some((count, start, end, amplitude))
}

impl FaceBaselines {
    /// The face cues of a window (read before the window is folded in). Each cue appears at
    /// most once, from the face that shows it most.
    pub fn cues(&self, m: &FaceMeasures) -> Vec<Evidence> {
        let mut best: BTreeMap<Cue, Evidence> = BTreeMap::new();
        let mut offer = |cue: Cue, strength: f64, text: String| {
            if !strength.is_finite() || strength < super::cues::STRENGTH_FLOOR {
                return;
            }
            let strength = strength.clamp(0.0, super::cues::MAX_STRENGTH);
            if best.get(&cue).is_none_or(|e| strength > e.strength) {
                best.insert(
                    cue,
                    Evidence {
                        cue,
                        strength,
                        text,
                    },
                );
            }
        };
        if !is_live(m) {
            return Vec::new();
        }
        let live = f64::from(m.live());
        if m.seen_before && m.faceless > 0 {
            let share = f64::from(m.faceless) / live;
            offer(
                Cue::FaceAbsent,
                (share - 0.3) / 0.4,
                format!(
                    "no face in the picture for {:.0}% of the window (a face seen before left)",
                    share * 100.0
                ),
            );
        }
        let several = m.faces.len() >= 2;
        for f in &m.faces {
            let who = name(f, several);
            let movements = [
                (Cue::Nods, &f.nods, 0.4, ("nod", "nods"), "pitch"),
                (
                    Cue::Shakes,
                    &f.shakes,
                    0.5,
                    ("head shake", "head shakes"),
                    "yaw",
                ),
            ];
            for (cue, list, base, (one, many), axis) in movements {
                if let Some((count, start, end, amp)) = gestures(list) {
                    offer(
                        cue,
                        gesture_strength(count, amp, base),
                        format!(
                            "{who}: {} in {:.1} s ({start:.1}-{end:.1} s), {axis} amplitude {amp:.0} degrees",
                            plural(count, one, many),
                            end - start
                        ),
                    );
                }
            }
            let n = f.samples.len();
            if n < MIN_FACE_SAMPLES {
                continue;
            }
            let share = |pred: &dyn Fn(&FaceSample) -> bool| {
                f.samples.iter().filter(|s| pred(s)).count() as f64 / n as f64
            };
            let away = share(&|s| s.away >= AWAY_DEGREES);
            if away > 0.0 {
                let most = f.samples.iter().map(|s| s.away).fold(0.0, f64::max);
                offer(
                    Cue::FaceAway,
                    (away - 0.3) / 0.4,
                    format!(
                        "{who} turned more than {AWAY_DEGREES:.0} degrees from the camera in {:.0}% of the window (up to {most:.0} degrees)",
                        away * 100.0
                    ),
                );
            }
            let toward = share(&|s| s.away < TOWARD_DEGREES);
            offer(
                Cue::GazeAtCamera,
                (toward - 0.6) / 0.3,
                format!(
                    "{who} toward the camera (within {TOWARD_DEGREES:.0} degrees) in {:.0}% of the window",
                    toward * 100.0
                ),
            );
            let closed = share(&|s| s.ear.is_finite() && s.ear < EYES_CLOSED_EAR);
            if closed > 0.0 {
                offer(
                    Cue::EyesClosed,
                    (closed - 0.1) / 0.4,
                    format!(
                        "{who}: eyes closed (eye aspect ratio under {EYES_CLOSED_EAR}) in {:.0}% of the window",
                        closed * 100.0
                    ),
                );
            }
            let own = self.faces.get(&f.id);
            let established = |b: &Baseline| (b.count() >= 2.0).then(|| b.mean()).flatten();
            // The reference: the face's own baseline once two windows built it, else the
            // window's own low (a smile or a raise comes and goes within a window).
            let smiles = || frontal(f).map(|s| s.smile);
            let own_reference = frontal(f).count() >= MIN_WINDOW_REFERENCE_SAMPLES;
            if let (Some(high), Some(low)) = (quantile(smiles(), 0.9), quantile(smiles(), 0.1)) {
                let reference = match own.and_then(|b| established(&b.smile)) {
                    Some(mean) => Some((mean, "its own baseline")),
                    None => own_reference.then_some((low, "its low in this window")),
                };
                if let Some((reference, against)) = reference {
                    offer(
                        Cue::Smile,
                        (high - reference) / SMILE_LIFT,
                        format!(
                            "{who}: mouth corners lifted {:.2} inter-ocular distances above {against} (smile)",
                            high - reference
                        ),
                    );
                }
            }
            let brows = || frontal(f).map(|s| s.brow);
            if let (Some(high), Some(low), Some(mid)) = (
                quantile(brows(), 0.9),
                quantile(brows(), 0.1),
                quantile(brows(), 0.5),
            ) {
                let baseline = own.and_then(|b| established(&b.brow));
                let (up_ref, down_ref, against) = match baseline {
                    Some(mean) => (mean, mean, "its own baseline"),
                    None => (low, mid, "its level in this window"),
                };
                if baseline.is_some() || own_reference {
                    offer(
                        Cue::BrowRaise,
                        (high - up_ref) / BROW_RAISE,
                        format!(
                            "{who}: brows raised {:.2} inter-ocular distances above {against}",
                            high - up_ref
                        ),
                    );
                }
                // Lowered brows are judged only against an established baseline: within one
                // window a raise would read as its own lowering.
                if baseline.is_some() {
                    offer(
                        Cue::BrowLower,
                        (down_ref - low) / BROW_LOWER,
                        format!(
                            "{who}: brows lowered {:.2} inter-ocular distances below {against} (frown)",
                            down_ref - low
                        ),
                    );
                }
            }
        }
        best.into_values().collect()
    }

    /// Folds a window's faces into their baselines (after its cues were read).
    pub fn observe(&mut self, m: &FaceMeasures) {
        if !is_live(m) {
            return;
        }
        for f in m
            .faces
            .iter()
            .filter(|f| f.samples.len() >= MIN_FACE_SAMPLES)
        {
            let b = self.faces.entry(f.id).or_default();
            if let Some(v) = quantile(frontal(f).map(|s| s.smile), 0.5) {
                b.smile.observe(v);
            }
            if let Some(v) = quantile(frontal(f).map(|s| s.brow), 0.5) {
                b.brow.observe(v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(t: f64, away: f64, smile: f64, ear: f64) -> FaceSample {
        FaceSample {
            t,
            yaw: away,
            pitch: 0.0,
            away,
            smile,
            brow: 0.4,
            ear,
        }
    }

    fn window(samples: Vec<FaceSample>, frozen: u32) -> FaceMeasures {
        FaceMeasures {
            pictures: 25,
            frozen,
            faceless: 25 - frozen - samples.len() as u32,
            seen_before: true,
            faces: vec![FaceWindow {
                id: 0,
                x: 0.5,
                samples,
                ..FaceWindow::default()
            }],
        }
    }

    fn cue(found: &[Evidence], which: Cue) -> Option<&Evidence> {
        found.iter().find(|e| e.cue == which)
    }

    #[test]
    fn a_face_turned_away_most_of_the_window_is_quoted_with_its_share() {
        let samples = (0..25)
            .map(|k| {
                sample(
                    f64::from(k) * 0.2,
                    if k < 18 { 45.0 } else { 5.0 },
                    0.0,
                    0.3,
                )
            })
            .collect();
        let found = FaceBaselines::default().cues(&window(samples, 0));
        let away = cue(&found, Cue::FaceAway).expect("away");
        assert!(away.strength >= 1.0, "{away:?}");
        assert!(away.text.contains("in 72% of the window"), "{}", away.text);
        assert!(cue(&found, Cue::GazeAtCamera).is_none(), "{found:?}");
    }

    #[test]
    fn a_person_leaving_a_live_picture_is_absent_a_picture_never_showing_one_is_not() {
        let samples = (0..5)
            .map(|k| sample(f64::from(k) * 0.2, 5.0, 0.0, 0.3))
            .collect();
        let mut left = window(samples, 0);
        let found = FaceBaselines::default().cues(&left);
        let absent = cue(&found, Cue::FaceAbsent).expect("absent");
        assert!(absent.strength >= 1.0, "{absent:?}");
        assert!(absent.text.contains("80% of the window"), "{}", absent.text);
        left.seen_before = false;
        left.faces.clear();
        assert!(cue(&FaceBaselines::default().cues(&left), Cue::FaceAbsent).is_none());
    }

    #[test]
    fn a_frozen_window_has_no_face_cue_at_all() {
        let samples = (0..4)
            .map(|k| sample(f64::from(k), 45.0, 0.2, 0.05))
            .collect();
        assert!(FaceBaselines::default()
            .cues(&window(samples, 21))
            .is_empty());
    }

    #[test]
    fn a_face_seen_for_a_second_is_not_judged_against_its_own_window() {
        // Five samples: the low and the high are single pictures (coding noise), so no smile
        // or raise is read from them until the face has a baseline or more samples.
        let samples = (0..5)
            .map(|k| sample(f64::from(k) * 0.2, 5.0, 0.05 * f64::from(k % 2), 0.3))
            .collect();
        let mut short = window(samples, 0);
        short.faceless = 0;
        short.pictures = 5;
        let found = FaceBaselines::default().cues(&short);
        assert!(cue(&found, Cue::Smile).is_none(), "{found:?}");
        assert!(cue(&found, Cue::GazeAtCamera).is_some(), "{found:?}");
    }

    #[test]
    fn closed_eyes_and_a_smile_against_the_window_low_are_read() {
        let samples = (0..25)
            .map(|k| {
                let smile = if k > 15 { 0.12 } else { 0.0 };
                sample(
                    f64::from(k) * 0.2,
                    5.0,
                    smile,
                    if k < 15 { 0.08 } else { 0.3 },
                )
            })
            .collect();
        let found = FaceBaselines::default().cues(&window(samples, 0));
        assert!(cue(&found, Cue::EyesClosed).expect("closed").strength >= 1.0);
        let smile = cue(&found, Cue::Smile).expect("smile");
        assert!(smile.text.contains("0.12 inter-ocular"), "{}", smile.text);
    }
}
