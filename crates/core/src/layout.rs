//! Flat row layouts: how one observation or action is laid out in a contiguous,
//! 8-byte-aligned row of bytes, so that batches are plain arrays.
//!
//! A [`Layout`] lists a space's leaves (arrays) in order with their byte offsets.
//! The generator keeps one row per env in a single buffer ([`Rows`]); envs write
//! observations into their row and agents write actions into theirs. Nothing on
//! that path allocates. Leaves start at 8-byte offsets so every typed view is aligned.

use rand::Rng;

use crate::space::sample_bounded;
use crate::value::{Array, Value};
use crate::{DType, Error, Result, Space};

/// What constrains a leaf's values (used to sample and check rows).
#[derive(Clone, Debug, PartialEq)]
pub enum LeafKind {
    /// Box bounds per element.
    Box {
        /// Lower bounds.
        low: Vec<f64>,
        /// Upper bounds.
        high: Vec<f64>,
    },
    /// A Discrete scalar.
    Discrete {
        /// Number of values.
        n: u64,
        /// Smallest value.
        start: i64,
    },
    /// MultiDiscrete entries.
    MultiDiscrete {
        /// Count per entry.
        nvec: Vec<i64>,
        /// Start per entry.
        start: Vec<i64>,
    },
    /// 0/1 entries.
    MultiBinary,
    /// A Text value's code points, zero-padded (see [`Space::Text`]).
    Text {
        /// Fewest characters.
        min_length: usize,
        /// The characters a string may use.
        charset: Vec<char>,
    },
}

/// One array inside a row.
#[derive(Clone, Debug, PartialEq)]
pub struct Leaf {
    /// `/`-joined path of dict keys (`_index_k` for tuple members, Minari's naming); empty for a bare array.
    pub path: String,
    /// Element type.
    pub dtype: DType,
    /// Shape of the array.
    pub shape: Vec<usize>,
    /// Byte offset inside the row (a multiple of 8).
    pub offset: usize,
    /// Constraints on the values.
    pub kind: LeafKind,
}

impl Leaf {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// True for zero-element leaves.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of data (without padding).
    pub fn bytes(&self) -> usize {
        self.len() * self.dtype.size()
    }

    /// Where its bytes lie in a row.
    pub fn range(&self) -> std::ops::Range<usize> {
        self.offset..self.offset + self.bytes()
    }
}

/// The flat layout of a space.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    space: Space,
    leaves: Vec<Leaf>,
    row_bytes: usize,
}

fn align8(x: usize) -> usize {
    x.div_ceil(8) * 8
}

impl Layout {
    /// Lays out `space`'s leaves in depth-first order (dict keys sorted).
    pub fn of(space: &Space) -> Layout {
        let mut leaves = Vec::new();
        let mut off = 0;
        collect(space, String::new(), &mut leaves, &mut off);
        Layout { space: space.clone(), leaves, row_bytes: off.max(8) }
    }

    /// The space this layout was made from.
    pub fn space(&self) -> &Space {
        &self.space
    }

    /// The leaves in row order.
    pub fn leaves(&self) -> &[Leaf] {
        &self.leaves
    }

    /// Index of the leaf at `path`.
    pub fn leaf_index(&self, path: &str) -> Option<usize> {
        self.leaves.iter().position(|l| l.path == path)
    }

    /// Bytes per row (a multiple of 8).
    pub fn row_bytes(&self) -> usize {
        self.row_bytes
    }

