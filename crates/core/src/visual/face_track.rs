//! The faces of one video track over time: per sampled picture, which faces (by tracker id)
//! and what their geometry measured, plus the nods and shakes each face made; cut into windows
//! as [`FaceMeasures`].
//!
//! Pictures come at the decode rate ([`super::faces::DECODE_FPS`]); faces are read from the
//! first picture at or after each tick of [`FACE_FPS`]. A picture identical to the one before
//! (`frozen`) is recorded but not read: a repeated picture shows nobody doing anything, and a
//! frozen stream must not read as a face holding perfectly still. Two exceptions keep the poses
//! right: a frozen picture that repeats a live one nobody read (it was between ticks) is read,
//! since what it shows is new; and at a frozen picture the movement detectors are told that the
//! faces last read are still where they were (time passes, so a head that stopped has stopped),
//! without adding a sample. Nods and shakes are found on
//! each face's whole pose series as it grows ([`SwingDetector`]), so a movement that straddles
//! two windows is found whole.
//!
//! Which window a movement belongs to: every window it overlaps, with the nods or shakes of it
//! that overlap that window (their count, their times clipped to the window, their largest
//! swing) ([`FaceTrack::measure`]). A live stream closes a window before later pictures are
//! seen, so there ([`FaceTrack::measure_live`]) a window holds the nods and shakes confirmed
//! by its close that overlap it, movements still under way included, and also those confirmed
//! since the previous window closed that ended before this window began (confirmed too late
//! for their own window): a gesture is reported from the window in which it is confirmed on,
//! never dropped.

use std::collections::BTreeMap;

use super::faces::{FaceObservation, FaceReader, FACE_FPS};
use super::tracking::{FaceTracker, Gesture, GestureKind, GestureUnit, SwingDetector};
use crate::analysis::{FaceMeasures, FaceSample, FaceWindow, GestureMeasure};

#[derive(Debug, Clone)]
struct Picture {
    pts: f64,
    frozen: bool,
    faces: Vec<(u32, FaceObservation)>,
}

/// Which pictures faces are read from: the first at or after each tick of [`FACE_FPS`]
/// (pictures in presentation order). [`FaceTrack`] keeps one; a decoder that makes colour
/// only for the pictures faces will read keeps a copy fed the same pictures
/// (`visual::visual_track_of`): its answers are the track's.
#[derive(Debug, Clone, Copy, Default)]
pub struct FaceTicks {
    next_tick: Option<f64>,
}

impl FaceTicks {
    /// Whether faces are read from the picture shown at `pts` seconds, the next picture after
    /// those asked about before; a `true` moves the grid on.
    pub fn take(&mut self, pts: f64) -> bool {
        let interval = 1.0 / FACE_FPS;
        let due = self
            .next_tick
            .is_none_or(|next| pts >= next - interval * 0.25 || pts < next - 2.0 * interval);
        if due {
            self.next_tick = Some(match self.next_tick {
                Some(next) if pts - next < interval && pts >= next - interval => next + interval,
                _ => pts + interval,
            });
        }
        due
    }
}

/// Faces over the pictures of one video track.
#[derive(Debug, Clone, Default)]
pub struct FaceTrack {
    reader: FaceReader,
    tracker: FaceTracker,
    detectors: BTreeMap<u32, SwingDetector>,
    ticks: FaceTicks,
    pictures: Vec<Picture>,
    gestures: Vec<Gesture>,
    first_face: Option<f64>,
    /// A live picture came between ticks since faces were last read.
    unread: bool,
    /// The faces of the last reading: `(id, pitch, yaw)`.
    last_poses: Vec<(u32, f64, f64)>,
    /// Time of the latest picture pushed.
    last_pts: Option<f64>,
    /// Time of the latest picture when the previous live window was measured: units confirmed
    /// after it have not been reported yet.
    reported_until: Option<f64>,
}

impl FaceTrack {
    /// An empty track.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a picture (in presentation order): `frozen` when it repeats the previous picture,
    /// else its RGB8 pixels are read for faces if a face sample is due.
    pub fn push(&mut self, pts: f64, frozen: bool, width: u32, height: u32, rgb: &[u8]) {
        self.push_with(pts, frozen, Some((width, height, rgb)));
    }

    /// Adds a picture whose colour was not made because no face sample is due at it (its time
    /// failed [`FaceTicks::take`] on a copy of this track's ticks fed the same pictures): time
    /// passes for the track as with [`push`](Self::push). Were a sample due after all, it
    /// would be read as a picture without faces.
    pub fn push_uncoloured(&mut self, pts: f64, frozen: bool) {
        self.push_with(pts, frozen, None);
    }

