//! The incremental pixel decoder: one backend per codec behind one interface, the sampler
//! that picks which pictures are converted, and the stream decode budget.

use std::fmt;

use super::scale::Plane;
use super::{h264, mjpeg, vpx, yuv};
use super::{EncodedVideoFrame, LumaFrame, NoPixelDecoder, Pic, RgbFilter, RgbFrame, VideoPicture};
use crate::info::Codec;

/// Pictures a decoder may hold back (for reordering) before the oldest pending frame is given
/// up as lost; H.264 never needs more than 16.
const MAX_PENDING: usize = 16;

enum Inner {
    H264(Box<h264::H264Decoder>),
    Vpx(Box<vpx::VpxDecoder>),
    Jpeg,
    /// H.264, VP8 or VP9 through libavcodec (the `ffmpeg` feature).
    #[cfg(feature = "ffmpeg")]
    Ff(Box<super::ffmpeg::FfDecoder>, Codec),
}

/// Which presented pictures are converted: at most `fps` a second of media, the first picture
/// at or after each tick. Frames other pictures predict from are still decoded (inter frames
/// need their references), and for them only conversion and scaling are saved; H.264
/// pictures nothing predicts from (`nal_ref_idc` 0) are not decoded at all.
#[derive(Debug, Clone, Copy)]
struct Sampler {
    interval: f64,
    next: f64,
}

impl Sampler {
    fn due(&self, pts: f64) -> bool {
        // A thousandth of a frame's slack so that 30 fps sampled at 10 fps takes every third;
        // a picture well before the last one taken means the clock jumped back: take it.
        pts >= self.next - self.interval * 1e-3 || pts < self.next - 2.0 * self.interval
    }

    fn mark(&mut self, pts: f64) {
        self.next = if pts - self.next >= self.interval || pts < self.next - self.interval {
            // A gap (or a jump back, as at a new file of a stream): restart the grid here.
            pts + self.interval
        } else {
            self.next + self.interval
        };
    }
}

/// The stream decode budget: a token bucket of decoded pixels refilled on the media clock.
#[derive(Debug, Clone, Copy)]
struct Budget {
    /// Pixels per second of media.
    rate: f64,
    tokens: f64,
    last_pts: Option<f64>,
    /// The budget ran out: frames are skipped up to the next key frame.
    awaiting_key: bool,
}

impl Budget {
    fn admit(&mut self, pts: f64, key: bool, cost: f64) -> bool {
        if let Some(last) = self.last_pts {
            if pts.is_finite() && pts > last {
                self.tokens = (self.tokens + (pts - last) * self.rate).min(self.rate);
            }
        }
        if pts.is_finite() {
            self.last_pts = Some(self.last_pts.map_or(pts, |l| l.max(pts)));
        }
        if self.awaiting_key && !key {
            return false;
        }
        if self.tokens < cost {
            // Skipping one inter frame breaks every frame up to the next key frame.
            self.awaiting_key = true;
            return false;
        }
        self.awaiting_key = false;
        self.tokens -= cost;
        true
    }
}

/// An incremental pixel decoder, fed one encoded frame at a time (a file's frames from
/// [`encoded_video`](crate::video::encoded_video), or a live reader's as they arrive). Gives
/// luma, and RGB when asked for ([`with_rgb`](Self::with_rgb)); converts only the frames its
/// sampler picks ([`with_sample_rate`](Self::with_sample_rate)) and, on streams, decodes within
/// a budget ([`with_pixel_budget`](Self::with_pixel_budget)).
///
/// Frames go in in decode order; pictures come out in presentation order, each stamped with
/// the time of the frame it came from. For H.264 with B-frames a picture can come out a few
/// frames after its own; [`finish`](Self::finish) returns those still held at the end.
pub struct LumaDecoder {
    inner: Inner,
    want: yuv::Want,
    /// Which sampled pictures' RGB is made ([`with_rgb_filter`](Self::with_rgb_filter)).
    rgb_filter: Option<ClockedFilter>,
    sampler: Option<Sampler>,
    budget: Option<Budget>,
    /// Pixels of the last picture, the cost charged to the budget per frame.
    frame_pixels: f64,
    /// Frames fed whose picture has not come out yet: (pts, presented).
    pending: Vec<(f64, bool)>,
    /// With libavcodec, the key each pending frame was sent with (same order as `pending`).
    #[cfg(feature = "ffmpeg")]
    keys: Vec<i64>,
    /// With libavcodec, the next frame's key.
    #[cfg(feature = "ffmpeg")]
    next_key: i64,
    /// Pictures out of the decoder not handed over yet (libavcodec can give two for one frame).
    #[cfg(feature = "ffmpeg")]
    ready: std::collections::VecDeque<VideoPicture>,
    skipped: usize,
    unsampled: usize,
    over_budget: usize,
}