    /// Fills `row` with a uniform-ish sample of the space (see [`crate::space::BoxSpace::sample_elem`]).
    #[inline]
    pub fn sample_row<R: Rng + ?Sized>(&self, rng: &mut R, row: &mut [u8]) {
        for leaf in &self.leaves {
            let bytes = &mut row[leaf.range()];
            match &leaf.kind {
                LeafKind::Discrete { n, start } => {
                    let v = start + rng.random_range(0..*n) as i64;
                    bytes.copy_from_slice(&v.to_ne_bytes());
                }
                LeafKind::Box { low, high } => {
                    for i in 0..low.len() {
                        leaf.dtype.write_f64(bytes, i, sample_bounded(leaf.dtype, low[i], high[i], rng));
                    }
                }
                LeafKind::MultiDiscrete { nvec, start } => {
                    for i in 0..nvec.len() {
                        leaf.dtype.write_f64(bytes, i, (start[i] + rng.random_range(0..nvec[i])) as f64);
                    }
                }
                LeafKind::MultiBinary => {
                    for b in bytes.iter_mut() {
                        *b = rng.random_range(0..2u8);
                    }
                }
                LeafKind::Text { min_length, charset } => {
                    bytes.fill(0);
                    crate::space::sample_text(*min_length, leaf.len(), charset, rng, |i, c| leaf.dtype.write_f64(bytes, i, f64::from(c)));
                }
            }
        }
    }

    /// True when every leaf of `row` is inside the space.
    pub fn contains_row(&self, row: &[u8]) -> bool {
        self.leaves.iter().all(|leaf| {
            let bytes = &row[leaf.range()];
            let get = |i| leaf.dtype.read_f64(bytes, i);
            match &leaf.kind {
                LeafKind::Discrete { n, start } => {
                    let v = get(0) as i64;
                    v >= *start && v < start + *n as i64
                }
                LeafKind::Box { low, high } => (0..low.len()).all(|i| get(i) >= low[i] && get(i) <= high[i]),
                LeafKind::MultiDiscrete { nvec, start } => (0..nvec.len()).all(|i| {
                    let v = get(i) as i64;
                    v >= start[i] && v < start[i] + nvec[i]
                }),
                LeafKind::MultiBinary => bytes.iter().all(|&b| b <= 1),
                LeafKind::Text { min_length, charset } => {
                    crate::space::text_ok(*min_length, charset, (0..leaf.len()).map(|i| get(i) as u32))
                }
            }
        })
    }

    /// Writes an owned value into `row` (checks structure, dtype and shape, not bounds).
    pub fn write_value(&self, value: &Value, row: &mut [u8]) -> Result<()> {
        let mut i = 0;
        write_rec(&self.space, value, &self.leaves, &mut i, row)
    }

    /// Reads `row` back as an owned value.
    pub fn read_value(&self, row: &[u8]) -> Value {
        let mut i = 0;
        read_rec(&self.space, &self.leaves, &mut i, row)
    }
}

fn collect(space: &Space, path: String, leaves: &mut Vec<Leaf>, off: &mut usize) {
    let mut push = |dtype: DType, shape: Vec<usize>, kind: LeafKind| {
        let leaf = Leaf { path: path.clone(), dtype, shape, offset: *off, kind };
        *off = align8(*off + leaf.bytes());
        leaves.push(leaf);
    };
    let join = |k: &str| if path.is_empty() { k.to_string() } else { format!("{path}/{k}") };
    match space {
        Space::Box(b) => push(b.dtype, b.shape.clone(), LeafKind::Box { low: b.low.clone(), high: b.high.clone() }),
        Space::Discrete { n, start } => push(DType::I64, vec![], LeafKind::Discrete { n: *n, start: *start }),
        Space::MultiDiscrete { nvec, start } => {
            push(DType::I64, vec![nvec.len()], LeafKind::MultiDiscrete { nvec: nvec.clone(), start: start.clone() })
        }
        Space::MultiBinary { shape } => push(DType::I8, shape.clone(), LeafKind::MultiBinary),
        Space::Text { min_length, max_length, charset } => {
            push(DType::U32, vec![*max_length], LeafKind::Text { min_length: *min_length, charset: charset.clone() })
        }
        Space::Dict(items) => items.iter().for_each(|(k, s)| collect(s, join(k), leaves, off)),
        Space::Tuple(items) => items.iter().enumerate().for_each(|(i, s)| collect(s, join(&format!("_index_{i}")), leaves, off)),
    }
}

