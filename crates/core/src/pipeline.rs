//! The library entry points: a file or byte buffer in, the v2 job result or
//! the v1 result out, with no server involved. The server's jobs call exactly
//! these functions.
//!
//! Steps: probe the container by content and check it against the model's
//! rules (`attune-media`), decode the audio to 16 kHz mono, extract frame
//! features ([`crate::features`]), cut the media into 5 s windows
//! ([`WindowPlan::UPLOAD`]), and run the one window step of files and streams
//! ([`crate::step::analyze_window`]: the window's summary to the model's
//! analyzer); each window's result, in its upload form, then becomes the job
//! result ([`crate::upload`]). [`analyze_bytes_with_progress`] reports these
//! steps as they finish, for a progress bar on long files.

use crate::analysis::params::ModelParams;
use crate::analysis::RuleAnalyzer;
use crate::error::{ErrorCode, ServiceError};
use crate::features::{self, Span};
use crate::step::analyze_window_with_words;
pub use crate::step::audio_measures;
use crate::upload::{job_result, v1_parts, Sections, V1Parts};
use crate::visual::VisualTrack;
use crate::window::WindowPlan;
use crate::wire::{Model, Seconds, UploadJobResult, UploadJobWindow};
use attune_media::{MediaError, MediaRequirements, ProbeInfo};

/// Turns a media error into the interface's error with its code.
pub fn media_error(error: &MediaError) -> ServiceError {
    ServiceError::from(error)
}

/// Options of one analysis.
///
/// The rules differ by route, not only by model: the v2 upload route (and
/// [`AnalysisOptions::new`]) refuses `inter-2` media without an audio track
/// (`ih5008`) and media over the deployment's maximum duration (`ih4004`);
/// the v1 route ([`AnalysisOptions::v1_upload`]) reads such a video from its
/// picture alone and has its own, fixed maximum.
#[derive(Debug, Clone, PartialEq)]
pub struct AnalysisOptions {
    /// The model.
    pub model: Model,
    /// Longest accepted media, seconds (`ih4004` beyond; 1800 by default).
    pub max_duration: Seconds,
    /// Whether media with a video track and no audio track is analyzed from
    /// its picture alone instead of refused with `ih5008`.
    pub audio_optional: bool,
    /// How speech is attributed to speakers: whole-file for uploads; online to read a file as
    /// a live session would hear it (`attune analyze --as-stream`).
    pub diarization: Diarization,
    /// Whether the speech is transcribed (when the process has a transcriber: see
    /// [`crate::transcript::shared`]): the words become lexical evidence and
    /// [`FileAnalysis::transcript`]. On by default.
    pub transcribe: bool,
    /// Whether the words are recognized on a thread of their own beside the feature extraction
    /// and speaker turns: the same CPU and less waiting, but the analysis holds a second core
    /// while the features are extracted (about a fifth of the words' time). On by default; off
    /// where one analysis must hold one core (the server's upload lane).
    pub words_beside: bool,
}

impl AnalysisOptions {
    /// The longest media the v1 upload route analyzes, seconds: an hour, the
    /// interface's longest stream session. A fixed bound on the decoded audio
    /// held in memory (about 230 MB at 16 kHz), independent of the v2
    /// route's deployment-set maximum.
    pub const V1_MAX_DURATION: Seconds = 3600.0;

    /// Options for `model` with the default 30-minute maximum, as the v2
    /// upload route applies them.
    pub fn new(model: Model) -> Self {
        AnalysisOptions {
            model,
            max_duration: MediaRequirements::DEFAULT_MAX_DURATION,
            audio_optional: false,
            diarization: Diarization::WholeFile,
            transcribe: true,
            words_beside: true,
        }
    }

    /// Options of the v1 upload route: `inter-2`, a video read from its
    /// picture when it has no audio track, at most
    /// [`AnalysisOptions::V1_MAX_DURATION`].
    pub fn v1_upload() -> Self {
        AnalysisOptions {
            model: Model::Inter2,
            max_duration: Self::V1_MAX_DURATION,
            audio_optional: true,
            diarization: Diarization::WholeFile,
            transcribe: true,
            words_beside: true,
        }
    }

