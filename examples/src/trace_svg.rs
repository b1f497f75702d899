//! Draw a pool timeline (the Chrome trace-event JSON that
//! `pool::Builder::trace` writes) as an SVG: one row per worker, a colour
//! per state, a time axis and a legend. Used by the `trace_svg` example and
//! by the benchmarks' `timeline` pictures.
//!
//! Spans closer than a pixel to the previous one of their kind on the same
//! row are merged, so a trace of a million polls is still a small picture.

use serde_json::Value;
use std::fmt::Write as _;

/// What part of the trace to draw, and how wide.
#[derive(Clone, Debug)]
pub struct View {
    /// Start of the window, in ms from the first event (None: the start).
    pub from_ms: Option<f64>,
    /// End of the window, in ms from the first event (None: the end).
    pub to_ms: Option<f64>,
    /// Width of the plot area in pixels.
    pub width: f64,
    /// A title drawn above the rows.
    pub title: String,
}

impl Default for View {
    fn default() -> View {
        View {
            from_ms: None,
            to_ms: None,
            width: 1200.0,
            title: "pool timeline".to_string(),
        }
    }
}

/// The states drawn as spans: name in the trace, colour, legend text, and
/// which part of the row they fill (top, height as fractions).
const SPANS: &[(&str, &str, &str, f64, f64)] = &[
    (
        "sleep",
        "#c9ccd1",
        "asleep (condvar or I/O driver)",
        0.0,
        1.0,
    ),
    ("poll", "#2e9e5b", "polling a task", 0.0, 1.0),
    ("job", "#2f6fb5", "fork-join job", 0.0, 1.0),
    (
        "block_on",
        "#8e44ad",
        "in block_on on this worker",
        0.82,
        0.18,
    ),
    (
        "driver",
        "#1c7ed6",
        "polling the I/O driver, waking what it found",
        0.0,
        0.3,
    ),
];

/// Instants drawn as ticks above the row: name, colour, legend text.
const TICKS: &[(&str, &str, &str)] = &[
    ("sleepy", "#e0a800", "got sleepy"),
    ("steal", "#e8590c", "stole tasks"),
    ("injector", "#c92a2a", "took from the injector"),
];

const ROW_H: f64 = 26.0;
const ROW_GAP: f64 = 14.0;
const LEFT: f64 = 80.0;
const TOP: f64 = 40.0;

/// One parsed event.
struct Ev<'a> {
    name: &'a str,
    tid: u64,
    ts: f64,
    dur: f64,
}