fn write_rec(space: &Space, value: &Value, leaves: &[Leaf], i: &mut usize, row: &mut [u8]) -> Result<()> {
    match (space, value) {
        (Space::Dict(items), Value::Dict(vals)) => {
            for (k, s) in items {
                let v = vals.iter().find(|(vk, _)| vk == k).ok_or_else(|| Error::ValueMismatch(format!("missing key `{k}`")))?;
                write_rec(s, &v.1, leaves, i, row)?;
            }
            Ok(())
        }
        (Space::Tuple(items), Value::Tuple(vals)) if items.len() == vals.len() => {
            items.iter().zip(vals).try_for_each(|(s, v)| write_rec(s, v, leaves, i, row))
        }
        (Space::Dict(_) | Space::Tuple(_), _) => Err(Error::ValueMismatch(format!("expected {}", space.describe()))),
        (_, Value::Array(a)) => {
            let leaf = &leaves[*i];
            *i += 1;
            if a.shape != leaf.shape {
                return Err(Error::ValueMismatch(format!("leaf `{}`: shape {:?}, expected {:?}", leaf.path, a.shape, leaf.shape)));
            }
            let dst = &mut row[leaf.range()];
            if a.dtype == leaf.dtype {
                dst.copy_from_slice(&a.data);
            } else {
                (0..a.len()).for_each(|j| leaf.dtype.write_f64(dst, j, a.get_f64(j)));
            }
            Ok(())
        }
        _ => Err(Error::ValueMismatch(format!("expected an array for {}", space.describe()))),
    }
}

fn read_rec(space: &Space, leaves: &[Leaf], i: &mut usize, row: &[u8]) -> Value {
    match space {
        Space::Dict(items) => Value::Dict(items.iter().map(|(k, s)| (k.clone(), read_rec(s, leaves, i, row))).collect()),
        Space::Tuple(items) => Value::Tuple(items.iter().map(|s| read_rec(s, leaves, i, row)).collect()),
        _ => {
            let leaf = &leaves[*i];
            *i += 1;
            Value::Array(Array { dtype: leaf.dtype, shape: leaf.shape.clone(), data: row[leaf.range()].to_vec() })
        }
    }
}

/// A read-only view of one row.
#[derive(Clone, Copy)]
pub struct RowRef<'a> {
    layout: &'a Layout,
    bytes: &'a [u8],
}

/// A writable view of one row.
pub struct RowMut<'a> {
    layout: &'a Layout,
    bytes: &'a mut [u8],
}

impl<'a> RowRef<'a> {
    /// Views `bytes` (exactly `layout.row_bytes()` long, 8-aligned) as a row.
    pub fn new(layout: &'a Layout, bytes: &'a [u8]) -> Self {
        debug_assert_eq!(bytes.len(), layout.row_bytes());
        RowRef { layout, bytes }
    }

    /// The row's layout.
    pub fn layout(&self) -> &'a Layout {
        self.layout
    }

    /// The raw bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Leaf `i` as a typed slice. Panics if `T` is not the leaf's dtype size.
    #[inline]
    pub fn leaf<T: bytemuck::Pod>(&self, i: usize) -> &'a [T] {
        let leaf = &self.layout.leaves[i];
        bytemuck::cast_slice(&self.bytes[leaf.range()])
    }

    /// The value of a Discrete leaf `i`.
    #[inline]
    pub fn discrete(&self, i: usize) -> i64 {
        self.leaf::<i64>(i)[0]
    }

    /// An owned copy of the row's value.
    pub fn to_value(&self) -> Value {
        self.layout.read_value(self.bytes)
    }
}

impl<'a> RowMut<'a> {
    /// Views `bytes` (exactly `layout.row_bytes()` long, 8-aligned) as a writable row.
    pub fn new(layout: &'a Layout, bytes: &'a mut [u8]) -> Self {
        debug_assert_eq!(bytes.len(), layout.row_bytes());
        RowMut { layout, bytes }
    }

