//! Frames read as complete files: self-contained segments and containers only read whole.

use super::detect::top_level_box;
use super::{ChunkReport, LiveError, LiveProblem, LiveReader};
use crate::error::MediaError;
use crate::formats::ts;
use crate::info::{Pcm, TrackKind, VideoFrameInfo};
use crate::requirements::MediaRequirements;

impl LiveReader {
    /// A frame read as one complete file.
    pub(super) fn whole_file(&mut self, bytes: &[u8], segment: u64, r: &mut ChunkReport) {
        if bytes.is_empty() {
            return r.problem(
                segment,
                LiveProblem::Unreadable {
                    reason: "an empty frame".into(),
                },
            );
        }
        if let Some(reason) = missing_header(bytes) {
            return r.problem(
                segment,
                LiveProblem::MissingHeader {
                    reason: reason.into(),
                },
            );
        }
        let reader = match crate::formats::open(bytes) {
            Ok(reader) => reader,
            Err(e) => return r.problem(segment, LiveProblem::from_media(&e)),
        };
        let duration = match reader.duration() {
            Some(d) if d.is_finite() && d > 0.0 => d,
            _ => {
                return r.problem(
                    segment,
                    LiveProblem::Unreadable {
                        reason: "the segment's duration is zero or unknown".into(),
                    },
                )
            }
        };
        if duration < MediaRequirements::MIN_DURATION {
            return r.problem(segment, LiveProblem::TooShort { duration });
        }
        let frames = reader.video_frames().unwrap_or_default();
        if let Some(error) = crate::oversized_video_unit(&frames) {
            return r.problem(segment, LiveProblem::from_media(&error));
        }
        self.progress();
        self.container = Some(reader.container());
        let tracks = reader.tracks();
        let has_video = tracks.iter().any(|t| t.kind == TrackKind::Video);
        let has_audio = tracks.iter().any(|t| t.kind == TrackKind::Audio);
        self.check_tracks(has_video, has_audio, segment, r);
        let room = self.max_samples().saturating_sub(self.samples_total);
        let pcm = match reader.audio_track() {
            Ok(track) => {
                let max_seconds = room as f64 / f64::from(Pcm::SAMPLE_RATE);
                match crate::audio::decode_track(track, max_seconds) {
                    Ok(pcm) => Some(pcm.samples),
                    Err(MediaError::TooLong { .. }) => {
                        return self.stop(LiveError::MediaTooLong {
                            maximum: self.limits.max_media_seconds,
                        })
                    }
                    Err(e) => {
                        r.problem(segment, LiveProblem::from_media(&e));
                        None
                    }
                }
            }
            Err(MediaError::NoAudioStream) => None,
            // The segment still happened: its video counts and its time passes in silence,
            // as for a stream whose audio cannot be decoded.
            Err(e) => {
                r.problem(segment, LiveProblem::from_media(&e));
                None
            }
        };
        let origin = self.samples_total;
        let origin_s = origin as f64 / f64::from(Pcm::SAMPLE_RATE);
        match pcm {
            Some(samples) => {
                self.samples_total += samples.len() as u64;
                self.samples.extend(samples);
            }
            None => {
                // Silence as long as the video: its frames when it has any (a damaged
                // duration field must not stretch the timeline), else the stated duration.
                let end = match (frames.first(), frames.last()) {
                    (Some(first), Some(last)) if frames.len() > 1 => {
                        last.pts + (last.pts - first.pts) / (frames.len() - 1) as f64
                    }
                    _ => duration,
                };
                let n = (end.max(0.0) * f64::from(Pcm::SAMPLE_RATE)).round() as u64;
                if !self.pad(n) {
                    return;
                }
            }
        }
        for f in frames {
            let pts = origin_s + f.pts;
            self.video_end = self.video_end.max(pts);
            r.video_frames.push(VideoFrameInfo { pts, ..f });
        }
        self.unit();
    }
}

/// Media that needs a container header it does not have, for a frame read as a whole file.
fn missing_header(b: &[u8]) -> Option<&'static str> {
    if let Some(kind) = b.get(4..8) {
        if matches!(
            kind,
            b"moof" | b"styp" | b"sidx" | b"mdat" | b"emsg" | b"prft"
        ) && !top_level_box(b, b"moov")
        {
            return Some("a movie fragment without its init segment");
        }
    }
    if b.starts_with(&[0x18, 0x53, 0x80, 0x67]) || b.starts_with(&[0x1f, 0x43, 0xb6, 0x75]) {
        return Some("Matroska data without an EBML header");
    }
    if let Some(Some((size, offset))) = ts::sniff_prefix(b, true) {
        let has_pat = b
            .get(offset..)
            .unwrap_or_default()
            .chunks(size)
            .any(|p| p.len() >= 3 && p[0] == 0x47 && p[1] & 0x5f == 0x40 && p[2] == 0);
        if !has_pat {
            return Some("a transport stream without a program association table");
        }
    }
    None
}
