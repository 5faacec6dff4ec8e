//! The incremental MPEG transport stream demuxer: 188-byte packets (or 192-byte M2TS) whose
//! alignment is carried across feeds, PAT and PMT, PES reassembly, and for a stream the audio
//! frames cut from the elementary stream as they complete.
//!
//! A whole file and a stream share everything up to whole PES packets: first program, PAT and
//! PMT read once, a PES ends where the next one of its PID starts, lost sync found again on a
//! sync byte that repeats a packet later. A whole file ([`TsDemuxer::whole_file`]) then keeps
//! every PES for the file reader, which fixes media time 0 at the earliest PTS of any stream.
//! A stream cannot wait for its end: the earliest PTS is fixed once every stream of the program
//! has shown one (PES are held until then, at most [`MAX_HELD_PES`]), the last PES of each
//! stream is only complete when the stream ends ([`Demuxer::finish`]), and a clock that steps
//! back by more than a second marks the start of another self-contained file (segments each
//! muxed from their own start), which goes after the previous one on the session timeline.

use std::collections::VecDeque;

use symphonia::core::packet::Packet;
use symphonia::core::units::{Duration as SymDuration, Timestamp};

use super::psi::{parse_pat, parse_pes_header, pmt_tracks};
use crate::audio::params::symphonia_params;
use crate::audio::{AudioCodec, AudioSetup};
use crate::demux::{Demuxer, Event, LiveProblem};
use crate::formats::es;
use crate::formats::plain::{mpeg_audio_header, mpeg_audio_layer};
use crate::info::{Codec, Container, Track, TrackKind, VideoFrameInfo};
use crate::queue::ByteQueue;

const TS_PACKET: usize = 188;
/// PTS ticks per second.
pub(super) const CLOCK: f64 = 90_000.0;
/// How far back (in PTS ticks, 1 s) a stream's clock may step before it counts as the start
/// of a new file rather than B-frame reordering.
const DISCONTINUITY: i64 = 90_000;
/// PES held back while the earliest PTS is not yet known.
pub(crate) const MAX_HELD_PES: usize = 256;
/// Video PES with a PTS needed before the start is fixed: enough to see past the reordering of
/// B-frames, whose first PES in decode order is not the earliest in presentation.
const VIDEO_PTS_BEFORE_START: u32 = 4;

/// Whether `b` starts like a transport stream: `Some(Some((packet size, first sync offset)))`,
/// `Some(None)` when more bytes are needed to tell, `None` when it is not one. The sync byte
/// must repeat at the packet interval five times, or over all of `b` when `complete` and it is
/// shorter (at least twice), as the file path requires.
pub(crate) fn sniff_prefix(b: &[u8], complete: bool) -> Option<Option<(usize, usize)>> {
    let mut undecided = false;
    for (size, offset) in [(188usize, 0usize), (192, 4)] {
        let syncs: Vec<usize> = (0..5)
            .map(|k| offset + k * size)
            .take_while(|&at| at < b.len())
            .collect();
        if !syncs.iter().all(|&at| b[at] == 0x47) {
            continue;
        }
        if syncs.len() == 5 || (complete && syncs.len() >= 2) {
            return Some(Some((size, offset)));
        }
        if !syncs.is_empty() || b.len() <= offset {
            undecided = true;
        }
    }
    undecided.then_some(None)
}

/// One elementary stream of the program.
#[derive(Debug)]
struct Stream {
    pid: u16,
    track: Track,
    partial: Option<Pes>,
    /// PES headers with a PTS seen so far in the current file, and the latest PTS.
    pts_seen: u32,
    last_pts: Option<u64>,
}

/// One PES packet: its PTS, the random-access flag of its first TS packet, and its payload.
#[derive(Debug, Default)]
pub(super) struct Pes {
    pub(super) pts: Option<u64>,
    pub(super) random_access: bool,
    pub(super) data: Vec<u8>,
}

/// The first audio stream's elementary stream, framed as it arrives.
#[derive(Debug, Default)]
struct AudioEs {
    buf: Vec<u8>,
    first_pts: Option<u64>,
    setup_done: bool,
}

