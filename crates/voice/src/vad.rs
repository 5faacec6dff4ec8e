//! Voice activity from Silero VAD v6, frame by frame, with the state carried between calls.
//!
//! The network scores 512-sample frames (32 ms at 16 kHz), each seen after the previous frame's
//! last 64 samples; its LSTM state runs through the whole input, so a stream fed in chunks of
//! any size gets the same probabilities as the whole buffer at once (up to the rounding of the
//! kernels). The network is computed here (`crate::silero`) from the weights of the sequence
//! export, a group of frames per call.

use crate::layers::HIDDEN;
use crate::silero::SileroNet;
use crate::VoiceError;
use std::sync::OnceLock;

/// Samples per scored frame (32 ms at 16 kHz).
pub const VAD_FRAME_SAMPLES: usize = 512;
/// Seconds per scored frame.
pub const VAD_FRAME_SECONDS: f64 = VAD_FRAME_SAMPLES as f64 / crate::SAMPLE_RATE as f64;
/// Samples of the previous frame each frame is seen after.
const CONTEXT: usize = 64;
/// Frames per call while input flows: frames are scored in groups of this many, aligned to the
/// start of the input, so that the probabilities are the same bits however the input was cut
/// (matrix kernels may round differently for different numbers of rows).
const GROUP: usize = 8;
/// Frames per call: whole groups, and single frames for the end.
const BLOCKS: [usize; 2] = [GROUP, 1];

static MODEL: &[u8] = include_bytes!("../../../models/silero_vad_16k_sequence.onnx");

/// The network's weights, read from the embedded ONNX file once per process.
pub(crate) fn network() -> Result<&'static SileroNet, VoiceError> {
    static NET: OnceLock<Result<SileroNet, String>> = OnceLock::new();
    NET.get_or_init(|| SileroNet::from_onnx(MODEL).map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|e| VoiceError::Model(e.clone()))
}

/// tract's plans of the same ONNX graph (one per block size): what ran the network before
/// [`crate::silero`], kept as its second reference.
#[cfg(test)]
pub(crate) fn tract_plans(
) -> Result<&'static [std::sync::Arc<tract_onnx::prelude::TypedRunnableModel>], VoiceError> {
    use std::sync::Arc;
    use tract_onnx::prelude::*;
    static PLANS: OnceLock<Result<Vec<Arc<TypedRunnableModel>>, String>> = OnceLock::new();
    PLANS
        .get_or_init(|| {
            let model = crate::net::parse(MODEL).map_err(|e| e.to_string())?;
            BLOCKS
                .iter()
                .map(|&n| {
                    crate::net::plan(
                        model.clone(),
                        &[
                            &[n, CONTEXT + VAD_FRAME_SAMPLES],
                            &[1, 1, HIDDEN],
                            &[1, 1, HIDDEN],
                        ],
                    )
                    .map_err(|e| e.to_string())
                })
                .collect()
        })
        .as_ref()
        .map(|v| v.as_slice())
        .map_err(|e| VoiceError::Model(e.clone()))
}

/// Streaming Silero VAD: feed PCM (16 kHz mono, -1..1) in chunks of any size, get one speech
/// probability (0..1) per completed 32 ms frame.
#[derive(Clone)]
pub struct SileroVad {
    h: [f32; HIDDEN],
    c: [f32; HIDDEN],
    /// The last [`CONTEXT`] samples of the previous frame (zeros before the first).
    context: [f32; CONTEXT],
    /// Samples of the frame in progress.
    pending: Vec<f32>,
    frames: u64,
    scratch: Vec<f32>,
}

impl SileroVad {
    /// A detector at time 0. Loads the network on first use in the process (shared after).
    pub fn new() -> Result<Self, VoiceError> {
        network()?;
        Ok(Self {
            h: [0.0; HIDDEN],
            c: [0.0; HIDDEN],
            context: [0.0; CONTEXT],
            pending: Vec::with_capacity(VAD_FRAME_SAMPLES),
            frames: 0,
            scratch: Vec::new(),
        })
    }

