//! Who is who from picture to picture, and the head gestures in each face's pose series.
//!
//! Identity ([`FaceTracker`]): each face of a picture takes the id of the track whose last box
//! it overlaps most (intersection over union at least [`MATCH_IOU`]) or, failing that, whose
//! last box centre is nearest, within [`MATCH_DISTANCE`] face widths; otherwise it opens a new
//! track. Faces are matched greedily, best pair first, so two faces side by side keep their
//! own ids. A track not seen for [`TRACK_MEMORY_S`] is closed (a face that comes back later is
//! a new face: nothing here recognises people). Ids count from 0 in order of first appearance.
//!
//! Gestures ([`SwingDetector`]): a head nod is the pitch leaving its rest and coming back, a
//! head shake the yaw swinging to one side, across, and back. Each axis's series goes through
//! a zig-zag (turning-point) detector with a hysteresis of [`SWING_DEGREES`]: a turning point
//! counts once the angle has come back from it by that much, so pose jitter under it never
//! makes a swing; a turn that stops (no new extreme for [`SETTLE_S`]) ends the swing there.
//! Consecutive swings each shorter than [`MAX_SWING_S`] form one movement; on the pitch axis
//! every two swings (down and back) are one nod, on the yaw axis a shake needs three swings
//! (to one side, across, back), so turning to look away and back is not a shake. A movement
//! whose swings move the other axis as much as their own is a turn of the whole head in a
//! diagonal, not a nod or shake, and is left out.
//!
//! A movement is reported with its single nods or shakes ([`GestureUnit`]: the swings of each,
//! when they began and ended, and when the last of them was confirmed), so that a movement
//! spanning several analysis windows can be counted in each window with the nods or shakes that
//! fall in it; a movement still under way is available too ([`SwingDetector::open`]), with the
//! nods or shakes it has completed so far.

/// Smallest IoU with a track's last box to continue it.
pub const MATCH_IOU: f32 = 0.3;
/// Farthest a face's centre may be from a track's last centre, in face widths, to continue it
/// when the boxes do not overlap enough (a fast move between two samples).
pub const MATCH_DISTANCE: f32 = 0.5;
/// Seconds a track is kept without its face before it is closed.
pub const TRACK_MEMORY_S: f64 = 10.0;
/// Hysteresis of the turning-point detector and smallest swing, degrees.
pub const SWING_DEGREES: f64 = 5.0;
/// Longest swing of a nod or shake, seconds (a deliberate look down at notes takes longer).
pub const MAX_SWING_S: f64 = 1.0;
/// A turn with no new extreme for this long has stopped, seconds.
pub const SETTLE_S: f64 = 0.4;
/// A new extreme less than this beyond the last one is jitter: it does not move the turning
/// point's time, degrees.
pub const JITTER_DEGREES: f64 = 1.0;
/// A head at rest within this of its highest (or lowest) level since it came to rest is still
/// at that level, for the time a movement away from it starts, degrees. Wider than
/// [`JITTER_DEGREES`]: a still face's pose jitters by up to 2.7 degrees peak to peak
/// (`docs/ANALYZER.md`), so a narrower band would stamp a movement's start at a jitter peak
/// seconds earlier and make its first swing too slow to count, as the codec's noise decides.
pub const REST_DEGREES: f64 = SWING_DEGREES / 2.0;

#[derive(Debug, Clone)]
struct Track {
    id: u32,
    bbox: [f32; 4],
    last_seen: f64,
}

/// Assigns stable ids to the faces of successive pictures.
#[derive(Debug, Clone, Default)]
pub struct FaceTracker {
    tracks: Vec<Track>,
    next_id: u32,
}

fn centre(b: &[f32; 4]) -> [f32; 2] {
    [(b[0] + b[2]) / 2.0, (b[1] + b[3]) / 2.0]
}

fn iou(a: &[f32; 4], b: &[f32; 4]) -> f32 {
    let ix = (a[2].min(b[2]) - a[0].max(b[0])).max(0.0);
    let iy = (a[3].min(b[3]) - a[1].max(b[1])).max(0.0);
    let inter = ix * iy;
    let area = |r: &[f32; 4]| (r[2] - r[0]).max(0.0) * (r[3] - r[1]).max(0.0);
    let union = area(a) + area(b) - inter;
    if union > 0.0 {
        inter / union
    } else {
        0.0
    }
}