impl fmt::Debug for LumaDecoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LumaDecoder")
            .field("codec", &self.codec_name())
            .field("want", &self.want)
            .field("rgb_filter", &self.rgb_filter.is_some())
            .field("pending", &self.pending.len())
            .field("skipped", &self.skipped)
            .field("unsampled", &self.unsampled)
            .field("over_budget", &self.over_budget)
            .finish()
    }
}

impl LumaDecoder {
    /// A decoder for a stream of `codec` with the container's codec configuration `config`
    /// (H.264: the `avcC` record from MP4/Matroska, frames then being length-prefixed; `None`
    /// for Annex B streams as in MPEG-TS and AVI, and for VP8, VP9 and JPEG), giving frames at
    /// most `target_width` pixels across.
    ///
    /// Errors: [`NoPixelDecoder`] for a codec this build has no pixel decoder for (see the
    /// module docs).
    pub fn new(
        codec: &Codec,
        config: Option<&[u8]>,
        target_width: u32,
    ) -> Result<Self, NoPixelDecoder> {
        let failed = |what: &str, e: String| NoPixelDecoder {
            codec: codec.clone(),
            reason: format!("{what} did not start: {e}"),
        };
        #[cfg(feature = "ffmpeg")]
        let ff = matches!(codec, Codec::H264 | Codec::Vp8 | Codec::Vp9)
            .then(|| super::ffmpeg::FfDecoder::new(codec, config).ok())
            .flatten();
        #[cfg(not(feature = "ffmpeg"))]
        let ff: Option<()> = None;
        let inner = match (codec, ff) {
            // libavcodec where the feature is on and it opened; the bundled decoders otherwise.
            #[cfg(feature = "ffmpeg")]
            (_, Some(ff)) => Inner::Ff(Box::new(ff), codec.clone()),
            (Codec::H264, _) => Inner::H264(Box::new(
                h264::H264Decoder::new(config).map_err(|e| failed("OpenH264", e.to_string()))?,
            )),
            (Codec::Vp8, _) => Inner::Vpx(Box::new(
                vpx::VpxDecoder::vp8().map_err(|e| failed("the VP8 decoder", e))?,
            )),
            (Codec::Vp9, _) => Inner::Vpx(Box::new(vpx::VpxDecoder::vp9())),
            (Codec::Mjpeg, _) => Inner::Jpeg,
            (other, _) => {
                return Err(NoPixelDecoder {
                    codec: other.clone(),
                    reason: "this build decodes only H.264, VP8, VP9 and Motion JPEG to pixels"
                        .into(),
                })
            }
        };
        Ok(Self {
            inner,
            want: yuv::Want {
                luma_width: to_usize(target_width),
                rgb_width: None,
            },
            rgb_filter: None,
            sampler: None,
            budget: None,
            frame_pixels: 0.0,
            pending: Vec::new(),
            #[cfg(feature = "ffmpeg")]
            keys: Vec::new(),
            #[cfg(feature = "ffmpeg")]
            next_key: 0,
            #[cfg(feature = "ffmpeg")]
            ready: std::collections::VecDeque::new(),
            skipped: 0,
            unsampled: 0,
            over_budget: 0,
        })
    }

    /// Also gives each picture as RGB8 at most `width` pixels across (aspect kept, never
    /// upscaled): [`VideoPicture::rgb`].
    #[must_use]
    pub fn with_rgb(mut self, width: u32) -> Self {
        self.want.rgb_width = Some(to_usize(width));
        self
    }

    /// Makes the RGB of a sampled picture ([`with_rgb`](Self::with_rgb)) only when `filter`,
    /// asked with the picture's luma, says so; the others come out with luma alone
    /// ([`VideoPicture::rgb`] `None`). `filter` is asked once per sampled picture, in
    /// presentation order, before the picture is handed over (with libavcodec, and at
    /// [`finish`](Self::finish), before the pictures ahead of it are), so a caller that
    /// mirrors its own sampling in the filter must keep the filter's state itself. Motion
    /// JPEG decodes to RGB before its luma exists and keeps the RGB of every sampled picture.
    #[must_use]
    pub fn with_rgb_filter(self, filter: RgbFilter) -> Self {
        self.with_rgb_filter_at(filter, 0.0)
    }

