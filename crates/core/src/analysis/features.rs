//! The measurements one analysis window hands to a [`super::WindowAnalyzer`]:
//! a flat, model-agnostic record, so a rule set and a learned model read the
//! same input.
//!
//! Every measurement is optional: `None` means "not measurable in this
//! window" (no voiced speech for pitch, no second speaker for latency, no
//! decodable video for motion), never zero.

use crate::wire::Seconds;

/// Audio measurements over one window. Units are in the field docs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AudioMeasures {
    /// The media has no audio track at all (a v1 upload of a silent
    /// video): the other fields are empty and no audio cue is read, so a
    /// missing track does not pass for a silent speaker.
    pub absent: bool,
    /// Seconds of speech (voice activity) in the window.
    pub speech_seconds: Seconds,
    /// Silent pauses inside speech of at least 0.25 s (count).
    pub pause_count: u32,
    /// Total seconds of those pauses.
    pub pause_seconds: Seconds,
    /// Longest pause, seconds.
    pub pause_max: Seconds,
    /// Filled pauses ("uh", "um": voiced stretches of 0.2-1 s with a level
    /// pitch and a steady spectrum) starting in the window (count).
    pub filled_pause_count: u32,
    /// Total seconds of those filled pauses.
    pub filled_pause_seconds: Seconds,
    /// Syllable nuclei per second of speech (articulation rate).
    pub speech_rate: Option<f64>,
    /// Mean F0 of voiced frames, semitones re 27.5 Hz.
    pub f0_mean: Option<f64>,
    /// F0 range (5th to 95th percentile of voiced frames), semitones.
    pub f0_range: Option<f64>,
    /// Standard deviation of the F0 of voiced frames, semitones.
    pub f0_sd: Option<f64>,
    /// Mean loudness of speech frames, dB (relative; only differences matter).
    pub loudness_mean: Option<f64>,
    /// Loudness dynamics: the 5th to 95th percentile range of the voiced
    /// speech frames' levels, dB (a difference, so independent of the gain).
    pub loudness_range: Option<f64>,
    /// Background level on the same scale as `loudness_mean` (median level
    /// of the frames that are not speech); `loudness_mean - noise_floor` is
    /// the window's signal-to-noise ratio.
    pub noise_floor: Option<f64>,
    /// Jitter (local), percent.
    pub jitter: Option<f64>,
    /// Shimmer (local), dB.
    pub shimmer_db: Option<f64>,
    /// Harmonics-to-noise ratio, dB.
    pub hnr: Option<f64>,
    /// Alpha ratio (energy 50-1000 Hz over 1-5 kHz), dB.
    pub alpha_ratio: Option<f64>,
    /// Alpha ratio inside the telephone band (energy 1-3 kHz over 400-1000 Hz), dB: what
    /// vocal arousal reads.
    pub alpha_band: Option<f64>,
    /// Hammarberg index (strongest peak 0-2 kHz over strongest 2-5 kHz), dB.
    pub hammarberg: Option<f64>,
    /// Spectral slope 0-500 Hz of voiced frames' log spectrum, dB/Hz
    /// (eGeMAPS' `slope0-500`).
    pub slope_0_500: Option<f64>,
    /// Spectral slope 500-1500 Hz of voiced frames (eGeMAPS' `slope500-1500`).
    pub slope_500_1500: Option<f64>,
    /// Level-free spectral tilt 500-1500 Hz (least-squares slope of the log
    /// spectrum) of the same frames, dB/Hz: what vocal arousal reads.
    pub tilt_500_1500: Option<f64>,
    /// Phrases whose terminal F0 rose.
    pub rising_terminals: u32,
    /// Phrases whose terminal F0 fell.
    pub falling_terminals: u32,
    /// Steepest terminal rise, semitones per second.
    pub terminal_rise_max: Option<f64>,
    /// Number of distinct speakers heard (0 up to 4, told apart by voice
    /// timbre and pitch register: `features::speakers`).
    pub speakers: u32,
    /// The speaker the window's voice measurements (pitch, loudness, voice
    /// quality, rate) describe: `Some(id)` when one identified voice spoke,
    /// `None` when several did (pooled measures describe nobody) or none was
    /// identified. Baselines are kept per id.
    pub speaker: Option<u32>,
    /// Speaker changes in the window.
    pub turns: u32,
    /// Share of speech by the speaker who talked most, 0..=1.
    pub dominant_share: Option<f64>,
    /// Speaker changes with no silence between the voices (overlaps and
    /// interruptions).
    pub overlaps: u32,
    /// Mean silence between a turn's end and the next speaker's start, seconds.
    pub response_latency: Option<f64>,
    /// Backchannels ("yeah", "mm-hm") starting in the window: turns of at
    /// most 1 s with at most 2 syllable nuclei and an F0 range of at most
    /// 5 st, by a listener at most 1 s after another speaker's turn
    /// (`features::Turn::backchannel`).
    pub backchannels: u32,
    /// The speaker turns that started in the window, in order: what `turns`,
    /// `overlaps`, `response_latency` and `backchannels` count, one by one.
    pub turn_list: Vec<TurnMeasures>,
    /// Per speaker heard in the window, by speaker id; ids are stable over a
    /// file or a stream (the same voice keeps its id from window to
    /// window), so baselines can be kept per speaker. Empty without speech.
    pub per_speaker: Vec<SpeakerMeasures>,
}

