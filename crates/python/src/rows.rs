//! Single rows of a layout ↔ Python values, without a Python call for the common
//! spaces: a `Discrete` (a Python int) and a single `Box` (a numpy array of its
//! dtype and shape). Anything else (dicts, tuples, other dtypes, wrong shapes) is
//! left to the package's packers in `rollway/spaces.py`, which handle every space.

#![allow(unsafe_code)] // measured to matter here; every block says why it is sound (SAFETY)

use numpy::{PyArrayMethods, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyTuple};
use rollway_core::{DType, Layout};

use crate::errors::input_error;

/// What a Gymnasium `env.step` returned, checked: its observation and info as the
/// env gave them, the reward and flags as numbers.
pub struct Stepped<'py> {
    pub obs: Bound<'py, PyAny>,
    pub reward: f64,
    pub terminated: bool,
    pub truncated: bool,
    pub info: Bound<'py, PyAny>,
}

/// Reads `env.step`'s 5-tuple; a wrong shape or type is an input error saying which.
pub fn stepped<'py>(out: &Bound<'py, PyAny>) -> PyResult<Stepped<'py>> {
    const API: &str = "(obs, reward, terminated, truncated, info)";
    let t = out.cast::<PyTuple>().map_err(|_| input_error(format!("env.step must return a 5-tuple {API}")))?;
    if t.len() != 5 {
        return Err(input_error(format!("env.step returned {} values; Gymnasium's API has 5 {API}", t.len())));
    }
    let named = |i, what: &str| t.get_item(i).map_err(|e| input_error(format!("{what}: {e}")));
    let flag = |i, what: &str| named(i, what)?.extract::<bool>().map_err(|e| input_error(format!("{what}: {e}")));
    Ok(Stepped {
        obs: t.get_item(0)?,
        reward: named(1, "reward")?.extract::<f64>().map_err(|e| input_error(format!("reward: {e}")))?,
        terminated: flag(2, "terminated")?,
        truncated: flag(3, "truncated")?,
        info: t.get_item(4)?,
    })
}

/// The one leaf of a single-leaf, unpadded layout.
fn single(layout: &Layout) -> Option<&rollway_core::Leaf> {
    match layout.leaves() {
        [leaf] if leaf.bytes() == layout.row_bytes() => Some(leaf),
        _ => None,
    }
}

/// The bytes of one part of a packed row (`rollway.spaces.part_packer`): a `bytes`, or a flat
/// contiguous `uint8` array read in place; None for anything else.
pub fn part_bytes<'a>(v: &'a Bound<'_, PyAny>) -> Option<&'a [u8]> {
    if let Ok(b) = v.cast::<PyBytes>() {
        return Some(b.as_bytes());
    }
    let a = v.cast::<numpy::PyArray1<u8>>().ok()?;
    // SAFETY: the caller reads the slice under the GIL and runs no Python code while it does
    // (it borrows `v`, which keeps the array alive), so nothing can write to or free the
    // array's data meanwhile; `as_slice` refuses a non-contiguous array.
    unsafe { a.as_slice() }.ok()
}

