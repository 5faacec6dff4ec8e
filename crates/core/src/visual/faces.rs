//! Faces in one picture: detection, landmarks and the face geometry of each face, with the
//! picture checks that tell a frozen or black picture from a live one.
//!
//! Each sampled RGB picture goes through [`FaceReader::read`]: the face mesh runs on the
//! regions the previous picture's landmarks gave (MediaPipe's tracking path,
//! `attune_vision::Face::from_landmarks`), and the BlazeFace detector runs when no face is
//! tracked, when a tracked face was lost, and at least every [`REDETECT_S`] seconds so a face
//! joining a gallery view is found. Each face's landmarks become a [`FaceObservation`]: head
//! pose, angle away from the camera, mouth-corner lift, brow height and eye aspect ratio
//! (`attune_vision::geometry`, where each measure's landmarks and source are listed).
//!
//! The networks are loaded once per process and shared by every analysis (tract runs a loaded
//! plan from any thread); if they cannot be loaded (a broken build) no face is ever found and
//! the analyzer falls back to whole-frame motion, as for a picture without faces.

use std::sync::OnceLock;

use attune_vision::geometry::{
    brow_raise, eye_aspect_ratio, gaze_away, head_pose, mouth_corner_lift,
};
use attune_vision::{Face, FaceDetector, FaceMesh, Image};

/// Pictures decoded per second of media for the visual track (luma for motion, RGB for
/// faces): every frame of a 10 fps stream, every third of a 30 fps webcam.
pub const DECODE_FPS: f64 = 10.0;
/// Pictures per second the faces are read from: 5, every other decoded picture. A nod or a
/// shake swing lasts 0.2-0.5 s, so it spans 1-3 samples at this rate; reading faces costs
/// about 10-20 ms a picture on one core (BENCHMARKS.md), so 5 a second keeps face reading to
/// a tenth of real time or less.
pub const FACE_FPS: f64 = 5.0;
/// Width of the RGB pictures faces are read from, pixels (aspect kept, never upscaled): a
/// face filling a third of a webcam picture is about 200 pixels across, a face in a 3x3
/// gallery about 70, which the detector (128x128 input for the whole picture) still finds.
pub const FACE_RGB_WIDTH: u32 = 640;
/// The detector runs at least this often, seconds, to find faces joining the picture.
pub const REDETECT_S: f64 = 1.0;
/// Most faces read per picture (the largest first): bounds the cost of a crowded gallery.
pub const MAX_FACES: usize = 6;
/// Mean absolute luma difference (0-255) under which a picture is the previous one repeated:
/// a frozen stream or a still image, not a person sitting still (a camera's sensor noise alone
/// moves the mean difference well above this).
pub const FROZEN_MOTION: f64 = 0.05;
/// Mean luma (studio range, black is 16) under which a picture with little variation is
/// black: a camera turned off or covered.
pub const BLACK_LUMA: f64 = 26.0;
/// Luma standard deviation under which a dark picture counts as black (no scene in it).
pub const BLACK_LUMA_SD: f64 = 6.0;

struct Models {
    detector: FaceDetector,
    mesh: FaceMesh,
}

fn models() -> Option<&'static Models> {
    static MODELS: OnceLock<Option<Models>> = OnceLock::new();
    MODELS
        .get_or_init(|| {
            Some(Models {
                detector: FaceDetector::new().ok()?,
                mesh: FaceMesh::new().ok()?,
            })
        })
        .as_ref()
}

/// Loads and optimizes the face detector and landmark networks (once per process; the first
/// picture read otherwise waits for them). Whether they loaded.
pub fn warm_up() -> bool {
    models().is_some()
}

/// One face in one picture: where it is and what its landmarks measure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FaceObservation {
    /// The landmarks' box, normalized to the picture: `[xmin, ymin, xmax, ymax]`.
    pub bbox: [f32; 4],
    /// Head turn about the vertical axis, degrees (`attune_vision::geometry::HeadPose`).
    pub yaw: f32,
    /// Head tilt up (positive) or down, degrees.
    pub pitch: f32,
    /// In-plane tilt, degrees.
    pub roll: f32,
    /// Angle between where the face points and the camera axis, degrees.
    pub away: f32,
    /// Mouth-corner lift over the inter-ocular distance (a smile raises it).
    pub smile: f32,
    /// Brow-to-upper-lid distance over the inter-ocular distance (raised brows raise it).
    pub brow: f32,
    /// Eye aspect ratio, both eyes' mean (about 0.25-0.3 open, under 0.15 closed).
    pub ear: f32,
}

