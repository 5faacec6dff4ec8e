//! Visual measurements of an analysis window: motion energy, stillness, nods, shakes and how
//! much of the window had usable video, from decoded luma frames where the codec has a pixel
//! decoder and from encoded frame sizes where it has not.
//!
//! A [`VisualTrack`] is fed frame by frame (a whole file through [`visual_track`], or a live
//! stream as frames arrive) and keeps a small record per frame ([`VisualFrame`]) plus the
//! previous frame's plane; [`measure_window`] turns the records of a window into the
//! analyzer's [`VideoMeasures`].
//!
//! Per frame, with pixels ([`MotionSource::Pixels`], H.264, VP8, VP9 and MJPEG; planes downscaled to
//! [`DEFAULT_LUMA_WIDTH`]):
//! - *motion*: mean absolute luma difference from the previous frame over the whole picture,
//!   0-255 scale;
//! - *head displacement*: the shift of the upper-centre region (see `profile.rs`: row and
//!   column projections of the central half of the width, 5-65% of the height, matched by
//!   normalised cross-correlation with a sub-pixel peak), in percent of the frame width.
//!
//! Without pixels ([`MotionSource::EncodedSize`], MPEG-4 Part 2, MPEG-2): an inter
//! frame's encoded size grows with how much of the picture changed, so *motion* is a non-key
//! frame's size over the median of the last [`SIZE_HISTORY`] non-key sizes (1 = this
//! stream's usual motion). Keyframes are left out: their size says how detailed the picture is,
//! not how it moved. No displacement can be read from sizes, so nods and shakes are `None`.
//!
//! A pair of frames further apart than [`MAX_GAP_INTERVALS`] frame intervals (frames lost to
//! corruption or a stalled stream) gives no motion: the difference would span an unknown time.
//!
//! Per window:
//! - `coverage`: the share of the window covered by frames, each frame covering the time until
//!   the next one, but at most [`MAX_GAP_INTERVALS`] frame intervals (the median interval of
//!   the frames around the window); a gap longer than that is uncovered beyond it.
//! - `motion`: the mean per-frame motion of the frames in the window.
//! - `stillness`: the share of those frames whose motion is under [`STILL_MOTION`] (pixels) or
//!   [`STILL_SIZE_RATIO`] (encoded sizes: a frame far smaller than usual).
//! - `nod` / `shake`: periodic vertical / horizontal head-region motion in the 1.5-5 Hz band,
//!   each `0..=1` (see `periodic.rs`: fraction of the position track's variance a band
//!   sinusoid explains x an amplitude share x the axis's share of the in-band amplitude).
//! - `faces`: with pixels, the faces in the window ([`FaceTrack`]: detection, landmarks,
//!   identities, head pose, expression geometry, nods and shakes per face). The analyzer reads
//!   faces first and the whole-frame measures above only when no face is found.
//!
//! Pictures are decoded at [`faces::DECODE_FPS`] (luma at [`DEFAULT_LUMA_WIDTH`], RGB at
//! [`faces::FACE_RGB_WIDTH`], [`PICTURES`]). A black picture ([`faces::is_black`]: a camera
//! turned off or covered) is not recorded at all, so it counts as no video (coverage), never as
//! a still scene; a picture identical to the one before is recorded as frozen.

mod face_track;
pub mod faces;
mod periodic;
mod profile;
pub mod tracking;

use attune_media::live::LivePixels;
use attune_media::video::{
    LumaFrame, PictureOptions, PixelSupport, RgbFilter, VideoPicture, DEFAULT_LUMA_WIDTH,
};
use attune_media::{MediaError, MediaFile, VideoFrameInfo};

pub use face_track::{FaceTicks, FaceTrack};

use crate::analysis::VideoMeasures;
use profile::Profiles;

