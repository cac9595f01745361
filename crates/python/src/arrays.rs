//! numpy arrays over Rust memory, without a copy.
//!
//! A [`Keeper`] holds whatever owns the bytes (an episode's `Vec`, a loader batch
//! lent out of the pool) behind an `Arc`, and is the `base` object of every array
//! made over that memory: the memory lives exactly as long as some array (or a
//! torch tensor made by `torch.from_numpy`, which keeps its array) still views it,
//! and is freed or returned to the loader's pool when the last one goes.
//!
//! Arrays are made through numpy's C API (`PyArray_NewFromDescr` via rust-numpy,
//! which works under the stable ABI, abi3, Python ≥ 3.9, where the C buffer
//! protocol is unavailable before 3.11): a few hundred nanoseconds per array,
//! whatever its size; a loader batch's ten arrays share one `Keeper`.
#![allow(unsafe_code)] // measured to matter here; every block says why it is sound (SAFETY)

use std::any::Any;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use rollway_core::{Array, DType};
use rollway_runner::rollout::ObsBuffers;

/// Something that keeps bytes alive.
pub type Keep = Arc<dyn Any + Send + Sync>;

/// A space's leaves as Python sees them: the array itself for a single-leaf space,
/// else a dict by leaf path. Columns are named `observation` / `observation/<path>`.
pub fn leaves<'py>(py: Python<'py>, cols: Vec<(&str, Bound<'py, PyAny>)>) -> PyResult<Bound<'py, PyAny>> {
    let path = |col: &str| col.split_once('/').map_or(String::new(), |(_, p)| p.to_string());
    if let [(col, a)] = cols.as_slice() {
        if path(col).is_empty() {
            return Ok(a.clone());
        }
    }
    let d = PyDict::new(py);
    for (col, a) in cols {
        d.set_item(path(col), a)?;
    }
    Ok(d.into_any())
}

/// numpy's type string of a dtype (native little-endian).
pub fn typestr(d: DType) -> &'static str {
    match d {
        DType::Bool => "|b1",
        DType::U8 => "|u1",
        DType::I8 => "|i1",
        DType::U16 => "<u2",
        DType::I16 => "<i2",
        DType::U32 => "<u4",
        DType::I32 => "<i4",
        DType::U64 => "<u8",
        DType::I64 => "<i8",
        DType::F32 => "<f4",
        DType::F16 => "<f2",
        DType::F64 => "<f8",
    }
}

/// Keeps memory alive as the base object of the arrays over it (see the module docs).
#[pyclass(frozen, module = "rollway._rollway")]
pub struct Keeper {
    _keep: Keep,
}

/// A Python object that keeps `keep` alive, to be the base of arrays over its memory.
pub fn keeper<'py>(py: Python<'py>, keep: Keep) -> PyResult<Bound<'py, PyAny>> {
    Ok(Bound::new(py, Keeper { _keep: keep })?.into_any())
}

/// A numpy array of `T` over `bytes`, with `base` as its base object.
fn typed<'py, T: numpy::Element>(base: Bound<'py, PyAny>, bytes: &[u8], shape: &[usize]) -> Bound<'py, PyAny> {
    let ptr = if bytes.is_empty() {
        // An empty `Vec`'s pointer is dangling at its own alignment (1 for bytes);
        // numpy wants one aligned for `T`, and reads nothing through it.
        std::ptr::NonNull::<T>::dangling().as_ptr().cast_const()
    } else {
        bytes.as_ptr().cast::<T>()
    };
    // SAFETY: `bytes` holds exactly `shape`'s elements of `T` (asserted by the caller:
    // every array comes from a dtype and shape rollway wrote), its start is aligned for
    // `T` (checked by the caller; an empty array gets an aligned placeholder, through
    // which nothing is read), and the memory it lies in is kept alive by `base`
    // (a `Keeper` owning it), which the new array holds as its base
    // object, so it stays valid and unmoved for as long as the array exists. Nothing
    // else writes it meanwhile: episode arrays own their vectors, and a lent loader
    // batch returns to the pool only when its last view is gone.
    unsafe {
        let view = ndarray::ArrayView::from_shape_ptr(ndarray::IxDyn(shape), ptr);
        numpy::PyArray::borrow_from_array(&view, base).into_any()
    }
}