/// One speaker's measurements over one window: what a per-speaker baseline
/// reads. Over the frames of the speaker's own speech units (voiced speech
/// attributed to them), so another voice in the window does not mix in.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SpeakerMeasures {
    /// Speaker id, stable over the file or stream (0 is the first voice
    /// heard in a file).
    pub speaker: u32,
    /// Seconds of the speaker's speech units in the window.
    pub speech_seconds: Seconds,
    /// The speaker's share of all speakers' speech in the window, 0..=1.
    pub talk_share: f64,
    /// Mean F0 of the speaker's voiced frames, semitones re 27.5 Hz.
    pub f0_mean: Option<f64>,
    /// F0 range (5th to 95th percentile) of those frames, semitones.
    pub f0_range: Option<f64>,
    /// Mean loudness of the speaker's frames, dB (relative, as
    /// [`AudioMeasures::loudness_mean`]).
    pub loudness_mean: Option<f64>,
    /// Syllable nuclei per second of the speaker's speech (articulation rate).
    pub speech_rate: Option<f64>,
    /// Loudness dynamics of the speaker's voiced frames (5th-95th percentile), dB.
    pub loudness_range: Option<f64>,
    /// Harmonics-to-noise ratio of the speaker's frames, dB.
    pub hnr: Option<f64>,
    /// Alpha ratio of the speaker's voiced frames, dB.
    pub alpha_ratio: Option<f64>,
    /// Alpha ratio within the telephone band of the same frames, dB.
    pub alpha_band: Option<f64>,
    /// Spectral slope 0-500 Hz of the speaker's voiced frames, dB/Hz.
    pub slope_0_500: Option<f64>,
    /// Spectral slope 500-1500 Hz of the speaker's voiced frames, dB/Hz.
    pub slope_500_1500: Option<f64>,
    /// Level-free spectral tilt 500-1500 Hz (least-squares slope of the log
    /// spectrum) of the same frames, dB/Hz: what vocal arousal reads.
    pub tilt_500_1500: Option<f64>,
    /// Turns by the speaker starting in the window.
    pub turns: u32,
    /// Of those, backchannels.
    pub backchannels: u32,
}

/// One speaker turn (a run of one voice's speech units) that started in the
/// window.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnMeasures {
    /// Speaker id (as [`SpeakerMeasures::speaker`]).
    pub speaker: u32,
    /// Start, seconds (may be before the window for the first turn only if
    /// its speech began there).
    pub start: Seconds,
    /// End, seconds (may lie after the window).
    pub end: Seconds,
    /// Silence since the previous speaker's turn ended, seconds (0 for a
    /// change without silence); `None` for the first turn heard.
    pub gap_before: Option<f64>,
    /// A backchannel ("yeah", "mm-hm"): short, low-content, by a listener.
    pub backchannel: bool,
}