/// Mean absolute luma difference (0-255) under which a frame pair counts as still: above the
/// sensor noise and compression flicker that survive downscaling, below a speaker's smallest
/// visible movement.
pub const STILL_MOTION: f64 = 1.0;
/// Encoded-size ratio under which a non-key frame counts as still (half the usual size).
pub const STILL_SIZE_RATIO: f64 = 0.5;
/// Frame intervals a gap may span and still count as covered and as one motion step.
pub const MAX_GAP_INTERVALS: f64 = 3.0;
/// Non-key frame sizes remembered for the running median.
pub const SIZE_HISTORY: usize = 300;
/// The frame interval assumed until a track has shown two frames, seconds.
const FALLBACK_INTERVAL: f64 = 0.1;
/// Frame intervals remembered for the running interval estimate.
const INTERVAL_HISTORY: usize = 31;

/// What a frame's motion was measured from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MotionSource {
    /// Decoded luma: motion is a mean absolute difference, 0-255.
    Pixels,
    /// Encoded sizes: motion is the size relative to the stream's usual non-key frame.
    EncodedSize,
}

/// Head-region displacement from the previous frame, in percent of the frame width (so that
/// one threshold fits every resolution). Positive is right and down.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shift {
    /// Horizontal displacement; `None` when the region has no horizontal detail to track.
    pub dx: Option<f64>,
    /// Vertical displacement; `None` when the region has no vertical detail to track.
    pub dy: Option<f64>,
}

/// What the measures keep of one video frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VisualFrame {
    /// Presentation time, seconds on the media clock.
    pub pts: f64,
    /// Where `motion` comes from.
    pub source: MotionSource,
    /// Motion since the previous frame (see [`MotionSource`] for the unit); `None` for the
    /// first frame, after a gap, and for keyframes when measured from sizes.
    pub motion: Option<f64>,
    /// Head-region displacement since the previous frame (pixels only).
    pub shift: Option<Shift>,
}

/// The previous decoded frame, for differences.
#[derive(Debug, Clone, Default)]
struct Previous {
    pts: f64,
    width: u32,
    height: u32,
    data: Vec<u8>,
    profiles: Profiles,
}

/// What the visual track decodes of each sampled picture.
pub const PICTURES: PictureOptions = PictureOptions {
    luma_width: DEFAULT_LUMA_WIDTH,
    rgb_width: Some(faces::FACE_RGB_WIDTH),
    sample_fps: Some(faces::DECODE_FPS),
};

/// Live pixel decoding for a stream's visual track: [`PICTURES`] within the media layer's
/// default decode budget.
pub fn live_pixels() -> LivePixels {
    LivePixels {
        options: PICTURES,
        pixels_per_second: LivePixels::DEFAULT_BUDGET,
    }
}

/// Per-frame visual records of one video track, built incrementally.
#[derive(Debug, Clone, Default)]
pub struct VisualTrack {
    frames: Vec<VisualFrame>,
    previous: Option<Previous>,
    /// Recent non-key encoded sizes, oldest first.
    sizes: std::collections::VecDeque<u32>,
    /// Recent intervals between consecutive frames, oldest first.
    intervals: std::collections::VecDeque<f64>,
    /// Time of the latest frame pushed, for the interval estimate.
    last_pts: Option<f64>,
    /// The faces of the pictures, once a picture with colour was pushed.
    faces: Option<FaceTrack>,
    /// A decoded picture was pushed: encoded sizes are no longer recorded.
    pixels_seen: bool,
}

impl VisualTrack {
    /// An empty track.
    pub fn new() -> Self {
        Self::default()
    }

    /// The records so far, in presentation order.
    pub fn frames(&self) -> &[VisualFrame] {
        &self.frames
    }

