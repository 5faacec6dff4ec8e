//! The self-contained HTML report of one file analysis: `attune analyze
//! --html` and `GET /v2/upload/jobs/{job_id}/report` render the same page.
//!
//! The page is one file with no scripts and no external resources, so it can
//! be mailed, archived or opened offline: every plot is inline SVG drawn
//! here, and the rationale of a detection is both a native SVG tooltip
//! (`<title>`) and a row of a table (tooltips do not print). Colours are
//! backed by text (legends, tables) and dash patterns, so a grey-scale print
//! still reads.
//!
//! The SVG elements carry stable classes and `data-` attributes (a
//! `signal-lane` per reported signal type, a `cqi-point` per CQI period) so
//! the browser test can count what a reader sees.

use attune_core::wire::{
    Dimension, EngagementLevel, Model, Probability, QualityValues, Seconds, SignalType,
    UploadJobResult,
};
use attune_cqi::Band;
use std::collections::BTreeMap;
use std::fmt::Write as _;

pub use crate::store::SpeakerTurn;

/// What the report shows: the job result and the facts around it.
#[derive(Debug, Clone, Copy)]
pub struct ReportInput<'a> {
    /// What was analyzed: a file name, or a job id.
    pub title: &'a str,
    /// The model that analyzed it.
    pub model: Model,
    /// The model's parameter-set version.
    pub params_version: &'a str,
    /// The analysis, as a v2 job holds it.
    pub result: &'a UploadJobResult,
    /// Speaker turns, when the caller knows them (a job completed before
    /// stores kept turns does not).
    pub turns: Option<&'a [SpeakerTurn]>,
    /// What was said, when the caller has a transcript (`attune analyze`; jobs keep none).
    pub transcript: Option<&'a [attune_core::transcript::Utterance]>,
    /// The language the speech was identified as, when it was (`attune analyze`).
    pub language: Option<&'a attune_core::transcript::SpokenLanguage>,
}

/// Share of the media's time in each engagement state, in
/// [`ENGAGEMENT_ORDER`]; zeros for a result without windows.
pub fn engagement_shares(result: &UploadJobResult) -> [(EngagementLevel, f64); 3] {
    let mut seconds = [0.0f64; 3];
    for window in &result.windows {
        let length = (window.end_seconds - window.start_seconds).max(0.0);
        let slot = ENGAGEMENT_ORDER
            .iter()
            .position(|level| *level == window.engagement_status)
            .unwrap_or(1);
        seconds[slot] += if length.is_finite() { length } else { 0.0 };
    }
    let total: f64 = seconds.iter().sum();
    let share = |s: f64| if total > 0.0 { s / total } else { 0.0 };
    [
        (ENGAGEMENT_ORDER[0], share(seconds[0])),
        (ENGAGEMENT_ORDER[1], share(seconds[1])),
        (ENGAGEMENT_ORDER[2], share(seconds[2])),
    ]
}

/// The order engagement states are listed in (report legend, batch CSV).
pub const ENGAGEMENT_ORDER: [EngagementLevel; 3] = [
    EngagementLevel::Engaged,
    EngagementLevel::Neutral,
    EngagementLevel::Disengaged,
];

/// The signal types detected in at least one window, in the interface's
/// order, with how many windows each was detected in.
pub fn signal_counts(result: &UploadJobResult) -> BTreeMap<SignalType, usize> {
    let mut counts = BTreeMap::new();
    for signal in result.windows.iter().flat_map(|w| &w.signals) {
        *counts.entry(signal.signal_type).or_insert(0) += 1;
    }
    counts
}

/// Width of every plot, in SVG user units (the page scales it to fit).
const WIDTH: f64 = 960.0;
/// Room for the lane labels on the left.
const LABEL_WIDTH: f64 = 160.0;
const RIGHT_MARGIN: f64 = 24.0;
const LANE_HEIGHT: f64 = 22.0;
const LANE_GAP: f64 = 6.0;
const AXIS_HEIGHT: f64 = 24.0;

