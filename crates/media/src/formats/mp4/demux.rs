//! The incremental MP4/MOV/fMP4 demuxer: top-level boxes parsed as their bytes arrive, the same
//! code for a whole file and for a fragmented stream (an init segment, then `moof` + `mdat`
//! pairs, cut anywhere).
//!
//! Only structure is read whole (`ftyp`, `moov`, `moof`; in a stream each up to the box cap);
//! every other box is skipped as it goes past, so a huge declared size never allocates. Bytes
//! are parsed where they arrive: only the start of a box that a feed cut off is copied, to wait
//! for the rest.
//!
//! The two inputs differ in how samples are reached and in what damage does ([`Input`]). A
//! whole file is at hand: its samples (sample tables and fragments) are collected with their
//! offsets and cut from the input afterwards ([`super::Mp4Reader`]), so a `moov` at the end
//! (progressive files as most cameras write them) and chunks out of file order read as well as
//! any; damage in its structure fails it (`ih5002`). A stream is cut as its `mdat` arrives: the
//! samples the preceding `moof` located are handed out as their bytes come in, and the bytes
//! between them are dropped; damage is reported and the demuxer resynchronises on the next
//! `moof`, `ftyp`, `moov` or `styp`.

use std::collections::VecDeque;

use super::audio::{audio_setup, packet};
use super::boxes::{bad, fourcc, header, Header};
use super::fragment::parse_moof;
use super::moov::{Movie, Sample, Timeline};
use crate::demux::{Event, LiveProblem, StepState, Stepper};
use crate::error::MediaError;
use crate::info::{Container, TrackKind, VideoFrameInfo};

/// The most samples one `moof` of a stream may describe (about 5 s of PCM at 48 kHz, one
/// sample per frame; compressed fragments hold a few hundred).
const MAX_FRAGMENT_SAMPLES: usize = 1 << 18;
/// The largest `ftyp` a stream may send.
const MAX_FTYP: u64 = 64 * 1024;

/// What the bytes are, which decides how samples are reached and what damage does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Input {
    /// One file of this many bytes, fed whole: samples are collected, not cut, and damage to
    /// the structure ends the read with an error.
    WholeFile(u64),
    /// A live stream, possibly several files one after another: samples are cut from each
    /// `mdat` as it arrives, damage is reported and the parser resynchronises.
    Stream,
}

/// Where the parser stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// At a top-level box header.
    Top,
    /// Inside a stream's `mdat` ending at this position (`None`: at the end of the stream).
    Mdat(Option<u64>),
    /// After damage in a stream: scanning for the next box that starts a file or fragment.
    Resync,
    /// A whole file read to its end or its damage: the rest is ignored.
    Done,
}

/// A whole file's structure, once it was read to its end.
pub(super) struct FileFacts {
    pub(super) container: Container,
    pub(super) movie: Movie,
    /// Input ranges `(start, length)` of the first `ftyp` and of the `moov`, whole.
    pub(super) ftyp: Option<(u64, u64)>,
    pub(super) moov: (u64, u64),
}

/// An incremental MP4 demuxer.
pub(crate) struct Mp4Demuxer {
    input: Input,
    /// Where it stands in its input: tail, position, bytes to skip, bytes dropped.
    steps: StepState,
    state: State,
    /// The largest structure box read (streams).
    max_box: u64,
    /// The current file's brand, its `ftyp` (streams: whole, for the audio setup) and where
    /// the first one lies (whole files).
    container: Container,
    ftyp: Option<Vec<u8>>,
    ftyp_at: Option<(u64, u64)>,
    moov_at: Option<(u64, u64)>,
    /// Input position where the current file began (origin of explicit base data offsets).
    file_start: u64,
    movie: Option<Movie>,
    /// Samples collected over a whole file, against its length.
    samples_total: usize,
    /// The stream's first audio (when its decoder could be set up) and video tracks.
    audio: Option<usize>,
    video: Option<(usize, Timeline)>,
    /// Samples of the current fragment not yet cut, per track in decode order.
    audio_samples: VecDeque<Sample>,
    video_samples: VecDeque<Sample>,
    /// What stopped a whole file.
    error: Option<MediaError>,
}

impl Mp4Demuxer {
    fn new(input: Input, max_box: u64) -> Self {
        Self {
            input,
            steps: StepState::default(),
            state: State::Top,
            max_box,
            container: Container::Mp4,
            ftyp: None,
            ftyp_at: None,
            moov_at: None,
            file_start: 0,
            movie: None,
            samples_total: 0,
            audio: None,
            video: None,
            audio_samples: VecDeque::new(),
            video_samples: VecDeque::new(),
            error: None,
        }
    }

