//! How a file or a stream is cut into analysis windows.
//!
//! Every analysis in Attune runs on fixed-length windows laid end to end from
//! media time 0: `[0,5) [5,10) [10,15) ...` for the 5 s windows existing
//! clients expect (`window_seconds: 5.0` in a job result). Only the last window
//! of a file or stream can differ from the fixed length, by this rule:
//!
//! - a trailing remainder of at least [`WindowPlan::min_window_seconds`] (1 s
//!   for [`WindowPlan::UPLOAD`]) becomes its own shorter window ending at the
//!   media duration;
//! - a shorter remainder is folded into the previous window, which then ends at
//!   the media duration (at most `window + min` long), so no window is shorter
//!   than the minimum: a sliver of media carries too little evidence to be
//!   analyzed on its own;
//! - media shorter than one window is a single window spanning all of it (the
//!   only case a window may be shorter than the minimum);
//! - a duration of 0, a negative one or a non-finite one gives no windows.
//!
//! Streams use the same grid but cannot wait to see whether the stream ends
//! just after a window: a [`StreamWindower`] releases each full window the
//! moment media time reaches its end, so events follow the media without
//! delay. When the stream ends, a remainder of at least the minimum becomes a
//! shorter final window; a shorter sliver after at least one full window is
//! not analyzed (the upload rule would have folded it into a window that was
//! already reported). A stream shorter than one window is one window, as for
//! uploads.

use crate::wire::Seconds;

/// One analysis window: its zero-based position and its span in media seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WindowSpan {
    /// Zero-based position of the window in the file or stream.
    pub index: u64,
    /// Start in seconds (inclusive).
    pub start: Seconds,
    /// End in seconds (exclusive, except for the last window, which ends at
    /// the media duration).
    pub end: Seconds,
}

impl WindowSpan {
    /// Length of the window in seconds.
    pub fn duration(&self) -> Seconds {
        self.end - self.start
    }
}

/// How media is cut into analysis windows: a fixed window length and the
/// shortest trailing remainder that still becomes a window of its own (see the
/// module docs for the whole rule).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WindowPlan {
    window_seconds: Seconds,
    min_window_seconds: Seconds,
}

impl WindowPlan {
    /// The plan of uploads and streams: 5 s windows, remainders under 1 s
    /// folded into the previous window.
    pub const UPLOAD: WindowPlan = WindowPlan {
        window_seconds: 5.0,
        min_window_seconds: 1.0,
    };

    /// A plan with another window length or minimum. `None` unless both are
    /// finite and `0 < min_window_seconds <= window_seconds`; a zero minimum
    /// would allow windows of no length at all.
    pub fn new(window_seconds: Seconds, min_window_seconds: Seconds) -> Option<WindowPlan> {
        let valid = window_seconds.is_finite()
            && min_window_seconds.is_finite()
            && min_window_seconds > 0.0
            && min_window_seconds <= window_seconds;
        valid.then_some(WindowPlan {
            window_seconds,
            min_window_seconds,
        })
    }

    /// The fixed window length, reported as `window_seconds` in a job result.
    pub fn window_seconds(&self) -> Seconds {
        self.window_seconds
    }

    /// The shortest trailing remainder that becomes a window of its own.
    pub fn min_window_seconds(&self) -> Seconds {
        self.min_window_seconds
    }

    /// How many windows media of `duration` seconds is cut into (0 for a
    /// duration that is not a positive finite number).
    pub fn window_count(&self, duration: Seconds) -> u64 {
        if !(duration.is_finite() && duration > 0.0) {
            return 0;
        }
        // `as` saturates, so an absurdly long duration cannot wrap around.
        let full = (duration / self.window_seconds).floor() as u64;
        if full == 0 {
            return 1;
        }
        // Rounding can make `full * window` exceed the duration by a hair; a
        // non-positive remainder is then "no remainder", which is the truth.
        let remainder = duration - full as f64 * self.window_seconds;
        if remainder >= self.min_window_seconds {
            full.saturating_add(1)
        } else {
            full
        }
    }

    /// The windows of media `duration` seconds long, in order.
    pub fn windows(&self, duration: Seconds) -> Windows {
        Windows {
            plan: *self,
            duration,
            next: 0,
            count: self.window_count(duration),
        }
    }