/// An incremental transport stream demuxer.
pub(crate) struct TsDemuxer {
    q: ByteQueue,
    packet_size: usize,
    /// Whether the bytes before the first packet (the M2TS prefix) are behind us.
    started: bool,
    offset: usize,
    pmt_pid: Option<u16>,
    streams: Vec<Stream>,
    audio: Option<usize>,
    video: Option<usize>,
    min_pts: Option<u64>,
    start: Option<u64>,
    held: VecDeque<(usize, Pes)>,
    held_bytes: usize,
    max_pes: usize,
    audio_es: AudioEs,
    last_video_pts: Option<u64>,
    video_step: u64,
    reported_oversize: bool,
    /// Bytes dropped looking for packet sync during the current feed.
    lost_sync_bytes: usize,
    /// A whole file: every completed PES with its stream's index, kept for the file reader.
    kept: Option<Vec<(usize, Pes)>>,
}

impl TsDemuxer {
    /// A demuxer for packets of `packet_size` bytes whose first sync byte is at `offset`,
    /// holding no PES larger than `max_pes` bytes.
    pub(crate) fn new(packet_size: usize, offset: usize, max_pes: usize) -> Self {
        Self {
            q: ByteQueue::default(),
            packet_size,
            started: false,
            offset,
            pmt_pid: None,
            streams: Vec::new(),
            audio: None,
            video: None,
            min_pts: None,
            start: None,
            held: VecDeque::new(),
            held_bytes: 0,
            max_pes,
            audio_es: AudioEs::default(),
            last_video_pts: None,
            video_step: 0,
            reported_oversize: false,
            lost_sync_bytes: 0,
            kept: None,
        }
    }

    /// A demuxer for one whole file, fed all its bytes at once: it keeps every PES, with no
    /// size cap and no file boundaries, for [`Self::into_program`].
    pub(super) fn whole_file(packet_size: usize, offset: usize) -> Self {
        Self {
            kept: Some(Vec::new()),
            ..Self::new(packet_size, offset, usize::MAX)
        }
    }

    /// After a whole file: whether a PAT was found, and each stream of the program with its
    /// PES in order.
    pub(super) fn into_program(self) -> (bool, Vec<(u16, Track, Vec<Pes>)>) {
        let mut streams: Vec<(u16, Track, Vec<Pes>)> = self
            .streams
            .into_iter()
            .map(|s| (s.pid, s.track, Vec::new()))
            .collect();
        for (idx, pes) in self.kept.unwrap_or_default() {
            if let Some(s) = streams.get_mut(idx) {
                s.2.push(pes);
            }
        }
        (self.pmt_pid.is_some(), streams)
    }

    /// Reads every whole packet waiting; at the end (`finishing`) a sync byte whose successor
    /// is past the data is trusted, as the file path trusts it at the end of a file.
    fn packets(&mut self, finishing: bool, out: &mut Vec<Event>) {
        if !self.started {
            if self.q.len() < self.offset {
                return;
            }
            self.q.consume(self.offset);
            self.started = true;
        }
        loop {
            let b = self.q.bytes();
            if b.len() < TS_PACKET {
                return;
            }
            if b[0] != 0x47 {
                // Lost sync: the next sync byte that repeats one packet later.
                let size = self.packet_size;
                let found = (1..b.len())
                    .find(|&i| b[i] == 0x47 && b.get(i + size).map_or(finishing, |&x| x == 0x47));
                let unsure = (1..b.len()).find(|&i| b[i] == 0x47 && b.get(i + size).is_none());
                match (found, unsure) {
                    (Some(i), Some(u)) if u < i => {
                        self.lost_sync_bytes += self.q.consume(u);
                        return;
                    }
                    (Some(i), _) => {
                        self.lost_sync_bytes += self.q.consume(i);
                        continue;
                    }
                    (None, Some(u)) => {
                        self.lost_sync_bytes += self.q.consume(u);
                        return;
                    }
                    (None, None) => {
                        let n = b.len();
                        self.lost_sync_bytes += self.q.consume(n);
                        return;
                    }
                }
            }
            let mut packet = [0u8; TS_PACKET];
            packet.copy_from_slice(&b[..TS_PACKET]);
            self.q.consume(self.packet_size);
            self.packet(&packet, out);
        }
    }

