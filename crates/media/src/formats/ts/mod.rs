//! MPEG transport streams (188-byte packets, or 192-byte M2TS): one incremental demuxer for
//! whole files and live streams ([`TsDemuxer`]), and the file view of its PES ([`TsReader`]).
//!
//! The demuxer is this crate's own. The `mpeg2ts` crate's reader fails on any packet whose PID it
//! has not yet seen in a PMT (every stream cut mid-way starts that way), on stream types missing
//! from its table, and loses packet alignment after such an error; its PES reader also drops the
//! adaptation field's random-access flag. Reassembling PES is short, so it is done here, with
//! every length checked against the 188 bytes of its packet.
//!
//! Media time 0 is the earliest PTS of any stream, as ffmpeg's `start_time`; audio is decoded
//! from its first frame (there is no priming information in TS to remove).

use symphonia::core::packet::Packet;
use symphonia::core::units::{Duration as SymDuration, Timestamp};

mod demux;
mod psi;

pub(crate) use demux::{sniff_prefix, TsDemuxer};

use super::es;
use super::ContainerReader;
use crate::audio::params::symphonia_params;
use crate::audio::{AudioCodec, AudioTrack, VecPackets};
use crate::demux::Demuxer;
use crate::error::MediaError;
use crate::info::{
    Codec, Container, EncodedVideo, EncodedVideoFrame, Track, TrackKind, VideoFrameInfo,
};
use demux::{since, Pes, CLOCK};

fn bad(reason: impl Into<String>) -> MediaError {
    MediaError::unreadable(Some(Container::MpegTs), reason)
}

/// Whether `b` is a transport stream: `(packet size, offset of the first sync byte)` when the
/// sync byte repeats at the packet interval (5 times, or over the whole input if shorter, and at
/// least twice).
pub(crate) fn sniff(b: &[u8]) -> Option<(usize, usize)> {
    sniff_prefix(b, true).flatten()
}

/// One elementary stream listed in the PMT.
#[derive(Debug)]
struct EsStream {
    track: Track,
    /// Complete PES packets, in order.
    pes: Vec<Pes>,
}

/// A parsed transport stream (first program only).
pub(crate) struct TsReader {
    streams: Vec<EsStream>,
}

impl TsReader {
    /// Reads every packet of `bytes` through the demuxer.
    pub(crate) fn open(
        bytes: &[u8],
        packet_size: usize,
        offset: usize,
    ) -> Result<Self, MediaError> {
        let mut demux = TsDemuxer::whole_file(packet_size, offset);
        let mut events = Vec::new();
        demux.feed(bytes, &mut events);
        demux.finish(&mut events);
        let (has_pat, program) = demux.into_program();
        if !has_pat {
            return Err(bad("no program association table"));
        }
        if program.is_empty() {
            return Err(bad("no program map table"));
        }
        let streams = program
            .into_iter()
            .map(|(_, track, pes)| EsStream { track, pes })
            .collect();
        let mut reader = Self { streams };
        reader.describe_tracks();
        Ok(reader)
    }

    /// Fills in what the PMT does not say (sample rate, channels, picture size, frame rate,
    /// MPEG audio layer) from the streams themselves.
    fn describe_tracks(&mut self) {
        for s in &mut self.streams {
            match s.track.kind {
                TrackKind::Audio => {
                    let head: Vec<u8> = s
                        .pes
                        .iter()
                        .take(4)
                        .flat_map(|p| p.data.iter().copied())
                        .collect();
                    match s.track.codec {
                        Codec::Aac => {
                            if let Some((_, _, _, sr, ch)) =
                                (0..head.len()).find_map(|i| es::adts_header(&head[i..]))
                            {
                                s.track.sample_rate = es::aac_rate(sr);
                                s.track.channels = (ch > 0).then_some(u16::from(ch));
                            }
                        }
                        Codec::Mp2 | Codec::Mp3 => {
                            if let (_, Some(f)) = es::split_mpeg_audio(&head) {
                                s.track.codec = if f.layer == 2 { Codec::Mp2 } else { Codec::Mp3 };
                                s.track.sample_rate = Some(f.rate);
                                s.track.channels = Some(f.channels);
                            }
                        }
                        _ => {}
                    }
                }
                TrackKind::Video => {
                    if let Some((w, h)) = s
                        .pes
                        .iter()
                        .take(8)
                        .find_map(|p| es::picture_size(&s.track.codec, &p.data))
                    {
                        s.track.width = Some(w);
                        s.track.height = Some(h);
                    }
                    let pts: Vec<u64> = s.pes.iter().filter_map(|p| p.pts).collect();
                    if let (Some(first), Some(last)) = (pts.iter().min(), pts.iter().max()) {
                        if last > first && pts.len() > 1 {
                            s.track.frame_rate =
                                Some((pts.len() - 1) as f64 * CLOCK / (last - first) as f64);
                        }
                    }
                }
            }
        }
    }