const CSS: &str = r#"
:root { color-scheme: light; }
* { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1b1f24;
  max-width: 1000px; margin: 24px auto; padding: 0 16px; background: #fff; }
h1 { font-size: 1.5em; margin: 0 0 4px; }
h2 { font-size: 1.15em; margin: 28px 0 8px; border-bottom: 1px solid #d0d7de; padding-bottom: 4px; }
.sub { color: #57606a; margin: 0 0 16px; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 0; }
dl.facts dt { color: #57606a; } dl.facts dd { margin: 0; }
svg { width: 100%; height: auto; display: block; }
svg text { font: 12px system-ui, sans-serif; fill: #1b1f24; }
svg .axis text { fill: #57606a; font-size: 11px; }
.legend { display: flex; flex-wrap: wrap; gap: 4px 18px; font-size: 13px; color: #57606a; margin: 6px 0; }
.swatch { display: inline-block; width: 14px; height: 12px; vertical-align: -1px; margin-right: 5px;
  border: 1px solid #8c959f; }
table { border-collapse: collapse; width: 100%; font-size: 13px; margin-top: 8px; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid #d8dee4; vertical-align: top; }
th { background: #f6f8fa; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.empty { padding: 10px 12px; background: #f6f8fa; border-left: 4px solid #8c959f; }
footer { margin-top: 32px; color: #57606a; font-size: 12px; }
@media print {
  body { margin: 0; max-width: none; font-size: 12px; }
  figure, .legend, tr { break-inside: avoid; }
  h2 { break-after: avoid; }
}
"#;

/// The whole HTML page.
pub fn render(input: &ReportInput<'_>) -> String {
    let result = input.result;
    let mut page = String::with_capacity(32 * 1024);
    let title = format!("Attune report: {}", input.title);
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<h1>{}</h1>\n",
        escape(&title),
        escape(&title)
    );
    page.push_str("<p class=\"sub\">Engagement, social signals and Conversation Quality Index of one recording.</p>\n");
    facts(&mut page, input);

    page.push_str("<h2>Timeline</h2>\n");
    timeline(&mut page, input);

    if let Some(transcript) = input.transcript.filter(|t| !t.is_empty()) {
        page.push_str("<h2>What was said</h2>\n");
        transcript_table(&mut page, transcript);
    } else if let Some(language) = input.language.filter(|l| !l.transcribed()) {
        page.push_str("<h2>What was said</h2>\n");
        let _ = writeln!(
            page,
            "<p>Not transcribed: {}.</p>",
            escape(&language.describe())
        );
    }

    page.push_str("<h2>Signals</h2>\n");
    signal_table(&mut page, result);

    page.push_str("<h2>Conversation Quality Index</h2>\n");
    quality(&mut page, result);

    page.push_str(
        "<footer>Generated by Attune. Probabilities are low, medium or high; a window is 5 s of \
         media. Hover a shaded block for its rationale; the tables hold the same text.</footer>\n\
         </body>\n</html>\n",
    );
    page
}

fn facts(page: &mut String, input: &ReportInput<'_>) {
    let result = input.result;
    page.push_str("<dl class=\"facts\">\n");
    let mut fact = |name: &str, value: &str| {
        let _ = writeln!(page, "<dt>{name}</dt><dd>{}</dd>", escape(value));
    };
    fact("Analyzed", input.title);
    fact(
        "Duration",
        &format!(
            "{} ({} windows of {} s)",
            clock(result.duration_seconds),
            result.windows.len(),
            result.window_seconds
        ),
    );
    fact("Model", input.model.as_str());
    fact("Parameter set", input.params_version);
    let shares = engagement_shares(result)
        .iter()
        .map(|(level, share)| format!("{} {:.0}%", level.as_str(), share * 100.0))
        .collect::<Vec<_>>()
        .join(", ");
    fact("Engagement", &shares);
    if let Some(overall) = result
        .conversation_quality
        .as_ref()
        .and_then(|q| q.overall.as_ref())
    {
        fact(
            "Quality index",
            &format!(
                "{:.1} ({})",
                overall.quality_index,
                Band::of(overall.quality_index).label()
            ),
        );
    }
    if let Some(turns) = input.turns {
        let voices = turns.iter().map(|t| t.speaker).max().map_or(0, |s| s + 1);
        fact(
            "Speakers",
            &format!("{voices} voice(s), {} turn(s)", turns.len()),
        );
    }
    page.push_str("</dl>\n");
}

/// Maps media time to the plot's x coordinate.
struct TimeAxis {
    duration: Seconds,
}

impl TimeAxis {
    fn new(result: &UploadJobResult) -> TimeAxis {
        let last_window = result
            .windows
            .iter()
            .map(|w| w.end_seconds)
            .fold(0.0, f64::max);
        let duration = result.duration_seconds.max(last_window);
        TimeAxis {
            duration: if duration.is_finite() && duration > 0.0 {
                duration
            } else {
                1.0
            },
        }
    }

    fn x(&self, t: Seconds) -> f64 {
        let t = if t.is_finite() {
            t.clamp(0.0, self.duration)
        } else {
            0.0
        };
        LABEL_WIDTH + t / self.duration * (WIDTH - LABEL_WIDTH - RIGHT_MARGIN)
    }

    /// Tick spacing giving at most ten labelled ticks.
    fn step(&self) -> Seconds {
        const STEPS: [f64; 12] = [
            1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0,
        ];
        STEPS
            .iter()
            .copied()
            .find(|step| self.duration / step <= 10.0)
            .unwrap_or(3600.0)
    }

    /// Vertical grid lines and their time labels from `top` to `bottom`.
    fn draw(&self, svg: &mut String, top: f64, bottom: f64) {
        svg.push_str("<g class=\"axis\">");
        let step = self.step();
        let mut t = 0.0;
        while t <= self.duration + 1e-9 {
            let x = self.x(t);
            let _ = write!(
                svg,
                "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{:.1}\" y2=\"{bottom:.1}\" stroke=\"#d8dee4\"/>\
                 <text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                top,
                top - 6.0,
                clock(t)
            );
            t += step;
        }
        svg.push_str("</g>");
    }
}

fn engagement_colour(level: EngagementLevel) -> &'static str {
    match level {
        EngagementLevel::Engaged => "#2da44e",
        EngagementLevel::Neutral => "#afb8c1",
        EngagementLevel::Disengaged => "#cf222e",
    }
}

/// Fill opacity of a detection: the stronger the evidence, the darker.
fn probability_opacity(probability: Option<Probability>) -> f64 {
    match probability {
        Some(Probability::Low) => 0.3,
        Some(Probability::Medium) => 0.6,
        Some(Probability::High) | None => 1.0,
    }
}

const SIGNAL_COLOUR: &str = "#0969da";

fn lane_label(svg: &mut String, y: f64, text: &str) {
    let _ = write!(
        svg,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
        LABEL_WIDTH - 8.0,
        y + LANE_HEIGHT / 2.0 + 4.0,
        escape(text)
    );
}

fn lane_background(svg: &mut String, y: f64) {
    let _ = write!(
        svg,
        "<rect x=\"{LABEL_WIDTH:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{LANE_HEIGHT:.1}\" \
         fill=\"#f6f8fa\"/>",
        WIDTH - LABEL_WIDTH - RIGHT_MARGIN
    );
}

fn block(svg: &mut String, axis: &TimeAxis, span: (Seconds, Seconds), y: f64, style: &str) {
    let (x0, x1) = (axis.x(span.0), axis.x(span.1));
    let _ = write!(
        svg,
        "<rect x=\"{x0:.2}\" y=\"{y:.1}\" width=\"{:.2}\" height=\"{LANE_HEIGHT:.1}\" {style}>",
        (x1 - x0).max(0.5)
    );
}

fn timeline(page: &mut String, input: &ReportInput<'_>) {
    let result = input.result;
    let axis = TimeAxis::new(result);
    let counts = signal_counts(result);
    let speakers: Vec<u32> = {
        let mut voices: Vec<u32> = input
            .turns
            .unwrap_or_default()
            .iter()
            .map(|t| t.speaker)
            .collect();
        voices.sort_unstable();
        voices.dedup();
        voices
    };
    let rows = 1 + speakers.len() + counts.len();
    let top = AXIS_HEIGHT;
    let height = top + rows as f64 * (LANE_HEIGHT + LANE_GAP) + 4.0;
    let mut svg = String::new();
    let _ = write!(
        svg,
        "<figure><svg class=\"timeline\" viewBox=\"0 0 {WIDTH} {height:.0}\" role=\"img\" \
         aria-label=\"Engagement and signals over time\">"
    );
    axis.draw(&mut svg, top, height - 2.0);

    let mut y = top;
    svg.push_str("<g class=\"engagement-band\">");
    lane_label(&mut svg, y, "Engagement");
    for window in &result.windows {
        let level = window.engagement_status;
        block(
            &mut svg,
            &axis,
            (window.start_seconds, window.end_seconds),
            y,
            &format!(
                "fill=\"{}\" class=\"engagement\" data-state=\"{level}\"",
                engagement_colour(level)
            ),
        );
        let _ = write!(
            svg,
            "<title>{}: {level}</title></rect>",
            span_text(window.start_seconds, window.end_seconds)
        );
    }
    svg.push_str("</g>");
    y += LANE_HEIGHT + LANE_GAP;

    for speaker in &speakers {
        let _ = write!(svg, "<g class=\"speaker-lane\" data-speaker=\"{speaker}\">");
        lane_label(&mut svg, y, &format!("Voice {}", speaker + 1));
        lane_background(&mut svg, y);
        for turn in input
            .turns
            .unwrap_or_default()
            .iter()
            .filter(|t| t.speaker == *speaker)
        {
            block(
                &mut svg,
                &axis,
                (turn.start, turn.end),
                y + 4.0,
                "fill=\"#8250df\" height=\"14\"",
            );
            let _ = write!(
                svg,
                "<title>Voice {}: {}</title></rect>",
                speaker + 1,
                span_text(turn.start, turn.end)
            );
        }
        svg.push_str("</g>");
        y += LANE_HEIGHT + LANE_GAP;
    }

    for signal_type in counts.keys() {
        let _ = write!(
            svg,
            "<g class=\"signal-lane\" data-signal=\"{signal_type}\">"
        );
        lane_label(&mut svg, y, signal_type.as_str());
        lane_background(&mut svg, y);
        for window in &result.windows {
            for signal in window
                .signals
                .iter()
                .filter(|s| s.signal_type == *signal_type)
            {
                let probability = signal.probability.map_or("unknown", |p| p.as_str());
                block(
                    &mut svg,
                    &axis,
                    (signal.start, signal.end),
                    y,
                    &format!(
                        "fill=\"{SIGNAL_COLOUR}\" fill-opacity=\"{}\" stroke=\"#0550ae\" \
                         stroke-width=\"0.5\" class=\"detection\" data-probability=\"{probability}\"",
                        probability_opacity(signal.probability)
                    ),
                );
                let _ = write!(
                    svg,
                    "<title>{signal_type}, {}, {probability} probability: {}</title></rect>",
                    span_text(signal.start, signal.end),
                    escape(signal.rationale.as_deref().unwrap_or("no rationale given"))
                );
            }
        }
        svg.push_str("</g>");
        y += LANE_HEIGHT + LANE_GAP;
    }
    svg.push_str("</svg></figure>\n");
    page.push_str(&svg);

    page.push_str("<div class=\"legend\">");
    for level in ENGAGEMENT_ORDER {
        let _ = write!(
            page,
            "<span><span class=\"swatch\" style=\"background:{}\"></span>{level}</span>",
            engagement_colour(level)
        );
    }
    if !counts.is_empty() {
        for probability in Probability::ALL {
            let _ = write!(
                page,
                "<span><span class=\"swatch\" style=\"background:{SIGNAL_COLOUR};opacity:{}\"></span>\
                 {probability} probability</span>",
                probability_opacity(Some(*probability))
            );
        }
    }
    if input.turns.is_none() {
        page.push_str("<span>speaker turns: not known for this analysis</span>");
    }
    page.push_str("</div>\n");
    if counts.is_empty() {
        page.push_str(
            "<p class=\"empty no-signals\">No signals were detected in this recording.</p>\n",
        );
    }
}

/// The transcript beside the timeline: one row per utterance, with its time and voice.
fn transcript_table(page: &mut String, transcript: &[attune_core::transcript::Utterance]) {
    page.push_str(
        "<table class=\"transcript\">\n<thead><tr><th>Time</th><th>Voice</th><th>Words</th>\
         </tr></thead>\n<tbody>\n",
    );
    for u in transcript {
        let voice = u
            .speaker
            .map_or_else(|| "?".to_string(), |s| format!("speaker {}", s + 1));
        let _ = writeln!(
            page,
            "<tr><td class=\"num\">{:.1}-{:.1} s</td><td>{}</td><td>{}</td></tr>",
            u.start,
            u.end,
            escape(&voice),
            escape(&u.text)
        );
    }
    page.push_str("</tbody>\n</table>\n");
}

fn signal_table(page: &mut String, result: &UploadJobResult) {
    let detections: Vec<_> = result.windows.iter().flat_map(|w| &w.signals).collect();
    if detections.is_empty() {
        page.push_str(
            "<p class=\"empty no-signals\">No signals were detected in this recording, so there \
             is no rationale to show.</p>\n",
        );
        return;
    }
    page.push_str(
        "<table class=\"signals\">\n<thead><tr><th>Time</th><th>Signal</th><th>Probability</th>\
         <th>Evidence</th><th>Rationale</th></tr></thead>\n<tbody>\n",
    );
    for signal in detections {
        let modality = signal
            .modality
            .as_ref()
            .map(|m| m.iter().map(|m| m.as_str()).collect::<Vec<_>>().join(", "))
            .unwrap_or_default();
        let _ = writeln!(
            page,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            span_text(signal.start, signal.end),
            signal.signal_type,
            signal.probability.map_or("", |p| p.as_str()),
            escape(&modality),
            escape(signal.rationale.as_deref().unwrap_or(""))
        );
    }
    page.push_str("</tbody>\n</table>\n");
}

/// Dash pattern per dimension, so the lines stay apart in grey-scale print.
fn dimension_style(dimension: Dimension) -> (&'static str, &'static str) {
    match dimension {
        Dimension::Clarity => ("#0969da", "6 3"),
        Dimension::Authority => ("#bf3989", "2 3"),
        Dimension::Energy => ("#bc4c00", "8 3 2 3"),
        Dimension::Rapport => ("#1a7f37", "4 4"),
        Dimension::Learning => ("#8250df", "1 2"),
    }
}

fn quality(page: &mut String, result: &UploadJobResult) {
    let Some(quality) = &result.conversation_quality else {
        page.push_str("<p class=\"empty\">The CQI was not requested for this analysis.</p>\n");
        return;
    };
    if let Some(timeline) = quality.timeline.as_deref().filter(|t| !t.is_empty()) {
        quality_chart(page, result, timeline);
        page.push_str(
            "<table class=\"cqi\">\n<thead><tr><th>Period</th><th>Index</th><th>Band</th>",
        );
        for dimension in Dimension::ALL {
            let _ = write!(page, "<th>{dimension}</th>");
        }
        page.push_str("</tr></thead>\n<tbody>\n");
        for entry in timeline {
            quality_row(page, &span_text(entry.start, entry.end), &entry.values);
        }
        if let Some(overall) = &quality.overall {
            quality_row(page, "whole file", overall);
        }
        page.push_str("</tbody>\n</table>\n");
    } else if let Some(overall) = &quality.overall {
        page.push_str(
            "<p>No timeline was requested; the whole-file scores:</p>\n<table class=\"cqi\">\n\
             <thead><tr><th>Period</th><th>Index</th><th>Band</th>",
        );
        for dimension in Dimension::ALL {
            let _ = write!(page, "<th>{dimension}</th>");
        }
        page.push_str("</tr></thead>\n<tbody>\n");
        quality_row(page, "whole file", overall);
        page.push_str("</tbody>\n</table>\n");
    } else {
        page.push_str("<p class=\"empty\">The CQI timeline is empty.</p>\n");
    }
}

fn quality_row(page: &mut String, period: &str, values: &QualityValues) {
    let _ = write!(
        page,
        "<tr><td>{period}</td><td class=\"num\">{:.1}</td><td>{}</td>",
        values.quality_index,
        Band::of(values.quality_index).label()
    );
    for dimension in Dimension::ALL {
        let _ = write!(page, "<td class=\"num\">{:.0}</td>", values.get(*dimension));
    }
    page.push_str("</tr>\n");
}

fn quality_chart(
    page: &mut String,
    result: &UploadJobResult,
    timeline: &[attune_core::wire::TimelineEntry],
) {
    const PLOT_TOP: f64 = AXIS_HEIGHT;
    const PLOT_HEIGHT: f64 = 200.0;
    let axis = TimeAxis::new(result);
    let height = PLOT_TOP + PLOT_HEIGHT + 10.0;
    let y = |score: f64| {
        let score = if score.is_finite() {
            score.clamp(0.0, 100.0)
        } else {
            50.0
        };
        PLOT_TOP + (100.0 - score) / 100.0 * PLOT_HEIGHT
    };
    let mid = |entry: &attune_core::wire::TimelineEntry| axis.x((entry.start + entry.end) / 2.0);
    let mut svg = String::new();
    let _ = write!(
        svg,
        "<figure><svg class=\"cqi-chart\" viewBox=\"0 0 {WIDTH} {height:.0}\" role=\"img\" \
         aria-label=\"Conversation Quality Index per period\">"
    );
    axis.draw(&mut svg, PLOT_TOP, PLOT_TOP + PLOT_HEIGHT);
    // Horizontal lines at the band boundaries, labelled with the band above.
    svg.push_str("<g class=\"axis\">");
    for (score, label) in [
        (0.0, "0"),
        (30.0, "30 below average"),
        (50.0, "50 moderate"),
        (65.0, "65 good"),
        (80.0, "80 excellent"),
        (100.0, "100"),
    ] {
        let line_y = y(score);
        let _ = write!(
            svg,
            "<line x1=\"{LABEL_WIDTH}\" x2=\"{:.1}\" y1=\"{line_y:.1}\" y2=\"{line_y:.1}\" \
             stroke=\"#d8dee4\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{label}</text>",
            WIDTH - RIGHT_MARGIN,
            LABEL_WIDTH - 8.0,
            line_y + 4.0
        );
    }
    svg.push_str("</g>");

    for dimension in Dimension::ALL {
        let (colour, dash) = dimension_style(*dimension);
        let points = timeline
            .iter()
            .map(|e| format!("{:.1},{:.1}", mid(e), y(e.values.get(*dimension))))
            .collect::<Vec<_>>()
            .join(" ");
        let _ = write!(
            svg,
            "<polyline class=\"cqi-line\" data-series=\"{dimension}\" points=\"{points}\" \
             fill=\"none\" stroke=\"{colour}\" stroke-width=\"1.6\" stroke-dasharray=\"{dash}\">\
             <title>{}</title></polyline>",
            dimension.title()
        );
    }
    let points = timeline
        .iter()
        .map(|e| format!("{:.1},{:.1}", mid(e), y(e.values.quality_index)))
        .collect::<Vec<_>>()
        .join(" ");
    let _ = write!(
        svg,
        "<polyline class=\"cqi-line\" data-series=\"quality_index\" points=\"{points}\" \
         fill=\"none\" stroke=\"#1b1f24\" stroke-width=\"3\"/>"
    );
    for entry in timeline {
        let _ = write!(
            svg,
            "<circle class=\"cqi-point\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\" fill=\"#1b1f24\">\
             <title>{}: quality index {:.1} ({})</title></circle>",
            mid(entry),
            y(entry.values.quality_index),
            span_text(entry.start, entry.end),
            entry.values.quality_index,
            Band::of(entry.values.quality_index).label()
        );
    }
    svg.push_str("</svg></figure>\n");
    page.push_str(&svg);

    page.push_str(
        "<div class=\"legend\"><span><span class=\"swatch\" style=\"background:#1b1f24\"></span>\
         quality index (points: one per period)</span>",
    );
    for dimension in Dimension::ALL {
        let (colour, _) = dimension_style(*dimension);
        let _ = write!(
            page,
            "<span><span class=\"swatch\" style=\"background:{colour}\"></span>{}</span>",
            dimension.title()
        );
    }
    page.push_str("</div>\n");
}

/// `seconds` as `m:ss` (`h:mm:ss` past an hour), with tenths when the time
/// is not a whole second (a file's last window rarely ends on one).
fn clock(seconds: Seconds) -> String {
    let tenths = if seconds.is_finite() {
        (seconds.max(0.0) * 10.0).round() as u64
    } else {
        0
    };
    let whole = tenths / 10;
    let (hours, minutes, secs) = (whole / 3600, whole / 60 % 60, whole % 60);
    let fraction = match tenths % 10 {
        0 => String::new(),
        t => format!(".{t}"),
    };
    if hours > 0 {
        format!("{hours}:{minutes:02}:{secs:02}{fraction}")
    } else {
        format!("{minutes}:{secs:02}{fraction}")
    }
}

fn span_text(start: Seconds, end: Seconds) -> String {
    format!("{}\u{2013}{}", clock(start), clock(end))
}

/// Text made safe for HTML element content and attribute values.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `GET /v2/upload/jobs/{job_id}/report`: the report of a completed job
/// (an extension outside the interface), with the speaker lanes of the turns
/// stored with the job, as `attune analyze --html` draws them. It reads the job exactly as
/// `GET /v2/upload/jobs/{job_id}` does (scope, account, expiry, `ih4021`);
/// a job still queued or running answers `202` with a page saying so and
/// `Retry-After`, a failed job a page with its error.
pub(crate) async fn job_report(
    app: &crate::app::App,
    caller: &crate::app::Caller,
    job_id: &str,
) -> Result<hyper::Response<crate::http_error::Body>, crate::http_error::HttpError> {
    use attune_core::wire::UploadJobStatus;
    use hyper::StatusCode;
    let record = crate::uploads::readable_job(app, caller, job_id).await?;
    let title = format!("job {}", record.id);
    let (status, page) = match (&record.result, &record.error) {
        (Some(result), _) if record.status == UploadJobStatus::Completed => (
            StatusCode::OK,
            render(&ReportInput {
                title: &title,
                model: record.model,
                params_version: attune_core::analysis::params::ModelParams::for_model(record.model)
                    .version,
                result,
                turns: record.speaker_turns.as_deref(),
                transcript: None,
                language: None,
            }),
        ),
        (_, Some(error)) if record.status == UploadJobStatus::Failed => (
            StatusCode::OK,
            notice_page(
                &title,
                &format!(
                    "The analysis failed: {} [{}].",
                    error.message(),
                    error.code.as_str()
                ),
            ),
        ),
        _ => (
            StatusCode::ACCEPTED,
            notice_page(
                &title,
                &format!(
                    "The job is {}; its report is ready when it has completed. Reload this \
                     page in a few seconds.",
                    record.status
                ),
            ),
        ),
    };
    let mut response = hyper::Response::new(http_body_util::Full::new(bytes::Bytes::from(page)));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(
        hyper::header::CACHE_CONTROL,
        hyper::header::HeaderValue::from_static("no-store"),
    );
    if status == StatusCode::ACCEPTED {
        headers.insert(
            hyper::header::RETRY_AFTER,
            hyper::header::HeaderValue::from_static("5"),
        );
    }
    Ok(response)
}

/// A page with one message, for a job without a report.
fn notice_page(title: &str, message: &str) -> String {
    let title = escape(&format!("Attune report: {title}"));
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{title}</title>\n\
         <style>{CSS}</style>\n</head>\n<body>\n<h1>{title}</h1>\n<p class=\"empty\">{}</p>\n</body>\n</html>\n",
        escape(message)
    )
}
