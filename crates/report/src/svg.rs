//! Plots as inline SVG, drawn here rather than by a plotting library so the page
//! needs no script, no font files and no network: the browser lays out the text.
//! Three shapes cover the report — a histogram, lines over time, bars per worker —
//! each a plot frame (axes, 1-2-5 ticks, grid) around its marks.

use html_escape::encode_text as esc;

const W: f64 = 520.0;
const H: f64 = 250.0;
const LEFT: f64 = 58.0;
const RIGHT: f64 = 14.0;
const TOP: f64 = 30.0;
const BOTTOM: f64 = 42.0;
/// Mark colours, one per series.
pub const COLORS: [&str; 6] = ["#3b6fb6", "#d9822b", "#3f9b5c", "#b8433a", "#7a5bb0", "#6b6b6b"];

/// A named line: `(x, y)` points in x order.
pub struct Series {
    /// The legend's label.
    pub name: String,
    /// The points.
    pub points: Vec<(f64, f64)>,
}

/// Compact numbers for tick labels: `1.5M`, `12k`, `0.25`.
pub fn num(x: f64) -> String {
    let a = x.abs();
    let s = if a >= 1e9 {
        format!("{:.3}", x / 1e9).trim_end_matches('0').trim_end_matches('.').to_string() + "G"
    } else if a >= 1e6 {
        format!("{:.3}", x / 1e6).trim_end_matches('0').trim_end_matches('.').to_string() + "M"
    } else if a >= 1e4 {
        format!("{:.1}", x / 1e3).trim_end_matches('0').trim_end_matches('.').to_string() + "k"
    } else if x == x.round() {
        format!("{x:.0}")
    } else {
        format!("{x:.3}").trim_end_matches('0').trim_end_matches('.').to_string()
    };
    if s == "-0" {
        "0".into()
    } else {
        s
    }
}

/// About `n` round tick values covering `lo..=hi` (steps of 1, 2 or 5 × 10^k).
fn ticks(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    let span = (hi - lo).max(f64::EPSILON);
    let raw = span / n.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    // The round step nearest the raw one (by ratio): 11 → 10, 14 → 10, 16 → 20.
    let step =
        [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * mag).min_by(|a, b| (a / raw).ln().abs().total_cmp(&(b / raw).ln().abs())).unwrap_or(mag);
    let first = (lo / step).ceil() * step;
    (0..).map(|i| first + i as f64 * step).take_while(|t| *t <= hi + step * 1e-9).collect()
}

/// Maps data ranges onto the plot area.
struct Scale {
    x: (f64, f64),
    y: (f64, f64),
}

impl Scale {
    fn new(x: (f64, f64), y: (f64, f64)) -> Scale {
        let widen = |(lo, hi): (f64, f64)| if hi > lo { (lo, hi) } else { (lo - 0.5, hi + 0.5) };
        Scale { x: widen(x), y: widen(y) }
    }
    fn px(&self, x: f64) -> f64 {
        LEFT + (x - self.x.0) / (self.x.1 - self.x.0) * (W - LEFT - RIGHT)
    }
    fn py(&self, y: f64) -> f64 {
        H - BOTTOM - (y - self.y.0) / (self.y.1 - self.y.0) * (H - TOP - BOTTOM)
    }
}

