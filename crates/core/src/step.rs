//! The one window-analysis step of files and streams: a window's span, its
//! feature summary and its visual measures in, its [`WindowResult`] out.
//!
//! Uploads ([`crate::pipeline`]) and stream sessions ([`crate::live`]) differ
//! only in how they get there (whole-file extraction, or the incremental
//! extractor with a windower that waits until every feature a window reads is
//! final) and in the form the result is reported in
//! ([`WindowResult::upload_window`], [`WindowResult::stream_window`]).

use crate::analysis::{
    AudioMeasures, SpeakerMeasures, TurnMeasures, VideoMeasures, WindowAnalyzer, WindowFeatures,
    WindowResult,
};
use crate::features::{self, SpanFeatures};
use crate::window::WindowSpan;

/// Analyzes one window: the analyzer reads the window's audio measures (from
/// `summary`; `audio_absent` when the media has no audio track) and its visual
/// measures (`None` for the audio-only model or media without a picture).
/// The result lies where `span` does, whatever the analyzer answered.
pub fn analyze_window(
    analyzer: &mut dyn WindowAnalyzer,
    span: &WindowSpan,
    summary: &SpanFeatures,
    audio_absent: bool,
    video: Option<VideoMeasures>,
) -> WindowResult {
    analyze_window_with_words(analyzer, span, summary, audio_absent, video, Vec::new())
}

/// [`analyze_window`] with what was said in the window (the transcript's utterances whose
/// middle falls in it), for the lexical cues.
pub fn analyze_window_with_words(
    analyzer: &mut dyn WindowAnalyzer,
    span: &WindowSpan,
    summary: &SpanFeatures,
    audio_absent: bool,
    video: Option<VideoMeasures>,
    words: Vec<crate::transcript::Utterance>,
) -> WindowResult {
    let window = WindowFeatures {
        start: span.start,
        end: span.end,
        audio: AudioMeasures {
            absent: audio_absent,
            ..audio_measures(summary)
        },
        video,
        words,
    };
    let mut result = analyzer.analyze(&window);
    result.start = span.start;
    result.end = span.end;
    result
}

/// The analyzer's audio measurements from a span summary.
pub fn audio_measures(s: &SpanFeatures) -> AudioMeasures {
    let f = |x: Option<f32>| x.map(f64::from).filter(|v| v.is_finite());
    let share_total: f32 = s.talk_share.iter().sum();
    let dominant_share = (s.voice_count >= 2 && share_total > 0.0)
        .then(|| f64::from(s.talk_share.iter().copied().fold(0.0f32, f32::max) / share_total));
    AudioMeasures {
        absent: false,
        speech_seconds: s.speech_s,
        pause_count: s.pause_count,
        pause_seconds: f64::from(s.pause_total_s).max(0.0),
        pause_max: f(s.pause_max_s).unwrap_or(0.0),
        filled_pause_count: s.filled_pause_count,
        filled_pause_seconds: f(Some(s.filled_pause_s)).unwrap_or(0.0),
        speech_rate: f(s.articulation_rate_syl_per_s),
        // Pitch is judged against one speaker's baseline; with two voices in
        // the window the pooled mean and range describe neither speaker, so
        // they are not reported (per-voice pitch is a later refinement).
        f0_mean: f(s.f0_mean_semitones).filter(|_| s.voice_count < 2),
        f0_range: f(s.f0_range_semitones).filter(|_| s.voice_count < 2),
        f0_sd: f(s.f0_sd_semitones).filter(|_| s.voice_count < 2),
        loudness_mean: f(s.intensity_mean_db),
        loudness_range: f(s.intensity_range_db),
        noise_floor: f(s.noise_floor_db),
        jitter: f(s.jitter_local).map(|j| j * 100.0),
        shimmer_db: f(s.shimmer_local_db),
        hnr: f(s.hnr_db),
        alpha_ratio: f(s.alpha_ratio_db),
        alpha_band: f(s.alpha_band_db),
        hammarberg: f(s.hammarberg_db),
        slope_0_500: f(s.slope_0_500),
        slope_500_1500: f(s.slope_500_1500),
        tilt_500_1500: f(s.tilt_500_1500),
        rising_terminals: s.rising_terminals,
        falling_terminals: s.falling_terminals,
        terminal_rise_max: s
            .terminals
            .iter()
            .filter(|t| t.direction == features::Direction::Rising)
            .map(|t| f64::from(t.slope_st_per_s))
            .filter(|v| v.is_finite())
            .reduce(f64::max),
        speakers: u32::from(s.voice_count),
        speaker: (s.voice_count == 1)
            .then(|| s.talk_share.iter().position(|&share| share > 0.0))
            .flatten()
            .map(|id| id as u32),
        turns: s.speaker_changes,
        dominant_share,
        overlaps: s.overlap_count,
        response_latency: f(s.gap_mean_s),
        backchannels: s.backchannel_count,
        turn_list: s
            .turns
            .iter()
            .map(|t| TurnMeasures {
                speaker: u32::from(t.speaker),
                start: t.start_s,
                end: t.end_s,
                gap_before: t.gap_before_s.filter(|g| g.is_finite()),
                backchannel: t.backchannel,
            })
            .collect(),
        per_speaker: s
            .per_speaker
            .iter()
            .map(|p| SpeakerMeasures {
                speaker: u32::from(p.speaker),
                speech_seconds: p.speech_s,
                talk_share: f64::from(p.talk_share),
                f0_mean: f(p.f0_mean_semitones),
                f0_range: f(p.f0_range_semitones),
                loudness_mean: f(p.intensity_mean_db),
                speech_rate: f(p.articulation_rate_syl_per_s),
                loudness_range: f(p.intensity_range_db),
                hnr: f(p.hnr_db),
                alpha_ratio: f(p.alpha_ratio_db),
                alpha_band: f(p.alpha_band_db),
                slope_0_500: f(p.slope_0_500),
                slope_500_1500: f(p.slope_500_1500),
                tilt_500_1500: f(p.tilt_500_1500),
                turns: p.turns,
                backchannels: p.backchannels,
            })
            .collect(),
    }
}
