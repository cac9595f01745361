//! The row layout of the in-memory table: every numeric field of a step side by side,
//! each kept as narrow as the dataset's values allow without losing a bit (an int64
//! action that only ever holds 0 or 1 takes one byte; float64 rewards that are all
//! exact float32s take four) and widened back on the way out. A shuffled window's
//! cost is the cache lines it touches, so fewer bytes per row is the loader's speed:
//! a CartPole row goes from 34 to 23 bytes.
#![allow(unsafe_code)] // measured to matter here; every block says why it is sound (SAFETY)

use rollway_core::DType;

/// How a field's elements are kept in a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Keep {
    /// As they come out.
    Same,
    /// int64 kept as int8, int16 or int32.
    I8,
    I16,
    I32,
    /// float64 kept as float32.
    F32,
}

impl Keep {
    /// Bytes kept per element that is `size` bytes out.
    fn size(self, size: usize) -> usize {
        match self {
            Keep::Same => size,
            Keep::I8 => 1,
            Keep::I16 => 2,
            Keep::I32 | Keep::F32 => 4,
        }
    }

    /// The narrowest way to keep every value in `cols` (whole `dtype` elements).
    pub fn choose<'a>(dtype: DType, cols: impl Iterator<Item = &'a [u8]> + Clone) -> Keep {
        let words = || cols.clone().flat_map(|c| c.chunks_exact(8)).map(|c| <[u8; 8]>::try_from(c).expect("8 bytes"));
        match dtype {
            DType::I64 => {
                let (lo, hi) = words().map(i64::from_ne_bytes).fold((0, 0), |(lo, hi), v| (v.min(lo), v.max(hi)));
                let fits = |min: i64, max: i64| lo >= min && hi <= max;
                if fits(i8::MIN.into(), i8::MAX.into()) {
                    Keep::I8
                } else if fits(i16::MIN.into(), i16::MAX.into()) {
                    Keep::I16
                } else if fits(i32::MIN.into(), i32::MAX.into()) {
                    Keep::I32
                } else {
                    Keep::Same
                }
            }
            // Bit for bit: NaN payloads and -0.0 must come back as they went in.
            DType::F64 if words().map(f64::from_ne_bytes).all(|v| f64::from(v as f32).to_bits() == v.to_bits()) => Keep::F32,
            _ => Keep::Same,
        }
    }
}

/// Where one numeric field sits inside a row, and how it is kept.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Field {
    pub offset: usize,
    /// Bytes kept per row.
    pub width: usize,
    /// Bytes per element out (the dtype's size).
    pub elem: usize,
    pub keep: Keep,
}

impl Field {
    pub fn new(offset: usize, out_width: usize, elem: usize, keep: Keep) -> Field {
        Field { offset, width: out_width / elem * keep.size(elem), elem, keep }
    }

    /// Bytes per row out.
    pub fn out_width(&self) -> usize {
        self.width / self.keep.size(self.elem) * self.elem
    }

    /// Writes `src` (rows of this field as they come out) into its place in each
    /// `stride`-byte row of `dst`.
    pub fn pack(&self, stride: usize, src: &[u8], dst: &mut [u8]) {
        let word = |e: &[u8]| <[u8; 8]>::try_from(e).expect("8 bytes");
        for (d, v) in dst.chunks_exact_mut(stride).zip(src.chunks_exact(self.out_width())) {
            let d = &mut d[self.offset..self.offset + self.width];
            let n = self.keep.size(self.elem);
            for (o, e) in d.chunks_exact_mut(n).zip(v.chunks_exact(self.elem)) {
                match self.keep {
                    Keep::Same => o.copy_from_slice(e),
                    Keep::I8 => o.copy_from_slice(&(i64::from_ne_bytes(word(e)) as i8).to_ne_bytes()),
                    Keep::I16 => o.copy_from_slice(&(i64::from_ne_bytes(word(e)) as i16).to_ne_bytes()),
                    Keep::I32 => o.copy_from_slice(&(i64::from_ne_bytes(word(e)) as i32).to_ne_bytes()),
                    Keep::F32 => o.copy_from_slice(&(f64::from_ne_bytes(word(e)) as f32).to_ne_bytes()),
                }
            }
        }
    }

