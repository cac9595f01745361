//! Gymnasium-semantic spaces: Box, Discrete, MultiDiscrete, MultiBinary, Text, Dict, Tuple.
//!
//! Semantics follow Gymnasium 1.x: Box bounds are inclusive and per element, Discrete
//! ranges over `start..start+n`, Dict keys are kept sorted (Gymnasium sorts a plain
//! dict's keys), and sampling of a Box depends on which bounds are finite.

use rand::Rng;
use rand_distr::{Distribution, Exp1, StandardNormal};

use crate::value::{Array, Value};
use crate::{DType, Error, Result};

/// A Box: an n-d array of `dtype` with per-element inclusive bounds.
#[derive(Clone, Debug, PartialEq)]
pub struct BoxSpace {
    /// Element type.
    pub dtype: DType,
    /// Array shape (empty for a scalar).
    pub shape: Vec<usize>,
    /// Lower bound of each element, row-major; `-inf` allowed for floats.
    pub low: Vec<f64>,
    /// Upper bound of each element, row-major; `+inf` allowed for floats.
    pub high: Vec<f64>,
}

/// A Gymnasium space.
#[derive(Clone, Debug, PartialEq)]
pub enum Space {
    /// Bounded or unbounded n-d array.
    Box(BoxSpace),
    /// One integer in `start..start+n`, stored as int64.
    Discrete {
        /// Number of values.
        n: u64,
        /// Smallest value.
        start: i64,
    },
    /// Several independent discrete values, element `i` in `start[i]..start[i]+nvec[i]`.
    MultiDiscrete {
        /// Count per element.
        nvec: Vec<i64>,
        /// Smallest value per element.
        start: Vec<i64>,
    },
    /// An array of 0/1 values (int8).
    MultiBinary {
        /// Array shape.
        shape: Vec<usize>,
    },
    /// A string of `min_length..=max_length` characters from `charset` (Gymnasium's
    /// Text). Rows hold its Unicode code points, zero-padded to `max_length` (uint32):
    /// fixed-size like every leaf, and readable without the charset.
    Text {
        /// Fewest characters.
        min_length: usize,
        /// Most characters.
        max_length: usize,
        /// The characters a string may use, in Gymnasium's order (never NUL, the padding).
        charset: Vec<char>,
    },
    /// Named subspaces, sorted by key.
    Dict(Vec<(String, Space)>),
    /// Positional subspaces.
    Tuple(Vec<Space>),
}

impl BoxSpace {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// True when the box has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Samples element `i` the way Gymnasium does: uniform when bounded on both sides,
    /// shifted exponential when bounded on one, normal when unbounded; integers are
    /// drawn uniformly from the inclusive range.
    #[inline]
    pub fn sample_elem<R: Rng + ?Sized>(&self, i: usize, rng: &mut R) -> f64 {
        sample_bounded(self.dtype, self.low[i], self.high[i], rng)
    }
}

#[inline]
pub(crate) fn sample_bounded<R: Rng + ?Sized>(dtype: DType, low: f64, high: f64, rng: &mut R) -> f64 {
    if dtype.is_float() {
        match (low.is_finite(), high.is_finite()) {
            (true, true) => {
                if high > low {
                    rng.random_range(low..high)
                } else {
                    low
                }
            }
            (true, false) => low + <Exp1 as Distribution<f64>>::sample(&Exp1, rng),
            (false, true) => high - <Exp1 as Distribution<f64>>::sample(&Exp1, rng),
            (false, false) => <StandardNormal as Distribution<f64>>::sample(&StandardNormal, rng),
        }
    } else {
        let (lo, hi) = (low as i128, high as i128);
        if hi <= lo {
            return low;
        }
        // Integer boxes are inclusive on both ends, as in Gymnasium.
        rng.random_range(lo..=hi) as f64
    }
}

/// The most elements one Box or MultiBinary may have: a 4096×4096 RGBA frame. Shapes
/// come from files (`rollway.json`, Minari metadata); without a cap, `[1e12]` would
/// abort on allocation and `[2^32, 2^32]` would wrap to zero elements.
pub const MAX_ELEMENTS: usize = 1 << 26;