    /// [`with_rgb_filter`](Self::with_rgb_filter), the filter asked with each picture's time
    /// `offset` seconds later than the decoder's own (a caller that hands the pictures out on
    /// another clock, as a live reader hands a file's pictures out on its session's, asks on
    /// that clock).
    #[must_use]
    pub fn with_rgb_filter_at(mut self, filter: RgbFilter, offset: f64) -> Self {
        self.rgb_filter = Some(ClockedFilter { filter, offset });
        self
    }

    /// Converts at most `fps` pictures a second of media (the first at or after each tick of
    /// a `1/fps` grid); the others give no picture and are counted in
    /// [`unsampled`](Self::unsampled). They are still decoded when later frames may need them
    /// (H.264 non-reference pictures are not decoded at all). A rate that is not positive and finite samples
    /// everything.
    #[must_use]
    pub fn with_sample_rate(mut self, fps: f64) -> Self {
        self.sampler = (fps.is_finite() && fps > 0.0).then_some(Sampler {
            interval: 1.0 / fps,
            next: f64::NEG_INFINITY,
        });
        self
    }

    /// Decodes at most `pixels_per_second` picture pixels a second of media (a token bucket
    /// holding one second's worth, charged each frame the size of the last picture). A frame
    /// past the budget is not decoded, and neither is anything after it up to the next key
    /// frame (inter frames need it); those are counted in
    /// [`over_budget`](Self::over_budget). Meant for live streams, where a client chooses the
    /// resolution and frame rate; a value that is not positive and finite means no budget.
    #[must_use]
    pub fn with_pixel_budget(mut self, pixels_per_second: f64) -> Self {
        self.budget =
            (pixels_per_second.is_finite() && pixels_per_second > 0.0).then_some(Budget {
                rate: pixels_per_second,
                tokens: pixels_per_second,
                last_pts: None,
                awaiting_key: false,
            });
        self
    }

    /// Decodes one presented frame shown at `pts` seconds; returns the luma of the picture
    /// that comes out, if any (`None` also for a frame that did not decode, which is counted
    /// in [`skipped`](Self::skipped)).
    pub fn decode(&mut self, pts: f64, data: &[u8]) -> Option<LumaFrame> {
        self.feed(pts, true, None, data).map(|p| p.luma)
    }

    /// Decodes one frame of an [`EncodedVideo`](crate::video::EncodedVideo); frames that are
    /// not presented are decoded (later frames may need them; H.264 pictures nothing needs are
    /// skipped) but give no picture.
    pub fn decode_frame(&mut self, frame: &EncodedVideoFrame) -> Option<LumaFrame> {
        self.decode_picture(frame).map(|p| p.luma)
    }

    /// Like [`decode_frame`](Self::decode_frame), with the RGB picture when one was asked for.
    pub fn decode_picture(&mut self, frame: &EncodedVideoFrame) -> Option<VideoPicture> {
        self.feed(
            frame.pts,
            frame.presented,
            Some(frame.keyframe),
            &frame.data,
        )
    }

    /// Like [`decode`](Self::decode), with the RGB picture when one was asked for; `keyframe`
    /// as the container marks it (`None`: read from the frame's bytes), used by the budget.
    pub fn decode_bytes(
        &mut self,
        pts: f64,
        keyframe: Option<bool>,
        data: &[u8],
    ) -> Option<VideoPicture> {
        self.feed(pts, true, keyframe, data)
    }

    /// The luma pictures the decoder still holds at the end of the stream.
    pub fn finish(&mut self) -> Vec<LumaFrame> {
        self.finish_pictures().into_iter().map(|p| p.luma).collect()
    }