    /// Adds a decoded frame (frames in presentation order). A plane whose length does not
    /// match its size is ignored.
    pub fn push_luma(&mut self, frame: &LumaFrame) {
        let (w, h) = (frame.width as usize, frame.height as usize);
        if w == 0 || h == 0 || w.checked_mul(h) != Some(frame.data.len()) || !frame.pts.is_finite()
        {
            return;
        }
        let interval = self.note_time(frame.pts);
        let profiles = Profiles::of(&frame.data, w, h);
        let mut record = VisualFrame {
            pts: frame.pts,
            source: MotionSource::Pixels,
            motion: None,
            shift: None,
        };
        if let Some(prev) = &self.previous {
            let dt = frame.pts - prev.pts;
            let paired = dt > 0.0
                && dt <= MAX_GAP_INTERVALS * interval + 1e-9
                && (prev.width, prev.height) == (frame.width, frame.height);
            if paired {
                record.motion = Some(mean_abs_diff(&prev.data, &frame.data));
                let (dx, dy) = profiles.shift_from(&prev.profiles);
                let percent = 100.0 / w as f64;
                record.shift = Some(Shift {
                    dx: dx.map(|d| d * percent),
                    dy: dy.map(|d| d * percent),
                });
            }
        }
        let mut prev = self.previous.take().unwrap_or_default();
        prev.pts = frame.pts;
        prev.width = frame.width;
        prev.height = frame.height;
        prev.data.clear();
        prev.data.extend_from_slice(&frame.data);
        prev.profiles = profiles;
        self.previous = Some(prev);
        self.insert(record);
    }

    /// Adds a decoded picture (pictures in presentation order): its luma for motion, and its
    /// colour, when it has some, for faces. A black picture is not recorded (no video).
    pub fn push_picture(&mut self, picture: &VideoPicture) {
        let luma = &picture.luma;
        if luma.data.len() != (luma.width as usize).saturating_mul(luma.height as usize) {
            return;
        }
        if faces::is_black(&luma.data) {
            // Motion is not measured across a stretch of black either.
            self.previous = None;
            return;
        }
        let frozen = self.previous.as_ref().is_some_and(|p| {
            (p.width, p.height) == (luma.width, luma.height)
                && mean_abs_diff(&p.data, &luma.data) < faces::FROZEN_MOTION
        });
        self.pixels_seen = true;
        self.push_luma(luma);
        match &picture.rgb {
            Some(rgb) => self
                .faces
                .get_or_insert_with(FaceTrack::new)
                .push(luma.pts, frozen, rgb.width, rgb.height, &rgb.data),
            // A picture whose colour was left out (`face_colour_filter`): no face sample is
            // due at it.
            None => {
                if let Some(faces) = self.faces.as_mut() {
                    faces.push_uncoloured(luma.pts, frozen);
                }
            }
        }
    }

    /// Ends the movements faces were making (the video ended).
    pub fn finish(&mut self) {
        if let Some(faces) = self.faces.as_mut() {
            faces.finish();
        }
    }

    /// Adds an encoded frame of a stream without pixels (frames in decode or presentation
    /// order; the record is placed by its time). Ignored once decoded pictures come.
    pub fn push_encoded(&mut self, frame: &VideoFrameInfo) {
        if !frame.pts.is_finite() || self.pixels_seen {
            return;
        }
        self.note_time(frame.pts);
        let motion = if frame.keyframe {
            None
        } else {
            if self.sizes.len() == SIZE_HISTORY {
                self.sizes.pop_front();
            }
            self.sizes.push_back(frame.size);
            let mut recent: Vec<u32> = self.sizes.iter().copied().collect();
            let mid = recent.len() / 2;
            let (_, median, _) = recent.select_nth_unstable(mid);
            Some(f64::from(frame.size) / f64::from((*median).max(1)))
        };
        self.insert(VisualFrame {
            pts: frame.pts,
            source: MotionSource::EncodedSize,
            motion,
            shift: None,
        });
    }

    /// Drops the records of frames before `t` seconds (a live session keeps only what its open
    /// windows need).
    pub fn forget_before(&mut self, t: f64) {
        let keep_from = self.frames.partition_point(|f| f.pts < t);
        self.frames.drain(..keep_from);
        if let Some(faces) = self.faces.as_mut() {
            faces.forget_before(t);
        }
    }