    fn packet(&mut self, packet: &[u8; TS_PACKET], out: &mut Vec<Event>) {
        let pusi = packet[1] & 0x40 != 0;
        let pid = (u16::from(packet[1] & 0x1f) << 8) | u16::from(packet[2]);
        let afc = (packet[3] >> 4) & 0x3;
        let mut payload_at = 4;
        let mut random_access = false;
        if afc & 0x2 != 0 {
            let len = usize::from(packet[4]);
            if len > 0 {
                random_access = packet[5] & 0x40 != 0;
            }
            payload_at = 5 + len;
        }
        if afc & 0x1 == 0 || payload_at >= TS_PACKET {
            return;
        }
        let payload = &packet[payload_at..];
        if pid == 0 {
            if pusi && self.pmt_pid.is_none() {
                self.pmt_pid = parse_pat(payload);
            }
            return;
        }
        if Some(pid) == self.pmt_pid {
            if pusi && self.streams.is_empty() {
                self.streams = parse_pmt(payload);
                if !self.streams.is_empty() {
                    self.program(out);
                }
            }
            return;
        }
        let Some(idx) = self.streams.iter().position(|s| s.pid == pid) else {
            return;
        };
        if pusi {
            if let Some(done) = self.streams[idx].partial.take() {
                self.pes(idx, done, out);
            }
            // A PES header that does not parse starts nothing; its continuation is dropped.
            self.streams[idx].partial = parse_pes_header(payload).map(|(pts, body)| Pes {
                pts,
                random_access,
                data: body.to_vec(),
            });
            if let Some(pts) = self.streams[idx].partial.as_ref().and_then(|p| p.pts) {
                // A whole file is one file: its earliest PTS is its start, whatever the clock does.
                if self.kept.is_none()
                    && self.streams[idx]
                        .last_pts
                        .is_some_and(|last| pts_delta(last, pts) < -DISCONTINUITY)
                {
                    self.next_file(idx, out);
                }
                let stream = &mut self.streams[idx];
                stream.pts_seen += 1;
                stream.last_pts = Some(pts);
                self.min_pts = Some(self.min_pts.map_or(pts, |m| m.min(pts)));
            }
        } else {
            let max = self.max_pes;
            if let Some(partial) = self.streams[idx].partial.as_mut() {
                if partial.data.len() + payload.len() > max {
                    // A PES larger than any picture: drop it rather than grow without bound.
                    self.streams[idx].partial = None;
                    if !self.reported_oversize {
                        self.reported_oversize = true;
                        out.push(Event::Problem(LiveProblem::Unreadable {
                            reason: format!("a PES packet over {max} bytes"),
                        }));
                    }
                } else {
                    partial.data.extend_from_slice(payload);
                }
            }
        }
    }

    /// The program's streams are known: say what the stream holds.
    fn program(&mut self, out: &mut Vec<Event>) {
        self.audio = self
            .streams
            .iter()
            .position(|s| s.track.kind == TrackKind::Audio);
        self.video = self
            .streams
            .iter()
            .position(|s| s.track.kind == TrackKind::Video);
        out.push(Event::Header {
            container: Container::MpegTs,
            has_video: self.video.is_some(),
            has_audio: self.audio.is_some(),
        });
        if let Some(a) = self.audio {
            let codec = &self.streams[a].track.codec;
            if !matches!(codec, Codec::Aac | Codec::Mp2 | Codec::Mp3) {
                out.push(Event::Problem(LiveProblem::Unsupported {
                    codec: codec.to_string(),
                }));
                self.audio = None;
            }
        }
    }

    /// The clock jumped back: the stream is a run of self-contained files (each muxed from
    /// its own start), and a PES of the next one has just begun on stream `idx`. What the other
    /// streams were assembling belongs to the file that ended; timing starts over.
    fn next_file(&mut self, idx: usize, out: &mut Vec<Event>) {
        for other in (0..self.streams.len()).filter(|&j| j != idx) {
            if let Some(done) = self.streams[other].partial.take() {
                self.pes(other, done, out);
            }
        }
        if self.start.is_none() {
            self.release(out);
        }
        self.audio_frames(true, out);
        out.push(Event::NewFile);
        self.start = None;
        self.min_pts = None;
        self.audio_es = AudioEs::default();
        self.last_video_pts = None;
        self.video_step = 0;
        for s in &mut self.streams {
            s.pts_seen = 0;
            s.last_pts = None;
        }
    }