    /// The pictures the decoder still holds at the end of the stream.
    pub fn finish_pictures(&mut self) -> Vec<VideoPicture> {
        #[cfg(feature = "ffmpeg")]
        if let Inner::Ff(..) = self.inner {
            return self.ff_finish();
        }
        let Inner::H264(decoder) = &mut self.inner else {
            return Vec::new();
        };
        let (pending, sampler, want) = (&mut self.pending, &mut self.sampler, self.want);
        let filter = &mut self.rgb_filter;
        let mut order = Vec::new();
        let converted = decoder.flush(|yuv| {
            let (pts, presented) = pop_earliest(pending)?;
            order.push((pts, presented));
            let due = presented && sampler.as_ref().is_none_or(|s| s.due(pts));
            if !due {
                return None;
            }
            if let Some(s) = sampler.as_mut() {
                s.mark(pts);
            }
            yuv::convert_with(yuv, want, &mut keep_rgb(filter, pts))
        });
        let mut out = Vec::new();
        for ((pts, presented), picture) in order.into_iter().zip(converted) {
            match picture {
                Some(c) => out.push(picture_at(pts, c)),
                None if presented => self.unsampled += 1,
                None => {}
            }
        }
        self.skipped += self.pending.len();
        self.pending.clear();
        out
    }

    /// Frames that did not decode so far.
    pub fn skipped(&self) -> usize {
        self.skipped
    }

    /// Presented frames passed over by the sampler so far (decoded unless no other picture
    /// needs them: H.264 non-reference pictures are then skipped whole).
    pub fn unsampled(&self) -> usize {
        self.unsampled
    }

    /// Frames not decoded because the budget ran out, so far.
    pub fn over_budget(&self) -> usize {
        self.over_budget
    }