    /// The measures of the window `[start, end)`, faces included when pictures had colour: a
    /// nod or shake movement counts in every window it overlaps ([`FaceTrack::measure`]).
    pub fn measure_window(&self, start: f64, end: f64) -> VideoMeasures {
        VideoMeasures {
            faces: self.faces.as_ref().map(|f| f.measure(start, end)),
            ..measure_window(&self.frames, start, end)
        }
    }

    /// [`measure_window`](Self::measure_window) for a live stream, as the window closes
    /// (windows in order): nods and shakes confirmed after an earlier window closed are
    /// reported in this one ([`FaceTrack::measure_live`]).
    pub fn measure_live_window(&mut self, start: f64, end: f64) -> VideoMeasures {
        VideoMeasures {
            faces: self.faces.as_mut().map(|f| f.measure_live(start, end)),
            ..measure_window(&self.frames, start, end)
        }
    }

    /// Records a frame time; returns the current estimate of the frame interval.
    fn note_time(&mut self, pts: f64) -> f64 {
        if let Some(last) = self.last_pts {
            let dt = (pts - last).abs();
            if dt > 1e-6 {
                if self.intervals.len() == INTERVAL_HISTORY {
                    self.intervals.pop_front();
                }
                self.intervals.push_back(dt);
            }
        }
        self.last_pts = Some(pts);
        let mut recent: Vec<f64> = self.intervals.iter().copied().collect();
        median(&mut recent).unwrap_or(FALLBACK_INTERVAL)
    }

    fn insert(&mut self, record: VisualFrame) {
        let at = self.frames.partition_point(|f| f.pts <= record.pts);
        self.frames.insert(at, record);
    }
}

/// The measures of the window `[start, end)` from per-frame records in presentation order
/// (see the module docs for each measure's definition). A window without frames has coverage
/// 0 and no other measure.
pub fn measure_window(frames: &[VisualFrame], start: f64, end: f64) -> VideoMeasures {
    let length = end - start;
    if length.is_nan() || length <= 0.0 {
        return VideoMeasures::default();
    }
    let interval = frame_interval(frames, start, end);
    let inside = &frames[frames.partition_point(|f| f.pts < start)..];
    let inside = &inside[..inside.partition_point(|f| f.pts < end)];
    let motions: Vec<(MotionSource, f64)> = inside
        .iter()
        .filter_map(|f| Some((f.source, f.motion?)))
        .collect();
    let motion = (!motions.is_empty())
        .then(|| motions.iter().map(|(_, m)| m).sum::<f64>() / motions.len() as f64);
    let stillness = (!motions.is_empty()).then(|| {
        let still = motions
            .iter()
            .filter(|(source, m)| match source {
                MotionSource::Pixels => *m < STILL_MOTION,
                MotionSource::EncodedSize => *m < STILL_SIZE_RATIO,
            })
            .count();
        still as f64 / motions.len() as f64
    });
    let axis = |pick: fn(&Shift) -> Option<f64>| -> Option<periodic::BandFit> {
        let samples: Vec<(f64, f64)> = inside
            .iter()
            .filter_map(|f| Some((f.pts, pick(f.shift.as_ref()?)?)))
            .collect();
        periodic::band_fit(&samples)
    };
    let vertical = axis(|s| s.dy);
    let horizontal = axis(|s| s.dx);
    VideoMeasures {
        coverage: coverage(frames, start, end, interval),
        motion,
        stillness,
        nod: vertical.map(|v| periodic::score(v, horizontal)),
        shake: horizontal.map(|h| periodic::score(h, vertical)),
        faces: None,
    }
}

