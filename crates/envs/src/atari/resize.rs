//! OpenCV's `INTER_AREA` downscale of one 8-bit gray channel, value for value.
//!
//! Gymnasium's `AtariPreprocessing` shrinks the 210×160 screen with
//! `cv2.resize(..., interpolation=cv2.INTER_AREA)`. Its scale factors (2.5 and
//! 1.905) are not whole numbers, so OpenCV takes its general area path: per axis a
//! table of (destination, source, weight) taps, built in `f64` and stored as `f32`;
//! each source row summed across in `f32`, tap by tap in table order; the rows of a
//! destination row summed in the same order; the total rounded half to even. The
//! sums are done here in exactly that order (no fused multiply-add, which Rust
//! never contracts to on its own), so every pixel equals OpenCV's, not just nearly.
//!
//! Cost: each source row's horizontal sum is computed once, though OpenCV
//! recomputes a row that two destination rows share (the same value either way).

/// Source rows summed across together (one vector register of `f32` on AVX2).
const LANES: usize = 8;

/// One source pixel's weight in one destination pixel.
#[derive(Clone, Copy, Debug)]
struct Tap {
    dst: usize,
    src: usize,
    alpha: f32,
}

/// OpenCV's `computeResizeAreaTab` for one axis of `src` pixels shrunk to `dst`.
fn taps(src: usize, dst: usize) -> Vec<Tap> {
    let scale = src as f64 / dst as f64;
    let mut out = Vec::with_capacity(src * 2);
    for d in 0..dst {
        let f1 = d as f64 * scale;
        let f2 = f1 + scale;
        let cell = scale.min(src as f64 - f1);
        let s2 = (f2.floor() as isize).min(src as isize - 1);
        let s1 = (f1.ceil() as isize).min(s2);
        if s1 as f64 - f1 > 1e-3 {
            out.push(Tap { dst: d, src: (s1 - 1) as usize, alpha: ((s1 as f64 - f1) / cell) as f32 });
        }
        for s in s1..s2 {
            out.push(Tap { dst: d, src: s as usize, alpha: (1.0 / cell) as f32 });
        }
        if f2 - s2 as f64 > 1e-3 {
            out.push(Tap { dst: d, src: s2 as usize, alpha: ((f2 - s2 as f64).min(1.0).min(cell) / cell) as f32 });
        }
    }
    out
}

/// A prepared `INTER_AREA` shrink from `height × width` to `out_h × out_w`.
#[derive(Clone, Debug)]
pub struct Area {
    width: usize,
    out_w: usize,
    out_h: usize,
    /// The horizontal taps as `k` planes of `out_w`: plane `j` holds each destination
    /// pixel's `j`-th tap (source index, weight), in OpenCV's order; a pixel with fewer
    /// taps is padded with weight 0, which adds +0.0 to a non-negative sum: no change.
    across: Vec<(Vec<usize>, Vec<f32>)>,
    ys: Vec<Tap>,
    /// `LANES` source rows as floats, column by column (see [`Area::run`]).
    columns: Vec<[f32; LANES]>,
    /// Their sums across, destination pixel by pixel.
    sums: Vec<[f32; LANES]>,
    /// Each source row summed across (`height × out_w`), reused by every destination row it feeds.
    rows: Vec<f32>,
    sum: Vec<f32>,
}

impl Area {
    /// A shrink of `height × width` frames to `out_h × out_w` (neither larger than its source).
    pub fn new(height: usize, width: usize, out_h: usize, out_w: usize) -> Area {
        assert!(out_h <= height && out_w <= width && out_h > 0 && out_w > 0, "INTER_AREA here only shrinks");
        let xs = taps(width, out_w);
        let mut per_pixel = vec![Vec::new(); out_w];
        for t in &xs {
            per_pixel[t.dst].push((t.src, t.alpha));
        }
        let k = per_pixel.iter().map(Vec::len).max().unwrap_or(0);
        let across = (0..k).map(|j| per_pixel.iter().map(|taps| taps.get(j).copied().unwrap_or((0, 0.0))).unzip()).collect();
        Area {
            width,
            out_w,
            out_h,
            across,
            ys: taps(height, out_h),
            columns: vec![[0.0; LANES]; width],
            sums: vec![[0.0; LANES]; out_w],
            rows: vec![0.0; height * out_w],
            sum: vec![0.0; out_w],
        }
    }

