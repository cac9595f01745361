//! Owned observation/action values: typed n-d arrays nested in dicts and tuples.
//!
//! These are for APIs and tests; the hot path never builds them and works on
//! [`crate::layout`] rows instead.

use crate::DType;

/// A typed n-d array with native-endian bytes, row-major.
#[derive(Clone, Debug, PartialEq)]
pub struct Array {
    /// Element type.
    pub dtype: DType,
    /// Shape (empty for a scalar).
    pub shape: Vec<usize>,
    /// `len() * dtype.size()` bytes.
    pub data: Vec<u8>,
}

/// An empty uint8 array (shape `[0]`), e.g. a buffer before its first use.
impl Default for Array {
    fn default() -> Self {
        Array { dtype: DType::U8, shape: vec![0], data: Vec::new() }
    }
}

impl Array {
    /// An all-zero array.
    pub fn zeros(dtype: DType, shape: &[usize]) -> Array {
        let n: usize = shape.iter().product();
        Array { dtype, shape: shape.to_vec(), data: vec![0; n * dtype.size()] }
    }

    /// A scalar int64 (how Discrete values are stored).
    pub fn scalar_i64(v: i64) -> Array {
        Array { dtype: DType::I64, shape: vec![], data: v.to_ne_bytes().to_vec() }
    }

    /// An array from f32 values.
    pub fn from_f32(shape: &[usize], vals: &[f32]) -> Array {
        assert_eq!(shape.iter().product::<usize>(), vals.len(), "shape and data disagree");
        Array { dtype: DType::F32, shape: shape.to_vec(), data: bytemuck::cast_slice(vals).to_vec() }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// True when the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element `i` as f64.
    pub fn get_f64(&self, i: usize) -> f64 {
        self.dtype.read_f64(&self.data, i)
    }

    /// Sets element `i` from f64 (cast to the dtype).
    pub fn set_f64(&mut self, i: usize, v: f64) {
        self.dtype.write_f64(&mut self.data, i, v)
    }
}

/// An observation or action: an array, or a dict/tuple of values.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// A leaf array.
    Array(Array),
    /// Named values, in the space's (sorted) key order.
    Dict(Vec<(String, Value)>),
    /// Positional values.
    Tuple(Vec<Value>),
}

impl Value {
    /// The array, when this value is a leaf.
    pub fn as_array(&self) -> Option<&Array> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }
}