/// The number of elements of `shape`, checked against overflow and [`MAX_ELEMENTS`].
pub fn element_count(shape: &[usize]) -> Result<usize> {
    shape
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .filter(|&n| n <= MAX_ELEMENTS)
        .ok_or_else(|| Error::InvalidSpace(format!("shape {shape:?} has more than {MAX_ELEMENTS} elements")))
}

impl Space {
    /// A Box with the same bounds for every element.
    pub fn boxed(dtype: DType, shape: &[usize], low: f64, high: f64) -> Result<Space> {
        let n = element_count(shape)?;
        Space::box_with(dtype, shape, vec![low; n], vec![high; n])
    }

    /// A Box with per-element bounds (row-major).
    pub fn box_with(dtype: DType, shape: &[usize], low: Vec<f64>, high: Vec<f64>) -> Result<Space> {
        let n = element_count(shape)?;
        if low.len() != n || high.len() != n {
            return Err(Error::InvalidSpace(format!(
                "Box bounds have {} / {} elements, shape {:?} needs {n}",
                low.len(),
                high.len(),
                shape
            )));
        }
        let (dmin, dmax) = dtype.range();
        for (i, (&l, &h)) in low.iter().zip(&high).enumerate() {
            if l.is_nan() || h.is_nan() || l > h {
                return Err(Error::InvalidSpace(format!("Box element {i}: low {l} > high {h}")));
            }
            if !dtype.is_float() && (l < dmin || h > dmax) {
                return Err(Error::InvalidSpace(format!("Box element {i}: bounds [{l}, {h}] outside {dtype} range")));
            }
        }
        Ok(Space::Box(BoxSpace { dtype, shape: shape.to_vec(), low, high }))
    }

    /// `Discrete(n, start)`.
    pub fn discrete(n: u64, start: i64) -> Result<Space> {
        if n == 0 {
            return Err(Error::InvalidSpace("Discrete n must be positive".into()));
        }
        Ok(Space::Discrete { n, start })
    }

    /// `MultiDiscrete(nvec, start)`; `start` defaults to zeros when empty.
    pub fn multi_discrete(nvec: Vec<i64>, start: Vec<i64>) -> Result<Space> {
        let start = if start.is_empty() { vec![0; nvec.len()] } else { start };
        if start.len() != nvec.len() {
            return Err(Error::InvalidSpace("MultiDiscrete start and nvec differ in length".into()));
        }
        if nvec.iter().any(|&n| n <= 0) {
            return Err(Error::InvalidSpace("MultiDiscrete nvec entries must be positive".into()));
        }
        Ok(Space::MultiDiscrete { nvec, start })
    }

    /// A Text space (Gymnasium's defaults: `min_length` 1, an alphanumeric charset).
    pub fn text(min_length: usize, max_length: usize, charset: &str) -> Result<Space> {
        let charset: Vec<char> = charset.chars().collect();
        if min_length > max_length || max_length == 0 || max_length > MAX_ELEMENTS {
            return Err(Error::InvalidSpace(format!(
                "Text lengths {min_length}..={max_length}: need 1 ≤ max_length ≤ {MAX_ELEMENTS} and min ≤ max"
            )));
        }
        if charset.is_empty() || charset.contains(&'\0') {
            return Err(Error::InvalidSpace("Text charset must be non-empty and without NUL (the padding)".into()));
        }
        Ok(Space::Text { min_length, max_length, charset })
    }

    /// A Dict space; keys are sorted and must be unique.
    pub fn dict(mut items: Vec<(String, Space)>) -> Result<Space> {
        items.sort_by(|a, b| a.0.cmp(&b.0));
        if items.windows(2).any(|w| w[0].0 == w[1].0) {
            return Err(Error::InvalidSpace("Dict has a duplicate key".into()));
        }
        Ok(Space::Dict(items))
    }