/// The row of a value straight from a numpy array of the leaf's dtype and shape
/// (or a Python int for Discrete) into `buf`. False: use the packer.
pub fn fast_row(layout: &Layout, v: &Bound<'_, PyAny>, buf: &mut Vec<u8>) -> bool {
    let Some(leaf) = single(layout) else { return false };
    buf.clear();
    if leaf.shape.is_empty() && leaf.dtype == DType::I64 {
        return v.extract::<i64>().map(|x| buf.extend_from_slice(&x.to_ne_bytes())).is_ok();
    }
    fn take<T: numpy::Element + bytemuck::Pod>(v: &Bound<'_, PyAny>, shape: &[usize], buf: &mut Vec<u8>) -> bool {
        let Ok(a) = v.cast::<numpy::PyArrayDyn<T>>() else { return false };
        if a.shape() != shape {
            return false;
        }
        // SAFETY: the slice lives only for this copy, under the GIL, with no Python code
        // run meanwhile, so nothing can write to or free the array's data during it;
        // `as_slice` itself refuses a non-contiguous array. It skips `readonly()`'s borrow
        // tracking (a lookup in numpy's shared borrow table), measured at ~0.2 µs of
        // the inline host's ~1.3 µs per step.
        match unsafe { a.as_slice() } {
            Ok(s) => {
                buf.extend_from_slice(bytemuck::cast_slice(s));
                true
            }
            Err(_) => false,
        }
    }
    match leaf.dtype {
        DType::F32 => take::<f32>(v, &leaf.shape, buf),
        DType::F64 => take::<f64>(v, &leaf.shape, buf),
        DType::U8 => take::<u8>(v, &leaf.shape, buf),
        DType::I64 => take::<i64>(v, &leaf.shape, buf),
        _ => false,
    }
}

/// `numpy.int64`, looked up once.
static NP_INT64: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// The `numpy.int64` scalars of small Discrete actions, each made once and shared:
/// numpy scalars are immutable, and making one (`numpy.int64(x)`) costs ~0.2 µs,
/// a tenth of what the inline host adds to a CartPole step.
#[derive(Default)]
pub struct Int64s(Vec<Option<Py<PyAny>>>);

impl Int64s {
    /// The most values kept: Discrete spaces are mostly small; larger actions are made each time.
    const KEPT: i64 = 1024;

    fn get<'py>(&mut self, py: Python<'py>, x: i64) -> PyResult<Bound<'py, PyAny>> {
        let make = || NP_INT64.get_or_try_init(py, || py.import("numpy")?.getattr("int64").map(Bound::unbind))?.bind(py).call1((x,));
        if !(0..Self::KEPT).contains(&x) {
            return make();
        }
        let i = x as usize;
        if self.0.len() <= i {
            self.0.resize_with(i + 1, || None);
        }
        if let Some(v) = &self.0[i] {
            return Ok(v.bind(py).clone());
        }
        let v = make()?;
        self.0[i] = Some(v.clone().unbind());
        Ok(v)
    }
}

/// The value of a row as Gymnasium's vector envs give it to an env: a `numpy.int64`
/// for Discrete, a fresh numpy array for a single Box. None: use the unpacker.
///
/// A Discrete action is a numpy scalar, not a Python int, because that is what
/// `SyncVectorEnv` and `AsyncVectorEnv` pass (they iterate an int64 array): an env
/// sees the same type under rollway, and Gymnasium's own checks (`Discrete.contains`,
/// `action == 1`) run ~0.5 µs faster on it than on an int (CartPole's step, measured).
pub fn fast_value<'py>(py: Python<'py>, layout: &Layout, row: &[u8], ints: &mut Int64s) -> Option<PyResult<Bound<'py, PyAny>>> {
    let leaf = single(layout)?;
    if leaf.shape.is_empty() && leaf.dtype == DType::I64 {
        return Some(ints.get(py, i64::from_ne_bytes(row.try_into().ok()?)));
    }
    fn array<'py, T: numpy::Element + bytemuck::Pod>(py: Python<'py>, row: &[u8], shape: &[usize]) -> PyResult<Bound<'py, PyAny>> {
        let mut flat = vec![T::zeroed(); row.len() / std::mem::size_of::<T>()];
        bytemuck::cast_slice_mut::<T, u8>(&mut flat).copy_from_slice(row);
        Ok(numpy::PyArray1::from_vec(py, flat).reshape(shape)?.into_any())
    }
    Some(match leaf.dtype {
        DType::F32 => array::<f32>(py, row, &leaf.shape),
        DType::F64 => array::<f64>(py, row, &leaf.shape),
        DType::U8 => array::<u8>(py, row, &leaf.shape),
        DType::I64 => array::<i64>(py, row, &leaf.shape),
        _ => return None,
    })
}