    /// A completed PES: held until the start is known, then handled.
    fn pes(&mut self, idx: usize, pes: Pes, out: &mut Vec<Event>) {
        if let Some(kept) = self.kept.as_mut() {
            kept.push((idx, pes));
            return;
        }
        if self.start.is_some() {
            return self.handle(idx, pes, out);
        }
        self.held_bytes += pes.data.len();
        self.held.push_back((idx, pes));
        let all_started = self.streams.iter().all(|s| {
            s.pts_seen
                >= if s.track.kind == TrackKind::Video {
                    VIDEO_PTS_BEFORE_START
                } else {
                    1
                }
        });
        if all_started || self.held.len() >= MAX_HELD_PES || self.held_bytes > self.max_pes {
            self.release(out);
        }
    }

    /// Fixes the start at the earliest PTS seen and handles the held PES.
    fn release(&mut self, out: &mut Vec<Event>) {
        self.start = Some(self.min_pts.unwrap_or(0));
        self.held_bytes = 0;
        while let Some((idx, pes)) = self.held.pop_front() {
            self.handle(idx, pes, out);
        }
    }

    fn handle(&mut self, idx: usize, pes: Pes, out: &mut Vec<Event>) {
        let start = self.start.unwrap_or(0);
        if Some(idx) == self.video {
            if pes.data.is_empty() {
                return;
            }
            let pts = pes
                .pts
                .or_else(|| {
                    self.last_video_pts
                        .map(|p| p.saturating_add(self.video_step))
                })
                .unwrap_or(start);
            if let (Some(last), Some(now)) = (self.last_video_pts, pes.pts) {
                if now > last {
                    self.video_step = now - last;
                }
            }
            self.last_video_pts = Some(pts);
            let codec = &self.streams[idx].track.codec;
            let keyframe = es::is_keyframe(codec, &pes.data).unwrap_or(pes.random_access);
            let frame = VideoFrameInfo {
                pts: since(pts, start),
                size: u32::try_from(pes.data.len()).unwrap_or(u32::MAX),
                keyframe,
            };
            out.push(Event::Video(frame, None));
        } else if Some(idx) == self.audio {
            if self.audio_es.first_pts.is_none() {
                self.audio_es.first_pts = pes.pts;
            }
            self.audio_es.buf.extend_from_slice(&pes.data);
            self.audio_frames(false, out);
        }
    }

    /// Cuts the complete audio frames out of the elementary stream. At the end (`at_end`) a
    /// header whose frame runs past the data is skipped byte by byte, as the file path does.
    fn audio_frames(&mut self, at_end: bool, out: &mut Vec<Event>) {
        let Some(a) = self.audio else {
            return;
        };
        let aac = self.streams[a].track.codec == Codec::Aac;
        let buf = std::mem::take(&mut self.audio_es.buf);
        let mut at = 0usize;
        loop {
            let rest = &buf[at..];
            let frame = if aac {
                if rest.len() < 7 {
                    break;
                }
                match es::adts_header(rest) {
                    Some((header_len, frame_len, profile, sr, ch)) if frame_len <= rest.len() => {
                        if !self.audio_es.setup_done {
                            self.aac_setup(profile, sr, ch, out);
                        }
                        Some((&rest[header_len..frame_len], frame_len))
                    }
                    Some(_) if !at_end => break,
                    _ => None,
                }
            } else {
                let Some(h) = rest.get(..4) else { break };
                let h = [h[0], h[1], h[2], h[3]];
                match mpeg_audio_header(h) {
                    Some((len, _, rate)) if len <= rest.len() => {
                        if !self.audio_es.setup_done {
                            self.mpeg_setup(h, rate, out);
                        }
                        Some((&rest[..len], len))
                    }
                    Some(_) if !at_end => break,
                    _ => None,
                }
            };
            match frame {
                Some((data, len)) => {
                    if self.audio.is_some() {
                        out.push(Event::Audio(Packet::new(
                            0,
                            Timestamp::new(0),
                            SymDuration::new(0),
                            data,
                        )));
                    }
                    at += len;
                }
                None => at += 1,
            }
        }
        self.audio_es.buf = buf;
        self.audio_es.buf.drain(..at);
    }