    /// Frames scored so far.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Feeds samples; appends to `out` the probability of every frame completed by them.
    /// Non-finite samples read as 0, others are clamped to -1..1.
    pub fn push(&mut self, pcm: &[f32], out: &mut Vec<f32>) -> Result<(), VoiceError> {
        let mut rest = pcm;
        // Complete the frame in progress first.
        if !self.pending.is_empty() {
            let take = (VAD_FRAME_SAMPLES - self.pending.len()).min(rest.len());
            self.pending
                .extend(rest[..take].iter().map(|&x| sanitize(x)));
            rest = &rest[take..];
            if self.pending.len() < VAD_FRAME_SAMPLES {
                return Ok(());
            }
            let frame = std::mem::take(&mut self.pending);
            self.score(&frame, out)?;
            self.pending = frame;
            self.pending.clear();
        }
        let whole = rest.len() / VAD_FRAME_SAMPLES * VAD_FRAME_SAMPLES;
        if whole > 0 {
            let mut frames = std::mem::take(&mut self.scratch);
            frames.clear();
            frames.extend(rest[..whole].iter().map(|&x| sanitize(x)));
            let result = self.score(&frames, out);
            self.scratch = frames;
            result?;
        }
        self.pending
            .extend(rest[whole..].iter().map(|&x| sanitize(x)));
        Ok(())
    }

    /// Ends the input: a partial last frame is scored zero-padded, as Silero's own utilities
    /// do. Appends its probability to `out` (nothing when the input ended on a frame boundary).
    pub fn finish(&mut self, out: &mut Vec<f32>) -> Result<(), VoiceError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let mut frame = std::mem::take(&mut self.pending);
        frame.resize(VAD_FRAME_SAMPLES, 0.0);
        self.score(&frame, out)
    }

    /// Scores whole frames (`samples.len()` a multiple of the frame), in blocks of [`BLOCKS`].
    fn score(&mut self, samples: &[f32], out: &mut Vec<f32>) -> Result<(), VoiceError> {
        let net = network()?;
        let mut frames = samples.chunks_exact(VAD_FRAME_SAMPLES);
        let mut left = samples.len() / VAD_FRAME_SAMPLES;
        let mut input = Vec::new();
        while left > 0 {
            let n = *BLOCKS
                .iter()
                .find(|&&n| n <= left)
                .expect("the last block size is 1");
            input.clear();
            for _ in 0..n {
                let frame = frames.next().expect("counted");
                input.extend_from_slice(&self.context);
                input.extend_from_slice(frame);
                self.context
                    .copy_from_slice(&frame[VAD_FRAME_SAMPLES - CONTEXT..]);
            }
            net.score(&input, &mut self.h, &mut self.c, out);
            self.frames += n as u64;
            left -= n;
        }
        Ok(())
    }
}

fn sanitize(x: f32) -> f32 {
    if x.is_finite() {
        x.clamp(-1.0, 1.0)
    } else {
        0.0
    }
}

/// Speech probability of every 32 ms frame of a whole buffer (the last partial frame
/// zero-padded).
pub fn speech_probabilities(pcm: &[f32]) -> Result<Vec<f32>, VoiceError> {
    let mut vad = SileroVad::new()?;
    let mut out = Vec::with_capacity(pcm.len() / VAD_FRAME_SAMPLES + 1);
    vad.push(pcm, &mut out)?;
    vad.finish(&mut out)?;
    Ok(out)
}

/// The rule that turns frame probabilities into speech, with hysteresis, as Silero's
/// `get_speech_timestamps` applies it: speech starts at a frame of probability at least
/// `threshold`, and ends at the first frame under `threshold - 0.15` that is followed by
/// `min_silence_s` under it; stretches shorter than `min_speech_s` are dropped and each kept
/// one is widened by `pad_s` on both sides (never past its neighbours).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpeechRule {
    /// Probability at or above which speech starts (Silero's default 0.5).
    pub threshold: f32,
    /// Probability under which speech may end (Silero's default: `threshold - 0.15`).
    pub neg_threshold: f32,
    /// Shortest speech kept, s (Silero's default 0.25).
    pub min_speech_s: f64,
    /// Silence needed to end speech, s (Silero's default 0.1).
    pub min_silence_s: f64,
    /// Widening of each stretch on both sides, s (Silero's default 0.03).
    pub pad_s: f64,
}

impl Default for SpeechRule {
    fn default() -> Self {
        Self {
            threshold: 0.5,
            neg_threshold: 0.35,
            min_speech_s: 0.25,
            min_silence_s: 0.1,
            pad_s: 0.03,
        }
    }
}

