//! ISO base media (MP4, MOV, M4A), progressive and fragmented: one incremental demuxer for
//! whole files and live streams alike ([`Mp4Demuxer`]), and the file view of what it read
//! ([`Mp4Reader`]).
//!
//! The box tree is parsed here rather than through Symphonia's `IsoMp4Reader` for three reasons:
//! the probe needs every track (Symphonia's reader exposes audio only in a decodable form), the
//! video frame list needs the sample tables including fragments (`moof`/`traf`/`trun`), and the
//! edit list (`elst`), which Symphonia 0.6 does not apply, decides where media time 0 is.
//! Symphonia reads only the `ftyp` and `moov` boxes, for the audio codec parameters, and only
//! after this parser has checked that every box of them lies inside its parent; audio packets
//! are the samples this parser located, cut from the input.
//!
//! Modules: [`boxes`] (headers and the tree check), [`moov`] (tracks, edit lists, sample
//! tables, presentation times), [`entry`] (sample entries: codecs), [`fragment`] (`moof`),
//! [`audio`] (the decoder setup and packets), [`demux`] (the incremental top-level reader).

mod audio;
mod boxes;
mod demux;
mod entry;
mod fragment;
mod moov;

pub(crate) use demux::Mp4Demuxer;

use super::ContainerReader;
use crate::audio::AudioTrack;
use crate::demux::Demuxer;
use crate::error::MediaError;
use crate::info::{Container, EncodedVideo, EncodedVideoFrame, Track, TrackKind, VideoFrameInfo};
use audio::{audio_setup, SamplePackets};
use boxes::bad;
use moov::{Movie, TrakInfo};

/// A whole ISO file, parsed once through the demuxer.
pub(crate) struct Mp4Reader<'a> {
    bytes: &'a [u8],
    container: Container,
    movie: Movie,
    ftyp: Option<(u64, u64)>,
    moov: (u64, u64),
}

impl<'a> Mp4Reader<'a> {
    /// Reads the box structure of `bytes`: the movie box, its sample tables and any fragments.
    ///
    /// Errors: [`MediaError::Unreadable`] when a box runs past its parent or the end of the
    /// file (but for a last `mdat`), a table or fragment is malformed, or there is no `moov`.
    pub(crate) fn open(bytes: &'a [u8]) -> Result<Self, MediaError> {
        let mut demux = Mp4Demuxer::whole_file(bytes.len());
        let mut events = Vec::new();
        demux.feed(bytes, &mut events);
        demux.finish(&mut events);
        let facts = demux.into_facts()?;
        Ok(Self {
            bytes,
            container: facts.container,
            movie: facts.movie,
            ftyp: facts.ftyp,
            moov: facts.moov,
        })
    }

    /// The input bytes of a range the demuxer recorded.
    fn range(&self, (start, len): (u64, u64)) -> &'a [u8] {
        let start = usize::try_from(start).unwrap_or(usize::MAX);
        let end = start.saturating_add(usize::try_from(len).unwrap_or(usize::MAX));
        self.bytes.get(start..end).unwrap_or_default()
    }

    fn first(&self, kind: TrackKind) -> Option<&TrakInfo> {
        self.movie.first(kind).map(|i| &self.movie.traks[i])
    }

    /// The presentation time of each sample of `trak`, in sample (decode) order, and whether
    /// the edit list shows it.
    fn presentation(&self, trak: &TrakInfo) -> Result<Vec<(f64, bool)>, MediaError> {
        let timeline = self
            .movie
            .timeline(trak)
            .ok_or_else(|| bad("video track timescale is 0"))?;
        Ok(trak.samples.iter().map(|s| timeline.place(s)).collect())
    }
}

impl<'a> ContainerReader<'a> for Mp4Reader<'a> {
    fn container(&self) -> Container {
        self.container
    }

    fn tracks(&self) -> Vec<Track> {
        self.movie.traks.iter().map(|t| t.track.clone()).collect()
    }

    fn duration(&self) -> Option<f64> {
        let movie = &self.movie;
        let stated = (movie.timescale > 0 && movie.duration > 0)
            .then(|| movie.duration as f64 / f64::from(movie.timescale));
        let longest = |ends: &mut dyn Iterator<Item = f64>| {
            ends.fold(None, |acc: Option<f64>, d| {
                Some(acc.map_or(d, |a| a.max(d)))
            })
        };
        // A fragmented file's moov states no duration (or only the initial part): the samples
        // in the fragments tell how long each track really is.
        let from_samples = longest(
            &mut movie
                .traks
                .iter()
                .filter(|t| t.timescale > 0)
                .filter_map(|t| {
                    let end = t
                        .samples
                        .iter()
                        .map(|s| s.dts.saturating_add(u64::from(s.duration)))
                        .max()?;
                    Some(end as f64 / f64::from(t.timescale))
                }),
        );
        let from_mdhd = longest(
            &mut movie
                .traks
                .iter()
                .filter(|t| t.timescale > 0 && t.media_duration > 0)
                .map(|t| t.media_duration as f64 / f64::from(t.timescale)),
        );
        stated.or(from_samples).or(from_mdhd)
    }

    fn video_frames(&self) -> Result<Vec<VideoFrameInfo>, MediaError> {
        let Some(trak) = self.first(TrackKind::Video) else {
            return Ok(Vec::new());
        };
        let mut frames: Vec<VideoFrameInfo> = self
            .presentation(trak)?
            .into_iter()
            .zip(&trak.samples)
            .filter(|((_, shown), _)| *shown)
            .map(|((pts, _), s)| VideoFrameInfo {
                pts,
                size: s.size,
                keyframe: s.sync,
            })
            .collect();
        frames.sort_by(|a, b| a.pts.total_cmp(&b.pts));
        Ok(frames)
    }

    fn encoded_video(&self) -> Result<Option<EncodedVideo>, MediaError> {
        let Some(trak) = self.first(TrackKind::Video) else {
            return Ok(None);
        };
        let frames = self
            .presentation(trak)?
            .into_iter()
            .zip(&trak.samples)
            .map(|((pts, presented), s)| {
                let data = usize::try_from(s.offset)
                    .ok()
                    .and_then(|at| self.bytes.get(at..at.checked_add(s.size as usize)?))
                    .unwrap_or_default();
                EncodedVideoFrame {
                    pts,
                    keyframe: s.sync,
                    presented,
                    data: data.to_vec(),
                }
            })
            .collect();
        Ok(Some(EncodedVideo {
            codec: trak.track.codec.clone(),
            width: trak.track.width,
            height: trak.track.height,
            config: trak.config.clone(),
            frames,
        }))
    }

    fn audio_track(&self) -> Result<AudioTrack<'a>, MediaError> {
        let ftyp = self.ftyp.map(|r| self.range(r));
        let setup = audio_setup(ftyp, self.range(self.moov), &self.movie)?;
        let trak = self
            .first(TrackKind::Audio)
            .ok_or(MediaError::NoAudioStream)?;
        let samples: Vec<(u64, u32)> = trak.samples.iter().map(|s| (s.offset, s.size)).collect();
        Ok(AudioTrack {
            codec: setup.codec,
            packets: Box::new(SamplePackets {
                bytes: self.bytes,
                samples: samples.into_iter(),
            }),
            skip: setup.skip,
            lead: setup.lead,
        })
    }
}

#[cfg(test)]
mod tests;