    fn requirements(&self) -> MediaRequirements {
        let base = match self.model {
            Model::Inter2Audio => MediaRequirements::for_inter2_audio(),
            Model::Inter2 | Model::Inter2Deep => MediaRequirements::for_inter2(),
        };
        let mut requirements = base.with_max_duration(self.max_duration);
        // Only a video can stand without audio: the audio model has nothing else to read.
        if self.audio_optional && requirements.needs_video {
            requirements.needs_audio = false;
        }
        requirements
    }

    /// How much audio is decoded at most: the maximum duration and a margin
    /// for containers whose tracks run past their stated duration.
    fn decode_limit(&self) -> Seconds {
        (self.max_duration + 60.0).max(attune_media::MAX_DECODE_SECONDS)
    }
}

/// Checks `bytes` against the model's media rules without decoding them:
/// the validation an upload gets at submit. Errors carry the interface's
/// codes (`ih4002`, `ih4004`, `ih4007`, `ih5001`, `ih5002`, `ih5003`,
/// `ih5008`); `inter-2-deep` answers `ih4020`.
pub fn validate(bytes: &[u8], options: &AnalysisOptions) -> Result<ProbeInfo, ServiceError> {
    let file = open_validated(bytes, options)?;
    validate_file(&file, options)
}

/// Refuses a reserved model (`ih4020`), then parses `bytes`' container.
fn open_validated<'a>(
    bytes: &'a [u8],
    options: &AnalysisOptions,
) -> Result<attune_media::MediaFile<'a>, ServiceError> {
    if options.model.is_reserved() {
        return Err(ServiceError::with_message(
            ErrorCode::Ih4020,
            format!(
                "model {} is not available on this route; available models: inter-2, inter-2-audio",
                options.model
            ),
        ));
    }
    attune_media::MediaFile::open(bytes).map_err(|e| media_error(&e))
}

/// [`validate`] of a file already opened; the model was checked.
fn validate_file(
    file: &attune_media::MediaFile<'_>,
    options: &AnalysisOptions,
) -> Result<ProbeInfo, ServiceError> {
    let info = file.info().map_err(|e| media_error(&e))?;
    attune_media::check(&info, &options.requirements()).map_err(|e| media_error(&e))?;
    Ok(info)
}

/// A whole file's analysis: its windows in file order.
#[derive(Debug, Clone, PartialEq)]
pub struct FileAnalysis {
    /// The model that analyzed it.
    pub model: Model,
    /// Length of the analyzed media, seconds.
    pub duration: Seconds,
    /// Length of each window, seconds.
    pub window_seconds: Seconds,
    /// Per-window results.
    pub windows: Vec<UploadJobWindow>,
    /// Version of the parameter set used.
    pub params_version: &'static str,
    /// The speaker turns the analysis read, in order: the same turns its
    /// turn-taking cues come from (empty when the file has no audio). Not
    /// part of the wire result (the interface has no field for them); the
    /// HTML report draws them.
    pub speaker_turns: Vec<features::Turn>,
    /// Who speaks when, as the voice networks hear it: each speaker's turns, overlapped
    /// speech given to both, pauses under 0.5 s inside a turn bridged (what `attune analyze
    /// --rttm` writes). Speaker numbers are those of [`FileAnalysis::speaker_turns`].
    pub voice_turns: Vec<features::SpeakerTurn>,
    /// What was said, with the voice of each utterance from [`FileAnalysis::voice_turns`]
    /// (empty when not transcribed). Uploads transcribe the whole file at once; `--as-stream`
    /// gives what a live session's transcriber finalized.
    pub transcript: Vec<crate::transcript::Utterance>,
    /// The language the speech was identified as before it was transcribed (`None` when it was
    /// not: no transcriber, or none that identifies languages). Speech identified as another
    /// language than English is not transcribed ([`crate::transcript::SpokenLanguage`]).
    pub language: Option<crate::transcript::SpokenLanguage>,
}

impl FileAnalysis {
    /// The v2 job `result` with the requested sections.
    pub fn job_result(&self, sections: Sections) -> UploadJobResult {
        job_result(
            self.windows.clone(),
            self.duration,
            self.window_seconds,
            sections,
        )
    }

    /// The v1 result's signals, engagement spans and CQI block.
    pub fn v1_parts(&self, sections: Sections) -> V1Parts {
        v1_parts(&self.windows, self.duration, sections)
    }
}