/// Visual measurements over one window.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VideoMeasures {
    /// Share of the window with decodable video, 0..=1.
    pub coverage: f64,
    /// Mean motion energy: with decoded pixels, the mean absolute luma
    /// difference between consecutive frames (0-255 scale); without pixels,
    /// the encoded size of non-key frames relative to the stream's running
    /// median (1 = the stream's usual motion). Either way it is judged
    /// against the session's own baseline.
    pub motion: Option<f64>,
    /// Share of frames with almost no motion, 0..=1.
    pub stillness: Option<f64>,
    /// Strength of periodic vertical head-region motion (nods), 0..=1.
    pub nod: Option<f64>,
    /// Strength of periodic horizontal head-region motion (shakes), 0..=1.
    pub shake: Option<f64>,
    /// The faces read from the window's pictures; `None` when the video has no pixels here
    /// (a codec without a pixel decoder), so only the whole-frame measures above exist.
    pub faces: Option<FaceMeasures>,
}

/// The faces of one window, from the pictures sampled for them (`visual::faces::FACE_FPS`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FaceMeasures {
    /// Pictures sampled for faces in the window (black pictures are not counted: they count
    /// as no video at all).
    pub pictures: u32,
    /// Of those, pictures identical to the one before (a frozen picture or a still image): not
    /// read for faces, since a repeated picture shows no behaviour.
    pub frozen: u32,
    /// Live (not frozen) pictures in which no face was found.
    pub faceless: u32,
    /// Whether a face had been seen in this video before or during the window, so a faceless
    /// picture means the person left rather than a camera that never showed anyone.
    pub seen_before: bool,
    /// Each face seen in the window, in order of first appearance in the video.
    pub faces: Vec<FaceWindow>,
}

impl FaceMeasures {
    /// Pictures not frozen.
    pub fn live(&self) -> u32 {
        self.pictures.saturating_sub(self.frozen)
    }
}

/// One face over one window.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FaceWindow {
    /// The face's id in the video (0 is the first face seen); a rationale names it `face id+1`.
    pub id: u32,
    /// Mean horizontal position of the face's centre, 0 (left edge) to 1 (right edge).
    pub x: f64,
    /// The face in each live picture it was found in, in time order.
    pub samples: Vec<FaceSample>,
    /// Nod movements, each with its nods that fall in the window (a movement over several
    /// windows is in each, with the nods and times of that window).
    pub nods: Vec<GestureMeasure>,
    /// Head-shake movements, each with its shakes that fall in the window.
    pub shakes: Vec<GestureMeasure>,
}

/// One face in one picture (degrees, and ratios to the inter-ocular distance).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FaceSample {
    /// Picture time, seconds.
    pub t: Seconds,
    /// Head turn, degrees.
    pub yaw: f64,
    /// Head tilt, degrees (positive up).
    pub pitch: f64,
    /// Angle between the face's direction and the camera axis, degrees.
    pub away: f64,
    /// Mouth-corner lift (NaN when not measurable).
    pub smile: f64,
    /// Brow height (NaN when not measurable).
    pub brow: f64,
    /// Eye aspect ratio (NaN when not measurable).
    pub ear: f64,
}

/// One movement of nods or head shakes.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GestureMeasure {
    /// When the movement began, seconds.
    pub start: Seconds,
    /// When it ended, seconds.
    pub end: Seconds,
    /// Nods or shakes in it.
    pub count: u32,
    /// Largest swing of the head, degrees.
    pub amplitude: f64,
}

/// Everything measured in one window.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WindowFeatures {
    /// Window start, seconds.
    pub start: Seconds,
    /// Window end, seconds.
    pub end: Seconds,
    /// Audio measurements.
    pub audio: AudioMeasures,
    /// Video measurements; `None` for audio-only media.
    pub video: Option<VideoMeasures>,
    /// What was said in the window: the transcript's utterances whose middle falls in it
    /// (empty without a transcript, or when the language is not English).
    pub words: Vec<crate::transcript::Utterance>,
}

impl WindowFeatures {
    /// Window length in seconds (0 for a malformed window).
    pub fn duration(&self) -> Seconds {
        let d = self.end - self.start;
        if d.is_finite() && d > 0.0 {
            d
        } else {
            0.0
        }
    }

    /// Share of the window that is speech, 0..=1.
    pub fn speech_ratio(&self) -> f64 {
        let d = self.duration();
        if d > 0.0 {
            (self.audio.speech_seconds / d).clamp(0.0, 1.0)
        } else {
            0.0
        }
    }
}
