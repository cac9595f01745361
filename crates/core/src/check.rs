//! Checks of the values that cross into the engine from user code: actions an
//! agent chose, observations and rewards an env returned.
//!
//! Where Gymnasium's passive env checker only warns, a value that would silently
//! damage a dataset or a learner is an error here, on its first occurrence:
//!
//! | value | error | warning |
//! |---|---|---|
//! | action | outside a Discrete/MultiDiscrete/MultiBinary space; NaN or ±inf in a Box | — |
//! | observation | NaN in a float leaf | outside a Box's bounds, a Discrete's range |
//! | reward | NaN or ±inf | — |
//!
//! Box actions outside the bounds pass unchanged, as in Gymnasium (envs clip them
//! themselves, as Pendulum does, or a `ClipAction` wrapper does). Shapes, dtypes and
//! values that do not convert without loss are refused where a value is converted
//! into a row (the Python packers): a row always has its layout's shape and dtype.
//!
//! Cost: a [`RowCheck`] is built once per layout and skips the leaves that cannot
//! be wrong (a `uint8` image whose bounds are 0..=255); a checked leaf costs a
//! compare per element, next to an env step or an agent call (measured in
//! bench/RESULTS.md, "Checks").

use crate::layout::{Layout, Leaf, LeafKind};
use crate::DType;

/// Which values a [`RowCheck`] checks, and how strictly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// An agent's actions: every problem is an error.
    Action,
    /// An env's observations: NaN is an error, values outside the space a warning.
    Observation,
}

/// What is wrong with one element of a row.
#[derive(Clone, Debug, PartialEq)]
pub struct Problem {
    /// The leaf's path (empty for a bare array).
    pub leaf: String,
    /// The element's index in the leaf (row-major).
    pub index: usize,
    /// The leaf holds one element (its index is not worth naming).
    pub scalar: bool,
    /// The value, as written in a message.
    pub value: String,
    /// Why it is wrong, e.g. `is outside Discrete(2)`.
    pub why: String,
    /// Only a warning (the value is recorded as it is).
    pub warning: bool,
}

impl Problem {
    /// The problem as a message says it, `subject` naming what the row is:
    /// `action 7 is outside Discrete(2)`, `observation[1] is NaN (…)`,
    /// `action["arm"][2] = inf is not finite (…)`.
    pub fn describe(&self, subject: &str) -> String {
        let mut at = if self.leaf.is_empty() { String::new() } else { format!("[{:?}]", self.leaf) };
        if !self.scalar {
            at.push_str(&format!("[{}]", self.index));
        }
        match (self.value.as_str(), at.is_empty()) {
            ("NaN", _) => format!("{subject}{at} {}", self.why),
            (v, true) => format!("{subject} {v} {}", self.why),
            (v, false) => format!("{subject}{at} = {v} {}", self.why),
        }
    }

    /// A key that is the same for every occurrence of the same kind of problem in
    /// the same leaf: warnings are given once per key.
    pub fn key(&self) -> String {
        format!("{}\u{0}{}", self.leaf, self.why)
    }
}

/// How one leaf is checked.
#[derive(Clone, Debug)]
struct LeafCheck {
    leaf: Leaf,
    /// NaN (and, for actions, ±inf) is a problem.
    finite: bool,
    /// Values outside the space are a problem.
    bounds: bool,
    /// A test that passes every good row of the common leaves at a compare per
    /// element; a row it fails is looked at again to say what is wrong.
    quick: Quick,
    /// The leaf's bytes in the row.
    start: usize,
    end: usize,
}

/// [`LeafCheck::quick`]: the common leaves' pass test.
#[derive(Clone, Debug)]
enum Quick {
    /// float32 inside these bounds, rounded outwards to float32 (NaN fails every
    /// compare). A float32 space's bounds are float32 values: nothing is rounded.
    F32Within(Vec<f32>, Vec<f32>),
    /// float32, finite.
    F32Finite,
    /// float32, not NaN.
    F32NotNan,
    /// A Discrete leaf's value in `lo..hi`.
    Discrete(i64, i64),
    /// No quick test: always the full one.
    None,
}

/// The checks of one layout in one role, decided once.
#[derive(Clone, Debug)]
pub struct RowCheck {
    leaves: Vec<LeafCheck>,
    space: String,
    role: Role,
}