impl FaceTracker {
    /// The ids of the faces with these boxes (normalized `[xmin, ymin, xmax, ymax]`) seen at
    /// `pts` seconds, in the boxes' order.
    pub fn assign(&mut self, pts: f64, boxes: &[[f32; 4]]) -> Vec<u32> {
        self.tracks
            .retain(|t| pts - t.last_seen <= TRACK_MEMORY_S && pts >= t.last_seen - 1.0);
        // Candidate pairs scored: overlap first, then nearness.
        let mut pairs: Vec<(f32, usize, usize)> = Vec::new();
        for (f, b) in boxes.iter().enumerate() {
            for (t, track) in self.tracks.iter().enumerate() {
                let overlap = iou(b, &track.bbox);
                let (c, d) = (centre(b), centre(&track.bbox));
                let width = (b[2] - b[0]).max(track.bbox[2] - track.bbox[0]).max(1e-6);
                let dist = ((c[0] - d[0]).powi(2) + (c[1] - d[1]).powi(2)).sqrt() / width;
                let score = if overlap >= MATCH_IOU {
                    1.0 + overlap
                } else if dist <= MATCH_DISTANCE {
                    1.0 - dist
                } else {
                    continue;
                };
                pairs.push((score, f, t));
            }
        }
        pairs.sort_by(|a, b| b.0.total_cmp(&a.0));
        let mut ids: Vec<Option<u32>> = vec![None; boxes.len()];
        let mut taken = vec![false; self.tracks.len()];
        for (_, f, t) in pairs {
            if ids[f].is_none() && !taken[t] {
                ids[f] = Some(self.tracks[t].id);
                taken[t] = true;
                self.tracks[t].bbox = boxes[f];
                self.tracks[t].last_seen = pts;
            }
        }
        ids.iter()
            .zip(boxes)
            .map(|(id, b)| {
                id.unwrap_or_else(|| {
                    let id = self.next_id;
                    self.next_id += 1;
                    self.tracks.push(Track {
                        id,
                        bbox: *b,
                        last_seen: pts,
                    });
                    id
                })
            })
            .collect()
    }

    /// Faces seen so far in the track's life.
    pub fn faces_seen(&self) -> u32 {
        self.next_id
    }
}

/// Which way a head gesture moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GestureKind {
    /// Pitch down and back (or up and back): a nod.
    Nod,
    /// Yaw to one side, across and back: a head shake.
    Shake,
}

/// One nod or one head shake within a movement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GestureUnit {
    /// Time its first swing left its turning point, seconds.
    pub start: f64,
    /// Time its last swing reached its turning point, seconds.
    pub end: f64,
    /// Its largest swing, degrees.
    pub amplitude: f64,
    /// Time of the sample that confirmed its last turning point (the head came back from it, or
    /// settled there), seconds: when a live analysis could first know of it.
    pub confirmed: f64,
}

/// One movement of nods or shakes by one face.
#[derive(Debug, Clone, PartialEq)]
pub struct Gesture {
    /// The face (tracker id).
    pub face: u32,
    /// Nods or shakes.
    pub kind: GestureKind,
    /// Time the first swing left its turning point, seconds.
    pub start: f64,
    /// Time the last swing reached its turning point, seconds.
    pub end: f64,
    /// Nods (two swings each) or shakes (three swings for the first, two more for each next).
    pub count: u32,
    /// Largest swing, degrees.
    pub amplitude: f64,
    /// Its nods or shakes, in time order (`count` of them).
    pub units: Vec<GestureUnit>,
}

/// A completed swing: from one turning point to the next.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Swing {
    t0: f64,
    v0: f64,
    t1: f64,
    v1: f64,
    /// Time of the sample that confirmed the turning point at `t1`.
    confirmed: f64,
}

