//! Measures from face-mesh landmarks: head pose, smile, brows, eye closure, gaze-away.
//!
//! All measures work on the landmarks in pixels (so non-square frames do not skew angles) and
//! are scale-free: distances are divided by the inter-ocular distance (outer eye corners, 33 to
//! 263), so a face near the camera and one far away read the same. Point indices are MediaPipe's
//! canonical face mesh. "Left" and "right" below are the subject's own.
//!
//! | measure | landmarks | source |
//! |---|---|---|
//! | [`HeadPose`] yaw, pitch, roll | cheeks 234/454, forehead 10, chin 152 | a face frame from the mesh's 3-D points (x: cheek to cheek, y: forehead to chin, z: their cross product), Euler angles with roll outermost; a lighter stand-in for MediaPipe's face-geometry module (a Procrustes fit of its canonical face model) |
//! | [`mouth_corner_lift`] (smile) | corners 61/291, lips 0/17 | mouth-corner height above the lip centre line, the geometric smile cue of FACS AU12 (lip corner puller) |
//! | [`brow_raise`] | brows 105/334 (mid-brow), upper lids 159/386 | brow-to-upper-lid distance, FACS AU1+2 (raise) and AU4 (lowerer) move it |
//! | [`eye_aspect_ratio`] | 33,160,158,133,153,144 and 362,385,387,263,373,380 | Soukupová and Čech, "Real-Time Eye Blink Detection using Facial Landmarks" (2016): eyelid opening over eye width, about 0.25-0.3 open, under 0.15 closed |
//! | [`gaze_away`] | via [`HeadPose`] | angle between the face's forward axis and the camera axis; a head-orientation proxy for gaze (the iris model in `models/` would add eye direction) |

use crate::mesh::Landmarks;

/// Head orientation in degrees, 0/0/0 facing the camera upright.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HeadPose {
    /// Turn about the vertical axis: positive when the face turns toward the image's right.
    pub yaw: f32,
    /// Nod axis: positive when the face tilts up (chin forward), negative looking down.
    pub pitch: f32,
    /// In-plane tilt: positive when the head is turned counter-clockwise on screen.
    pub roll: f32,
}

type V3 = [f32; 3];

fn sub(a: V3, b: V3) -> V3 {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}
fn dot(a: V3, b: V3) -> f32 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}
fn cross(a: V3, b: V3) -> V3 {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}
fn norm(a: V3) -> Option<V3> {
    let n = dot(a, a).sqrt();
    (n > f32::EPSILON && n.is_finite()).then(|| [a[0] / n, a[1] / n, a[2] / n])
}
fn dist(a: V3, b: V3) -> f32 {
    let d = sub(a, b);
    dot(d, d).sqrt()
}

/// The face's axes in pixel space: `x` from the image-left cheek (subject's right, 234) to the
/// other (454), `y` from forehead (10) toward chin (152) made orthogonal to `x`, `z` = x × y
/// (pointing away from the camera for a frontal face, as the image's z grows into the screen).
fn face_axes(lm: &Landmarks) -> Option<[V3; 3]> {
    let p = |i| lm.pixel(i);
    let x = norm(sub(p(454)?, p(234)?))?;
    let down = sub(p(152)?, p(10)?);
    let y = norm(sub(down, scale(x, dot(down, x))))?;
    let z = cross(x, y);
    Some([x, y, z])
}

fn scale(a: V3, k: f32) -> V3 {
    [a[0] * k, a[1] * k, a[2] * k]
}

/// Yaw, pitch and roll of the head (see [`HeadPose`] for signs); `None` if the landmarks are
/// degenerate (coincident points).
///
/// The face axes form a rotation matrix `R = [x y z]` (columns, camera coordinates), decomposed
/// as `R = Rz(-roll) * Ry(yaw) * Rx(-pitch)`: roll is the outermost rotation, about the camera
/// axis, so turning the picture in its plane changes roll alone and leaves yaw and pitch as they
/// were (a nod of a tilted head is still pitch).
pub fn head_pose(lm: &Landmarks) -> Option<HeadPose> {
    let [x, y, z] = face_axes(lm)?;
    let yaw = x[2].clamp(-1.0, 1.0).asin().to_degrees();
    let pitch = (-y[2]).atan2(z[2]).to_degrees();
    let roll = (-x[1]).atan2(x[0]).to_degrees();
    Some(HeadPose { yaw, pitch, roll })
}

/// Angle in degrees between where the face points and the camera axis (0 facing the camera).
pub fn gaze_away(lm: &Landmarks) -> Option<f32> {
    let [_, _, z] = face_axes(lm)?;
    Some(z[2].clamp(-1.0, 1.0).acos().to_degrees())
}

fn inter_ocular(lm: &Landmarks) -> Option<f32> {
    let d = dist(lm.pixel(33)?, lm.pixel(263)?);
    (d > f32::EPSILON).then_some(d)
}

/// Mouth-corner lift: how far the mouth corners sit above the midpoint of the lips' centre line
/// (upper lip 0, lower lip 17), along the face's own vertical, over the inter-ocular distance.
/// Positive is corners up (smile), negative corners down; near 0 for a neutral mouth varies by
/// person, so cues compare it with the same face's own baseline.
pub fn mouth_corner_lift(lm: &Landmarks) -> Option<f32> {
    let [_, y, _] = face_axes(lm)?;
    let centre = scale(add(lm.pixel(0)?, lm.pixel(17)?), 0.5);
    let corners = scale(add(lm.pixel(61)?, lm.pixel(291)?), 0.5);
    // y points down the face: a corner above the centre has a negative offset along it.
    Some(-dot(sub(corners, centre), y) / inter_ocular(lm)?)
}

fn add(a: V3, b: V3) -> V3 {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}

/// Brow height: mean distance from mid-brow (105, 334) to the upper eyelid (159, 386) over the
/// inter-ocular distance. Raised brows increase it, lowered (frowning) brows decrease it;
/// compare with the same face's baseline.
pub fn brow_raise(lm: &Landmarks) -> Option<f32> {
    let right = dist(lm.pixel(105)?, lm.pixel(159)?);
    let left = dist(lm.pixel(334)?, lm.pixel(386)?);
    Some((right + left) / 2.0 / inter_ocular(lm)?)
}

/// Eye aspect ratio (EAR), mean of both eyes: (|p2-p6| + |p3-p5|) / (2 |p1-p4|). Open eyes read
/// about 0.25-0.3; closed under about 0.15.
pub fn eye_aspect_ratio(lm: &Landmarks) -> Option<f32> {
    let ear = |idx: [usize; 6]| -> Option<f32> {
        let p: Vec<V3> = idx.iter().map(|&i| lm.pixel(i)).collect::<Option<_>>()?;
        let width = dist(p[0], p[3]);
        (width > f32::EPSILON).then(|| (dist(p[1], p[5]) + dist(p[2], p[4])) / (2.0 * width))
    };
    let right = ear([33, 160, 158, 133, 153, 144])?;
    let left = ear([362, 385, 387, 263, 373, 380])?;
    Some((right + left) / 2.0)
}