    /// Copies this field of every `stride`-byte row of `src` into `dst`, as it comes out.
    pub fn split(&self, src: &[u8], stride: usize, dst: &mut [u8]) {
        let (o, w) = (self.offset, self.width);
        match self.keep {
            Keep::Same => match w {
                1 => split_fixed::<1>(src, stride, o, dst),
                2 => split_fixed::<2>(src, stride, o, dst),
                4 => split_fixed::<4>(src, stride, o, dst),
                8 => split_fixed::<8>(src, stride, o, dst),
                12 => split_fixed::<12>(src, stride, o, dst),
                16 => split_fixed::<16>(src, stride, o, dst),
                24 => split_fixed::<24>(src, stride, o, dst),
                32 => split_fixed::<32>(src, stride, o, dst),
                _ => split_any(src, stride, o, w, dst),
            },
            Keep::I8 => split_widen::<i8>(src, stride, o, w, dst),
            Keep::I16 => split_widen::<i16>(src, stride, o, w / 2, dst),
            Keep::I32 => split_widen::<i32>(src, stride, o, w / 4, dst),
            Keep::F32 => split_widen::<f32>(src, stride, o, w / 4, dst),
        }
    }
}

// The split loops check their bounds once, up front: per-row checks (and the slicing
// iterators' running lengths) were most of the loop's time, which was most of a
// batch's. The common widths get loops whose copies are single moves.

fn split_fixed<const W: usize>(src: &[u8], stride: usize, offset: usize, dst: &mut [u8]) {
    let rows = dst.len() / W;
    if rows == 0 {
        return;
    }
    assert!(offset + W <= stride && (rows - 1) * stride + offset + W <= src.len());
    let (s, d) = (src.as_ptr(), dst.as_mut_ptr());
    for r in 0..rows {
        // SAFETY: row `r` reads `src[r * stride + offset..][..W]`, inside `src` by the
        // assert, and writes `dst[r * W..][..W]`, inside `dst` as `r < rows`.
        unsafe { std::ptr::copy_nonoverlapping(s.add(r * stride + offset), d.add(r * W), W) };
    }
}

fn split_any(src: &[u8], stride: usize, offset: usize, width: usize, dst: &mut [u8]) {
    for (d, row) in dst.chunks_exact_mut(width).zip(src.chunks(stride)) {
        d.copy_from_slice(&row[offset..offset + width]);
    }
}

/// A narrow element that widens to an 8-byte one.
trait Narrow: Copy {
    fn widen(self) -> [u8; 8];
}

/// `Narrow` for each narrow type, widening to the 8-byte type it stands in for.
macro_rules! narrow {
    ($($t:ty => $wide:ty),*) => {$(
        impl Narrow for $t {
            fn widen(self) -> [u8; 8] {
                <$wide>::from(self).to_ne_bytes()
            }
        }
    )*};
}

narrow!(i8 => i64, i16 => i64, i32 => i64, f32 => f64);