/// How far a file analysis has come, as [`analyze_bytes_with_progress`]
/// reports it: each stage once, in this order, then one
/// [`Progress::Windows`] per analyzed window.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum Progress {
    /// The media passed the model's rules; `duration` seconds of it will be
    /// cut into `windows` windows. Decoding comes next.
    Validated {
        /// Length of the media, seconds.
        duration: Seconds,
        /// How many windows the analysis will have.
        windows: u64,
    },
    /// The audio (and, for `inter-2`, the picture) is decoded; frame feature
    /// extraction over the whole file comes next.
    Decoded,
    /// Frame features and the words are extracted; the windows come next.
    FeaturesExtracted,
    /// `done` of `total` windows are analyzed.
    Windows {
        /// Windows analyzed so far.
        done: u64,
        /// Windows in the file.
        total: u64,
    },
}

/// Analyzes a whole file held in memory.
pub fn analyze_bytes(
    bytes: &[u8],
    options: &AnalysisOptions,
) -> Result<FileAnalysis, ServiceError> {
    analyze_bytes_with_progress(bytes, options, &mut |_| {})
}

/// [`analyze_bytes`], telling `progress` how far it has come (for a progress
/// bar on long files). The result is the same as [`analyze_bytes`]'s.
pub fn analyze_bytes_with_progress(
    bytes: &[u8],
    options: &AnalysisOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<FileAnalysis, ServiceError> {
    // The file is parsed once: the probe facts, the audio and the pictures all read that parse.
    let file = open_validated(bytes, options)?;
    let info = validate_file(&file, options)?;
    progress(Progress::Validated {
        duration: info.duration,
        windows: WindowPlan::UPLOAD.window_count(info.duration),
    });
    // Validation let a track-less file through only when the options read the picture alone.
    let audio_absent = info.first_audio().is_none();
    let pcm = if audio_absent {
        attune_media::Pcm::default()
    } else {
        file.decode_audio(options.decode_limit())
            .map_err(|e| media_error(&e))?
    };
    if options.model == Model::Inter2Audio {
        reject_silence(&pcm.samples)?;
    }
    // The audio-only model never reads the picture, even when there is one.
    let video = match options.model {
        Model::Inter2Audio => None,
        Model::Inter2 | Model::Inter2Deep => {
            crate::visual::visual_track_of(&file).map_err(|e| media_error(&e))?
        }
    };
    progress(Progress::Decoded);
    let transcriber = if options.transcribe && !audio_absent {
        crate::transcript::shared()
    } else {
        None
    };
    Ok(analyze_media_with_progress(
        &pcm.samples,
        video.as_ref(),
        info.duration,
        options.model,
        audio_absent,
        options.diarization,
        transcriber,
        options.words_beside,
        progress,
    ))
}

/// Peak level, dBFS, under which a whole recording counts as silent: below the noise floor of
/// any real microphone and 16-bit converter (-96 dBFS is one least significant bit), so only a
/// muted or digitally blank track is refused.
pub const SILENT_PEAK_DBFS: f64 = -80.0;

/// `ih5007` for an audio track with no signal at all: the audio-only model has nothing to
/// analyze (a muted microphone, a blank export). `inter-2` still reads the picture of such a
/// file, so only `inter-2-audio` refuses it.
fn reject_silence(samples: &[f32]) -> Result<(), ServiceError> {
    let peak = samples
        .iter()
        .map(|s| f64::from(s.abs()))
        .filter(|s| s.is_finite())
        .fold(0.0f64, f64::max);
    let peak_dbfs = 20.0 * peak.max(1e-12).log10();
    if peak_dbfs < SILENT_PEAK_DBFS {
        return Err(ServiceError::with_message(
            ErrorCode::Ih5007,
            format!(
                "the audio track is silent (peak {:.0} dBFS): the inter-2-audio model has \
                 nothing to analyze",
                peak_dbfs.max(-200.0)
            ),
        ));
    }
    Ok(())
}

/// How a file analysis attributes speech to speakers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Diarization {
    /// Whole-file diarization (`attune_voice::diarize`): a file is held whole, so every
    /// voice is clustered with all of the file's. What uploads use.
    #[default]
    WholeFile,
    /// The online diarizer, as a live stream hears the same audio: speakers labelled a step
    /// at a time from what came before. For measuring a stream's reading on any file.
    Online,
}

/// Analyzes decoded audio: mono PCM at 16 kHz, `duration` seconds of media
/// (normally the container's duration; the PCM may be a few samples longer
/// or shorter). For services that decode audio themselves.
pub fn analyze_pcm(samples: &[f32], duration: Seconds, model: Model) -> FileAnalysis {
    analyze_media(samples, None, duration, model)
}