/// The share of `[start, end)` covered by frames (module docs).
fn coverage(frames: &[VisualFrame], start: f64, end: f64, interval: f64) -> f64 {
    let reach = MAX_GAP_INTERVALS * interval;
    // A frame shortly before the window covers its beginning.
    let first = frames.partition_point(|f| f.pts < start - reach);
    let mut covered = 0.0;
    let mut iter = frames[first..]
        .iter()
        .take_while(|f| f.pts < end)
        .peekable();
    while let Some(f) = iter.next() {
        let until = match iter.peek() {
            Some(next) => next.pts.min(f.pts + reach),
            None => f.pts + interval,
        };
        covered += (until.min(end) - f.pts.max(start)).max(0.0);
    }
    (covered / (end - start)).clamp(0.0, 1.0)
}

/// The median interval between consecutive frames around the window.
fn frame_interval(frames: &[VisualFrame], start: f64, end: f64) -> f64 {
    let margin = end - start;
    let lo = frames.partition_point(|f| f.pts < start - margin);
    let hi = frames.partition_point(|f| f.pts < end + margin);
    let mut gaps: Vec<f64> = frames[lo..hi]
        .windows(2)
        .map(|w| w[1].pts - w[0].pts)
        .filter(|d| *d > 1e-6)
        .collect();
    median(&mut gaps).unwrap_or(FALLBACK_INTERVAL)
}

fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mid = values.len() / 2;
    let (_, m, _) = values.select_nth_unstable_by(mid, f64::total_cmp);
    Some(*m)
}

#[cfg(test)]
mod tests;

fn mean_abs_diff(a: &[u8], b: &[u8]) -> f64 {
    let sum: u64 = a
        .iter()
        .zip(b)
        .map(|(&x, &y)| u64::from(x.abs_diff(y)))
        .sum();
    sum as f64 / a.len().max(1) as f64
}

/// The colour a [`VisualTrack`] reads, for a decoder of [`PICTURES`]
/// (`attune_media::video::LumaDecoder::with_rgb_filter`, an upload's) or a live session's reader
/// (`attune_media::live::LiveReader::with_rgb_filter`, which asks on the session clock across
/// the session's files): the RGB of only the pictures faces will be read from, of the
/// [`faces::DECODE_FPS`] decoded. It mirrors what
/// [`VisualTrack::push_picture`] does with each picture (a black picture is not pushed to the
/// faces; the others are pushed to [`FaceTicks`]), so it must see the pictures that track is
/// pushed, in the same order, and no others. A frozen picture at a tick gets its colour
/// though the track may not read it (whether it is read depends on the pictures before it).
pub fn face_colour_filter() -> RgbFilter {
    let mut ticks = FaceTicks::default();
    Box::new(move |luma: &LumaFrame| {
        let plane = (luma.width as usize).saturating_mul(luma.height as usize);
        luma.data.len() == plane
            && luma.pts.is_finite()
            && !faces::is_black(&luma.data)
            && ticks.take(luma.pts)
    })
}

/// The visual track of an input's first video stream: decoded pictures ([`PICTURES`]: luma
/// and faces) where the codec has a pixel decoder, encoded frame sizes otherwise; `None`
/// without video.
///
/// Errors: those of the media layer's container parsing.
pub fn visual_track(bytes: &[u8]) -> Result<Option<VisualTrack>, MediaError> {
    visual_track_of(&MediaFile::open(bytes)?)
}

/// [`visual_track`] of an input already parsed (an upload opens its file once for the probe,
/// the audio and the pictures).
///
/// Errors: those of the media layer's frame lists.
pub fn visual_track_of(file: &MediaFile<'_>) -> Result<Option<VisualTrack>, MediaError> {
    let mut track = VisualTrack::new();
    let summary = file.decode_pictures_filtered(PICTURES, face_colour_filter(), |picture| {
        track.push_picture(&picture)
    })?;
    match summary.pixels {
        PixelSupport::Decoded => {
            track.finish();
            Ok(Some(track))
        }
        PixelSupport::NoVideo => Ok(None),
        PixelSupport::NoPixelDecoder(_) => {
            for frame in &file.video_frames()? {
                track.push_encoded(frame);
            }
            Ok(Some(track))
        }
    }
}
