//! MPEG transport streams (188-byte packets, or 192-byte M2TS): PAT, PMT and PES reassembly.
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

use super::es;
use super::ContainerReader;
use crate::audio::params::symphonia_params;
use crate::audio::{AudioCodec, AudioTrack, VecPackets};
use crate::error::MediaError;
use crate::info::{Codec, Container, Track, TrackKind, VideoFrameInfo};
use crate::video::{EncodedVideo, EncodedVideoFrame};

const TS_PACKET: usize = 188;
/// PTS ticks per second.
const CLOCK: f64 = 90_000.0;

fn bad(reason: impl Into<String>) -> MediaError {
    MediaError::unreadable(Some(Container::MpegTs), reason)
}

/// Whether `b` is a transport stream: `(packet size, offset of the first sync byte)` when the
/// sync byte repeats at the packet interval (5 times, or over the whole input if shorter, and at
/// least twice).
pub(crate) fn sniff(b: &[u8]) -> Option<(usize, usize)> {
    for (size, offset) in [(188usize, 0usize), (192, 4)] {
        let syncs = (0..5)
            .map(|k| offset + k * size)
            .take_while(|&at| at < b.len())
            .collect::<Vec<_>>();
        if syncs.len() >= 2 && syncs.iter().all(|&at| b[at] == 0x47) {
            return Some((size, offset));
        }
    }
    None
}

/// One elementary stream listed in the PMT.
#[derive(Debug, Clone)]
struct EsStream {
    pid: u16,
    track: Track,
    /// Complete PES packets, in order.
    pes: Vec<Pes>,
    /// The PES being assembled.
    partial: Option<Pes>,
}

/// One PES packet: its timestamps, the random-access flag of its first TS packet and payload.
#[derive(Debug, Clone, Default)]
struct Pes {
    pts: Option<u64>,
    random_access: bool,
    data: Vec<u8>,
}

/// A parsed transport stream (first program only).
pub(crate) struct TsReader {
    streams: Vec<EsStream>,
}