    fn push_with(&mut self, pts: f64, frozen: bool, rgb: Option<(u32, u32, &[u8])>) {
        if !pts.is_finite() {
            return;
        }
        self.last_pts = Some(self.last_pts.map_or(pts, |l| l.max(pts)));
        if !self.ticks.take(pts) {
            self.unread |= !frozen;
            return;
        }
        if frozen && !self.unread {
            // The same faces in the same poses as last read: the detectors see time pass.
            for &(id, pitch, yaw) in &self.last_poses {
                if let Some(d) = self.detectors.get_mut(&id) {
                    self.gestures.extend(d.push(pts, pitch, yaw));
                }
            }
            self.pictures.push(Picture {
                pts,
                frozen: true,
                faces: Vec::new(),
            });
            return;
        }
        self.unread = false;
        debug_assert!(
            rgb.is_some(),
            "faces due at {pts} s on a picture without colour"
        );
        let found = match rgb {
            Some((width, height, rgb)) => self.reader.read(pts, width, height, rgb),
            None => Vec::new(),
        };
        let boxes: Vec<[f32; 4]> = found.iter().map(|f| f.bbox).collect();
        let ids = self.tracker.assign(pts, &boxes);
        // A face not in this picture ends the movements it was making.
        let lost: Vec<u32> = self
            .detectors
            .keys()
            .copied()
            .filter(|id| !ids.contains(id))
            .collect();
        for id in lost {
            if let Some(mut d) = self.detectors.remove(&id) {
                self.gestures.extend(d.finish());
            }
        }
        self.last_poses.clear();
        for (id, f) in ids.iter().zip(&found) {
            let (pitch, yaw) = (f64::from(f.pitch), f64::from(f.yaw));
            self.last_poses.push((*id, pitch, yaw));
            match self.detectors.get_mut(id) {
                Some(d) => self.gestures.extend(d.push(pts, pitch, yaw)),
                None => {
                    self.detectors
                        .insert(*id, SwingDetector::new(*id, pts, pitch, yaw));
                }
            }
        }
        if !found.is_empty() && self.first_face.is_none() {
            self.first_face = Some(pts);
        }
        self.pictures.push(Picture {
            pts,
            frozen: false,
            faces: ids.into_iter().zip(found).collect(),
        });
    }

    /// Ends the movements under way (the video ended).
    pub fn finish(&mut self) {
        for d in self.detectors.values_mut() {
            self.gestures.extend(d.finish());
        }
    }

    /// Drops pictures and gestures before `t` seconds.
    pub fn forget_before(&mut self, t: f64) {
        let cut = self.pictures.partition_point(|p| p.pts < t);
        self.pictures.drain(..cut);
        self.gestures.retain(|g| g.end >= t);
    }

    /// The faces of the window `[start, end)`, with every nod and shake that overlaps it
    /// (see the module docs).
    pub fn measure(&self, start: f64, end: f64) -> FaceMeasures {
        self.measure_with(start, end, None)
    }

    /// The faces of the window `[start, end)` of a live stream, measured when it closes: the
    /// nods and shakes confirmed so far that overlap it, and those confirmed since the previous
    /// live window closed that ended before it (see the module docs). Windows are measured in
    /// order.
    pub fn measure_live(&mut self, start: f64, end: f64) -> FaceMeasures {
        let late_since = Some(self.reported_until.unwrap_or(f64::NEG_INFINITY));
        let m = self.measure_with(start, end, late_since);
        self.reported_until = self.last_pts.or(self.reported_until);
        m
    }

    fn measure_with(&self, start: f64, end: f64, late_since: Option<f64>) -> FaceMeasures {
        let lo = self.pictures.partition_point(|p| p.pts < start);
        let hi = self.pictures.partition_point(|p| p.pts < end);
        let inside = &self.pictures[lo..hi.max(lo)];
        let mut faces: BTreeMap<u32, FaceWindow> = BTreeMap::new();
        let mut xs: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
        for p in inside.iter().filter(|p| !p.frozen) {
            for (id, f) in &p.faces {
                let w = faces.entry(*id).or_insert_with(|| FaceWindow {
                    id: *id,
                    ..FaceWindow::default()
                });
                w.samples.push(FaceSample {
                    t: p.pts,
                    yaw: f64::from(f.yaw),
                    pitch: f64::from(f.pitch),
                    away: f64::from(f.away),
                    smile: f64::from(f.smile),
                    brow: f64::from(f.brow),
                    ear: f64::from(f.ear),
                });
                xs.entry(*id).or_default().push(f64::from(f.centre()[0]));
            }
        }
        let open: Vec<Gesture> = self.detectors.values().flat_map(|d| d.open()).collect();
        for g in self.gestures.iter().chain(&open) {
            let Some(m) = units_in(&g.units, start, end, late_since) else {
                continue;
            };
            let w = faces.entry(g.face).or_insert_with(|| FaceWindow {
                id: g.face,
                ..FaceWindow::default()
            });
            match g.kind {
                GestureKind::Nod => w.nods.push(m),
                GestureKind::Shake => w.shakes.push(m),
            }
        }
        for (id, w) in faces.iter_mut() {
            if let Some(x) = xs.get(id).filter(|x| !x.is_empty()) {
                w.x = x.iter().sum::<f64>() / x.len() as f64;
            } else {
                w.x = 0.5;
            }
        }
        let frozen = inside.iter().filter(|p| p.frozen).count() as u32;
        let faceless = inside
            .iter()
            .filter(|p| !p.frozen && p.faces.is_empty())
            .count() as u32;
        FaceMeasures {
            pictures: inside.len() as u32,
            frozen,
            faceless,
            seen_before: self.first_face.is_some_and(|t| t < end),
            faces: faces.into_values().collect(),
        }
    }
}