    /// The earliest PTS of any stream: media time 0.
    fn start(&self) -> Option<u64> {
        self.streams
            .iter()
            .flat_map(|s| s.pes.iter().filter_map(|p| p.pts))
            .min()
    }

    /// Duration of one coded frame of a stream, in PTS ticks.
    fn frame_ticks(&self, s: &EsStream) -> u64 {
        match (s.track.kind, &s.track.codec, s.track.sample_rate) {
            (TrackKind::Audio, Codec::Aac, Some(r)) if r > 0 => 1024 * 90_000 / u64::from(r),
            (TrackKind::Audio, Codec::Mp2 | Codec::Mp3, Some(r)) if r > 0 => {
                1152 * 90_000 / u64::from(r)
            }
            (TrackKind::Video, _, _) => s
                .track
                .frame_rate
                .filter(|f| *f > 0.0)
                .map_or(0, |f| (CLOCK / f) as u64),
            _ => 0,
        }
    }

    /// The coded pictures of a video stream in stream (decode) order, one PES each as muxers
    /// write video: (presentation time in seconds, keyframe, PES). A PES without a PTS follows
    /// the previous one by a frame.
    fn video_pes<'s>(&'s self, stream: &'s EsStream) -> impl Iterator<Item = (f64, bool, &'s Pes)> {
        let start = self.start().unwrap_or(0);
        let step = self.frame_ticks(stream);
        let mut last_pts = None;
        stream
            .pes
            .iter()
            .filter(|p| !p.data.is_empty())
            .map(move |pes| {
                let pts = pes
                    .pts
                    .or_else(|| last_pts.map(|p: u64| p + step))
                    .unwrap_or(start);
                last_pts = Some(pts);
                let keyframe =
                    es::is_keyframe(&stream.track.codec, &pes.data).unwrap_or(pes.random_access);
                (since(pts, start), keyframe, pes)
            })
    }

    fn first(&self, kind: TrackKind) -> Option<&EsStream> {
        self.streams.iter().find(|s| s.track.kind == kind)
    }
}

impl<'a> ContainerReader<'a> for TsReader {
    fn container(&self) -> Container {
        Container::MpegTs
    }

    fn tracks(&self) -> Vec<Track> {
        self.streams.iter().map(|s| s.track.clone()).collect()
    }

    fn duration(&self) -> Option<f64> {
        // As ffprobe estimates it: the last PES start plus one frame, for the latest-ending
        // stream, from the earliest start.
        let start = self.start()?;
        self.streams
            .iter()
            .filter_map(|s| {
                let last = s
                    .pes
                    .iter()
                    .filter_map(|p| p.pts)
                    .max_by(|&a, &b| since(a, start).total_cmp(&since(b, start)))?;
                Some(since(last, start) + self.frame_ticks(s) as f64 / CLOCK)
            })
            .fold(None, |acc: Option<f64>, d| {
                Some(acc.map_or(d, |a| a.max(d)))
            })
    }

    fn video_frames(&self) -> Result<Vec<VideoFrameInfo>, MediaError> {
        let Some(stream) = self.first(TrackKind::Video) else {
            return Ok(Vec::new());
        };
        let mut frames: Vec<VideoFrameInfo> = self
            .video_pes(stream)
            .map(|(pts, keyframe, pes)| VideoFrameInfo {
                pts,
                size: u32::try_from(pes.data.len()).unwrap_or(u32::MAX),
                keyframe,
            })
            .collect();
        frames.sort_by(|a, b| a.pts.total_cmp(&b.pts));
        Ok(frames)
    }

    fn encoded_video(&self) -> Result<Option<EncodedVideo>, MediaError> {
        let Some(stream) = self.first(TrackKind::Video) else {
            return Ok(None);
        };
        let frames = self
            .video_pes(stream)
            .map(|(pts, keyframe, pes)| EncodedVideoFrame {
                pts,
                keyframe,
                presented: true,
                data: pes.data.clone(),
            })
            .collect();
        Ok(Some(EncodedVideo {
            codec: stream.track.codec.clone(),
            width: stream.track.width,
            height: stream.track.height,
            // Annex B: parameter sets travel in the stream.
            config: None,
            frames,
        }))
    }