/// `count` narrow elements a row, widened to 8 bytes each.
fn split_widen<T: Narrow>(src: &[u8], stride: usize, offset: usize, count: usize, dst: &mut [u8]) {
    let n = std::mem::size_of::<T>();
    let rows = dst.len() / (8 * count.max(1));
    if rows == 0 || count == 0 {
        return;
    }
    assert!(offset + count * n <= stride && (rows - 1) * stride + offset + count * n <= src.len());
    let (s, d) = (src.as_ptr(), dst.as_mut_ptr());
    if count == 1 {
        // The common case (a scalar action, the reward) without the inner loop, four
        // rows at a time: left to itself the compiler kept the float conversion loop
        // one row per iteration, a sixth of all loader time in the profile.
        let one = |r: usize| {
            // SAFETY: as below, with `k = 0`; callers pass `r < rows`.
            unsafe {
                let v = std::ptr::read_unaligned(s.add(r * stride + offset).cast::<T>());
                std::ptr::copy_nonoverlapping(v.widen().as_ptr(), d.add(r * 8), 8);
            }
        };
        let quads = rows / 4 * 4;
        for r in (0..quads).step_by(4) {
            one(r);
            one(r + 1);
            one(r + 2);
            one(r + 3);
        }
        (quads..rows).for_each(one);
        return;
    }
    for r in 0..rows {
        for k in 0..count {
            // SAFETY: reads `src[r * stride + offset + k * n..][..n]` (inside `src` by the
            // assert; unaligned reads are allowed) and writes `dst[(r * count + k) * 8..][..8]`,
            // inside `dst` as `r < rows` and `k < count`.
            unsafe {
                let v = std::ptr::read_unaligned(s.add(r * stride + offset + k * n).cast::<T>());
                std::ptr::copy_nonoverlapping(v.widen().as_ptr(), d.add((r * count + k) * 8), 8);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(f: Field, stride: usize, rows: usize, out: &[u8]) -> Vec<u8> {
        let mut packed = vec![0xEE; rows * stride];
        f.pack(stride, out, &mut packed);
        let mut got = vec![0xAA; rows * f.out_width()];
        f.split(&packed, stride, &mut got);
        got
    }

    /// Every width's split (fixed or not) picks exactly the field's bytes of every row.
    #[test]
    fn split_copies_one_field_of_every_row() {
        for width in 1..=40 {
            for extra in [0, 1, 7] {
                let stride = width + extra + 3;
                for offset in [0, extra, stride - width] {
                    for rows in [0, 1, 5, 16] {
                        let out: Vec<u8> = (0..rows * width).map(|i| (i * 7 + width) as u8).collect();
                        let f = Field::new(offset, width, 1, Keep::Same);
                        assert_eq!(roundtrip(f, stride, rows, &out), out, "width {width} stride {stride} offset {offset} rows {rows}");
                    }
                }
            }
        }
    }

    #[test]
    fn narrowing_is_chosen_from_the_values_and_loses_nothing() {
        let ints = |v: &[i64]| v.iter().flat_map(|x| x.to_ne_bytes()).collect::<Vec<u8>>();
        let floats = |v: &[f64]| v.iter().flat_map(|x| x.to_ne_bytes()).collect::<Vec<u8>>();
        let cases: Vec<(DType, Vec<u8>, Keep)> = vec![
            (DType::I64, ints(&[0, 1, -128, 127, 5, 0]), Keep::I8),
            (DType::I64, ints(&[0, 1, -129, 127, 5, 0]), Keep::I16),
            (DType::I64, ints(&[40_000, -3, 0, 1, 2, 3]), Keep::I32),
            (DType::I64, ints(&[i64::MAX, i64::MIN, 0, 1, 2, 3]), Keep::Same),
            (DType::F64, floats(&[1.0, -0.0, 0.5, f64::INFINITY, 2f64.powi(100), -2.0]), Keep::F32),
            (DType::F64, floats(&[1.0, 0.1, 0.5, 2.0, 3.0, 4.0]), Keep::Same),
            (DType::F64, floats(&[1.0, f64::from_bits(0x7ff8_0000_0000_0001), 0.5, 2.0, 3.0, 4.0]), Keep::Same),
            (DType::F32, vec![7; 24], Keep::Same),
        ];
        for (dtype, out, want) in cases {
            // One source split in two, as columns come shard by shard.
            let keep = Keep::choose(dtype, [&out[..16], &out[16..]].into_iter());
            assert_eq!(keep, want, "{dtype:?}");
            // Rows of one and of three elements, at an odd offset in a wider row.
            for per_row in [1, 3] {
                let elem = dtype.size();
                let w = per_row * elem;
                let rows = out.len() / w;
                let f = Field::new(3, w, elem, keep);
                assert_eq!(roundtrip(f, 3 + f.width + 2, rows, &out[..rows * w]), out[..rows * w], "{dtype:?} x{per_row}");
            }
        }
    }
}