    /// An incremental windower for a stream cut by this plan.
    pub fn stream(&self) -> StreamWindower {
        StreamWindower::new(*self)
    }

    /// Window `index` of `count` windows over `duration`: every window but the
    /// last ends on the fixed grid, the last ends at the duration.
    fn span(&self, index: u64, count: u64, duration: Seconds) -> WindowSpan {
        let start = index as f64 * self.window_seconds;
        let end = if index + 1 >= count {
            duration
        } else {
            (index + 1) as f64 * self.window_seconds
        };
        WindowSpan { index, start, end }
    }
}

impl Default for WindowPlan {
    fn default() -> Self {
        WindowPlan::UPLOAD
    }
}

/// The windows of a whole file, from [`WindowPlan::windows`] or
/// [`StreamWindower::finish`].
#[derive(Debug, Clone)]
#[must_use = "iterators are lazy and do nothing unless read"]
pub struct Windows {
    plan: WindowPlan,
    duration: Seconds,
    next: u64,
    count: u64,
}

impl Iterator for Windows {
    type Item = WindowSpan;

    fn next(&mut self) -> Option<WindowSpan> {
        if self.next >= self.count {
            return None;
        }
        let span = self.plan.span(self.next, self.count, self.duration);
        self.next += 1;
        Some(span)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.count - self.next;
        match usize::try_from(left) {
            Ok(n) => (n, Some(n)),
            Err(_) => (usize::MAX, None),
        }
    }
}

/// Cuts a live stream into the windows of a [`WindowPlan`] as media arrives.
///
/// Feed it the cumulative media time with [`advance`](Self::advance); each
/// full window is released as soon as media time reaches its end. When the
/// stream ends, [`finish`](Self::finish) yields what is left by the rule in
/// the module docs.
#[derive(Debug, Clone)]
pub struct StreamWindower {
    plan: WindowPlan,
    media_time: Seconds,
    next_index: u64,
    finished: bool,
}

impl StreamWindower {
    /// A windower at media time 0 that has released nothing.
    pub fn new(plan: WindowPlan) -> StreamWindower {
        StreamWindower {
            plan,
            media_time: 0.0,
            next_index: 0,
            finished: false,
        }
    }

    /// The plan this windower cuts by.
    pub fn plan(&self) -> WindowPlan {
        self.plan
    }

    /// The furthest media time fed so far.
    pub fn media_time(&self) -> Seconds {
        self.media_time
    }

    /// Index of the next window to be released.
    pub fn next_index(&self) -> u64 {
        self.next_index
    }

    /// Moves media time to `media_time` and yields the windows that closed.
    ///
    /// Media time never goes backwards: a smaller, negative or non-finite value
    /// is ignored. A jump ahead releases every window it spans, lazily; windows
    /// the caller leaves unread are yielded by the next call (or by
    /// [`finish`](Self::finish)), never lost. After `finish` nothing is yielded.
    pub fn advance(&mut self, media_time: Seconds) -> ClosedWindows<'_> {
        if !self.finished && media_time.is_finite() && media_time > self.media_time {
            self.media_time = media_time;
        }
        ClosedWindows { windower: self }
    }

    /// Ends the stream at the media time fed so far and returns the windows
    /// not yet released: any full ones left unread, then the final partial
    /// window if the rule in the module docs gives one. Later calls to
    /// `advance` or `finish` yield nothing.
    pub fn finish(&mut self) -> Vec<WindowSpan> {
        let mut rest: Vec<WindowSpan> = self.advance(self.media_time).collect();
        if self.finished {
            return rest;
        }
        self.finished = true;
        let start = self.next_index as f64 * self.plan.window_seconds;
        let remainder = self.media_time - start;
        let only_window = self.next_index == 0 && remainder > 0.0;
        if only_window || remainder >= self.plan.min_window_seconds {
            rest.push(WindowSpan {
                index: self.next_index,
                start,
                end: self.media_time,
            });
            self.next_index += 1;
        }
        rest
    }

    /// The next full window if media time has reached its end.
    fn release(&mut self) -> Option<WindowSpan> {
        if self.finished {
            return None;
        }
        let start = self.next_index as f64 * self.plan.window_seconds;
        let end = (self.next_index + 1) as f64 * self.plan.window_seconds;
        if end > self.media_time {
            return None;
        }
        let span = WindowSpan {
            index: self.next_index,
            start,
            end,
        };
        self.next_index += 1;
        Some(span)
    }
}