/// Render `trace` (the JSON text) as an SVG document.
pub fn render(trace: &str, view: &View) -> Result<String, String> {
    let json: Value = serde_json::from_str(trace).map_err(|e| format!("not JSON: {e}"))?;
    let events = json["traceEvents"]
        .as_array()
        .ok_or("no traceEvents array: not a Chrome trace")?;
    let mut lanes: Vec<(u64, String)> = events
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .filter_map(|e| Some((e["tid"].as_u64()?, e["args"]["name"].as_str()?.to_string())))
        .collect();
    lanes.sort();
    if lanes.is_empty() {
        return Err("no worker lanes (thread_name events) in the trace".to_string());
    }
    let evs: Vec<Ev> = events
        .iter()
        .filter(|e| e["ph"] == "X" || e["ph"] == "i")
        .filter_map(|e| {
            Some(Ev {
                name: e["name"].as_str()?,
                tid: e["tid"].as_u64()?,
                ts: e["ts"].as_f64()?,
                dur: e["dur"].as_f64().unwrap_or(0.0),
            })
        })
        .collect();
    let first = evs.iter().map(|e| e.ts).fold(f64::INFINITY, f64::min);
    let last = evs
        .iter()
        .map(|e| e.ts + e.dur)
        .fold(f64::NEG_INFINITY, f64::max);
    if !first.is_finite() {
        return Err("the trace has no events".to_string());
    }
    let from = first + view.from_ms.unwrap_or(0.0) * 1e3;
    let to = view.to_ms.map_or(last, |t| first + t * 1e3).max(from + 1.0);
    let us_per_px = (to - from) / view.width;
    let x = |ts: f64| LEFT + ((ts - from) / us_per_px).clamp(0.0, view.width);

    let height = TOP + lanes.len() as f64 * (ROW_H + ROW_GAP) + 70.0;
    let total_w = LEFT + view.width + 20.0;
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{total_w:.0}" height="{height:.0}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        svg,
        r#"<text x="{LEFT}" y="20" font-size="14" font-weight="bold">{}</text>"#,
        escape(&view.title)
    );
    for (row, (tid, name)) in lanes.iter().enumerate() {
        let y = TOP + row as f64 * (ROW_H + ROW_GAP);
        let _ = writeln!(
            svg,
            r##"<text x="6" y="{:.1}">{}</text><rect x="{LEFT}" y="{y:.1}" width="{:.1}" height="{ROW_H}" fill="#f8f9fa" stroke="#dee2e6"/>"##,
            y + ROW_H * 0.65,
            escape(name),
            view.width
        );
        for &(kind, colour, _, top, h) in SPANS {
            // Merge spans less than a pixel apart.
            let mut open: Option<(f64, f64)> = None;
            let flush = |svg: &mut String, (a, b): (f64, f64)| {
                let (xa, xb) = (x(a), x(b));
                let _ = writeln!(
                    svg,
                    r#"<rect x="{xa:.2}" y="{:.1}" width="{:.2}" height="{:.1}" fill="{colour}"/>"#,
                    y + top * ROW_H,
                    (xb - xa).max(0.6),
                    h * ROW_H
                );
            };
            for e in evs.iter().filter(|e| e.tid == *tid && e.name == kind) {
                let (a, b) = (e.ts, e.ts + e.dur);
                if b < from || a > to {
                    continue;
                }
                open = match open {
                    Some((oa, ob)) if a - ob < us_per_px => Some((oa, ob.max(b))),
                    Some(span) => {
                        flush(&mut svg, span);
                        Some((a, b))
                    }
                    None => Some((a, b)),
                };
            }
            if let Some(span) = open {
                flush(&mut svg, span);
            }
        }
        for (i, &(kind, colour, _)) in TICKS.iter().enumerate() {
            let mut last_px = f64::NEG_INFINITY;
            for e in evs.iter().filter(|e| e.tid == *tid && e.name == kind) {
                if e.ts < from || e.ts > to {
                    continue;
                }
                let px = x(e.ts);
                if px - last_px < 1.0 {
                    continue;
                }
                last_px = px;
                let ty = y - 3.0 - i as f64 * 3.5;
                let _ = writeln!(
                    svg,
                    r#"<rect x="{:.2}" y="{ty:.1}" width="1.2" height="3" fill="{colour}"/>"#,
                    px - 0.6
                );
            }
        }
    }
    // Time axis.
    let axis_y = TOP + lanes.len() as f64 * (ROW_H + ROW_GAP) - 4.0;
    let span_ms = (to - from) / 1e3;
    let step = nice_step(span_ms / 10.0);
    // Ticks at round times (ms from the trace's first event).
    let from_label = view.from_ms.unwrap_or(0.0);
    let mut label = (from_label / step).ceil() * step;
    while label <= from_label + span_ms + 1e-9 {
        let px = LEFT + (label - from_label) * 1e3 / us_per_px;
        let _ = writeln!(
            svg,
            r##"<line x1="{px:.1}" y1="{:.1}" x2="{px:.1}" y2="{:.1}" stroke="#868e96"/><text x="{px:.1}" y="{:.1}" text-anchor="middle" fill="#495057">{} ms</text>"##,
            axis_y,
            axis_y + 5.0,
            axis_y + 18.0,
            fmt_ms(label)
        );
        label += step;
    }
    // Legend.
    let mut lx = LEFT;
    let ly = axis_y + 40.0;
    // Spans get a square swatch, ticks a thin one.
    let swatches = SPANS
        .iter()
        .map(|&(_, colour, text, _, _)| (colour, text, 12.0))
        .chain(TICKS.iter().map(|&(_, colour, text)| (colour, text, 3.0)));
    for (colour, text, width) in swatches {
        let _ = writeln!(
            svg,
            r#"<rect x="{lx:.0}" y="{:.0}" width="{width}" height="12" fill="{colour}"/><text x="{:.0}" y="{ly:.0}">{text}</text>"#,
            ly - 10.0,
            lx + width + 4.0
        );
        lx += width + 18.0 + 6.5 * text.len() as f64;
    }
    let _ = writeln!(
        svg,
        r##"<text x="{LEFT}" y="{:.0}" fill="#495057">white: awake, not polling (searching for work, or waking another worker)</text>"##,
        ly + 18.0
    );
    svg.push_str("</svg>\n");
    Ok(svg)
}

/// 1, 2 or 5 times a power of ten, at least `raw`.
fn nice_step(raw: f64) -> f64 {
    let p = 10f64.powf(raw.max(1e-6).log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * p)
}

fn fmt_ms(ms: f64) -> String {
    let s = format!("{ms:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