    /// The row's layout.
    pub fn layout(&self) -> &'a Layout {
        self.layout
    }

    /// The raw bytes.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        self.bytes
    }

    /// Leaf `i` as a typed mutable slice.
    #[inline]
    pub fn leaf_mut<T: bytemuck::Pod>(&mut self, i: usize) -> &mut [T] {
        let r = self.layout.leaves[i].range();
        bytemuck::cast_slice_mut(&mut self.bytes[r])
    }

    /// Sets a Discrete leaf `i`.
    #[inline]
    pub fn set_discrete(&mut self, i: usize, v: i64) {
        self.leaf_mut::<i64>(i)[0] = v;
    }

    /// Writes an owned value.
    pub fn write(&mut self, value: &Value) -> Result<()> {
        self.layout.write_value(value, self.bytes)
    }

    /// A read-only view of the same row.
    pub fn as_ref(&self) -> RowRef<'_> {
        RowRef { layout: self.layout, bytes: self.bytes }
    }
}

/// An owned buffer of `n` rows of one layout, 8-byte aligned.
#[derive(Clone, Debug)]
pub struct Rows {
    words: Vec<u64>,
    row_bytes: usize,
    n: usize,
}

impl Rows {
    /// `n` zeroed rows of `row_bytes` bytes (a multiple of 8).
    pub fn new(row_bytes: usize, n: usize) -> Rows {
        assert_eq!(row_bytes % 8, 0, "row_bytes must be a multiple of 8");
        Rows { words: vec![0; row_bytes / 8 * n], row_bytes, n }
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.n
    }

    /// True when there are no rows.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Bytes per row.
    pub fn row_bytes(&self) -> usize {
        self.row_bytes
    }

    /// All rows as bytes.
    pub fn bytes(&self) -> &[u8] {
        bytemuck::cast_slice(&self.words)
    }

    /// All rows as mutable bytes.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        bytemuck::cast_slice_mut(&mut self.words)
    }

    /// Row `i`.
    #[inline]
    pub fn row(&self, i: usize) -> &[u8] {
        &self.bytes()[i * self.row_bytes..(i + 1) * self.row_bytes]
    }

    /// Row `i`, mutable.
    #[inline]
    pub fn row_mut(&mut self, i: usize) -> &mut [u8] {
        let rb = self.row_bytes;
        &mut self.bytes_mut()[i * rb..(i + 1) * rb]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn nested() -> Space {
        Space::dict(vec![
            ("rgb".into(), Space::boxed(DType::U8, &[4, 4, 3], 0.0, 255.0).unwrap()),
            ("inv".into(), Space::boxed(DType::I16, &[5], 0.0, 99.0).unwrap()),
            ("t".into(), Space::Tuple(vec![Space::discrete(3, 1).unwrap(), Space::MultiBinary { shape: vec![3] }])),
        ])
        .unwrap()
    }

    #[test]
    fn leaves_are_aligned_and_ordered() {
        let l = Layout::of(&nested());
        let paths: Vec<_> = l.leaves().iter().map(|x| x.path.as_str()).collect();
        assert_eq!(paths, ["inv", "rgb", "t/_index_0", "t/_index_1"]);
        assert!(l.leaves().iter().all(|x| x.offset % 8 == 0));
        assert_eq!(l.row_bytes() % 8, 0);
    }

    #[test]
    fn sampled_rows_are_contained_and_round_trip() {
        let s = nested();
        let l = Layout::of(&s);
        let mut rows = Rows::new(l.row_bytes(), 2);
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(7);
        for _ in 0..50 {
            l.sample_row(&mut rng, rows.row_mut(0));
            assert!(l.contains_row(rows.row(0)));
            let v = l.read_value(rows.row(0));
            assert!(s.contains(&v));
            l.write_value(&v, rows.row_mut(1)).unwrap();
            assert_eq!(rows.row(0), rows.row(1));
        }
    }
}