    /// Silence before the audio: how far its first PTS is after the start.
    fn audio_lead(&self) -> (u64, u32) {
        match (self.start, self.audio_es.first_pts) {
            (Some(start), Some(first)) => ((since(first, start) * CLOCK) as u64, 90_000),
            _ => (0, 1),
        }
    }

    fn aac_setup(&mut self, profile: u8, sr: u8, ch: u8, out: &mut Vec<Event>) {
        self.audio_es.setup_done = true;
        let object_type = u16::from(profile) + 1;
        let asc = ((object_type << 11) | (u16::from(sr) << 7) | (u16::from(ch) << 3)).to_be_bytes();
        let rate = es::aac_rate(sr).unwrap_or(0);
        self.emit_setup(&Codec::Aac, rate, u16::from(ch), Some(Box::new(asc)), out);
    }

    fn mpeg_setup(&mut self, h: [u8; 4], rate: u32, out: &mut Vec<Event>) {
        self.audio_es.setup_done = true;
        let codec = if mpeg_audio_layer(h[1]) == 2 {
            Codec::Mp2
        } else {
            Codec::Mp3
        };
        let channels = if h[3] >> 6 == 3 { 1 } else { 2 };
        self.emit_setup(&codec, rate, channels, None, out);
    }

    fn emit_setup(
        &mut self,
        codec: &Codec,
        rate: u32,
        channels: u16,
        extra: Option<Box<[u8]>>,
        out: &mut Vec<Event>,
    ) {
        match symphonia_params(codec, rate, channels, extra) {
            Ok(params) => out.push(Event::AudioSetup(AudioSetup {
                codec: AudioCodec::Symphonia(params),
                skip: (0, 1),
                lead: self.audio_lead(),
            })),
            Err(e) => {
                out.push(Event::Problem(LiveProblem::from_media(&e)));
                self.audio = None;
            }
        }
    }
}

impl Demuxer for TsDemuxer {
    fn feed(&mut self, data: &[u8], out: &mut Vec<Event>) {
        self.q.extend(data);
        self.lost_sync_bytes = 0;
        self.packets(false, out);
        if self.lost_sync_bytes > 0 {
            out.push(Event::Problem(LiveProblem::Unreadable {
                reason: format!("{} bytes outside transport packets", self.lost_sync_bytes),
            }));
        }
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        self.packets(true, out);
        for idx in 0..self.streams.len() {
            if let Some(done) = self.streams[idx].partial.take() {
                self.pes(idx, done, out);
            }
        }
        if self.start.is_none() {
            self.release(out);
        }
        self.audio_frames(true, out);
        self.q.clear();
    }

    fn pending_bytes(&self) -> usize {
        let partial: usize = self
            .streams
            .iter()
            .filter_map(|s| s.partial.as_ref().map(|p| p.data.len()))
            .sum();
        self.q.len() + partial + self.held_bytes + self.audio_es.buf.len()
    }
}

/// The elementary streams of a PMT section, by the file path's stream-type table.
fn parse_pmt(payload: &[u8]) -> Vec<Stream> {
    pmt_tracks(payload)
        .into_iter()
        .map(|(pid, track)| Stream {
            pid,
            track,
            partial: None,
            pts_seen: 0,
            last_pts: None,
        })
        .collect()
}

/// `to - from` in PTS ticks across a 33-bit wrap, in `[-2^32, 2^32)`.
fn pts_delta(from: u64, to: u64) -> i64 {
    const WRAP: i64 = 1 << 33;
    let d = (to as i64 - from as i64).rem_euclid(WRAP);
    if d >= WRAP / 2 {
        d - WRAP
    } else {
        d
    }
}

/// `pts - start` in seconds across a 33-bit wrap; a PTS before the start (a stream that began
/// earlier than the start fixed for the session) counts as the start.
pub(super) fn since(pts: u64, start: u64) -> f64 {
    const WRAP: u64 = 1 << 33;
    let delta = if pts >= start {
        pts - start
    } else {
        pts + WRAP - start
    };
    if delta >= WRAP / 2 {
        return 0.0;
    }
    delta as f64 / CLOCK
}