    fn codec_name(&self) -> &'static str {
        match &self.inner {
            Inner::H264(_) => "h264",
            Inner::Vpx(v) => match **v {
                vpx::VpxDecoder::Vp8(_) => "vp8",
                vpx::VpxDecoder::Vp9(_) => "vp9",
            },
            Inner::Jpeg => "mjpeg",
            #[cfg(feature = "ffmpeg")]
            Inner::Ff(_, codec) => match codec {
                Codec::H264 => "h264 (libavcodec)",
                Codec::Vp8 => "vp8 (libavcodec)",
                _ => "vp9 (libavcodec)",
            },
        }
    }

    fn is_keyframe(&self, data: &[u8]) -> bool {
        match &self.inner {
            Inner::H264(d) => d.is_idr(data),
            Inner::Vpx(v) => match **v {
                // RFC 6386 9.1: bit 0 of the frame tag is 0 on key frames.
                vpx::VpxDecoder::Vp8(_) => data.first().is_some_and(|b| b & 1 == 0),
                vpx::VpxDecoder::Vp9(_) => vpx::vp9_is_key(data),
            },
            Inner::Jpeg => true,
            #[cfg(feature = "ffmpeg")]
            Inner::Ff(d, codec) => match codec {
                Codec::H264 => d.framing().is_some_and(|f| f.is_idr(data)),
                Codec::Vp8 => data.first().is_some_and(|b| b & 1 == 0),
                _ => vpx::vp9_is_key(data),
            },
        }
    }

    fn due(&self, pts: f64, presented: bool) -> Option<yuv::Want> {
        let due = presented && self.sampler.as_ref().is_none_or(|s| s.due(pts));
        due.then_some(self.want)
    }

    /// Whether a picture shown at `pts`, fed now, will be converted when it comes out: the
    /// sampler is run on a copy over the pictures still held that come out before it
    /// (presentation order). A picture fed later but shown earlier (not seen in the streams
    /// encoders write, where a non-reference picture is the last of its group to be decoded)
    /// could shift the sampling by one picture; it cannot make any picture decode wrongly.
    fn would_sample(&self, pts: f64, presented: bool) -> bool {
        if !presented {
            return false;
        }
        let Some(mut sampler) = self.sampler else {
            return true;
        };
        let mut earlier: Vec<f64> = self
            .pending
            .iter()
            .filter(|&&(q, shown)| shown && q < pts)
            .map(|&(q, _)| q)
            .collect();
        earlier.sort_by(f64::total_cmp);
        for q in earlier {
            if sampler.due(q) {
                sampler.mark(q);
            }
        }
        sampler.due(pts)
    }

    fn shown(&mut self, pts: f64, picture: Option<yuv::Converted>) -> Option<VideoPicture> {
        let Some(c) = picture else {
            self.unsampled += 1;
            return None;
        };
        if let Some(s) = self.sampler.as_mut() {
            s.mark(pts);
        }
        Some(picture_at(pts, c))
    }

    fn feed(
        &mut self,
        pts: f64,
        presented: bool,
        keyframe: Option<bool>,
        data: &[u8],
    ) -> Option<VideoPicture> {
        // A frame without a usable time is decoded (others may need it) but never shown.
        let presented = presented && pts.is_finite();
        if data.is_empty() {
            self.skipped += 1;
            return None;
        }
        #[cfg(feature = "ffmpeg")]
        let disposable = match &self.inner {
            Inner::Ff(d, _) => d.framing().is_some_and(|f| f.is_disposable(data)),
            _ => false,
        };
        #[cfg(feature = "ffmpeg")]
        if disposable && !self.would_sample(pts, presented) {
            self.unsampled += usize::from(presented);
            return None;
        }
        if let Inner::H264(decoder) = &self.inner {
            // A disposable picture (no other picture predicts from it) that the sampler will
            // pass over is not decoded at all: at 10 of 30 fps that spares most of the
            // non-reference B-frames libx264 and cameras write, a large share of the decode.
            // The header scan first: most pictures of a webcam stream are references, and
            // it spares them the sampler replay.
            if decoder.is_disposable(data) && !self.would_sample(pts, presented) {
                self.unsampled += usize::from(presented);
                return None;
            }
        }
        if self.budget.is_some() {
            let key = keyframe.unwrap_or_else(|| self.is_keyframe(data));
            let cost = self.frame_pixels;
            if let Some(budget) = self.budget.as_mut() {
                if !budget.admit(pts, key, cost) {
                    self.over_budget += 1;
                    return None;
                }
            }
        }
        match &mut self.inner {
            #[cfg(feature = "ffmpeg")]
            Inner::Ff(..) => self.ff_feed(pts, presented, data),
            Inner::Jpeg => {
                // Every JPEG stands alone: a frame the sampler passes over is not decoded.
                let Some(want) = self.due(pts, presented) else {
                    self.unsampled += usize::from(presented);
                    return None;
                };
                match mjpeg::decode(data, want) {
                    Some((pixels, c)) => {
                        self.frame_pixels = pixels as f64;
                        self.shown(pts, Some(c))
                    }
                    None => {
                        self.skipped += 1;
                        None
                    }
                }
            }
            Inner::Vpx(_) => {
                let want = self.due(pts, presented);
                let Inner::Vpx(decoder) = &mut self.inner else {
                    return None;
                };
                let result = decoder.decode(data, want, &mut keep_rgb(&mut self.rgb_filter, pts));
                match result {
                    Err(()) => {
                        self.skipped += 1;
                        None
                    }
                    Ok(Pic::Held) => None,
                    Ok(Pic::Out(pixels, _)) if !presented => {
                        self.frame_pixels = pixels as f64;
                        None
                    }
                    Ok(Pic::Out(pixels, picture)) => {
                        self.frame_pixels = pixels as f64;
                        self.shown(pts, picture)
                    }
                }
            }
            Inner::H264(decoder) => {
                // The picture that would come out now is this frame's, or with reordering the
                // earliest fed and not yet out: sample on that one's time.
                let (next_pts, next_presented) = if decoder.reorder_free() {
                    (pts, presented)
                } else {
                    self.pending
                        .iter()
                        .copied()
                        .chain([(pts, presented)])
                        .min_by(|a, b| a.0.total_cmp(&b.0))
                        .unwrap_or((pts, presented))
                };
                let due = next_presented && self.sampler.as_ref().is_none_or(|s| s.due(next_pts));
                let want = due.then_some(self.want);
                let Inner::H264(decoder) = &mut self.inner else {
                    return None;
                };
                let result =
                    decoder.decode(data, want, &mut keep_rgb(&mut self.rgb_filter, next_pts));
                match result {
                    Err(h264::FrameError::Corrupt) => {
                        self.skipped += 1;
                        None
                    }
                    Ok(Pic::Held) => {
                        self.pending.push((pts, presented));
                        if self.pending.len() > MAX_PENDING {
                            pop_earliest(&mut self.pending);
                            self.skipped += 1;
                        }
                        None
                    }
                    Ok(Pic::Out(pixels, picture)) => {
                        self.frame_pixels = pixels as f64;
                        let (pts, shown) = if decoder.reorder_free() {
                            // Without reordering the picture is this frame's; anything still
                            // pending never produced one.
                            self.skipped += self.pending.len();
                            self.pending.clear();
                            (pts, presented)
                        } else {
                            // Pictures leave in presentation order: this one is the earliest of
                            // the frames fed and not yet out.
                            self.pending.push((pts, presented));
                            pop_earliest(&mut self.pending)?
                        };
                        if shown {
                            self.shown(pts, picture)
                        } else {
                            None
                        }
                    }
                }
            }
        }
    }
}