impl SpeechRule {
    /// Speech stretches `(start, end)` in seconds of the frame probabilities of an input
    /// `duration_s` long.
    pub fn regions(&self, probs: &[f32], duration_s: f64) -> Vec<(f64, f64)> {
        let step = VAD_FRAME_SECONDS;
        let mut raw: Vec<(f64, f64)> = Vec::new();
        let mut start: Option<f64> = None;
        let mut silence_from: Option<f64> = None;
        for (i, &p) in probs.iter().enumerate() {
            let t = i as f64 * step;
            if p >= self.threshold {
                silence_from = None;
                if start.is_none() {
                    start = Some(t);
                }
            } else if let Some(s) = start {
                if p < self.neg_threshold {
                    let from = *silence_from.get_or_insert(t);
                    if t + step - from >= self.min_silence_s {
                        raw.push((s, from));
                        start = None;
                        silence_from = None;
                    }
                }
            }
        }
        if let Some(s) = start {
            raw.push((s, (probs.len() as f64 * step).min(duration_s)));
        }
        raw.retain(|(s, e)| e - s >= self.min_speech_s);
        let mut out = raw.clone();
        for i in 0..out.len() {
            let lo = if i == 0 { 0.0 } else { raw[i - 1].1 };
            let hi = raw.get(i + 1).map_or(duration_s, |r| r.0);
            out[i].0 = (raw[i].0 - self.pad_s).max(lo.max(0.0));
            out[i].1 = (raw[i].1 + self.pad_s).min(hi);
            if i > 0 && out[i].0 < out[i - 1].1 {
                let mid = (out[i - 1].1 + out[i].0) / 2.0;
                out[i - 1].1 = mid;
                out[i].0 = mid;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The probabilities of tract's run of the ONNX graph, frame groups as [`SileroVad`] makes
    /// them.
    fn in_tract(pcm: &[f32]) -> Vec<f32> {
        let plans = tract_plans().expect("tract plans the graph");
        let (mut h, mut c) = (vec![0.0f32; HIDDEN], vec![0.0f32; HIDDEN]);
        let mut context = [0.0f32; CONTEXT];
        let mut out = Vec::new();
        let frames: Vec<&[f32]> = pcm.chunks_exact(VAD_FRAME_SAMPLES).collect();
        let mut at = 0;
        while at < frames.len() {
            let (k, &n) = BLOCKS
                .iter()
                .enumerate()
                .find(|(_, &n)| n <= frames.len() - at)
                .unwrap();
            let mut input = Vec::new();
            for frame in &frames[at..at + n] {
                input.extend_from_slice(&context);
                input.extend_from_slice(frame);
                context.copy_from_slice(&frame[VAD_FRAME_SAMPLES - CONTEXT..]);
            }
            let o = crate::net::run(
                &plans[k],
                vec![
                    (&[n, CONTEXT + VAD_FRAME_SAMPLES], &input),
                    (&[1, 1, HIDDEN], &h),
                    (&[1, 1, HIDDEN], &c),
                ],
            )
            .unwrap();
            out.extend_from_slice(&o[0]);
            h = o[1].clone();
            c = o[2].clone();
            at += n;
        }
        out
    }

    #[test]
    fn the_network_computed_here_is_tracts_run_of_the_onnx_graph() {
        let call = crate::test_common::read_wav(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/real/sample.wav"
        ));
        let n = 512 * 301;
        let mut state = 7u32;
        let noise: Vec<f32> = (0..n)
            .map(|_| {
                state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (state >> 8) as f32 / (1u32 << 24) as f32 - 0.5
            })
            .collect();
        let square: Vec<f32> = (0..n)
            .map(|i| if (i / 37) % 2 == 0 { 1.0 } else { -1.0 })
            .collect();
        for (name, pcm) in [
            ("call", &call[..n]),
            ("noise", &noise[..]),
            ("square", &square[..]),
            ("silence", &vec![0.0; n][..]),
        ] {
            let ours = speech_probabilities(pcm).unwrap();
            let theirs = in_tract(pcm);
            assert_eq!(ours.len(), theirs.len());
            let worst = ours
                .iter()
                .zip(&theirs)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0f32, f32::max);
            assert!(worst < 1e-3, "{name}: largest difference {worst}");
        }
    }
}