/// Analyzes decoded audio and, when the media has a picture, its visual
/// track (motion, stillness, nods and shakes per window).
pub fn analyze_media(
    samples: &[f32],
    video: Option<&VisualTrack>,
    duration: Seconds,
    model: Model,
) -> FileAnalysis {
    analyze_media_with(samples, video, duration, model, Diarization::WholeFile)
}

/// [`analyze_media`] with the speaker attribution chosen: `Online` gives
/// what a stream of the same audio reads.
pub fn analyze_media_with(
    samples: &[f32],
    video: Option<&VisualTrack>,
    duration: Seconds,
    model: Model,
    diarization: Diarization,
) -> FileAnalysis {
    analyze_media_with_transcriber(samples, video, duration, model, diarization, None)
}

/// [`analyze_media_with`], reading what was said too when `transcriber` is given (uploads
/// through [`analyze_bytes`] use the process's: [`crate::transcript::shared`]). Without one the
/// analysis reads no words, as a stream session does unless its server transcribes.
pub fn analyze_media_with_transcriber(
    samples: &[f32],
    video: Option<&VisualTrack>,
    duration: Seconds,
    model: Model,
    diarization: Diarization,
    transcriber: Option<&dyn crate::transcript::Transcriber>,
) -> FileAnalysis {
    analyze_media_with_progress(
        samples,
        video,
        duration,
        model,
        false,
        diarization,
        transcriber,
        true,
        &mut |_| {},
    )
}

/// The transcript of a file: whole (uploads), or as a live session's transcriber finalizes
/// it (`Online`), without voices yet ([`crate::transcript::assign_speakers`] gives them). A
/// failing transcriber gives no words (and the analysis goes on without them).
fn transcribe(
    transcriber: &dyn crate::transcript::Transcriber,
    samples: &[f32],
    diarization: Diarization,
) -> Words {
    let result = match diarization {
        Diarization::WholeFile => transcriber.transcribe_identified(samples),
        Diarization::Online => transcriber.stream().and_then(|mut stream| {
            let mut out = Vec::new();
            for chunk in samples.chunks(8192) {
                out.extend(stream.push(chunk)?);
            }
            out.extend(stream.finish()?);
            Ok((stream.language(), out))
        }),
    };
    result.unwrap_or_default()
}

/// A recording's language (when identified) and words.
type Words = (
    Option<crate::transcript::SpokenLanguage>,
    Vec<crate::transcript::Utterance>,
);