impl RowCheck {
    /// The checks of `layout`'s rows as `role`; leaves that cannot hold a wrong
    /// value are left out.
    pub fn new(layout: &Layout, role: Role) -> RowCheck {
        let leaves = layout
            .leaves()
            .iter()
            .filter_map(|leaf| {
                let (finite, bounds) = match &leaf.kind {
                    LeafKind::Box { low, high } => {
                        let (lo, hi) = leaf.dtype.range();
                        let covers = low.iter().all(|&l| l <= lo) && high.iter().all(|&h| h >= hi);
                        // Box actions outside the bounds go to the env as they are (see the module docs).
                        (leaf.dtype.is_float(), role == Role::Observation && !covers)
                    }
                    LeafKind::Text { .. } => (false, false),
                    _ => (false, true),
                };
                let quick = match (&leaf.kind, leaf.dtype) {
                    (LeafKind::Box { low, high }, DType::F32) if bounds => Quick::F32Within(
                        low.iter().map(|&l| if (l as f32 as f64) > l { (l as f32).next_down() } else { l as f32 }).collect(),
                        high.iter().map(|&h| if (h as f32 as f64) < h { (h as f32).next_up() } else { h as f32 }).collect(),
                    ),
                    (LeafKind::Box { .. }, DType::F32) if role == Role::Action => Quick::F32Finite,
                    (LeafKind::Box { .. }, DType::F32) => Quick::F32NotNan,
                    (LeafKind::Discrete { n, start }, _) => Quick::Discrete(*start, start + *n as i64),
                    _ => Quick::None,
                };
                let (start, end) = (leaf.offset, leaf.offset + leaf.bytes());
                (finite || bounds).then(|| LeafCheck { leaf: leaf.clone(), finite, bounds, quick, start, end })
            })
            .collect();
        RowCheck { leaves, space: layout.space().describe(), role }
    }

    /// True when no leaf needs checking: [`RowCheck::check`] always passes.
    pub fn is_empty(&self) -> bool {
        self.leaves.is_empty()
    }

    /// The space, as messages name it (`Discrete(2)`).
    pub fn space(&self) -> &str {
        &self.space
    }

    /// The first problem in `row`, errors before warnings.
    #[inline]
    pub fn check(&self, row: &[u8]) -> Option<Problem> {
        if self.all_pass(row, row.len()) {
            return None;
        }
        self.explain(row)
    }

    /// True when every row of `rows` (`row_bytes` each) passes the quick tests,
    /// leaf by leaf over the whole batch: what a batch of good rows costs (a compare
    /// per element, no call per row). False: look at the rows one by one ([`RowCheck::check`]).
    pub fn all_pass(&self, rows: &[u8], row_bytes: usize) -> bool {
        self.leaves.iter().all(|c| {
            let mut leaf = rows.chunks_exact(row_bytes).map(|r| &r[c.start..c.end]);
            // Folded without an early exit: no branch per element, and good rows are the rule.
            match &c.quick {
                Quick::F32Within(low, high) => {
                    leaf.all(|b| f32s(b).zip(low.iter().zip(high)).fold(true, |ok, (x, (&lo, &hi))| ok & (x >= lo) & (x <= hi)))
                }
                Quick::F32Finite => leaf.all(|b| f32s(b).fold(true, |ok, x| ok & x.is_finite())),
                Quick::F32NotNan => leaf.all(|b| f32s(b).fold(true, |ok, x| ok & !x.is_nan())),
                Quick::Discrete(lo, hi) => leaf.all(|b| (*lo..*hi).contains(&i64::from_ne_bytes(b[..8].try_into().expect("an i64")))),
                Quick::None => false,
            }
        })
    }

    /// What is wrong with a row that failed a quick test (or has none).
    fn explain(&self, row: &[u8]) -> Option<Problem> {
        let mut warning = None;
        for c in &self.leaves {
            match self.leaf(c, row) {
                Some(p) if !p.warning => return Some(p),
                Some(p) => warning = warning.or(Some(p)),
                None => {}
            }
        }
        warning
    }

