//! Raw PCM sessions: s16le mono samples cut at any byte, resampled to 16 kHz as they arrive.

use super::audio::RawPipeline;
use super::{ChunkReport, LiveProblem, LiveReader, PcmRate};

/// Raw PCM is converted in pieces of this many samples, so a large frame needs no large copy.
const RAW_PIECE: usize = 64 * 1024;

/// Raw PCM state: the resampler and a byte left over from an odd-length frame.
pub(super) struct RawState {
    pipeline: RawPipeline,
    carry: Option<u8>,
}

impl RawState {
    /// Flushes the resampler's tail into `out`.
    pub(super) fn finish(self, out: &mut Vec<f32>) -> Result<(), crate::MediaError> {
        self.pipeline.finish(out)
    }
}

impl LiveReader {
    pub(super) fn push_raw(&mut self, frame: &[u8], rate: PcmRate, r: &mut ChunkReport) {
        if self.raw.is_none() {
            match RawPipeline::new(rate.hz()) {
                Ok(pipeline) => {
                    self.raw = Some(RawState {
                        pipeline,
                        carry: None,
                    })
                }
                Err(e) => return r.problem(r.segment, LiveProblem::from_media(&e)),
            }
        }
        let Some(raw) = self.raw.as_mut() else { return };
        let mut bytes = frame;
        let mut piece: Vec<f32> = Vec::with_capacity(RAW_PIECE.min(frame.len() / 2 + 1));
        if let (Some(low), Some((&high, rest))) = (raw.carry, bytes.split_first()) {
            piece.push(f32::from(i16::from_le_bytes([low, high])) / 32_768.0);
            raw.carry = None;
            bytes = rest;
        }
        let before = self.samples.len();
        let mut converted = 0usize;
        let mut failed = None;
        let mut pairs = bytes.chunks_exact(2);
        loop {
            let room = RAW_PIECE.saturating_sub(piece.len());
            piece.extend(
                pairs
                    .by_ref()
                    .take(room)
                    .map(|p| f32::from(i16::from_le_bytes([p[0], p[1]])) / 32_768.0),
            );
            if piece.is_empty() {
                break;
            }
            converted += piece.len();
            if let Err(e) = raw.pipeline.push(&piece, &mut self.samples) {
                failed = Some(e);
                break;
            }
            piece.clear();
        }
        if let [odd] = pairs.remainder() {
            raw.carry = Some(*odd);
        }
        self.samples_total += (self.samples.len() - before) as u64;
        if let Some(e) = failed {
            r.problem(r.segment, LiveProblem::from_media(&e));
        }
        // Every whole sample is a decodable unit, whether or not the resampler let it out yet.
        if converted > 0 {
            self.unit();
        }
    }
}
