//! Feature statistics as LeRobot's `compute_stats.py` reports them: min, max,
//! mean, population std, count and the q01…q99 quantiles per element; images per
//! channel, scaled to [0, 1] and shaped `[3, 1, 1]`; episodes merged as
//! `aggregate_feature_stats` does (parallel variance; quantiles bounded by the
//! episodes', lower ones by their min and upper ones by their max).

use serde_json::{json, Value as Json};

/// The statistics of one feature over some frames.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Stats {
    /// `[k]` for vectors, `[3, 1, 1]` for images.
    pub shape: Vec<usize>,
    /// Frames seen (LeRobot's `count`).
    pub count: u64,
    /// Values behind each element's mean (frames, or frames × pixels for images).
    weight: f64,
    pub min: Vec<f64>,
    pub max: Vec<f64>,
    pub mean: Vec<f64>,
    /// Sum of squared deviations from the mean.
    m2: Vec<f64>,
    /// Per `QUANTILES` entry, per element.
    q: Vec<Vec<f64>>,
}

/// The stat names in LeRobot's order (`count` is an integer list apart).
pub(crate) const NAMES: [&str; 9] = ["min", "max", "mean", "std", "q01", "q10", "q50", "q90", "q99"];

/// LeRobot's `DEFAULT_QUANTILES`, in `NAMES` order.
const QUANTILES: [f64; 5] = [0.01, 0.10, 0.50, 0.90, 0.99];

/// Quantile `q` of sorted values, interpolating between order statistics (numpy's default).
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len().max(1) - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    match (sorted.get(lo), sorted.get(hi)) {
        (Some(a), Some(b)) => a + (b - a) * (pos - lo as f64),
        _ => 0.0,
    }
}

impl Stats {
    /// Of `rows` rows of `k` elements; `get(r, j)` is element `j` of row `r`.
    /// Two passes, so large offsets do not cancel.
    pub fn of_rows(rows: usize, k: usize, get: impl Fn(usize, usize) -> f64) -> Stats {
        let n = rows.max(1) as f64;
        let mut s = Stats {
            shape: vec![k],
            count: rows as u64,
            weight: rows as f64,
            min: vec![f64::INFINITY; k],
            max: vec![f64::NEG_INFINITY; k],
            mean: vec![0.0; k],
            m2: vec![0.0; k],
            q: vec![vec![0.0; k]; QUANTILES.len()],
        };
        for r in 0..rows {
            for j in 0..k {
                let x = get(r, j);
                s.min[j] = s.min[j].min(x);
                s.max[j] = s.max[j].max(x);
                s.mean[j] += x;
            }
        }
        s.mean.iter_mut().for_each(|m| *m /= n);
        for r in 0..rows {
            for j in 0..k {
                let d = get(r, j) - s.mean[j];
                s.m2[j] += d * d;
            }
        }
        let mut column = Vec::with_capacity(rows);
        for j in 0..k {
            column.clear();
            column.extend((0..rows).map(|r| get(r, j)));
            column.sort_by(f64::total_cmp);
            for (qi, &q) in QUANTILES.iter().enumerate() {
                s.q[qi][j] = quantile(&column, q);
            }
        }
        s
    }

    /// Per channel of `frames` RGB frames (`pixels` bytes, H×W×3 each), in [0, 1].
    pub fn of_frames(pixels: &[u8], frames: usize) -> Stats {
        // Integer sums are exact; pixel counts stay far below 2^53 / 255².
        let (mut sum, mut sq, mut lo, mut hi) = ([0u64; 3], [0u64; 3], [255u8; 3], [0u8; 3]);
        let mut hist = [[0u64; 256]; 3];
        for px in pixels.chunks_exact(3) {
            for c in 0..3 {
                let v = px[c];
                sum[c] += u64::from(v);
                sq[c] += u64::from(v) * u64::from(v);
                lo[c] = lo[c].min(v);
                hi[c] = hi[c].max(v);
                hist[c][usize::from(v)] += 1;
            }
        }
        // The k-th smallest value of a channel, read off its histogram.
        let nth = |c: usize, k: u64| -> f64 {
            let mut seen = 0;
            for (v, &n) in hist[c].iter().enumerate() {
                seen += n;
                if seen > k {
                    return v as f64;
                }
            }
            255.0
        };
        let count = (pixels.len() / 3) as u64;
        let q = QUANTILES
            .iter()
            .map(|&q| {
                (0..3)
                    .map(|c| {
                        let pos = q * count.saturating_sub(1) as f64;
                        let (a, b) = (nth(c, pos.floor() as u64), nth(c, pos.ceil() as u64));
                        (a + (b - a) * (pos - pos.floor())) / 255.0
                    })
                    .collect()
            })
            .collect();
        let n = (pixels.len() / 3).max(1) as f64;
        let mean: Vec<f64> = sum.iter().map(|&s| s as f64 / n / 255.0).collect();
        let m2 = (0..3).map(|c| (sq[c] as f64 / n / 65025.0 - mean[c] * mean[c]).max(0.0) * n).collect();
        Stats {
            shape: vec![3, 1, 1],
            count: frames as u64,
            weight: (pixels.len() / 3) as f64,
            min: lo.iter().map(|&v| f64::from(v) / 255.0).collect(),
            max: hi.iter().map(|&v| f64::from(v) / 255.0).collect(),
            mean,
            m2,
            q,
        }
    }