    /// Short human description, e.g. `Box(float32, [4])` or `Discrete(2)`.
    pub fn describe(&self) -> String {
        match self {
            Space::Box(b) => format!("Box({}, {:?})", b.dtype, b.shape),
            Space::Discrete { n, start: 0 } => format!("Discrete({n})"),
            Space::Discrete { n, start } => format!("Discrete({n}, start={start})"),
            Space::MultiDiscrete { nvec, .. } => format!("MultiDiscrete({nvec:?})"),
            Space::MultiBinary { shape } => format!("MultiBinary({shape:?})"),
            Space::Text { min_length, max_length, .. } => format!("Text({min_length}..={max_length})"),
            Space::Dict(items) => {
                let parts: Vec<String> = items.iter().map(|(k, s)| format!("{k}: {}", s.describe())).collect();
                format!("Dict({})", parts.join(", "))
            }
            Space::Tuple(items) => {
                let parts: Vec<String> = items.iter().map(Space::describe).collect();
                format!("Tuple({})", parts.join(", "))
            }
        }
    }

    /// Draws a random element as an owned [`Value`].
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> Value {
        match self {
            Space::Box(b) => {
                let mut a = Array::zeros(b.dtype, &b.shape);
                for i in 0..b.len() {
                    a.set_f64(i, b.sample_elem(i, rng));
                }
                Value::Array(a)
            }
            Space::Discrete { n, start } => Value::Array(Array::scalar_i64(start + rng.random_range(0..*n) as i64)),
            Space::MultiDiscrete { nvec, start } => {
                let mut a = Array::zeros(DType::I64, &[nvec.len()]);
                for (i, (&n, &s)) in nvec.iter().zip(start).enumerate() {
                    a.set_f64(i, (s + rng.random_range(0..n)) as f64);
                }
                Value::Array(a)
            }
            Space::MultiBinary { shape } => {
                let mut a = Array::zeros(DType::I8, shape);
                for i in 0..a.len() {
                    a.set_f64(i, rng.random_range(0..2) as f64);
                }
                Value::Array(a)
            }
            Space::Text { min_length, max_length, charset } => {
                let mut a = Array::zeros(DType::U32, &[*max_length]);
                sample_text(*min_length, *max_length, charset, rng, |i, c| a.set_f64(i, f64::from(c)));
                Value::Array(a)
            }
            Space::Dict(items) => Value::Dict(items.iter().map(|(k, s)| (k.clone(), s.sample(rng))).collect()),
            Space::Tuple(items) => Value::Tuple(items.iter().map(|s| s.sample(rng)).collect()),
        }
    }

    /// Gymnasium's `contains`: right structure, dtype, shape, and every element in bounds.
    pub fn contains(&self, v: &Value) -> bool {
        match (self, v) {
            (Space::Box(b), Value::Array(a)) => {
                a.dtype == b.dtype
                    && a.shape == b.shape
                    && (0..b.len()).all(|i| {
                        let x = a.get_f64(i);
                        x >= b.low[i] && x <= b.high[i]
                    })
            }
            (Space::Discrete { n, start }, Value::Array(a)) => {
                a.len() == 1 && a.shape.is_empty() && !a.dtype.is_float() && {
                    let x = a.get_f64(0) as i64;
                    x >= *start && x < start + *n as i64
                }
            }
            (Space::MultiDiscrete { nvec, start }, Value::Array(a)) => {
                a.shape == [nvec.len()] && !a.dtype.is_float() && {
                    (0..nvec.len()).all(|i| {
                        let x = a.get_f64(i) as i64;
                        x >= start[i] && x < start[i] + nvec[i]
                    })
                }
            }
            (Space::MultiBinary { shape }, Value::Array(a)) => {
                &a.shape == shape && !a.dtype.is_float() && (0..a.len()).all(|i| matches!(a.get_f64(i), x if x == 0.0 || x == 1.0))
            }
            (Space::Text { min_length, max_length, charset }, Value::Array(a)) => {
                a.dtype == DType::U32
                    && a.shape == [*max_length]
                    && text_ok(*min_length, charset, (0..a.len()).map(|i| a.get_f64(i) as u32))
            }
            (Space::Dict(items), Value::Dict(vals)) => {
                items.len() == vals.len() && items.iter().all(|(k, s)| vals.iter().any(|(vk, vv)| vk == k && s.contains(vv)))
            }
            (Space::Tuple(items), Value::Tuple(vals)) => items.len() == vals.len() && items.iter().zip(vals).all(|(s, v)| s.contains(v)),
            _ => false,
        }
    }
}