impl Swing {
    fn amplitude(&self) -> f64 {
        (self.v1 - self.v0).abs()
    }
    fn duration(&self) -> f64 {
        self.t1 - self.t0
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Dir {
    Rest,
    Up,
    Down,
}

/// The zig-zag detector of one axis of one face.
#[derive(Debug, Clone)]
struct Axis {
    dir: Dir,
    /// The last confirmed turning point.
    anchor: (f64, f64),
    /// The running extreme of the current swing (or, at rest, the lowest and highest since the
    /// anchor).
    low: (f64, f64),
    high: (f64, f64),
    /// Swings of the movement under way.
    run: Vec<Swing>,
    /// Time of the latest sample.
    last_t: f64,
}

impl Axis {
    fn new(t: f64, v: f64) -> Self {
        Axis {
            dir: Dir::Rest,
            anchor: (t, v),
            low: (t, v),
            high: (t, v),
            run: Vec::new(),
            last_t: t,
        }
    }

    /// Feeds a sample; returns the swings of a movement that just ended.
    fn push(&mut self, t: f64, v: f64) -> Option<Vec<Swing>> {
        self.last_t = t;
        let mut ended = None;
        match self.dir {
            Dir::Rest => {
                // The lowest and highest level since the anchor, each stamped with the last time
                // the head was there: a movement starts when the head leaves its level.
                if v <= self.low.1 + REST_DEGREES {
                    self.low = (t, self.low.1.min(v));
                }
                if v >= self.high.1 - REST_DEGREES {
                    self.high = (t, self.high.1.max(v));
                }
                // At rest the anchor follows the head, so a slow drift never adds up to a swing.
                if t - self.anchor.0 > MAX_SWING_S {
                    let (lo, hi) = (self.low.1.min(v), self.high.1.max(v));
                    if hi - lo < SWING_DEGREES {
                        self.anchor = (t, v);
                        self.low = (t, v);
                        self.high = (t, v);
                    }
                }
                if v - self.anchor.1 >= SWING_DEGREES {
                    self.anchor = self.low;
                    self.dir = Dir::Up;
                    self.high = (t, v);
                } else if self.anchor.1 - v >= SWING_DEGREES {
                    self.anchor = self.high;
                    self.dir = Dir::Down;
                    self.low = (t, v);
                }
            }
            Dir::Up | Dir::Down => {
                let up = self.dir == Dir::Up;
                let ext = if up { &mut self.high } else { &mut self.low };
                let beyond = if up { v - ext.1 } else { ext.1 - v };
                if beyond > JITTER_DEGREES {
                    *ext = (t, v);
                } else if beyond > 0.0 {
                    // Pose jitter at the turning point moves its value, not its time.
                    ext.1 = v;
                }
                let ext = *ext;
                let back = if up { ext.1 - v } else { v - ext.1 };
                if back >= SWING_DEGREES {
                    // A turning point: the swing ends there and the next begins.
                    ended = self.close_swing(ext);
                    self.dir = if up { Dir::Down } else { Dir::Up };
                    self.low = (t, v);
                    self.high = (t, v);
                } else if t - ext.0 >= SETTLE_S {
                    // The head stopped: the swing ends at its extreme and the movement with it.
                    if let Some(e) = self.close_swing(ext) {
                        ended = Some(e);
                    }
                    ended = ended.or_else(|| Some(std::mem::take(&mut self.run)));
                    self.dir = Dir::Rest;
                    self.anchor = (t, v);
                    self.low = (t, v);
                    self.high = (t, v);
                }
            }
        }
        ended.filter(|r| !r.is_empty())
    }

    /// Ends the current swing at `ext`; returns the previous movement if this swing is too
    /// slow to continue it.
    fn close_swing(&mut self, ext: (f64, f64)) -> Option<Vec<Swing>> {
        let swing = Swing {
            t0: self.anchor.0,
            v0: self.anchor.1,
            t1: ext.0,
            v1: ext.1,
            confirmed: self.last_t,
        };
        self.anchor = ext;
        if swing.duration() > MAX_SWING_S || swing.amplitude() < SWING_DEGREES {
            return Some(std::mem::take(&mut self.run));
        }
        self.run.push(swing);
        None
    }

    /// Ends whatever movement is under way (the face was lost, or the video ended): a swing
    /// under way ends at its extreme so far, and counts if it is a swing at all.
    fn flush(&mut self) -> Option<Vec<Swing>> {
        let open = match self.dir {
            Dir::Rest => None,
            Dir::Up => Some(self.high),
            Dir::Down => Some(self.low),
        };
        self.dir = Dir::Rest;
        let before = open.and_then(|ext| self.close_swing(ext));
        let run = before.unwrap_or_else(|| std::mem::take(&mut self.run));
        (!run.is_empty()).then_some(run)
    }
}

/// The nod and shake detector of one face.
#[derive(Debug, Clone)]
pub struct SwingDetector {
    face: u32,
    pitch: Axis,
    yaw: Axis,
    /// The pose samples of the movements under way, `(t, pitch, yaw)`, to check the other axis.
    recent: Vec<(f64, f64, f64)>,
}

impl SwingDetector {
    /// A detector for face `face` starting at a first pose sample.
    pub fn new(face: u32, t: f64, pitch: f64, yaw: f64) -> Self {
        SwingDetector {
            face,
            pitch: Axis::new(t, pitch),
            yaw: Axis::new(t, yaw),
            recent: vec![(t, pitch, yaw)],
        }
    }

    /// Feeds the face's next pose sample; returns gestures that just completed.
    pub fn push(&mut self, t: f64, pitch: f64, yaw: f64) -> Vec<Gesture> {
        self.recent.push((t, pitch, yaw));
        let mut out = Vec::new();
        if let Some(run) = self.pitch.push(t, pitch) {
            out.extend(self.gesture(GestureKind::Nod, &run));
        }
        if let Some(run) = self.yaw.push(t, yaw) {
            out.extend(self.gesture(GestureKind::Shake, &run));
        }
        let keep_from = t - 4.0 * MAX_SWING_S - SETTLE_S;
        let cut = self.recent.partition_point(|s| s.0 < keep_from);
        self.recent.drain(..cut);
        out
    }

    /// The face is gone: ends the movements under way.
    pub fn finish(&mut self) -> Vec<Gesture> {
        let mut out = Vec::new();
        if let Some(run) = self.pitch.flush() {
            out.extend(self.gesture(GestureKind::Nod, &run));
        }
        if let Some(run) = self.yaw.flush() {
            out.extend(self.gesture(GestureKind::Shake, &run));
        }
        out
    }

    /// The movements under way, with the nods or shakes they have completed so far (what a
    /// live analysis can report before the movement ends). The same movement comes back from
    /// [`push`](Self::push) or [`finish`](Self::finish) when it ends, with all its units.
    pub fn open(&self) -> Vec<Gesture> {
        let mut out = Vec::new();
        out.extend(self.gesture(GestureKind::Nod, &self.pitch.run));
        out.extend(self.gesture(GestureKind::Shake, &self.yaw.run));
        out
    }

    fn gesture(&self, kind: GestureKind, run: &[Swing]) -> Option<Gesture> {
        let swings = run.len() as u32;
        let count = match kind {
            GestureKind::Nod => swings / 2,
            GestureKind::Shake => swings.saturating_sub(1) / 2,
        };
        // Which swings make each unit: a nod is a swing out and back; the first shake is three
        // swings (to one side, across, back), each next one two more.
        let units: Vec<GestureUnit> = (0..count as usize)
            .map(|k| {
                let swings = match kind {
                    GestureKind::Nod => &run[2 * k..2 * k + 2],
                    GestureKind::Shake if k == 0 => &run[0..3],
                    GestureKind::Shake => &run[2 * k + 1..2 * k + 3],
                };
                let last = swings[swings.len() - 1];
                GestureUnit {
                    start: swings[0].t0,
                    end: last.t1,
                    amplitude: swings.iter().map(Swing::amplitude).fold(0.0, f64::max),
                    confirmed: last.confirmed,
                }
            })
            .collect();
        let (first, last) = (run.first()?, run.last()?);
        let amplitude = run.iter().map(Swing::amplitude).fold(0.0, f64::max);
        // The other axis over the movement: a diagonal turn moves both.
        let (lo, hi) = self
            .recent
            .iter()
            .filter(|s| s.0 >= first.t0 && s.0 <= last.t1)
            .map(|s| match kind {
                GestureKind::Nod => s.2,
                GestureKind::Shake => s.1,
            })
            .fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
        let other = if hi >= lo { hi - lo } else { 0.0 };
        (count > 0 && other < amplitude).then_some(Gesture {
            face: self.face,
            kind,
            start: first.t0,
            end: last.t1,
            count,
            amplitude,
            units,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(samples: impl Iterator<Item = (f64, f64, f64)>) -> Vec<Gesture> {
        let mut det: Option<SwingDetector> = None;
        let mut out = Vec::new();
        for (t, p, y) in samples {
            match det.as_mut() {
                None => det = Some(SwingDetector::new(0, t, p, y)),
                Some(d) => out.extend(d.push(t, p, y)),
            }
        }
        out.extend(det.map(|mut d| d.finish()).unwrap_or_default());
        out
    }

    /// `(t, pitch, yaw)` at 5 samples a second for `secs`, from a pose function.
    fn series(secs: f64, f: impl Fn(f64) -> (f64, f64)) -> impl Iterator<Item = (f64, f64, f64)> {
        (0..(secs * 5.0) as usize).map(move |k| {
            let t = k as f64 / 5.0;
            let (p, y) = f(t);
            (t, p, y)
        })
    }

    fn bump(t: f64, start: f64, len: f64, peak: f64) -> f64 {
        if t > start && t < start + len {
            peak * (std::f64::consts::PI * (t - start) / len).sin()
        } else {
            0.0
        }
    }

    #[test]
    fn two_nods_are_two_nods_with_their_times() {
        let g = run(series(6.0, |t| {
            (bump(t, 1.0, 0.8, -15.0) + bump(t, 2.2, 0.8, -15.0), 0.0)
        }));
        // Back to back they may be one movement of two nods or two of one.
        assert!(g.iter().all(|g| g.kind == GestureKind::Nod), "{g:?}");
        assert_eq!(g.iter().map(|g| g.count).sum::<u32>(), 2, "{g:?}");
        let (first, last) = (g.first().unwrap(), g.last().unwrap());
        assert!((first.start - 1.0).abs() <= 0.21, "{g:?}");
        assert!((last.end - 3.0).abs() <= 0.21, "{g:?}");
        assert!(g.iter().all(|g| g.amplitude > 12.0), "{g:?}");
    }

    #[test]
    fn a_nod_whose_face_is_lost_on_the_way_back_up_still_counts() {
        // Down and most of the way back up, then the face is gone (the last sample is the
        // head coming up): the up swing so far is a swing, so this is a nod.
        let g = run(series(2.0, |t| (bump(t, 1.0, 1.0, -20.0), 0.0)));
        assert_eq!(g.len(), 1, "{g:?}");
        assert_eq!((g[0].kind, g[0].count), (GestureKind::Nod, 1), "{g:?}");
        // Only down when lost: half a nod is none.
        let half = run(series(1.6, |t| (bump(t, 1.0, 1.2, -20.0), 0.0)));
        assert!(half.is_empty(), "{half:?}");
    }

    #[test]
    fn a_movement_lists_each_nod_and_is_open_while_it_goes_on() {
        // Four nods, one every 1.2 s from 1.0 s.
        let pose = |t: f64| {
            let p = (0..4)
                .map(|k| bump(t, 1.0 + 1.2 * f64::from(k), 0.8, -15.0))
                .sum();
            (p, 0.0)
        };
        let g = run(series(7.0, pose));
        let units: Vec<GestureUnit> = g.iter().flat_map(|g| g.units.clone()).collect();
        assert_eq!(units.len(), 4, "{g:?}");
        for (k, u) in units.iter().enumerate() {
            // Back to back, a nod's first swing starts where the last one's ended (they share
            // the turning point), up to the 0.4 s pause between them before the head goes down.
            let start = 1.0 + 1.2 * k as f64;
            let pause = if k == 0 { 0.0 } else { 0.4 };
            assert!(
                u.start <= start + 0.21 && u.start >= start - pause - 0.21,
                "{k}: {u:?}"
            );
            assert!((u.end - (start + 0.8)).abs() <= 0.21, "{k}: {u:?}");
            assert!(u.confirmed >= u.end && u.confirmed <= u.end + 0.61, "{u:?}");
            assert!(u.amplitude > 12.0, "{u:?}");
        }
        // Half way through, the nods completed so far are there before the movement ends.
        let mut samples = series(7.0, pose);
        let (t, p, y) = samples.next().unwrap();
        let mut det = SwingDetector::new(0, t, p, y);
        let mut ended = Vec::new();
        for (t, p, y) in samples.take_while(|s| s.0 < 3.9) {
            ended.extend(det.push(t, p, y));
        }
        let open = det.open();
        let so_far: u32 = ended.iter().chain(&open).map(|g| g.count).sum();
        assert_eq!(so_far, 2, "ended {ended:?}, open {open:?}");
        assert!(open.iter().all(|g| g.units.iter().all(|u| u.end < 3.9)));
    }

    #[test]
    fn jitter_drift_and_a_slow_look_down_are_not_nods() {
        let jitter = run(series(10.0, |t| {
            (2.0 * (t * 7.0).sin(), 1.5 * (t * 5.0).cos())
        }));
        assert!(jitter.is_empty(), "{jitter:?}");
        let drift = run(series(10.0, |t| (t * 3.0, 0.0)));
        assert!(drift.is_empty(), "{drift:?}");
        let slow = run(series(10.0, |t| (bump(t, 2.0, 4.0, -20.0), 0.0)));
        assert!(slow.is_empty(), "{slow:?}");
    }

    #[test]
    fn a_shake_needs_both_sides_and_a_turn_away_and_back_is_not_one() {
        let shake = run(series(4.0, |t| {
            let y = if (1.0..2.0).contains(&t) {
                25.0 * (std::f64::consts::TAU * (t - 1.0)).sin()
            } else {
                0.0
            };
            (0.0, y)
        }));
        assert_eq!(shake.len(), 1, "{shake:?}");
        assert_eq!((shake[0].kind, shake[0].count), (GestureKind::Shake, 1));
        let look = run(series(4.0, |t| (0.0, bump(t, 1.0, 1.2, 30.0))));
        assert!(look.is_empty(), "{look:?}");
    }

    #[test]
    fn a_shake_counts_from_the_rest_where_it_began_whatever_the_jitter_before() {
        // The yaw read from a VP9 recording of the test animation (Chromium's MediaRecorder,
        // 640x480 at 30 fps, 300 kb/s): the head rests near 0 degrees from 4.4 s with a jitter
        // peak of 1.35 degrees at 4.23 s, then shakes twice (5.2-6.2 s, 6.6-7.6 s). The H.264
        // recording of the same clip jittered less and read two shakes; this one read one, because
        // the first swing was timed from the jitter peak (1.2 s before it: too slow for a swing).
        let yaw = [
            (3.036, 1.0),
            (3.231, 0.5),
            (3.431, 0.8),
            (3.631, -0.2),
            (3.831, 1.39),
            (4.031, 2.09),
            (4.231, 1.35),
            (4.433, 0.15),
            (4.6, -0.67),
            (4.831, -0.0),
            (5.0, -0.0),
            (5.2, -0.0),
            (5.4, -22.7),
            (5.633, -13.7),
            (5.831, 12.9),
            (6.032, 21.5),
            (6.231, -0.3),
            (6.432, -0.5),
            (6.6, 0.3),
            (6.832, -22.1),
            (7.002, -14.6),
            (7.231, 13.7),
            (7.431, 21.6),
            (7.631, 0.9),
            (7.831, -0.2),
            (8.031, 0.5),
            (8.231, -1.3),
            (8.4, -0.7),
            (8.6, -0.5),
            (8.8, -0.4),
        ];
        let g = run(yaw.iter().map(|&(t, y)| (t, -10.0, y)));
        assert_eq!(g.len(), 1, "{g:?}");
        assert_eq!((g[0].kind, g[0].count), (GestureKind::Shake, 2), "{g:?}");
        assert!((g[0].start - 5.2).abs() < 0.01, "{g:?}");
    }

    #[test]
    fn a_diagonal_turn_is_neither() {
        let g = run(series(4.0, |t| {
            let b = bump(t, 1.0, 0.8, 15.0);
            (b, b)
        }));
        assert!(g.is_empty(), "{g:?}");
    }

    #[test]
    fn faces_side_by_side_keep_their_ids_and_a_new_face_gets_a_new_one() {
        let mut tracker = FaceTracker::default();
        let left = [0.1, 0.2, 0.35, 0.6];
        let right = [0.6, 0.2, 0.85, 0.6];
        assert_eq!(tracker.assign(0.0, &[left, right]), vec![0, 1]);
        let moved = |b: [f32; 4], dx: f32| [b[0] + dx, b[1], b[2] + dx, b[3]];
        assert_eq!(
            tracker.assign(0.2, &[moved(right, 0.02), moved(left, -0.02)]),
            vec![1, 0]
        );
        assert_eq!(tracker.assign(0.4, &[[0.4, 0.7, 0.5, 0.9]]), vec![2]);
        // Gone for longer than the memory: a face in the same place is a new face.
        assert_eq!(tracker.assign(20.0, &[left]), vec![3]);
        assert_eq!(tracker.faces_seen(), 4);
    }
}