impl TsReader {
    /// Reads every packet of `bytes`.
    pub(crate) fn open(
        bytes: &[u8],
        packet_size: usize,
        offset: usize,
    ) -> Result<Self, MediaError> {
        let mut pmt_pid: Option<u16> = None;
        let mut streams: Vec<EsStream> = Vec::new();
        let mut pos = offset;
        while pos + TS_PACKET <= bytes.len() {
            let packet = &bytes[pos..pos + TS_PACKET];
            if packet[0] != 0x47 {
                // Lost sync: find the next sync byte that repeats one packet later.
                match (pos + 1..bytes.len()).find(|&i| {
                    bytes[i] == 0x47 && bytes.get(i + packet_size).is_none_or(|&b| b == 0x47)
                }) {
                    Some(next) => {
                        pos = next;
                        continue;
                    }
                    None => break,
                }
            }
            pos += packet_size;
            let pusi = packet[1] & 0x40 != 0;
            let pid = (u16::from(packet[1] & 0x1f) << 8) | u16::from(packet[2]);
            let afc = (packet[3] >> 4) & 0x3;
            let mut payload_at = 4;
            let mut random_access = false;
            if afc & 0x2 != 0 {
                let len = usize::from(packet[4]);
                if len > 0 {
                    random_access = packet.get(5).is_some_and(|f| f & 0x40 != 0);
                }
                payload_at = 5 + len;
            }
            if afc & 0x1 == 0 || payload_at >= TS_PACKET {
                continue;
            }
            let payload = &packet[payload_at..];
            if pid == 0 {
                if pusi && pmt_pid.is_none() {
                    pmt_pid = parse_pat(payload);
                }
                continue;
            }
            if Some(pid) == pmt_pid {
                if pusi && streams.is_empty() {
                    streams = parse_pmt(payload);
                }
                continue;
            }
            let Some(stream) = streams.iter_mut().find(|s| s.pid == pid) else {
                continue;
            };
            if pusi {
                if let Some(done) = stream.partial.take() {
                    stream.pes.push(done);
                }
                // A PES header that does not parse starts nothing; its continuation is dropped.
                stream.partial = parse_pes_header(payload).map(|(pts, body)| Pes {
                    pts,
                    random_access,
                    data: body.to_vec(),
                });
            } else if let Some(partial) = stream.partial.as_mut() {
                partial.data.extend_from_slice(payload);
            }
        }
        if pmt_pid.is_none() {
            return Err(bad("no program association table"));
        }
        for s in &mut streams {
            if let Some(done) = s.partial.take() {
                s.pes.push(done);
            }
        }
        if streams.is_empty() {
            return Err(bad("no program map table"));
        }
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

/// The PMT PID of the first program in a PAT section.
pub(crate) fn parse_pat(payload: &[u8]) -> Option<u16> {
    let section = payload.get(1 + usize::from(*payload.first()?)..)?;
    if *section.first()? != 0x00 {
        return None;
    }
    let len = (usize::from(section.get(1)? & 0x0f) << 8) | usize::from(*section.get(2)?);
    let end = (3 + len).min(section.len()).saturating_sub(4);
    let entries = section.get(8..end)?;
    entries.chunks_exact(4).find_map(|e| {
        let program = u16::from_be_bytes([e[0], e[1]]);
        (program != 0).then(|| (u16::from(e[2] & 0x1f) << 8) | u16::from(e[3]))
    })
}

/// The elementary streams of a PMT section: each PID with its track (the stream-type table
/// shared by the file and live readers).
pub(crate) fn pmt_tracks(payload: &[u8]) -> Vec<(u16, Track)> {
    let mut out = Vec::new();
    let Some(section) = payload
        .first()
        .and_then(|&p| payload.get(1 + usize::from(p)..))
    else {
        return out;
    };
    if section.first() != Some(&0x02) || section.len() < 12 {
        return out;
    }
    let len = (usize::from(section[1] & 0x0f) << 8) | usize::from(section[2]);
    let end = (3 + len).min(section.len()).saturating_sub(4);
    let info_len = (usize::from(section[10] & 0x0f) << 8) | usize::from(section[11]);
    let mut at = 12 + info_len;
    while at + 5 <= end {
        let stream_type = section[at];
        let pid = (u16::from(section[at + 1] & 0x1f) << 8) | u16::from(section[at + 2]);
        let es_info_len = (usize::from(section[at + 3] & 0x0f) << 8) | usize::from(section[at + 4]);
        let descriptors = section
            .get(at + 5..(at + 5 + es_info_len).min(end))
            .unwrap_or_default();
        at += 5 + es_info_len;
        let track = match stream_type {
            0x01 | 0x02 => Track::video(Codec::Mpeg2Video),
            0x10 => Track::video(Codec::Mpeg4Part2),
            0x1b => Track::video(Codec::H264),
            0x24 => Track::video(Codec::H265),
            0x03 | 0x04 => Track::audio(Codec::Mp2),
            0x0f => Track::audio(Codec::Aac),
            0x11 => Track::audio(Codec::Other("aac_latm".into())),
            0x81 => Track::audio(Codec::Other("ac3".into())),
            0x06 if has_registration(descriptors, b"Opus") => Track::audio(Codec::Opus),
            0x06 if has_registration(descriptors, b"AC-3") || has_tag(descriptors, 0x6a) => {
                Track::audio(Codec::Other("ac3".into()))
            }
            _ => continue,
        };
        out.push((pid, track));
    }
    out
}

/// The elementary streams of a PMT section.
fn parse_pmt(payload: &[u8]) -> Vec<EsStream> {
    pmt_tracks(payload)
        .into_iter()
        .map(|(pid, track)| EsStream {
            pid,
            track,
            pes: Vec::new(),
            partial: None,
        })
        .collect()
}

/// Whether the descriptor loop holds a registration descriptor (tag 5) with `id`.
fn has_registration(descriptors: &[u8], id: &[u8; 4]) -> bool {
    descriptors_iter(descriptors).any(|(tag, body)| tag == 0x05 && body.get(..4) == Some(&id[..]))
}

fn has_tag(descriptors: &[u8], wanted: u8) -> bool {
    descriptors_iter(descriptors).any(|(tag, _)| tag == wanted)
}

fn descriptors_iter(mut d: &[u8]) -> impl Iterator<Item = (u8, &[u8])> {
    std::iter::from_fn(move || {
        let (&tag, rest) = d.split_first()?;
        let (&len, rest) = rest.split_first()?;
        let body = rest.get(..usize::from(len))?;
        d = &rest[usize::from(len)..];
        Some((tag, body))
    })
}

/// A PES header at the start of a payload: (PTS, payload after the header).
fn parse_pes_header(p: &[u8]) -> Option<(Option<u64>, &[u8])> {
    if p.get(..3)? != [0, 0, 1] {
        return None;
    }
    let stream_id = *p.get(3)?;
    // Streams without the optional header (padding, private 2, ...): payload follows at once.
    if matches!(
        stream_id,
        0xbc | 0xbe | 0xbf | 0xf0 | 0xf1 | 0xff | 0xf2 | 0xf8
    ) {
        return Some((None, p.get(6..)?));
    }
    let flags = *p.get(7)?;
    let header_len = usize::from(*p.get(8)?);
    let body = p.get(9 + header_len..)?;
    let pts = if flags & 0x80 != 0 {
        let t = p.get(9..14)?;
        Some(
            (u64::from(t[0] >> 1) & 0x7) << 30
                | u64::from(t[1]) << 22
                | u64::from(t[2] >> 1) << 15
                | u64::from(t[3]) << 7
                | u64::from(t[4] >> 1),
        )
    } else {
        None
    };
    Some((pts, body))
}

/// `pts - start` in seconds, across a 33-bit wrap.
fn since(pts: u64, start: u64) -> f64 {
    const WRAP: u64 = 1 << 33;
    let delta = if pts >= start {
        pts - start
    } else {
        pts + WRAP - start
    };
    delta as f64 / CLOCK
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