    fn leaf(&self, c: &LeafCheck, row: &[u8]) -> Option<Problem> {
        let leaf = &c.leaf;
        let bytes = &row[leaf.offset..leaf.offset + leaf.bytes()];
        let problem = |index: usize, value: String, why: String, warning: bool| Problem {
            leaf: leaf.path.clone(),
            index,
            scalar: leaf.len() == 1,
            value,
            why,
            warning,
        };
        if c.finite {
            let bad = match leaf.dtype {
                DType::F32 => f32s(bytes).position(|x| !x.is_finite()),
                _ => (0..leaf.len()).find(|&i| !leaf.dtype.read_f64(bytes, i).is_finite()),
            };
            if let Some(i) = bad {
                let x = leaf.dtype.read_f64(bytes, i);
                // An observation may be ±inf in an unbounded Box; NaN never.
                if self.role == Role::Action || x.is_nan() {
                    let why = if x.is_nan() { "is NaN" } else { "is not finite" };
                    // `describe` says "is NaN" without repeating the value.
                    return Some(problem(i, fmt(x), format!("{why} ({} takes finite numbers)", self.space), false));
                }
            }
        }
        if !c.bounds {
            return None;
        }
        let get = |i| leaf.dtype.read_f64(bytes, i);
        let warning = self.role == Role::Observation;
        let outside = |i: usize, x: f64| problem(i, fmt_as(leaf.dtype, x), format!("is outside {}", self.space), warning);
        match &leaf.kind {
            LeafKind::Discrete { n, start } => {
                let v = i64::from_ne_bytes(bytes[..8].try_into().expect("a Discrete leaf is an i64"));
                (v < *start || v >= start + *n as i64).then(|| problem(0, v.to_string(), format!("is outside {}", self.space), warning))
            }
            LeafKind::MultiDiscrete { nvec, start } => {
                (0..nvec.len()).find(|&i| !(start[i] as f64..(start[i] + nvec[i]) as f64).contains(&get(i))).map(|i| outside(i, get(i)))
            }
            LeafKind::MultiBinary => (0..leaf.len()).find(|&i| get(i) != 0.0 && get(i) != 1.0).map(|i| outside(i, get(i))),
            LeafKind::Box { low, high } => (0..leaf.len()).find(|&i| !(get(i) >= low[i] && get(i) <= high[i])).map(|i| {
                let (x, side, bound) = if get(i) > high[i] { (get(i), "above", high[i]) } else { (get(i), "below", low[i]) };
                problem(i, fmt_as(leaf.dtype, x), format!("is {side} its bound {} in {}", fmt_as(leaf.dtype, bound), self.space), warning)
            }),
            LeafKind::Text { .. } => None,
        }
    }
}

/// A leaf's bytes as float32 values.
#[inline]
fn f32s(bytes: &[u8]) -> impl Iterator<Item = f32> + '_ {
    bytes.chunks_exact(4).map(|c| f32::from_ne_bytes(c.try_into().expect("4 bytes")))
}

/// The first reward problem: a reward must be a finite number.
#[inline]
pub fn check_reward(reward: f64) -> Option<String> {
    (!reward.is_finite()).then(|| format!("reward {} is not a finite number", fmt(reward)))
}