/// A numpy array over `bytes`, which must lie inside memory that `base` keeps alive
/// and hold `shape`'s elements of `dtype`.
pub fn view_in<'py>(base: &Bound<'py, PyAny>, bytes: &[u8], dtype: DType, shape: &[usize]) -> PyResult<Bound<'py, PyAny>> {
    assert_eq!(bytes.len(), shape.iter().product::<usize>() * dtype.size(), "array bytes and shape disagree");
    let base = base.clone();
    if !bytes.is_empty() && !(bytes.as_ptr() as usize).is_multiple_of(dtype.size()) {
        // Never seen (allocations are aligned; empty data is given an aligned
        // placeholder in `typed`): a copy is safe where a view might not be.
        let py = base.py();
        let raw = pyo3::types::PyBytes::new(py, bytes);
        let np = py.import("numpy")?;
        let shape = pyo3::types::PyTuple::new(py, shape)?;
        return np.getattr("frombuffer")?.call1((raw, typestr(dtype)))?.call_method1("reshape", (shape,))?.call_method0("copy");
    }
    Ok(rollway_core::with_dtype!(dtype, T => typed::<T>(base, bytes, shape)))
}

/// A numpy array over `bytes`, which must lie inside memory `keep` owns and hold
/// `shape`'s elements of `dtype`.
pub fn view<'py>(py: Python<'py>, keep: &Keep, bytes: &[u8], dtype: DType, shape: &[usize]) -> PyResult<Bound<'py, PyAny>> {
    view_in(&keeper(py, keep.clone())?, bytes, dtype, shape)
}

/// A numpy array that takes over `a`'s bytes (no copy).
pub fn owned<'py>(py: Python<'py>, a: Array) -> PyResult<Bound<'py, PyAny>> {
    let (dtype, shape) = (a.dtype, a.shape);
    let data: Arc<Vec<u8>> = Arc::new(a.data);
    let keep: Keep = data.clone();
    view(py, &keep, &data, dtype, &shape)
}

/// A numpy array that takes over a vector of numbers (no copy).
pub fn from_vec<'py, T: bytemuck::Pod + Send + Sync>(
    py: Python<'py>,
    v: Vec<T>,
    dtype: DType,
    shape: &[usize],
) -> PyResult<Bound<'py, PyAny>> {
    debug_assert_eq!(std::mem::size_of::<T>(), dtype.size());
    let data = Arc::new(v);
    let keep: Keep = data.clone();
    view(py, &keep, bytemuck::cast_slice(&data), dtype, shape)
}

/// A numpy array that takes over `v` (no copy) and gives it back to `buffers` when
/// the last view of it dies (see [`ObsBuffers`] for why).
pub fn recycled<'py>(py: Python<'py>, v: Vec<u8>, buffers: ObsBuffers, dtype: DType, shape: &[usize]) -> PyResult<Bound<'py, PyAny>> {
    struct GivenBack(Vec<u8>, ObsBuffers);
    impl Drop for GivenBack {
        fn drop(&mut self) {
            self.1.give(std::mem::take(&mut self.0));
        }
    }
    let data = Arc::new(GivenBack(v, buffers));
    let keep: Keep = data.clone();
    view(py, &keep, &data.0, dtype, shape)
}

/// A bool numpy array (numpy's bools are bytes 0 and 1, like Rust's).
pub fn from_bools<'py>(py: Python<'py>, v: &[bool]) -> PyResult<Bound<'py, PyAny>> {
    from_vec(py, v.iter().map(|&b| u8::from(b)).collect::<Vec<u8>>(), DType::Bool, &[v.len()])
}
