//! Matroska and WebM: one incremental EBML demuxer for whole files and live streams alike.
//!
//! Blocks are read here rather than through Symphonia's `MkvReader` because the frame list needs
//! each block's keyframe flag, and an exact audio length needs `DiscardPadding` and `CodecDelay`
//! (Opus pre-skip), which that reader does not expose. A whole file is the demuxer fed every
//! byte at once and finished ([`MkvReader`]); a stream is the same demuxer fed frame by frame
//! ([`MkvDemuxer::stream`]), so both cut blocks and set up decoders the same way.

mod demux;
mod ebml;
mod tracks;

use symphonia::core::packet::Packet;

pub(crate) use demux::MkvDemuxer;

use super::ContainerReader;
use crate::audio::{AudioTrack, VecPackets};
use crate::demux::{Demuxer, Event};
use crate::error::MediaError;
use crate::info::{Container, EncodedVideo, EncodedVideoFrame, Track, TrackKind, VideoFrameInfo};
use tracks::{audio_setup, TrackEntry};

/// A Matroska or WebM file, parsed once.
pub(crate) struct MkvReader {
    container: Container,
    duration: Option<f64>,
    tracks: Vec<TrackEntry>,
    audio_error: Option<MediaError>,
    /// Packets of the first audio track, and its first block's time as the decoder's lead.
    audio: Vec<Packet>,
    audio_lead: (u64, u32),
    /// Frames of the first video track in decode order, with their bytes.
    video: Vec<(VideoFrameInfo, Vec<u8>)>,
}

impl MkvReader {
    /// Reads the whole file through the demuxer.
    ///
    /// Errors: [`MediaError::Unreadable`] when no EBML header, no Matroska DocType or no Tracks
    /// with a video or audio entry is found before damage or the end.
    pub(crate) fn open(bytes: &[u8]) -> Result<Self, MediaError> {
        let mut demux = MkvDemuxer::whole_file();
        let mut events = Vec::new();
        demux.feed(bytes, &mut events);
        demux.finish(&mut events);
        let facts = demux.into_facts()?;
        let mut reader = Self {
            container: facts.container,
            duration: facts.duration,
            tracks: facts.tracks,
            audio_error: facts.audio_error,
            audio: Vec::new(),
            audio_lead: (0, 1),
            video: Vec::new(),
        };
        for event in events {
            match event {
                Event::AudioSetup(setup) => reader.audio_lead = setup.lead,
                Event::Audio(packet) => reader.audio.push(packet),
                Event::Video(frame, data) => reader.video.push((frame, data.unwrap_or_default())),
                Event::Header { .. }
                | Event::VideoSetup { .. }
                | Event::Problem(_)
                | Event::NewFile => {}
            }
        }
        Ok(reader)
    }

    fn first(&self, kind: TrackKind) -> Option<&TrackEntry> {
        self.tracks.iter().find(|t| t.track.kind == kind)
    }
}

impl<'a> ContainerReader<'a> for MkvReader {
    fn container(&self) -> Container {
        self.container
    }

    fn tracks(&self) -> Vec<Track> {
        self.tracks.iter().map(|t| t.track.clone()).collect()
    }

    fn duration(&self) -> Option<f64> {
        self.duration
    }

    fn video_frames(&self) -> Result<Vec<VideoFrameInfo>, MediaError> {
        let mut frames: Vec<VideoFrameInfo> = self.video.iter().map(|(f, _)| *f).collect();
        frames.sort_by(|a, b| a.pts.total_cmp(&b.pts));
        Ok(frames)
    }

    fn encoded_video(&self) -> Result<Option<EncodedVideo>, MediaError> {
        let Some(track) = self.first(TrackKind::Video) else {
            return Ok(None);
        };
        // Blocks are stored in decode order, which is the order a decoder needs.
        let frames = self
            .video
            .iter()
            .map(|(f, data)| EncodedVideoFrame {
                pts: f.pts,
                keyframe: f.keyframe,
                presented: true,
                data: data.clone(),
            })
            .collect();
        Ok(Some(EncodedVideo {
            codec: track.track.codec.clone(),
            width: track.track.width,
            height: track.track.height,
            config: track.codec_private.clone(),
            frames,
        }))
    }

    fn audio_track(&self) -> Result<AudioTrack<'a>, MediaError> {
        let track = self
            .first(TrackKind::Audio)
            .ok_or(MediaError::NoAudioStream)?;
        if let Some(e) = &self.audio_error {
            return Err(e.clone());
        }
        let (setup, _) = audio_setup(track)?;
        Ok(AudioTrack {
            codec: setup.codec,
            packets: Box::new(VecPackets::new(self.audio.clone())),
            skip: setup.skip,
            lead: self.audio_lead,
        })
    }
}

#[cfg(test)]
mod tests;
