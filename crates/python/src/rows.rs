//! Single rows of a layout ↔ Python values, without a Python call for the common
//! spaces: a `Discrete` (a Python int) and a single `Box` (a numpy array of its
//! dtype and shape). Anything else (dicts, tuples, other dtypes, wrong shapes) is
//! left to the package's packers in `rollway/spaces.py`, which handle every space.

use numpy::{PyArrayMethods, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
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
        let ro = a.readonly();
        match ro.as_slice() {
            Ok(s) if ro.shape() == shape => {
                buf.extend_from_slice(bytemuck::cast_slice(s));
                true
            }
            _ => false,
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

/// The value of a row as a Gymnasium env takes it: an int for Discrete, a fresh
/// numpy array for a single Box. None: use the unpacker.
pub fn fast_value<'py>(py: Python<'py>, layout: &Layout, row: &[u8]) -> Option<PyResult<Bound<'py, PyAny>>> {
    let leaf = single(layout)?;
    if leaf.shape.is_empty() && leaf.dtype == DType::I64 {
        let x = i64::from_ne_bytes(row.try_into().ok()?);
        return Some(Ok(x.into_pyobject(py).expect("ints convert").into_any()));
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