#[cfg(feature = "ffmpeg")]
impl LumaDecoder {
    /// One frame through libavcodec: sent with a key, each picture out matched to its frame by
    /// that key, sampled on its own time (pictures leave in presentation order).
    fn ff_feed(&mut self, pts: f64, presented: bool, data: &[u8]) -> Option<VideoPicture> {
        let key = self.next_key;
        self.next_key += 1;
        self.pending.push((pts, presented));
        self.keys.push(key);
        let Inner::Ff(decoder, codec) = &mut self.inner else {
            return None;
        };
        let too_large = match codec {
            Codec::Vp8 => vpx::vp8_too_large(data),
            Codec::Vp9 => vpx::vp9_too_large(data),
            _ => false,
        };
        let mut outputs = Vec::new();
        let sent = if too_large {
            Err(())
        } else {
            let (want, sampler, pending, keys) = (
                self.want,
                &mut self.sampler,
                &mut self.pending,
                &mut self.keys,
            );
            let (unsampled, frame_pixels) = (&mut self.unsampled, &mut self.frame_pixels);
            let filter = &mut self.rgb_filter;
            decoder.decode(data, key, &mut |k, yuv| {
                take_picture(
                    k,
                    yuv,
                    want,
                    filter,
                    sampler,
                    pending,
                    keys,
                    unsampled,
                    frame_pixels,
                    &mut outputs,
                );
            })
        };
        if sent.is_err() {
            // The frame did not go in: it will never come out.
            if let Some(i) = self.keys.iter().position(|&k| k == key) {
                self.keys.swap_remove(i);
                self.pending.swap_remove(i);
            }
            self.skipped += 1;
        }
        while self.pending.len() > MAX_PENDING {
            // Held back longer than any stream reorders: given up as lost.
            let (i, _) = self
                .keys
                .iter()
                .enumerate()
                .min_by_key(|(_, &k)| k)
                .unwrap_or((0, &0));
            self.keys.swap_remove(i);
            self.pending.swap_remove(i);
            self.skipped += 1;
        }
        self.ready.extend(outputs);
        self.ready.pop_front()
    }

    fn ff_finish(&mut self) -> Vec<VideoPicture> {
        let mut outputs = Vec::new();
        if let Inner::Ff(decoder, _) = &mut self.inner {
            let (want, sampler, pending, keys) = (
                self.want,
                &mut self.sampler,
                &mut self.pending,
                &mut self.keys,
            );
            let (unsampled, frame_pixels) = (&mut self.unsampled, &mut self.frame_pixels);
            let filter = &mut self.rgb_filter;
            decoder.flush(&mut |k, yuv| {
                take_picture(
                    k,
                    yuv,
                    want,
                    filter,
                    sampler,
                    pending,
                    keys,
                    unsampled,
                    frame_pixels,
                    &mut outputs,
                );
            });
        }
        self.skipped += self.pending.len();
        self.pending.clear();
        self.keys.clear();
        self.ready.drain(..).chain(outputs).collect()
    }
}

/// A picture out of libavcodec with the key of its frame: converted if its frame is presented
/// and the sampler takes it.
#[cfg(feature = "ffmpeg")]
#[allow(clippy::too_many_arguments)] // the decoder's fields, borrowed apart from its backend
fn take_picture(
    key: i64,
    yuv: &yuv::Yuv<'_>,
    want: yuv::Want,
    filter: &mut Option<ClockedFilter>,
    sampler: &mut Option<Sampler>,
    pending: &mut Vec<(f64, bool)>,
    keys: &mut Vec<i64>,
    unsampled: &mut usize,
    frame_pixels: &mut f64,
    outputs: &mut Vec<VideoPicture>,
) {
    let Some(i) = keys.iter().position(|&k| k == key) else {
        return;
    };
    keys.swap_remove(i);
    let (pts, presented) = pending.swap_remove(i);
    *frame_pixels = (yuv.width * yuv.height) as f64;
    if !presented {
        return;
    }
    if !sampler.as_ref().is_none_or(|s| s.due(pts)) {
        *unsampled += 1;
        return;
    }
    if let Some(s) = sampler.as_mut() {
        s.mark(pts);
    }
    if let Some(c) = yuv::convert_with(yuv, want, &mut keep_rgb(filter, pts)) {
        outputs.push(picture_at(pts, c));
    }
}

