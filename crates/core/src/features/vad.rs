//! Voice activity from Silero VAD v6 (in-process, `attune-voice`), on the 10 ms frame grid.
//!
//! Silero scores consecutive 512-sample (32 ms) blocks at 16 kHz with a probability of speech
//! in 0..1, its LSTM state carried from block to block. A frame takes the score of the block
//! that contains its centre. Silero is trained to answer for speech, not for any voice or
//! noise: music, noise and far background talk score low, where the energy of a frame would
//! call them active.

use attune_voice::SileroVad;

/// Samples per Silero block.
pub(crate) const BLOCK: usize = attune_voice::VAD_FRAME_SAMPLES;
/// Probability at or above which a frame counts as speech (Silero's default threshold).
pub const VAD_THRESHOLD: f32 = 0.5;

/// Streaming wrapper: blocks are scored strictly in order. If the network cannot be loaded
/// or run (a broken build, never the audio), every block scores 0: the analysis then hears no
/// speech rather than failing.
pub(crate) struct Vad {
    detector: Option<SileroVad>,
    scores: Vec<f32>,
    /// Absolute index of the block `scores[0]` belongs to.
    first_block: u64,
    /// Blocks handed to the detector so far (it scores them a group at a time).
    pushed: u64,
    /// Keep every score (a whole file's, for its diarization) instead of dropping those the
    /// frames no longer read.
    keep_all: bool,
}

impl Vad {
    pub fn new() -> Self {
        Self {
            detector: SileroVad::new().ok(),
            scores: Vec::new(),
            first_block: 0,
            pushed: 0,
            keep_all: false,
        }
    }

    /// Keeps every block's score from here on ([`Vad::all_scores`]).
    pub fn keep_all(&mut self) {
        self.keep_all = true;
    }

    /// Every block's score from the first, when they were all kept and the network never
    /// failed.
    pub fn all_scores(&self) -> Option<&[f32]> {
        (self.keep_all && self.first_block == 0 && self.detector.is_some()).then_some(&self.scores)
    }

    /// Blocks handed over so far (absolute count).
    pub fn blocks_pushed(&self) -> u64 {
        self.pushed
    }

    /// Blocks scored so far (absolute count): Silero scores a group of blocks at a time, so
    /// this trails [`blocks_pushed`](Self::blocks_pushed) by less than a group until
    /// [`finish`](Self::finish).
    pub fn blocks_scored(&self) -> u64 {
        self.first_block + self.scores.len() as u64
    }

    /// Hands over the next whole blocks; `samples` must be a whole number of blocks, already
    /// sanitised to finite values in -1..1.
    pub fn push_blocks(&mut self, samples: &[f32]) {
        let n = samples.len() / BLOCK;
        self.pushed += n as u64;
        let ok = match &mut self.detector {
            Some(d) => d.push(&samples[..n * BLOCK], &mut self.scores).is_ok(),
            None => false,
        };
        if !ok {
            self.fail();
        }
    }

    /// Scores the blocks still waiting (end of input).
    pub fn finish(&mut self) {
        let ok = match &mut self.detector {
            Some(d) => d.finish(&mut self.scores).is_ok(),
            None => false,
        };
        if !ok {
            self.fail();
        }
    }

    /// The network failed: every block handed over scores 0 from here on.
    fn fail(&mut self) {
        self.detector = None;
        let missing = self.pushed.saturating_sub(self.blocks_scored());
        self.scores
            .extend(std::iter::repeat_n(0.0, missing as usize));
    }

    /// Score of absolute block `b` (0 if it was already dropped or never scored).
    pub fn score(&self, b: u64) -> f32 {
        b.checked_sub(self.first_block)
            .and_then(|i| self.scores.get(i as usize))
            .copied()
            .unwrap_or(0.0)
    }

    /// The scores of absolute blocks `from..` held (empty where none are).
    pub fn scores_from(&self, from: u64) -> &[f32] {
        let i = (from.saturating_sub(self.first_block) as usize).min(self.scores.len());
        &self.scores[i..]
    }

    /// Forgets scores of blocks before `b`.
    pub fn drop_before(&mut self, b: u64) {
        if b > self.first_block && !self.keep_all {
            let n = ((b - self.first_block) as usize).min(self.scores.len());
            self.scores.drain(..n);
            self.first_block += n as u64;
        }
    }
}