    /// A demuxer for a live stream, reading no structure box larger than `max_box` bytes.
    pub(crate) fn stream(max_box: usize) -> Self {
        Self::new(Input::Stream, max_box as u64)
    }

    /// A demuxer for one whole file of `len` bytes, fed all of them.
    pub(super) fn whole_file(len: usize) -> Self {
        Self::new(Input::WholeFile(len as u64), u64::MAX)
    }

    /// A whole file's structure, after it was fed and finished.
    ///
    /// Errors: [`MediaError::Unreadable`] for damaged structure or no `moov`.
    pub(super) fn into_facts(self) -> Result<FileFacts, MediaError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        match (self.movie, self.moov_at) {
            (Some(movie), Some(moov)) => Ok(FileFacts {
                container: self.container,
                movie,
                ftyp: self.ftyp_at,
                moov,
            }),
            _ => Err(bad("no moov box")),
        }
    }

    /// Handles damage; returns the bytes to consume.
    fn damaged(&mut self, reason: impl Into<String>, out: &mut Vec<Event>) -> usize {
        if let Input::WholeFile(_) = self.input {
            if self.error.is_none() {
                self.error = Some(bad(reason));
            }
            self.state = State::Done;
            return 0;
        }
        self.state = State::Resync;
        self.audio_samples.clear();
        self.video_samples.clear();
        self.steps.unreadable(reason, out)
    }

    /// Scans a stream for the next box that starts a file or a fragment; `None` to wait.
    fn resync(&mut self, b: &[u8]) -> Option<usize> {
        let found = b.windows(8).position(|w| {
            matches!(&w[4..], b"moof" | b"ftyp" | b"moov" | b"styp")
                && u32::from_be_bytes([w[0], w[1], w[2], w[3]]) >= 8
        });
        match found {
            Some(i) => {
                self.steps.resync_dropped += i;
                self.state = State::Top;
                Some(i)
            }
            None => {
                // Keep what could be the start of a header cut by the frame boundary.
                let n = b.len() - b.len().min(7);
                self.steps.resync_dropped += n;
                (n > 0).then_some(n)
            }
        }
    }

    /// One step over the unconsumed bytes `b`: the bytes consumed (zero when only the state
    /// changed), or `None` to wait for more.
    fn step(&mut self, b: &[u8], out: &mut Vec<Event>) -> Option<usize> {
        if self.steps.skip > 0 {
            let n = usize::try_from(self.steps.skip)
                .unwrap_or(usize::MAX)
                .min(b.len());
            self.steps.skip -= n as u64;
            return (n > 0).then_some(n);
        }
        match self.state {
            State::Done => (!b.is_empty()).then_some(b.len()),
            State::Resync => self.resync(b),
            State::Mdat(end) => self.read_mdat(end, b, out),
            State::Top => self.top(b, out),
        }
    }

    /// A top-level box.
    fn top(&mut self, b: &[u8], out: &mut Vec<Event>) -> Option<usize> {
        let pos = self.steps.pos;
        let (kind, size, header_len) = match header(b) {
            Header::Incomplete => return None,
            Header::Invalid(kind) => {
                let reason = format!("box {} smaller than its header", fourcc(&kind));
                return Some(self.damaged(reason, out));
            }
            Header::Done(kind, size, len) => (kind, size, len),
        };
        let stream = self.input == Input::Stream;
        if stream && !kind.iter().all(|&x| x.is_ascii_graphic() || x == b' ') {
            return Some(self.damaged("invalid box header", out));
        }
        // A whole file's boxes must lie in it, but for a last `mdat` cut short (a truncated
        // download still has its index when `moov` comes first).
        let size = match self.input {
            Input::WholeFile(len) => {
                let rest = len.saturating_sub(pos);
                match size {
                    None => Some(rest),
                    Some(s) if s > rest && &kind == b"mdat" => Some(rest),
                    Some(s) if s > rest => {
                        let reason =
                            format!("box {} runs past the end of its parent", fourcc(&kind));
                        return Some(self.damaged(reason, out));
                    }
                    Some(s) => Some(s),
                }
            }
            Input::Stream => size,
        };
        let cap = match &kind {
            b"ftyp" if stream => MAX_FTYP,
            b"ftyp" | b"moov" | b"moof" => self.max_box,
            b"mdat" if stream => {
                if self.movie.is_none() {
                    out.push(Event::Problem(LiveProblem::MissingHeader {
                        reason: "media data before any init segment".into(),
                    }));
                }
                self.state = State::Mdat(size.map(|s| pos.saturating_add(s)));
                return Some(header_len);
            }
            _ => {
                let Some(size) = size else {
                    let reason = format!("box {} of unknown size", fourcc(&kind));
                    return Some(self.damaged(reason, out));
                };
                self.steps.skip = size - header_len as u64;
                return Some(header_len);
            }
        };
        let Some(size) = size.filter(|&s| s <= cap) else {
            return Some(self.damaged(format!("box {} too large", fourcc(&kind)), out));
        };
        let total = usize::try_from(size).unwrap_or(usize::MAX);
        if b.len() < total {
            return None;
        }
        let element = &b[..total];
        match &kind {
            b"ftyp" => self.ftyp(element, header_len, out),
            b"moov" => self.moov(element, header_len, out),
            _ => self.moof(&element[header_len..], out),
        }
        Some(total)
    }

    fn ftyp(&mut self, element: &[u8], header_len: usize, out: &mut Vec<Event>) {
        let pos = self.steps.pos;
        if self.input == Input::Stream {
            if self.movie.is_some() {
                out.push(Event::NewFile);
                self.reset_file();
            }
            self.file_start = pos;
            self.ftyp = Some(element.to_vec());
        } else if self.ftyp_at.is_some() {
            return;
        }
        self.ftyp_at = Some((pos, element.len() as u64));
        self.container = match element.get(header_len..header_len + 4) {
            Some(b"qt  ") => Container::Mov,
            Some(b"M4A " | b"M4B ") => Container::M4a,
            _ => Container::Mp4,
        };
    }

    /// Forgets a stream's current file, for the next one.
    fn reset_file(&mut self) {
        self.movie = None;
        self.ftyp = None;
        self.container = Container::Mp4;
        self.audio = None;
        self.video = None;
        self.audio_samples.clear();
        self.video_samples.clear();
    }

    fn moov(&mut self, element: &[u8], header_len: usize, out: &mut Vec<Event>) {
        let pos = self.steps.pos;
        let body = &element[header_len..];
        if let Input::WholeFile(len) = self.input {
            // The first movie box is the file's.
            if self.movie.is_none() {
                match Movie::parse(body, usize::try_from(len).unwrap_or(usize::MAX)) {
                    Ok(movie) => {
                        self.samples_total = movie.traks.iter().map(|t| t.samples.len()).sum();
                        self.movie = Some(movie);
                        self.moov_at = Some((pos, element.len() as u64));
                    }
                    Err(e) => {
                        self.error.get_or_insert(e);
                        self.state = State::Done;
                    }
                }
            }
            return;
        }
        if self.movie.is_some() {
            // A new init segment without its own ftyp: a new file all the same.
            out.push(Event::NewFile);
            self.reset_file();
        }
        if self.ftyp.is_none() {
            self.file_start = pos;
        }
        let limit = usize::try_from(self.max_box).unwrap_or(usize::MAX);
        let movie = match Movie::parse(body, limit) {
            Ok(movie) => movie,
            Err(e) => {
                self.damaged(format!("init segment: {e}"), out);
                return;
            }
        };
        let setup = match audio_setup(self.ftyp.as_deref(), element, &movie) {
            Ok(setup) => Some(setup),
            Err(MediaError::NoAudioStream) => None,
            Err(e) => {
                out.push(Event::Problem(LiveProblem::from_media(&e)));
                None
            }
        };
        if !movie.fragmented {
            out.push(Event::Problem(LiveProblem::Unreadable {
                reason: "an MP4 without fragments cannot be streamed; send it whole".into(),
            }));
        }
        self.audio = setup
            .is_some()
            .then(|| movie.first(TrackKind::Audio))
            .flatten();
        self.video = movie
            .first(TrackKind::Video)
            .and_then(|i| Some((i, movie.timeline(&movie.traks[i])?)));
        out.push(Event::Header {
            container: self.container,
            has_video: movie.first(TrackKind::Video).is_some(),
            has_audio: movie.first(TrackKind::Audio).is_some(),
        });
        if let Some(setup) = setup {
            out.push(Event::AudioSetup(setup));
        }
        self.movie = Some(movie);
    }

    fn moof(&mut self, body: &[u8], out: &mut Vec<Event>) {
        let pos = self.steps.pos;
        let (file_start, room) = match self.input {
            Input::WholeFile(len) => (
                0,
                usize::try_from(len)
                    .unwrap_or(usize::MAX)
                    .saturating_sub(self.samples_total),
            ),
            Input::Stream => (self.file_start, MAX_FRAGMENT_SAMPLES),
        };
        let Some(movie) = self.movie.as_mut() else {
            if self.input == Input::Stream {
                out.push(Event::Problem(LiveProblem::MissingHeader {
                    reason: "a movie fragment before any init segment".into(),
                }));
            }
            return;
        };
        let fragment = match parse_moof(movie, body, pos, file_start, room) {
            Ok(fragment) => fragment,
            Err(e) => {
                let reason = match e {
                    MediaError::Unreadable { reason, .. } => reason,
                    other => other.to_string(),
                };
                self.damaged(reason, out);
                return;
            }
        };
        if self.input == Input::Stream {
            self.audio_samples.clear();
            self.video_samples.clear();
            for (i, samples) in fragment {
                if self.audio == Some(i) {
                    self.audio_samples.extend(samples);
                } else if self.video.is_some_and(|(v, _)| v == i) {
                    self.video_samples.extend(samples);
                }
            }
        } else {
            for (i, samples) in fragment {
                self.samples_total += samples.len();
                movie.traks[i].samples.extend(samples);
            }
        }
    }

    /// Cuts out a stream's samples as their bytes arrive in its `mdat`.
    fn read_mdat(&mut self, end: Option<u64>, b: &[u8], out: &mut Vec<Event>) -> Option<usize> {
        let pos = self.steps.pos;
        if end.is_some_and(|e| pos >= e) {
            self.leave_mdat();
            return Some(0);
        }
        loop {
            // Per track in decode order; between tracks, in file order.
            let take_audio = match (self.audio_samples.front(), self.video_samples.front()) {
                (Some(a), Some(v)) => a.offset <= v.offset,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => {
                    return match end {
                        Some(e) => {
                            self.steps.skip = e - pos;
                            self.leave_mdat();
                            Some(0)
                        }
                        // An mdat to the end of the stream with nothing left to read.
                        None => (!b.is_empty()).then_some(b.len()),
                    };
                }
            };
            let queue = if take_audio {
                &mut self.audio_samples
            } else {
                &mut self.video_samples
            };
            let Some(&s) = queue.front() else {
                return Some(0);
            };
            let sample_end = s.offset.saturating_add(u64::from(s.size));
            if s.offset < pos
                || end.is_some_and(|e| sample_end > e)
                || u64::from(s.size) > self.max_box
            {
                // Outside this mdat or already behind: not in the stream as it is read.
                queue.pop_front();
                continue;
            }
            if s.offset > pos {
                let gap = usize::try_from(s.offset - pos)
                    .unwrap_or(usize::MAX)
                    .min(b.len());
                return (gap > 0).then_some(gap);
            }
            let size = s.size as usize;
            if b.len() < size {
                return None;
            }
            queue.pop_front();
            if take_audio {
                out.push(Event::Audio(packet(&b[..size])));
            } else if let Some(frame) = self.video_frame(&s) {
                out.push(Event::Video(frame, None));
            }
            return Some(size);
        }
    }

    fn leave_mdat(&mut self) {
        self.state = State::Top;
        self.audio_samples.clear();
        self.video_samples.clear();
    }

    /// A video sample as the file reader lists it, `None` when the edit list hides it.
    fn video_frame(&self, s: &Sample) -> Option<VideoFrameInfo> {
        let (_, timeline) = self.video?;
        let (pts, shown) = timeline.place(s);
        shown.then_some(VideoFrameInfo {
            pts,
            size: s.size,
            keyframe: s.sync,
        })
    }
}

impl Stepper for Mp4Demuxer {
    fn step(&mut self, b: &[u8], out: &mut Vec<Event>) -> Option<usize> {
        Mp4Demuxer::step(self, b, out)
    }

    fn steps(&self) -> &StepState {
        &self.steps
    }

    fn steps_mut(&mut self) -> &mut StepState {
        &mut self.steps
    }

    fn end(&mut self) {
        if let State::Mdat(_) = self.state {
            self.leave_mdat();
        }
    }
}