/// The windows released by one [`StreamWindower::advance`].
#[derive(Debug)]
#[must_use = "closed windows are released only as the iterator is read"]
pub struct ClosedWindows<'a> {
    windower: &'a mut StreamWindower,
}

impl Iterator for ClosedWindows<'_> {
    type Item = WindowSpan;

    fn next(&mut self) -> Option<WindowSpan> {
        self.windower.release()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn spans(duration: f64) -> Vec<(f64, f64)> {
        WindowPlan::UPLOAD
            .windows(duration)
            .map(|w| (w.start, w.end))
            .collect()
    }

    #[test]
    fn upload_windows_are_five_seconds_from_zero() {
        assert_eq!(WindowPlan::UPLOAD.window_seconds(), 5.0);
        assert_eq!(spans(15.0), vec![(0.0, 5.0), (5.0, 10.0), (10.0, 15.0)]);
        let indexes: Vec<u64> = WindowPlan::UPLOAD.windows(15.0).map(|w| w.index).collect();
        assert_eq!(indexes, vec![0, 1, 2]);
    }

    #[test]
    fn remainder_of_a_second_or_more_is_its_own_window() {
        assert_eq!(spans(11.0), vec![(0.0, 5.0), (5.0, 10.0), (10.0, 11.0)]);
        assert_eq!(spans(13.5), vec![(0.0, 5.0), (5.0, 10.0), (10.0, 13.5)]);
    }

    #[test]
    fn remainder_under_a_second_is_folded_into_the_previous_window() {
        assert_eq!(spans(10.4), vec![(0.0, 5.0), (5.0, 10.4)]);
        assert_eq!(spans(5.999), vec![(0.0, 5.999)]);
    }

    #[test]
    fn media_shorter_than_one_window_is_one_window() {
        assert_eq!(spans(3.2), vec![(0.0, 3.2)]);
        assert_eq!(spans(0.5), vec![(0.0, 0.5)]);
    }

    #[test]
    fn empty_negative_and_non_finite_durations_give_no_windows() {
        for d in [0.0, -0.0, -3.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(WindowPlan::UPLOAD.windows(d).count(), 0, "duration {d}");
            assert_eq!(WindowPlan::UPLOAD.window_count(d), 0, "duration {d}");
        }
    }

    #[test]
    fn huge_durations_do_not_panic() {
        let mut windows = WindowPlan::UPLOAD.windows(1e300);
        let first = windows.next().unwrap();
        assert_eq!((first.start, first.end), (0.0, 5.0));
        assert_eq!(WindowPlan::UPLOAD.window_count(1e300), u64::MAX);
    }

    #[test]
    fn plan_rejects_nonsense_lengths() {
        assert!(WindowPlan::new(5.0, 0.0).is_none());
        assert!(WindowPlan::new(5.0, 6.0).is_none());
        assert!(WindowPlan::new(f64::NAN, 1.0).is_none());
        assert!(WindowPlan::new(-5.0, -6.0).is_none());
        assert_eq!(WindowPlan::new(5.0, 1.0), Some(WindowPlan::UPLOAD));
    }

    #[test]
    fn stream_releases_a_window_the_moment_its_media_is_in() {
        let mut stream = WindowPlan::UPLOAD.stream();
        assert_eq!(stream.advance(4.99).count(), 0);
        let closed: Vec<WindowSpan> = stream.advance(5.0).collect();
        assert_eq!(
            closed,
            vec![WindowSpan {
                index: 0,
                start: 0.0,
                end: 5.0
            }]
        );
        assert_eq!(stream.advance(10.5).count(), 1);
        // The stream ends 0.5 s into the third window: too little to analyze,
        // and the window before it was already reported.
        assert!(stream.finish().is_empty());
        assert!(stream.finish().is_empty());
        assert_eq!(stream.advance(100.0).count(), 0);
    }

    #[test]
    fn a_stream_shorter_than_one_window_is_one_window() {
        let mut stream = WindowPlan::UPLOAD.stream();
        assert_eq!(stream.advance(0.4).count(), 0);
        let last: Vec<(f64, f64)> = stream.finish().iter().map(|w| (w.start, w.end)).collect();
        assert_eq!(last, vec![(0.0, 0.4)]);
    }

    #[test]
    fn stream_finish_yields_a_short_final_window() {
        let mut stream = WindowPlan::UPLOAD.stream();
        assert_eq!(stream.advance(12.0).count(), 2);
        let last: Vec<(f64, f64)> = stream.finish().iter().map(|w| (w.start, w.end)).collect();
        assert_eq!(last, vec![(10.0, 12.0)]);
    }

    #[test]
    fn stream_ignores_backward_and_non_finite_time() {
        let mut stream = WindowPlan::UPLOAD.stream();
        assert_eq!(stream.advance(7.0).count(), 1);
        for t in [3.0, -1.0, f64::NAN, f64::INFINITY] {
            assert_eq!(stream.advance(t).count(), 0);
            assert_eq!(stream.media_time(), 7.0);
        }
        let last: Vec<(f64, f64)> = stream.finish().iter().map(|w| (w.start, w.end)).collect();
        assert_eq!(last, vec![(5.0, 7.0)]);
    }

    #[test]
    fn unread_stream_windows_are_not_lost() {
        let mut stream = WindowPlan::UPLOAD.stream();
        let _unread = stream.advance(21.0);
        let first: Vec<u64> = stream.advance(21.0).take(2).map(|w| w.index).collect();
        assert_eq!(first, vec![0, 1]);
        let rest: Vec<u64> = stream.finish().iter().map(|w| w.index).collect();
        assert_eq!(rest, vec![2, 3, 4]);
    }

    #[test]
    fn a_stream_that_never_advanced_has_no_windows() {
        let mut stream = WindowPlan::UPLOAD.stream();
        assert!(stream.finish().is_empty());
    }

    proptest! {
        #[test]
        fn windows_tile_the_media(duration in 0.001f64..2000.0) {
            let plan = WindowPlan::UPLOAD;
            let windows: Vec<WindowSpan> = plan.windows(duration).collect();
            prop_assert_eq!(windows.len() as u64, plan.window_count(duration));
            prop_assert_eq!(windows[0].start, 0.0);
            prop_assert_eq!(windows[windows.len() - 1].end, duration);
            for (i, pair) in windows.windows(2).enumerate() {
                prop_assert_eq!(pair[0].end, pair[1].start, "gap after window {}", i);
            }
            for (i, w) in windows.iter().enumerate() {
                prop_assert_eq!(w.index, i as u64);
                prop_assert!(w.duration() <= plan.window_seconds() + plan.min_window_seconds());
                if duration >= plan.min_window_seconds() {
                    prop_assert!(w.duration() >= plan.min_window_seconds(), "window {:?}", w);
                }
            }
            // The documented count: one window below the fixed length, else one
            // per full window plus one for a remainder of at least the minimum.
            let full = (duration / 5.0).floor();
            let expected = if full == 0.0 {
                1
            } else if duration - full * 5.0 >= 1.0 {
                full as usize + 1
            } else {
                full as usize
            };
            prop_assert_eq!(windows.len(), expected);
        }

        #[test]
        fn a_stream_matches_an_upload_except_for_a_final_sliver(
            steps in proptest::collection::vec(0.0f64..7.0, 0..40),
        ) {
            let plan = WindowPlan::UPLOAD;
            let mut stream = plan.stream();
            let mut time = 0.0;
            let mut emitted = Vec::new();
            for step in steps {
                time += step;
                emitted.extend(stream.advance(time));
            }
            emitted.extend(stream.finish());
            let upload: Vec<WindowSpan> = plan.windows(time).collect();
            // Every window but the upload's last is identical; the last differs
            // only when the upload folded a sliver under the minimum into it.
            let shared = upload.len().saturating_sub(1);
            prop_assert_eq!(&emitted[..shared.min(emitted.len())], &upload[..shared.min(emitted.len())]);
            prop_assert!(emitted.len() == upload.len());
            if let (Some(a), Some(b)) = (emitted.last(), upload.last()) {
                prop_assert_eq!(a.start, b.start);
                prop_assert!(b.end - a.end < plan.min_window_seconds() + 1e-9);
                prop_assert!(a.end <= time);
            }
            for pair in emitted.windows(2) {
                prop_assert_eq!(pair[0].end, pair[1].start);
            }
        }
    }
}