impl FaceObservation {
    /// The box's centre, normalized `[x, y]`.
    pub fn centre(&self) -> [f32; 2] {
        [
            (self.bbox[0] + self.bbox[2]) / 2.0,
            (self.bbox[1] + self.bbox[3]) / 2.0,
        ]
    }

    /// The box's width, normalized.
    pub fn width(&self) -> f32 {
        self.bbox[2] - self.bbox[0]
    }

    /// Intersection over union of the two boxes.
    pub fn iou(&self, other: &[f32; 4]) -> f32 {
        let b = &self.bbox;
        let ix = (b[2].min(other[2]) - b[0].max(other[0])).max(0.0);
        let iy = (b[3].min(other[3]) - b[1].max(other[1])).max(0.0);
        let inter = ix * iy;
        let area = |r: &[f32; 4]| (r[2] - r[0]).max(0.0) * (r[3] - r[1]).max(0.0);
        let union = area(b) + area(other) - inter;
        if union > 0.0 {
            inter / union
        } else {
            0.0
        }
    }
}

/// The face reader of one video track: the regions it tracks from picture to picture.
#[derive(Debug, Clone, Default)]
pub struct FaceReader {
    /// Regions for the next picture's mesh, from this picture's landmarks.
    tracked: Vec<Face>,
    /// When the detector last ran, seconds.
    last_detect: Option<f64>,
}

impl FaceReader {
    /// A reader tracking nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The faces of an RGB8 picture of `width` x `height` taken at `pts` seconds (pictures in
    /// presentation order), largest first. A buffer that is not a valid picture has none.
    pub fn read(&mut self, pts: f64, width: u32, height: u32, rgb: &[u8]) -> Vec<FaceObservation> {
        let (Some(models), Ok(img)) = (models(), Image::new(width, height, rgb)) else {
            return Vec::new();
        };
        let mut regions = std::mem::take(&mut self.tracked);
        let due = regions.is_empty()
            || self
                .last_detect
                .is_none_or(|t| pts - t >= REDETECT_S || pts < t);
        if due {
            self.last_detect = Some(pts);
            for found in models.detector.detect(&img).unwrap_or_default() {
                if !regions.iter().any(|r| r.bbox.iou(&found.bbox) > 0.3) {
                    regions.push(found);
                }
            }
        }
        let before = regions.len();
        let mut out: Vec<(FaceObservation, Face)> = Vec::new();
        for region in regions {
            let Ok(Some(lm)) = models.mesh.landmarks(&img, &region) else {
                continue;
            };
            let (Some(next), Some(pose), Some(away)) =
                (Face::from_landmarks(&lm), head_pose(&lm), gaze_away(&lm))
            else {
                continue;
            };
            let b = next.bbox;
            let obs = FaceObservation {
                bbox: [b.xmin, b.ymin, b.xmax, b.ymax],
                yaw: pose.yaw,
                pitch: pose.pitch,
                roll: pose.roll,
                away,
                smile: mouth_corner_lift(&lm).unwrap_or(f32::NAN),
                brow: brow_raise(&lm).unwrap_or(f32::NAN),
                ear: eye_aspect_ratio(&lm).unwrap_or(f32::NAN),
            };
            let finite = [obs.yaw, obs.pitch, obs.roll, obs.away]
                .iter()
                .all(|v| v.is_finite());
            // Two regions that converged on one face (a detection beside a tracked region)
            // keep one.
            if finite && !out.iter().any(|(o, _)| o.iou(&obs.bbox) > 0.5) {
                out.push((obs, next));
            }
        }
        out.sort_by(|a, b| b.0.width().total_cmp(&a.0.width()));
        out.truncate(MAX_FACES);
        if out.len() < before {
            // A face was lost (or a detection was false): look again at the next picture.
            self.last_detect = None;
        }
        self.tracked = out.iter().map(|(_, f)| f.clone()).collect();
        out.into_iter().map(|(o, _)| o).collect()
    }
}

/// Whether a luma plane is black: dark and flat (a camera turned off or covered).
pub fn is_black(luma: &[u8]) -> bool {
    if luma.is_empty() {
        return false;
    }
    let n = luma.len() as f64;
    let mean = luma.iter().map(|&p| f64::from(p)).sum::<f64>() / n;
    if mean >= BLACK_LUMA {
        return false;
    }
    let var = luma
        .iter()
        .map(|&p| (f64::from(p) - mean).powi(2))
        .sum::<f64>()
        / n;
    var.sqrt() < BLACK_LUMA_SD
}