    /// Shrinks `src` (row-major `height × width`) into `dst` (`out_h × out_w`).
    ///
    /// The horizontal sums are taken `LANES` source rows at a time, with the rows as
    /// the vector lanes: each tap is then one load of `LANES` floats, and the order of
    /// the additions within each pixel is still the table's.
    pub fn run(&mut self, src: &[u8], dst: &mut [u8]) {
        let (w, ow) = (self.width, self.out_w);
        assert_eq!(src.len() * ow, self.rows.len() * w, "source frame size");
        assert_eq!(dst.len(), self.out_h * ow, "destination frame size");
        for (block, out) in src.chunks(w * LANES).zip(self.rows.chunks_mut(ow * LANES)) {
            for (lane, pixels) in block.chunks_exact(w).enumerate() {
                for (column, &p) in self.columns.iter_mut().zip(pixels) {
                    column[lane] = f32::from(p);
                }
            }
            self.sums.fill([0.0; LANES]);
            for (index, weight) in &self.across {
                for ((sum, &i), &wt) in self.sums.iter_mut().zip(index).zip(weight) {
                    // Copied in and out whole: the lanes then compile to vector operations.
                    let (column, mut s) = (self.columns[i], *sum);
                    for lane in 0..LANES {
                        s[lane] += column[lane] * wt;
                    }
                    *sum = s;
                }
            }
            for (lane, across) in out.chunks_exact_mut(ow).enumerate() {
                for (a, sum) in across.iter_mut().zip(&self.sums) {
                    *a = sum[lane];
                }
            }
        }
        let sum = &mut self.sum;
        let mut current = self.ys[0].dst;
        sum.fill(0.0);
        for t in &self.ys {
            let across = &self.rows[t.src * ow..(t.src + 1) * ow];
            if t.dst != current {
                write(sum, &mut dst[current * ow..(current + 1) * ow]);
                for (s, a) in sum.iter_mut().zip(across) {
                    *s = t.alpha * a;
                }
                current = t.dst;
            } else {
                for (s, a) in sum.iter_mut().zip(across) {
                    *s += t.alpha * a;
                }
            }
        }
        write(sum, &mut dst[current * ow..(current + 1) * ow]);
    }
}

/// OpenCV's `saturate_cast<uchar>(float)`: round half to even, then clamp. For
/// `0 <= s <= 255`, adding 2^23 rounds to the nearest integer, ties to even (the
/// default rounding mode, as `cvRound`), and leaves it in the low bits of the
/// mantissa; clamping first gives the saturation. Both vectorize, where
/// `round_ties_even` is a libm call without SSE4.1 and `as u8` checks for NaN.
fn write(sum: &[f32], out: &mut [u8]) {
    const MAGIC: f32 = 8_388_608.0;
    for (o, &s) in out.iter_mut().zip(sum) {
        *o = ((s.clamp(0.0, 255.0) + MAGIC).to_bits() & 0xff) as u8;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn taps_of_one_axis_sum_to_one_per_destination_pixel() {
        for (src, dst) in [(210, 84), (160, 84), (160, 64), (100, 100), (7, 3)] {
            let mut totals = vec![0.0f64; dst];
            for t in taps(src, dst) {
                totals[t.dst] += f64::from(t.alpha);
            }
            for (d, total) in totals.iter().enumerate() {
                assert!((total - 1.0).abs() < 1e-5, "{src}->{dst}: pixel {d} weighs {total}");
            }
        }
    }

    #[test]
    fn a_flat_frame_stays_flat_and_extremes_hold() {
        for v in [0u8, 1, 127, 254, 255] {
            let mut area = Area::new(210, 160, 84, 84);
            let mut out = vec![0u8; 84 * 84];
            area.run(&vec![v; 210 * 160], &mut out);
            assert!(out.iter().all(|&o| o == v), "{v}");
        }
    }

    #[test]
    fn rounding_is_half_to_even_and_saturates() {
        let mut out = [0u8; 8];
        write(&[0.5, 1.5, 2.5, 2.5001, 254.5, 255.5, 300.0, -3.0], &mut out);
        assert_eq!(out, [0, 2, 2, 3, 254, 255, 255, 0]);
    }

    /// OpenCV's own output for a fixed 210×160 frame (`testdata/area.py` made it with
    /// `cv2.resize(..., (84, 84), interpolation=cv2.INTER_AREA)`, opencv-python 4.12).
    #[test]
    fn equals_opencv_on_a_fixed_frame() {
        let frame: Vec<u8> = (0..210 * 160).map(|i| pattern(i / 160, i % 160)).collect();
        let mut out = vec![0u8; 84 * 84];
        Area::new(210, 160, 84, 84).run(&frame, &mut out);
        let want = include_bytes!("testdata/area_210x160_84.bin");
        let differ = out.iter().zip(want.iter()).filter(|(a, b)| a != b).count();
        assert_eq!(differ, 0, "{differ} of {} pixels differ from OpenCV's", out.len());
    }

    /// The frame `testdata/area.py` draws: edges, gradients and noise-like bits, so that
    /// ties and the .5 roundings OpenCV resolves to even actually occur.
    fn pattern(y: usize, x: usize) -> u8 {
        ((x * 7 + y * 13 + (x * y) % 31 + if (x / 8 + y / 5).is_multiple_of(2) { 100 } else { 0 }) % 256) as u8
    }
}