/// A string as a Text row's code points, zero-padded to `max_length`; `None` when it
/// is longer (or holds NUL, the padding).
pub fn text_codes(s: &str, max_length: usize) -> Option<Vec<u32>> {
    let mut codes: Vec<u32> = s.chars().map(u32::from).collect();
    if codes.len() > max_length || codes.contains(&0) {
        return None;
    }
    codes.resize(max_length, 0);
    Some(codes)
}

/// A Text row's code points as a string (up to the first zero; invalid code points
/// as U+FFFD).
pub fn text_string(codes: impl IntoIterator<Item = u32>) -> String {
    codes.into_iter().take_while(|&c| c != 0).map(|c| char::from_u32(c).unwrap_or(char::REPLACEMENT_CHARACTER)).collect()
}

/// Draws a Text value: a length in `min..=max`, then each character from `charset`,
/// handed to `put(index, code point)`; the rest stays zero.
pub(crate) fn sample_text<R: Rng + ?Sized>(min: usize, max: usize, charset: &[char], rng: &mut R, mut put: impl FnMut(usize, u32)) {
    let len = rng.random_range(min..=max);
    for i in 0..len {
        put(i, u32::from(charset[rng.random_range(0..charset.len())]));
    }
}

/// Whether code points are a Text value: characters from `charset`, then only zeros,
/// at least `min` characters.
pub(crate) fn text_ok(min: usize, charset: &[char], codes: impl Iterator<Item = u32>) -> bool {
    let mut len = 0;
    let mut ended = false;
    for c in codes {
        if c == 0 {
            ended = true;
        } else if ended || !char::from_u32(c).is_some_and(|ch| charset.contains(&ch)) {
            return false;
        } else {
            len += 1;
        }
    }
    len >= min
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn discrete_respects_start() {
        let s = Space::discrete(3, -1).unwrap();
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(1);
        for _ in 0..100 {
            let v = s.sample(&mut rng);
            assert!(s.contains(&v));
        }
        assert!(!s.contains(&Value::Array(Array::scalar_i64(2))));
        assert!(s.contains(&Value::Array(Array::scalar_i64(-1))));
    }

    #[test]
    fn box_rejects_inverted_bounds() {
        assert!(Space::boxed(DType::F32, &[2], 1.0, 0.0).is_err());
        assert!(Space::boxed(DType::U8, &[2], 0.0, 300.0).is_err());
    }

    #[test]
    fn text_samples_are_contained_and_padded() {
        let s = Space::text(2, 5, "ab").unwrap();
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(2);
        for _ in 0..50 {
            let v = s.sample(&mut rng);
            assert!(s.contains(&v), "{v:?}");
        }
        let codes = |t: &[u32]| {
            let mut a = Array::zeros(DType::U32, &[5]);
            t.iter().enumerate().for_each(|(i, &c)| a.set_f64(i, f64::from(c)));
            Value::Array(a)
        };
        assert!(s.contains(&codes(&[97, 98])));
        assert!(!s.contains(&codes(&[97])), "too short");
        assert!(!s.contains(&codes(&[97, 99])), "c is not in the charset");
        assert!(!s.contains(&codes(&[97, 0, 98])), "characters after the padding");
        assert!(Space::text(3, 2, "a").is_err() && Space::text(1, 2, "").is_err() && Space::text(1, 2, "a\0").is_err());
    }

    #[test]
    fn dict_keys_are_sorted() {
        let s = Space::dict(vec![("b".into(), Space::discrete(2, 0).unwrap()), ("a".into(), Space::discrete(2, 0).unwrap())]).unwrap();
        let Space::Dict(items) = &s else { panic!() };
        assert_eq!(items[0].0, "a");
    }
}