#[allow(clippy::too_many_arguments)]
fn analyze_media_with_progress(
    samples: &[f32],
    video: Option<&VisualTrack>,
    duration: Seconds,
    model: Model,
    audio_absent: bool,
    diarization: Diarization,
    transcriber: Option<&dyn crate::transcript::Transcriber>,
    words_beside: bool,
    progress: &mut dyn FnMut(Progress),
) -> FileAnalysis {
    let extract = || match diarization {
        Diarization::WholeFile => features::extract_with_turns(samples),
        Diarization::Online => {
            let mut extractor = features::FeatureExtractor::new();
            for chunk in samples.chunks(8192) {
                extractor.push(chunk);
            }
            extractor.finish();
            let turns = attune_voice::bridge_gaps(extractor.speaker_turns_heard(), 0.5);
            (extractor.into_features(), turns)
        }
    };
    // The words do not depend on the features: the recognizer (one thread,
    // `attune_voice::on_one_thread`) runs beside the extraction, and the voices are given to
    // its words once the turns are known. Same CPU, less waiting.
    let ((frames, voice_turns), (language, mut transcript)) = match transcriber {
        Some(t) if !audio_absent && words_beside => std::thread::scope(|scope| {
            let words = std::thread::Builder::new()
                .name("attune-words".to_owned())
                .spawn_scoped(scope, || transcribe(t, samples, diarization));
            let extracted = extract();
            let words = match words {
                Ok(handle) => handle.join().unwrap_or_default(),
                // No thread to be had: transcribe here, after the features.
                Err(_) => transcribe(t, samples, diarization),
            };
            (extracted, words)
        }),
        Some(t) if !audio_absent => {
            let extracted = extract();
            (extracted, transcribe(t, samples, diarization))
        }
        _ => (extract(), (None, Vec::new())),
    };
    progress(Progress::FeaturesExtracted);
    crate::transcript::assign_speakers(&mut transcript, &voice_turns);
    crate::transcript::mark_answers(&mut transcript);
    // Lexical evidence is English only; the transcriber says what it hears.
    let lexical = transcriber.is_some_and(|t| t.language() == "en");
    let params = ModelParams::for_model(model);
    let mut analyzer = RuleAnalyzer::new(params);
    let plan = WindowPlan::UPLOAD;
    let total = plan.window_count(duration);
    let windows = plan
        .windows(duration)
        .zip(1..)
        .map(|(span, done)| {
            let summary = features::summarize(&frames, Span::new(span.start, span.end));
            let video = video.map(|track| track.measure_window(span.start, span.end));
            let words = if lexical {
                crate::transcript::within(&transcript, span.start, span.end)
            } else {
                Vec::new()
            };
            let result = analyze_window_with_words(
                &mut analyzer,
                &span,
                &summary,
                audio_absent,
                video,
                words,
            );
            progress(Progress::Windows { done, total });
            result.upload_window(span.index, model)
        })
        .collect();
    let speaker_turns = if audio_absent {
        Vec::new()
    } else {
        features::speaker_turns(&frames, Span::whole(&frames))
    };
    FileAnalysis {
        model,
        duration,
        window_seconds: plan.window_seconds(),
        windows,
        params_version: params.version,
        speaker_turns,
        voice_turns: if audio_absent {
            Vec::new()
        } else {
            voice_turns
        },
        transcript,
        language,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 16 kHz mono 16-bit WAV of `seconds` holding `sample` in every frame.
    fn wav(seconds: u32, sample: i16) -> Vec<u8> {
        let data = 16_000 * 2 * seconds;
        let mut out = Vec::new();
        out.extend_from_slice(b"RIFF");
        out.extend_from_slice(&(36 + data).to_le_bytes());
        out.extend_from_slice(b"WAVEfmt ");
        for v in [16u32, 1 | (1 << 16), 16_000, 32_000, 2 | (16 << 16)] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(b"data");
        out.extend_from_slice(&data.to_le_bytes());
        for _ in 0..data / 2 {
            out.extend_from_slice(&sample.to_le_bytes());
        }
        out
    }

    #[test]
    fn a_silent_track_is_content_the_audio_model_rejects() {
        let options = AnalysisOptions::new(Model::Inter2Audio);
        let error = analyze_bytes(&wav(4, 0), &options).unwrap_err();
        assert_eq!(error.code, ErrorCode::Ih5007);
        assert!(error.message().contains("silent"), "{}", error.message());
        // One LSB of dither is still silence; a quiet but real signal is analyzed.
        assert_eq!(
            analyze_bytes(&wav(4, 1), &options).unwrap_err().code,
            ErrorCode::Ih5007
        );
        let speech = fixture("speech/disengaged.wav");
        assert!(analyze_bytes(&speech, &options).is_ok());
    }

    fn fixture(name: &str) -> Vec<u8> {
        let path = format!("{}/../../tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    #[test]
    fn progress_walks_the_stages_then_every_window_and_changes_nothing() {
        let bytes = fixture("segments/continuous.webm");
        let options = AnalysisOptions::new(Model::Inter2);
        let mut seen = Vec::new();
        let analysis =
            analyze_bytes_with_progress(&bytes, &options, &mut |p| seen.push(p)).unwrap();
        let total = analysis.windows.len() as u64;
        assert!(total >= 2);
        let mut expected = vec![
            Progress::Validated {
                duration: analysis.duration,
                windows: total,
            },
            Progress::Decoded,
            Progress::FeaturesExtracted,
        ];
        expected.extend((1..=total).map(|done| Progress::Windows { done, total }));
        assert_eq!(seen, expected);
        assert_eq!(analysis, analyze_bytes(&bytes, &options).unwrap());
    }

    #[test]
    fn a_refused_file_reports_no_progress() {
        let mut seen = Vec::new();
        let error = analyze_bytes_with_progress(
            &fixture("short_2s.mp4"),
            &AnalysisOptions::new(Model::Inter2),
            &mut |p| seen.push(p),
        )
        .unwrap_err();
        assert_eq!(error.code, ErrorCode::Ih4007);
        assert!(seen.is_empty());
    }
}