    fn audio_track(&self) -> Result<AudioTrack<'a>, MediaError> {
        let stream = self
            .first(TrackKind::Audio)
            .ok_or(MediaError::NoAudioStream)?;
        let codec = &stream.track.codec;
        let all: Vec<u8> = stream
            .pes
            .iter()
            .flat_map(|p| p.data.iter().copied())
            .collect();
        let rate = stream.track.sample_rate.unwrap_or(0);
        let channels = stream.track.channels.unwrap_or(0);
        let to_packets = |frames: Vec<&[u8]>| -> Vec<Packet> {
            frames
                .into_iter()
                .map(|f| Packet::new(0, Timestamp::new(0), SymDuration::new(0), f))
                .collect()
        };
        let (params, packets) = match codec {
            Codec::Aac => {
                let (frames, asc) = es::split_adts(&all);
                let asc = asc.ok_or_else(|| bad("no ADTS frame in the AAC stream"))?;
                let params = symphonia_params(codec, rate, channels, Some(Box::new(asc)))?;
                (params, to_packets(frames))
            }
            Codec::Mp2 | Codec::Mp3 => {
                let (frames, _) = es::split_mpeg_audio(&all);
                (
                    symphonia_params(codec, rate, channels, None)?,
                    to_packets(frames),
                )
            }
            other => return Err(MediaError::unsupported(other.to_string())),
        };
        let mut track = AudioTrack::new(
            AudioCodec::Symphonia(params),
            Box::new(VecPackets::new(packets)),
        );
        // An audio stream that starts after the earliest stream starts after media time 0.
        if let (Some(start), Some(first)) = (self.start(), stream.pes.iter().find_map(|p| p.pts)) {
            track.lead = ((since(first, start) * CLOCK) as u64, 90_000);
        }
        Ok(track)
    }
}

#[cfg(test)]
mod tests {
    use super::psi::parse_pes_header;
    use super::*;

    #[test]
    fn a_pes_header_yields_its_pts() {
        // PTS 126000 (1.4 s): '0010' 000 1 | 00000011 1 | 11011000 0... encoded per 13818-1.
        let pts: u64 = 126_000;
        let t = [
            0x21 | ((pts >> 29) as u8 & 0x0e),
            (pts >> 22) as u8,
            ((pts >> 14) as u8 & 0xfe) | 1,
            (pts >> 7) as u8,
            ((pts << 1) as u8 & 0xfe) | 1,
        ];
        let mut p = vec![0, 0, 1, 0xe0, 0, 0, 0x80, 0x80, 5];
        p.extend_from_slice(&t);
        p.extend_from_slice(&[9, 9]);
        assert_eq!(parse_pes_header(&p), Some((Some(pts), &[9u8, 9][..])));
    }

    #[test]
    fn sniffing_needs_repeated_sync_bytes() {
        let mut b = vec![0u8; 188 * 3];
        b[0] = 0x47;
        assert_eq!(sniff(&b), None);
        b[188] = 0x47;
        b[376] = 0x47;
        assert_eq!(sniff(&b), Some((188, 0)));
    }

    #[test]
    fn timestamps_survive_the_33_bit_wrap() {
        assert!((since(100, (1 << 33) - 90_000 + 100) - 1.0).abs() < 1e-9);
    }
}

#[cfg(test)]
mod chunking {
    use proptest::prelude::*;

    use super::TsDemuxer;
    use crate::demux::testing::{chunk_sizes, fixture, streamed};

    const FIXTURES: [&str; 3] = ["ts_h264_aac.ts", "ts_mp2.ts", "ts_mpeg2video_mp2.ts"];

    fn demuxer(bytes: &[u8]) -> TsDemuxer {
        let (packet_size, offset) = super::sniff(bytes).expect("a transport stream");
        TsDemuxer::new(packet_size, offset, 16 << 20)
    }

    #[test]
    fn every_fixture_streams_audio() {
        for name in FIXTURES {
            let bytes = fixture(name);
            let out = streamed(demuxer(&bytes), &bytes, &[bytes.len()]);
            assert!(!out.audio.is_empty(), "{name}");
            assert_eq!(out.problems, Vec::<String>::new(), "{name}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn a_stream_cut_anywhere_demuxes_like_the_stream_fed_whole(
            which in 0..FIXTURES.len(),
            sizes in chunk_sizes(),
        ) {
            let bytes = fixture(FIXTURES[which]);
            prop_assert_eq!(
                streamed(demuxer(&bytes), &bytes, &sizes),
                streamed(demuxer(&bytes), &bytes, &[bytes.len()])
            );
        }
    }
}