/// The frame of a plot: title, axes with ticks and grid, axis labels, `body` inside.
fn frame(title: &str, xlabel: &str, ylabel: &str, s: &Scale, xticks: bool, body: &str) -> String {
    let mut out = format!(
        r#"<svg class="plot" role="img" aria-label="{t}" viewBox="0 0 {W} {H}" xmlns="http://www.w3.org/2000/svg"><title>{t}</title>"#,
        t = esc(title)
    );
    out += &format!(r#"<text x="{LEFT}" y="18" class="ptitle">{}</text>"#, esc(title));
    for t in ticks(s.y.0, s.y.1, 5) {
        let y = s.py(t);
        out += &format!(r#"<line x1="{LEFT}" x2="{}" y1="{y:.1}" y2="{y:.1}" class="grid"/>"#, W - RIGHT);
        out += &format!(r#"<text x="{}" y="{:.1}" class="ytick">{}</text>"#, LEFT - 6.0, y + 4.0, num(t));
    }
    if xticks {
        for t in ticks(s.x.0, s.x.1, 6) {
            let x = s.px(t);
            out += &format!(r#"<text x="{x:.1}" y="{}" class="xtick">{}</text>"#, H - BOTTOM + 16.0, num(t));
        }
    }
    out += &format!(r#"<line x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{}" class="axis"/>"#, H - BOTTOM);
    out += &format!(r#"<line x1="{LEFT}" x2="{}" y1="{b}" y2="{b}" class="axis"/>"#, W - RIGHT, b = H - BOTTOM);
    out += &format!(r#"<text x="{}" y="{}" class="xlabel">{}</text>"#, (LEFT + W - RIGHT) / 2.0, H - 6.0, esc(xlabel));
    out +=
        &format!(r#"<text x="14" y="{}" class="ylabel" transform="rotate(-90 14 {0})">{}</text>"#, (TOP + H - BOTTOM) / 2.0, esc(ylabel));
    out += body;
    out + "</svg>"
}

/// A histogram of `values` (at most 30 bins, fewer for few values).
pub fn histogram(title: &str, xlabel: &str, values: &[f64]) -> String {
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if values.is_empty() || !lo.is_finite() || !hi.is_finite() {
        return frame(title, xlabel, "episodes", &Scale::new((0.0, 1.0), (0.0, 1.0)), true, "");
    }
    let bins = ((values.len() as f64).sqrt().ceil() as usize).clamp(1, 30);
    let (lo, hi) = if hi > lo { (lo, hi) } else { (lo - 0.5, hi + 0.5) };
    let width = (hi - lo) / bins as f64;
    let mut counts = vec![0u64; bins];
    for v in values {
        counts[(((v - lo) / width) as usize).min(bins - 1)] += 1;
    }
    let s = Scale::new((lo, hi), (0.0, *counts.iter().max().unwrap_or(&1) as f64));
    let mut body = String::new();
    for (i, c) in counts.iter().enumerate().filter(|(_, c)| **c > 0) {
        let (x0, x1) = (s.px(lo + i as f64 * width), s.px(lo + (i + 1) as f64 * width));
        let y = s.py(*c as f64);
        body += &format!(
            r#"<rect class="bar" x="{:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>{}–{}: {c}</title></rect>"#,
            x0 + 0.5,
            (x1 - x0 - 1.0).max(0.5),
            s.py(0.0) - y,
            COLORS[0],
            num(lo + i as f64 * width),
            num(lo + (i + 1) as f64 * width)
        );
    }
    frame(title, xlabel, "episodes", &s, true, &body)
}

/// Lines over a shared x axis, with a legend when there are several.
pub fn lines(title: &str, xlabel: &str, ylabel: &str, series: &[Series]) -> String {
    let pts = || series.iter().flat_map(|s| s.points.iter());
    let xr = (pts().map(|p| p.0).fold(f64::INFINITY, f64::min), pts().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max));
    // From 0, or below it for negative values (returns often are).
    let ymax = pts().map(|p| p.1).fold(0.0, f64::max);
    let ymin = pts().map(|p| p.1).fold(0.0, f64::min);
    let s = if xr.0.is_finite() { Scale::new(xr, (ymin * 1.05, ymax * 1.05)) } else { Scale::new((0.0, 1.0), (0.0, 1.0)) };
    let mut body = String::new();
    for (i, line) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let d: Vec<String> = line.points.iter().map(|(x, y)| format!("{:.1},{:.1}", s.px(*x), s.py(*y))).collect();
        body += &format!(r#"<polyline class="line" fill="none" stroke="{color}" points="{}"/>"#, d.join(" "));
        if series.len() > 1 {
            let y = TOP + 4.0 + 14.0 * i as f64;
            body += &format!(r#"<rect x="{}" y="{:.1}" width="10" height="3" fill="{color}"/>"#, W - RIGHT - 140.0, y);
            body += &format!(r#"<text x="{}" y="{:.1}" class="legend">{}</text>"#, W - RIGHT - 126.0, y + 4.0, esc(&line.name));
        }
    }
    frame(title, xlabel, ylabel, &s, true, &body)
}

/// One bar per category.
pub fn bars(title: &str, xlabel: &str, ylabel: &str, labels: &[String], values: &[f64]) -> String {
    let n = labels.len().max(1) as f64;
    let s = Scale::new((0.0, n), (0.0, values.iter().copied().fold(0.0, f64::max)));
    let slot = (W - LEFT - RIGHT) / n;
    let mut body = String::new();
    for (i, (label, v)) in labels.iter().zip(values).enumerate() {
        let x = s.px(i as f64);
        let y = s.py(*v);
        body += &format!(
            r#"<rect class="bar" x="{:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>{}: {}</title></rect>"#,
            x + slot * 0.15,
            slot * 0.7,
            s.py(0.0) - y,
            COLORS[1],
            esc(label),
            num(*v)
        );
        body += &format!(r#"<text x="{:.1}" y="{}" class="xtick">{}</text>"#, x + slot / 2.0, H - BOTTOM + 16.0, esc(label));
    }
    frame(title, xlabel, ylabel, &s, false, &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        assert_eq!(ticks(0.0, 10.0, 5), [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(ticks(3.0, 47.0, 4), [10.0, 20.0, 30.0, 40.0]);
        let t = ticks(-0.3, 0.7, 5);
        assert!(t.iter().all(|v| (-0.3..=0.7 + 1e-9).contains(v)) && t.len() >= 4, "{t:?}");
    }

    #[test]
    fn numbers_are_compact() {
        assert_eq!(num(1_500_000.0), "1.5M");
        assert_eq!(num(12_000.0), "12k");
        assert_eq!(num(250.0), "250");
        assert_eq!(num(0.25), "0.25");
        assert_eq!(num(-0.0), "0");
    }

    #[test]
    fn a_histogram_has_a_bar_per_occupied_bin_and_counts_every_value() {
        let values: Vec<f64> = (0..100).map(|i| (i % 10) as f64).collect();
        let svg = histogram("returns", "return", &values);
        let bars = svg.matches(r#"class="bar""#).count();
        assert_eq!(bars, 10, "{svg}");
        let counted: u64 = svg.match_indices(": ").map(|(i, _)| svg[i + 2..].split('<').next().unwrap().parse::<u64>().unwrap()).sum();
        assert_eq!(counted, 100);
        // One value, or none: still a plot, no NaN coordinates.
        for v in [&[3.0][..], &[]] {
            let svg = histogram("returns", "return", v);
            assert!(!svg.contains("NaN") && svg.starts_with("<svg"), "{svg}");
        }
    }

    #[test]
    fn text_is_escaped() {
        let svg = bars("a<b", "worker", "steps", &["<w>".into()], &[1.0]);
        assert!(svg.contains("a&lt;b") && svg.contains("&lt;w&gt;") && !svg.contains("<w>"));
    }
}