    /// Folds `o` in (Chan et al.'s parallel mean/variance).
    pub fn merge(&mut self, o: &Stats) {
        let w = self.weight + o.weight;
        if w == 0.0 {
            return;
        }
        for j in 0..self.mean.len() {
            let d = o.mean[j] - self.mean[j];
            self.m2[j] += o.m2[j] + d * d * self.weight * o.weight / w;
            self.mean[j] += d * o.weight / w;
            self.min[j] = self.min[j].min(o.min[j]);
            self.max[j] = self.max[j].max(o.max[j]);
            for (qi, &q) in QUANTILES.iter().enumerate() {
                // Exact quantiles of the union are unknown from summaries; LeRobot keeps this envelope.
                self.q[qi][j] = if q <= 0.5 { self.q[qi][j].min(o.q[qi][j]) } else { self.q[qi][j].max(o.q[qi][j]) };
            }
        }
        self.weight = w;
        self.count += o.count;
    }

    pub fn std(&self) -> Vec<f64> {
        self.m2.iter().map(|m| (m / self.weight.max(1.0)).sqrt()).collect()
    }

    /// The named stat's values, flat.
    pub fn get(&self, name: &str) -> Vec<f64> {
        match name {
            "min" => self.min.clone(),
            "max" => self.max.clone(),
            "mean" => self.mean.clone(),
            "std" => self.std(),
            q => NAMES[4..].iter().position(|&n| n == q).map_or_else(Vec::new, |i| self.q[i].clone()),
        }
    }

    /// `{"min": …, "max": …, "mean": …, "std": …, "count": [n]}` with values nested by `shape`.
    pub fn json(&self) -> Json {
        let mut m = serde_json::Map::new();
        for name in NAMES {
            m.insert(name.into(), nested(&self.get(name), &self.shape));
        }
        m.insert("count".into(), json!([self.count]));
        Json::Object(m)
    }
}

fn nested(v: &[f64], shape: &[usize]) -> Json {
    match shape.split_first() {
        None => json!(v.first().copied().unwrap_or(0.0)),
        Some((&n, rest)) => {
            let stride: usize = rest.iter().product();
            Json::Array((0..n).map(|i| nested(&v[i * stride..(i + 1) * stride], rest)).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_stats_equal_stats_of_everything() {
        let xs = [1.0, 4.0, -2.0, 8.0, 3.5, 0.25, 7.0];
        let all = Stats::of_rows(xs.len(), 1, |r, _| xs[r]);
        let mut parts = Stats::of_rows(3, 1, |r, _| xs[r]);
        parts.merge(&Stats::of_rows(4, 1, |r, _| xs[3 + r]));
        assert_eq!(parts.count, 7);
        assert!((parts.mean[0] - all.mean[0]).abs() < 1e-12 && (parts.std()[0] - all.std()[0]).abs() < 1e-12);
        assert_eq!((parts.min[0], parts.max[0]), (-2.0, 8.0));
        let mean = xs.iter().sum::<f64>() / 7.0;
        let std = (xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / 7.0).sqrt();
        assert!((all.std()[0] - std).abs() < 1e-12);
        // numpy.quantile([-2, 0.25, 1, 3.5, 4, 7, 8], [0.5, 0.9]) == [3.5, 7.4]
        assert_eq!(all.get("q50"), vec![3.5]);
        assert!((all.get("q90")[0] - 7.4).abs() < 1e-12);
        let (head, tail) = (Stats::of_rows(3, 1, |r, _| xs[r]), Stats::of_rows(4, 1, |r, _| xs[3 + r]));
        assert_eq!(parts.get("q10")[0], head.get("q10")[0].min(tail.get("q10")[0]));
        assert_eq!(parts.get("q99")[0], head.get("q99")[0].max(tail.get("q99")[0]));
    }

    #[test]
    fn image_stats_are_per_channel_in_unit_range() {
        let px = [0u8, 255, 10, 0, 255, 30];
        let s = Stats::of_frames(&px, 2);
        assert_eq!(s.json()["mean"], json!([[[0.0]], [[1.0]], [[20.0 / 255.0]]]));
        assert_eq!(s.json()["count"], json!([2]));
        assert!((s.std()[2] - 10.0 / 255.0).abs() < 1e-12);
        // Channel 2 holds 10 and 30: the median interpolates to 20.
        assert!((s.get("q50")[2] - 20.0 / 255.0).abs() < 1e-12 && s.get("q01")[1] == 1.0);
    }
}