/// An [`RgbFilter`] and the seconds added to a picture's time when it is asked.
struct ClockedFilter {
    filter: RgbFilter,
    offset: f64,
}

/// The question [`yuv::convert_with`] asks, put to `filter` about the picture shown at `pts`
/// (every picture's RGB is made without a filter).
fn keep_rgb(filter: &mut Option<ClockedFilter>, pts: f64) -> impl FnMut(&mut Plane) -> bool + '_ {
    move |plane| {
        let Some(ClockedFilter { filter, offset }) = filter.as_mut() else {
            return true;
        };
        let frame = LumaFrame {
            pts: pts + *offset,
            width: plane.width,
            height: plane.height,
            data: std::mem::take(&mut plane.data),
        };
        let keep = filter(&frame);
        plane.data = frame.data;
        keep
    }
}

fn to_usize(width: u32) -> usize {
    usize::try_from(width.max(1)).unwrap_or(usize::MAX)
}

fn pop_earliest(pending: &mut Vec<(f64, bool)>) -> Option<(f64, bool)> {
    let (i, _) = pending
        .iter()
        .enumerate()
        .min_by(|(_, a), (_, b)| a.0.total_cmp(&b.0))?;
    Some(pending.swap_remove(i))
}

fn picture_at(pts: f64, c: yuv::Converted) -> VideoPicture {
    VideoPicture {
        luma: LumaFrame {
            pts,
            width: c.luma.width,
            height: c.luma.height,
            data: c.luma.data,
        },
        rgb: c.rgb.map(|rgb| RgbFrame {
            pts,
            width: rgb.width,
            height: rgb.height,
            data: rgb.data,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::video::has_pixel_decoder;

    #[test]
    fn codecs_without_a_pixel_decoder_are_named() {
        for codec in [Codec::Mpeg4Part2, Codec::Mpeg2Video] {
            let err = LumaDecoder::new(&codec, None, 160).unwrap_err();
            assert_eq!(err.codec, codec);
            assert!(!has_pixel_decoder(&codec));
        }
        for codec in [Codec::H264, Codec::Vp8, Codec::Vp9, Codec::Mjpeg] {
            assert!(has_pixel_decoder(&codec));
            assert!(LumaDecoder::new(&codec, None, 160).is_ok());
        }
    }

    #[test]
    fn a_decoder_can_move_to_another_thread() {
        fn send<T: Send>(_: &T) {}
        for codec in [Codec::H264, Codec::Vp8, Codec::Vp9, Codec::Mjpeg] {
            send(&LumaDecoder::new(&codec, None, 160).unwrap());
        }
    }

    #[test]
    fn the_sampler_takes_the_first_picture_of_each_tick() {
        let mut s = Sampler {
            interval: 0.2,
            next: f64::NEG_INFINITY,
        };
        let mut taken = Vec::new();
        // 30 fps for one second, sampled at 5 fps.
        for i in 0..30 {
            let pts = f64::from(i) / 30.0;
            if s.due(pts) {
                s.mark(pts);
                taken.push(i);
            }
        }
        assert_eq!(taken, [0, 6, 12, 18, 24]);
        // A jump back of the clock restarts the grid there.
        assert!(s.due(0.1));
        s.mark(0.1);
        assert!(!s.due(0.2) && s.due(0.3));
    }

    #[test]
    fn empty_and_garbage_frames_are_counted_not_decoded() {
        let mut d = LumaDecoder::new(&Codec::H264, None, 160).unwrap();
        assert!(d.decode(0.0, &[]).is_none());
        assert!(d
            .decode(0.1, &[0, 0, 0, 1, 0x65, 0xff, 0x00, 0x13])
            .is_none());
        let _ = d.finish();
        assert!(d.skipped() >= 1);
        let mut j = LumaDecoder::new(&Codec::Mjpeg, None, 160).unwrap();
        assert!(j.decode(0.0, b"garbage").is_none());
        assert_eq!(j.skipped(), 1);
    }
}