/// A number as messages write it: integers without a fraction.
fn fmt(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

/// A value of a leaf of type `dtype`, as short as that type writes it: a float32 1.2 is
/// `1.2`, not its float64 widening `1.2000000476837158`.
fn fmt_as(dtype: DType, x: f64) -> String {
    if dtype == DType::F32 && x.fract() != 0.0 && x.is_finite() {
        format!("{}", x as f32)
    } else {
        fmt(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Rows, Space};

    fn row_of(layout: &Layout, write: impl FnOnce(&mut [u8])) -> Vec<u8> {
        let mut rows = Rows::new(layout.row_bytes(), 1);
        write(rows.row_mut(0));
        rows.row(0).to_vec()
    }

    #[test]
    fn discrete_actions_outside_the_space_are_errors_that_name_value_and_space() {
        let l = Layout::of(&Space::discrete(2, 0).unwrap());
        let c = RowCheck::new(&l, Role::Action);
        assert_eq!(c.check(&row_of(&l, |r| r.copy_from_slice(&1i64.to_ne_bytes()))), None);
        let p = c.check(&row_of(&l, |r| r.copy_from_slice(&7i64.to_ne_bytes()))).unwrap();
        assert_eq!((p.describe("action"), p.warning), ("action 7 is outside Discrete(2)".to_string(), false));
        let p = c.check(&row_of(&l, |r| r.copy_from_slice(&(-1i64).to_ne_bytes()))).unwrap();
        assert_eq!(p.value, "-1");
    }

    #[test]
    fn box_actions_must_be_finite_but_may_leave_the_bounds_as_in_gymnasium() {
        let l = Layout::of(&Space::boxed(DType::F32, &[2], -2.0, 2.0).unwrap());
        let c = RowCheck::new(&l, Role::Action);
        let row = |a: f32, b: f32| row_of(&l, |r| r[..8].copy_from_slice(bytemuck::cast_slice(&[a, b])));
        assert_eq!(c.check(&row(5.0, -9.0)), None);
        let p = c.check(&row(0.0, f32::NAN)).unwrap();
        assert_eq!(p.describe("action"), "action[1] is NaN (Box(float32, [2]) takes finite numbers)");
        let p = c.check(&row(f32::INFINITY, 0.0)).unwrap();
        assert_eq!(p.describe("action"), "action[0] = inf is not finite (Box(float32, [2]) takes finite numbers)");
    }

    #[test]
    fn observations_warn_outside_the_bounds_and_fail_on_nan_only() {
        let l = Layout::of(&Space::boxed(DType::F32, &[3], -1.0, 1.0).unwrap());
        let c = RowCheck::new(&l, Role::Observation);
        let row = |v: [f32; 3]| row_of(&l, |r| r[..12].copy_from_slice(bytemuck::cast_slice(&v)));
        assert_eq!(c.check(&row([0.0, 0.5, -1.0])), None);
        let p = c.check(&row([0.0, 3.0, 0.0])).unwrap();
        assert!(p.warning, "{p:?}");
        assert_eq!(p.describe("observation"), "observation[1] = 3 is above its bound 1 in Box(float32, [3])");
        // A float32 value as float32 writes it, not widened: 1.2, not 1.2000000476837158.
        let p = c.check(&row([0.0, 1.2, 0.0])).unwrap();
        assert_eq!(p.describe("observation"), "observation[1] = 1.2 is above its bound 1 in Box(float32, [3])");
        // The error wins over an earlier warning in the same row.
        let p = c.check(&row([3.0, f32::NAN, 0.0])).unwrap();
        assert!(!p.warning && p.index == 1, "{p:?}");
        let open = Layout::of(&Space::boxed(DType::F32, &[1], f64::NEG_INFINITY, f64::INFINITY).unwrap());
        let row = row_of(&open, |r| r[..4].copy_from_slice(&f32::INFINITY.to_ne_bytes()));
        assert_eq!(RowCheck::new(&open, Role::Observation).check(&row), None, "inf is inside an unbounded Box");
    }

    #[test]
    fn leaves_that_cannot_be_wrong_are_not_checked() {
        let image = Layout::of(&Space::boxed(DType::U8, &[8, 8, 3], 0.0, 255.0).unwrap());
        assert!(RowCheck::new(&image, Role::Observation).is_empty());
        let dict = Space::dict(vec![
            ("rgb".into(), Space::boxed(DType::U8, &[4], 0.0, 255.0).unwrap()),
            ("n".into(), Space::discrete(3, 1).unwrap()),
        ]);
        let l = Layout::of(&dict.unwrap());
        let c = RowCheck::new(&l, Role::Action);
        assert!(!c.is_empty());
        let at = l.leaves()[l.leaf_index("n").unwrap()].offset;
        let p = c.check(&row_of(&l, |r| r[at..at + 8].copy_from_slice(&0i64.to_ne_bytes()))).unwrap();
        assert_eq!(p.describe("action"), r#"action["n"] = 0 is outside Dict(n: Discrete(3, start=1), rgb: Box(uint8, [4]))"#);
    }

    #[test]
    fn rewards_must_be_finite() {
        assert_eq!(check_reward(1.5), None);
        assert_eq!(check_reward(f64::NAN).unwrap(), "reward NaN is not a finite number");
        assert_eq!(check_reward(f64::NEG_INFINITY).unwrap(), "reward -inf is not a finite number");
    }
}
