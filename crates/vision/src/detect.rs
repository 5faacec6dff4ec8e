//! BlazeFace (short range): anchors, box decoding and weighted non-maximum suppression.

use crate::image::{letterbox, Image};
use crate::net::Net;
use crate::VisionError;

pub(crate) static MODEL: &[u8] = include_bytes!("../../../models/face_detection_short_range.onnx");
pub(crate) const INPUT: usize = 128;
const NUM_ANCHORS: usize = 896;
/// Values in the regressor row: box centre and size, then six (x, y) keypoints.
const REGRESSORS: usize = 16;
/// Logits are clamped before the sigmoid, as MediaPipe's `score_clipping_thresh`.
const RAW_SCORE_LIMIT: f32 = 80.0;
/// Detections at or below this score are dropped (MediaPipe's `min_score_thresh`).
const MIN_SCORE: f32 = 0.5;
/// Boxes overlapping more than this (IoU) are merged into one face.
const MIN_SUPPRESSION_THRESHOLD: f32 = 0.3;

/// An axis-aligned box in coordinates normalized to the frame (0..1 on each axis).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BBox {
    /// Left edge.
    pub xmin: f32,
    /// Top edge.
    pub ymin: f32,
    /// Right edge.
    pub xmax: f32,
    /// Bottom edge.
    pub ymax: f32,
}

impl BBox {
    /// Width (normalized to the frame width).
    pub fn width(&self) -> f32 {
        self.xmax - self.xmin
    }

    /// Height (normalized to the frame height).
    pub fn height(&self) -> f32 {
        self.ymax - self.ymin
    }

    fn area(&self) -> f32 {
        self.width().max(0.0) * self.height().max(0.0)
    }

    /// Intersection over union with `other`; 0 when they do not overlap.
    pub fn iou(&self, other: &BBox) -> f32 {
        let ix = (self.xmax.min(other.xmax) - self.xmin.max(other.xmin)).max(0.0);
        let iy = (self.ymax.min(other.ymax) - self.ymin.max(other.ymin)).max(0.0);
        let inter = ix * iy;
        let union = self.area() + other.area() - inter;
        if union > 0.0 {
            inter / union
        } else {
            0.0
        }
    }
}

/// A point normalized to the frame.
pub type Keypoint = [f32; 2];

/// One detected face.
#[derive(Debug, Clone, PartialEq)]
pub struct Face {
    /// The face box, normalized to the frame.
    pub bbox: BBox,
    /// Detector confidence (sigmoid of the anchor's logit), above 0.5.
    pub score: f32,
    /// BlazeFace's six keypoints, normalized to the frame, in the model's order: eye on the
    /// image's left, eye on the image's right, nose tip, mouth centre, ear region (tragion) on
    /// the image's left, then on the image's right.
    pub keypoints: [Keypoint; 6],
}

/// The BlazeFace short-range detector (faces within about 2 m of the camera, as in video calls).
pub struct FaceDetector {
    net: Net,
    anchors: Vec<[f32; 2]>,
}

impl FaceDetector {
    /// Loads the embedded model (tens of milliseconds; build one and reuse it).
    pub fn new() -> Result<FaceDetector, VisionError> {
        Ok(FaceDetector {
            net: Net::load(MODEL, INPUT)?,
            anchors: anchors(),
        })
    }

    /// Every face in `img`, strongest first.
    pub fn detect(&self, img: &Image<'_>) -> Result<Vec<Face>, VisionError> {
        let (input, pad_x, pad_y) = letterbox(img, INPUT);
        let outputs = self.net.run(input)?;
        let (boxes, scores) = match (outputs.first(), outputs.get(1)) {
            (Some(a), Some(b)) if a.len() == NUM_ANCHORS * REGRESSORS && b.len() == NUM_ANCHORS => {
                (a, b)
            }
            (Some(a), Some(b)) if b.len() == NUM_ANCHORS * REGRESSORS && a.len() == NUM_ANCHORS => {
                (b, a)
            }
            _ => {
                return Err(VisionError::Model(
                    "unexpected detector output shapes".into(),
                ))
            }
        };
        let mut candidates = Vec::new();
        for (i, anchor) in self.anchors.iter().enumerate() {
            let score = sigmoid(scores[i].clamp(-RAW_SCORE_LIMIT, RAW_SCORE_LIMIT));
            if score <= MIN_SCORE {
                continue;
            }
            let r = &boxes[i * REGRESSORS..(i + 1) * REGRESSORS];
            let scale = INPUT as f32;
            let (cx, cy) = (r[0] / scale + anchor[0], r[1] / scale + anchor[1]);
            let (w, h) = (r[2] / scale, r[3] / scale);
            let mut data = [[0f32; 2]; 8];
            data[0] = [cx - w / 2.0, cy - h / 2.0];
            data[1] = [cx + w / 2.0, cy + h / 2.0];
            for k in 0..6 {
                data[2 + k] = [
                    r[4 + 2 * k] / scale + anchor[0],
                    r[5 + 2 * k] / scale + anchor[1],
                ];
            }
            if data[1][0] > data[0][0] && data[1][1] > data[0][1] {
                candidates.push((data, score));
            }
        }
        let merged = weighted_nms(candidates);
        // Undo the letterbox: padding fractions per side back to frame coordinates.
        let (sx, sy) = (1.0 - 2.0 * pad_x, 1.0 - 2.0 * pad_y);
        let unpad = |p: [f32; 2]| [(p[0] - pad_x) / sx, (p[1] - pad_y) / sy];
        Ok(merged
            .into_iter()
            .map(|(d, score)| {
                let (a, b) = (unpad(d[0]), unpad(d[1]));
                let mut keypoints = [[0f32; 2]; 6];
                for (k, kp) in keypoints.iter_mut().enumerate() {
                    *kp = unpad(d[2 + k]);
                }
                Face {
                    bbox: BBox {
                        xmin: a[0],
                        ymin: a[1],
                        xmax: b[0],
                        ymax: b[1],
                    },
                    score,
                    keypoints,
                }
            })
            .collect())
    }
}

fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// MediaPipe's `SsdAnchorsCalculator` for the short-range options: strides 8, 16, 16, 16 on a
/// 128 input; layers with the same stride share a grid, two anchors per layer per cell, so 16x16x2
/// + 8x8x6 = 896 anchor centres (sizes are fixed at 1 and not needed).
fn anchors() -> Vec<[f32; 2]> {
    let strides = [8usize, 16, 16, 16];
    let mut out = Vec::with_capacity(NUM_ANCHORS);
    let mut layer = 0;
    while layer < strides.len() {
        let mut last = layer;
        let mut repeats = 0;
        while last < strides.len() && strides[last] == strides[layer] {
            last += 1;
            repeats += 2;
        }
        let grid = INPUT / strides[layer];
        for y in 0..grid {
            for x in 0..grid {
                let centre = [
                    (x as f32 + 0.5) / grid as f32,
                    (y as f32 + 0.5) / grid as f32,
                ];
                out.extend(std::iter::repeat_n(centre, repeats));
            }
        }
        layer = last;
    }
    out
}

type Candidate = ([[f32; 2]; 8], f32);

fn bbox_of(d: &[[f32; 2]; 8]) -> BBox {
    BBox {
        xmin: d[0][0],
        ymin: d[0][1],
        xmax: d[1][0],
        ymax: d[1][1],
    }
}

/// Weighted NMS (MediaPipe's `WEIGHTED` overlap handling): the strongest remaining detection
/// absorbs every one overlapping it by more than the threshold, and the merged box and
/// keypoints are the score-weighted mean of the group; its score stays the strongest's.
fn weighted_nms(mut candidates: Vec<Candidate>) -> Vec<Candidate> {
    candidates.sort_by(|a, b| b.1.total_cmp(&a.1));
    let mut out = Vec::new();
    while let Some(&(top, top_score)) = candidates.first() {
        let top_box = bbox_of(&top);
        let (group, rest): (Vec<Candidate>, Vec<Candidate>) = candidates
            .into_iter()
            .partition(|c| bbox_of(&c.0).iou(&top_box) > MIN_SUPPRESSION_THRESHOLD);
        let total: f32 = group.iter().map(|c| c.1).sum();
        let mut merged = [[0f32; 2]; 8];
        if total > 0.0 {
            for (d, s) in &group {
                for (m, p) in merged.iter_mut().zip(d) {
                    m[0] += p[0] * s / total;
                    m[1] += p[1] * s / total;
                }
            }
        } else {
            merged = top;
        }
        out.push((merged, top_score));
        if group.is_empty() {
            break; // cannot happen (top overlaps itself), but never loop forever on NaN boxes
        }
        candidates = rest;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchor_grid_matches_the_model_output() {
        let a = anchors();
        assert_eq!(a.len(), NUM_ANCHORS);
        assert_eq!(a[0], [0.5 / 16.0, 0.5 / 16.0]);
        assert_eq!(a[1], a[0]);
        assert_eq!(a[512], [0.5 / 8.0, 0.5 / 8.0]);
    }

    #[test]
    fn weighted_nms_merges_overlaps_and_keeps_separate_faces() {
        let det = |x: f32, s: f32| {
            let mut d = [[0f32; 2]; 8];
            d[0] = [x, 0.1];
            d[1] = [x + 0.2, 0.3];
            (d, s)
        };
        let out = weighted_nms(vec![det(0.1, 0.9), det(0.12, 0.6), det(0.6, 0.7)]);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].1, 0.9);
        let expected = (0.1 * 0.9 + 0.12 * 0.6) / 1.5;
        assert!((out[0].0[0][0] - expected).abs() < 1e-6);
        assert_eq!(out[1].0[0][0], 0.6);
    }
}
