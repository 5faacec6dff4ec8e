//! The face measures on real landmarks (the Python reference's mesh of the astronaut), moved the
//! way a smile, a brow raise, a blink or a head tilt moves them.

use attune_vision::geometry::{
    brow_raise, eye_aspect_ratio, gaze_away, head_pose, mouth_corner_lift,
};
use attune_vision::Landmarks;
use serde_json::Value;

fn astronaut() -> Landmarks {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/faces/reference/reference.json"
    );
    let json: Value = serde_json::from_str(&std::fs::read_to_string(path).expect("reference.json"))
        .expect("json");
    let frame = &json["frames"][0];
    assert_eq!(frame["file"], "frames/astronaut.png");
    let points = frame["faces"][0]["landmarks"]
        .as_array()
        .expect("landmarks")
        .iter()
        .map(|p| {
            let c = |i: usize| p[i].as_f64().expect("coordinate") as f32;
            [c(0), c(1), c(2)]
        })
        .collect();
    Landmarks {
        points,
        presence: 1.0,
        frame_width: 256,
        frame_height: 256,
    }
}

/// Inter-ocular distance in normalized units (the frame is square).
fn iod(lm: &Landmarks) -> f32 {
    let (a, b) = (lm.points[33], lm.points[263]);
    ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2)).sqrt()
}

fn moved(lm: &Landmarks, idx: &[usize], dy: f32) -> Landmarks {
    let mut out = lm.clone();
    for &i in idx {
        out.points[i][1] += dy;
    }
    out
}

#[test]
fn neutral_astronaut_reads_as_an_open_eyed_frontal_face() {
    let lm = astronaut();
    let ear = eye_aspect_ratio(&lm).expect("ear");
    assert!((0.18..0.45).contains(&ear), "open eyes: EAR {ear:.3}");
    let away = gaze_away(&lm).expect("gaze");
    assert!(away < 20.0, "facing the camera: {away:.1} degrees");
}

#[test]
fn raised_mouth_corners_read_as_a_smile_lowered_as_the_opposite() {
    let lm = astronaut();
    let neutral = mouth_corner_lift(&lm).expect("lift");
    let d = 0.1 * iod(&lm);
    let smile = mouth_corner_lift(&moved(&lm, &[61, 291], -d)).expect("lift");
    let frown = mouth_corner_lift(&moved(&lm, &[61, 291], d)).expect("lift");
    assert!(
        (smile - neutral - 0.1).abs() < 0.01,
        "corners up by 0.1 IOD: {neutral:.3} -> {smile:.3}"
    );
    assert!(
        (neutral - frown - 0.1).abs() < 0.01,
        "corners down by 0.1 IOD: {neutral:.3} -> {frown:.3}"
    );
}

#[test]
fn brows_up_and_down_move_brow_raise() {
    let lm = astronaut();
    let neutral = brow_raise(&lm).expect("brow");
    let d = 0.05 * iod(&lm);
    let up = brow_raise(&moved(&lm, &[105, 334], -d)).expect("brow");
    let down = brow_raise(&moved(&lm, &[105, 334], d)).expect("brow");
    assert!(
        up > neutral + 0.03 && down < neutral - 0.03,
        "{down:.3} < {neutral:.3} < {up:.3}"
    );
}

#[test]
fn closing_the_eyelids_drops_the_eye_aspect_ratio() {
    let lm = astronaut();
    let mut closed = lm.clone();
    // Upper lid points onto their lower-lid partners.
    for (upper, lower) in [(160, 144), (158, 153), (385, 380), (387, 373)] {
        closed.points[upper] = closed.points[lower];
    }
    let open = eye_aspect_ratio(&lm).expect("ear");
    let shut = eye_aspect_ratio(&closed).expect("ear");
    assert!(
        shut < 0.05 && open > 0.18,
        "open {open:.3}, closed {shut:.3}"
    );
}

#[test]
fn an_in_plane_tilt_is_roll_only_and_the_measures_ignore_it_and_scale() {
    let lm = astronaut();
    let base = head_pose(&lm).expect("pose");
    let turn = |lm: &Landmarks, degrees: f32, scale: f32| {
        // Counter-clockwise on screen (y points down) about the frame centre, then scaled.
        let (s, c) = (-degrees.to_radians()).sin_cos();
        let mut out = lm.clone();
        for p in &mut out.points {
            let (x, y) = (p[0] - 0.5, p[1] - 0.5);
            *p = [
                0.5 + scale * (x * c - y * s),
                0.5 + scale * (x * s + y * c),
                scale * p[2],
            ];
        }
        out
    };
    let tilted = turn(&lm, 30.0, 0.6);
    let pose = head_pose(&tilted).expect("pose");
    assert!(
        (pose.roll - base.roll - 30.0).abs() < 0.5,
        "roll {:.2} -> {:.2}",
        base.roll,
        pose.roll
    );
    assert!(
        (pose.yaw - base.yaw).abs() < 0.5 && (pose.pitch - base.pitch).abs() < 0.5,
        "{base:?} vs {pose:?}"
    );
    for (name, f) in [
        ("smile", mouth_corner_lift as fn(&Landmarks) -> Option<f32>),
        ("brow", brow_raise),
        ("ear", eye_aspect_ratio),
    ] {
        let (a, b) = (f(&lm).expect(name), f(&tilted).expect(name));
        assert!(
            (a - b).abs() < 1e-3,
            "{name}: {a:.4} vs {b:.4} after tilt and scale"
        );
    }
}

#[test]
fn degenerate_landmarks_give_none_not_nan() {
    let lm = Landmarks {
        points: vec![[0.5, 0.5, 0.0]; 468],
        presence: 1.0,
        frame_width: 10,
        frame_height: 10,
    };
    assert!(head_pose(&lm).is_none());
    assert!(mouth_corner_lift(&lm).is_none());
    assert!(eye_aspect_ratio(&lm).is_none());
    let short = Landmarks {
        points: vec![[0.1, 0.2, 0.0]; 10],
        ..lm
    };
    assert!(head_pose(&short).is_none() && brow_raise(&short).is_none());
}