/// A nod or shake belongs to a window it overlaps by more than this, seconds: half the interval
/// between face samples, so that a nod whose first sample is the window's last picture
/// (stamped a millisecond before the window ends, as WebM rounds times) is not also counted in
/// that window.
const MIN_OVERLAP_S: f64 = 0.5 / FACE_FPS;

/// The part of a movement that belongs to the window `[start, end)`: its units overlapping the
/// window by more than [`MIN_OVERLAP_S`] (times clipped to it) and, with `late_since`, those that ended before the window and
/// were confirmed after `late_since` (times as they were). `None` when no unit belongs.
fn units_in(
    units: &[GestureUnit],
    start: f64,
    end: f64,
    late_since: Option<f64>,
) -> Option<GestureMeasure> {
    let mut m: Option<GestureMeasure> = None;
    for u in units {
        let overlap = u.end.min(end) - u.start.max(start);
        let (a, b) = if overlap > MIN_OVERLAP_S {
            (u.start.max(start), u.end.min(end))
        } else if late_since.is_some_and(|c| u.end <= start && u.confirmed > c) {
            (u.start, u.end)
        } else {
            continue;
        };
        let m = m.get_or_insert(GestureMeasure {
            start: a,
            end: b,
            count: 0,
            amplitude: 0.0,
        });
        m.start = m.start.min(a);
        m.end = m.end.max(b);
        m.count += 1;
        m.amplitude = m.amplitude.max(u.amplitude);
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(start: f64, end: f64, confirmed: f64) -> GestureUnit {
        GestureUnit {
            start,
            end,
            amplitude: 15.0 + start,
            confirmed,
        }
    }

    #[test]
    fn a_movement_counts_in_every_window_it_overlaps_with_the_nods_of_that_window() {
        // Nods from 1.8 s to 8.6 s across the 5 s boundary.
        let units = [
            unit(1.8, 2.6, 3.0),
            unit(2.9, 3.7, 4.0),
            unit(4.6, 5.4, 5.8),
            unit(6.0, 6.8, 7.2),
            unit(7.8, 8.6, 9.0),
        ];
        let first = units_in(&units, 0.0, 5.0, None).unwrap();
        assert_eq!(first.count, 3);
        assert_eq!((first.start, first.end), (1.8, 5.0));
        assert_eq!(first.amplitude, 15.0 + 4.6);
        let second = units_in(&units, 5.0, 10.0, None).unwrap();
        assert_eq!(second.count, 3);
        assert_eq!((second.start, second.end), (5.0, 8.6));
        assert!(units_in(&units, 10.0, 15.0, None).is_none());
        // A unit that only touches the boundary, or starts a millisecond before it (WebM
        // rounds times to milliseconds), is not in the window.
        assert!(units_in(&[unit(5.0, 5.8, 6.0)], 0.0, 5.0, None).is_none());
        assert!(units_in(&[unit(4.999, 5.8, 6.0)], 0.0, 5.0, None).is_none());
        assert_eq!(
            units_in(&[unit(4.8, 5.8, 6.0)], 0.0, 5.0, None)
                .unwrap()
                .count,
            1
        );
    }

    #[test]
    fn a_live_window_also_takes_the_nods_confirmed_after_the_last_one_closed() {
        // A nod that ended at 4.8 s but was confirmed at 5.3 s, after the 0-5 s window closed at
        // 5.1 s: the 5-10 s window reports it, with its own times; one confirmed before 5.1 s
        // was reported in its window and is not repeated.
        let late = [unit(4.0, 4.8, 5.3)];
        let m = units_in(&late, 5.0, 10.0, Some(5.1)).unwrap();
        assert_eq!((m.count, m.start, m.end), (1, 4.0, 4.8));
        assert!(units_in(&[unit(4.0, 4.6, 5.0)], 5.0, 10.0, Some(5.1)).is_none());
        // Uploads know the whole file: no late reports.
        assert!(units_in(&late, 5.0, 10.0, None).is_none());
    }
}
