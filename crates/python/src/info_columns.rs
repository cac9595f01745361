//! Infos as columns, both ways.
//!
//! [`columns`]: a vector env's infos in Gymnasium's layout (`key` → an array over the envs,
//! `_key` → which envs set it), built here for the common case: every env has every
//! key, each a plain number or bool, as the MuJoCo tasks' infos are. That skips a
//! JSON text and its parsing and laying out in Python, which was a fifth of
//! `make_vec`'s step of HalfCheetah at N = 8. Any other info (a key some env lacks,
//! strings, lists, nested dicts) goes the JSON way, laid out by `rollway.vector`.
//! The dtype follows Gymnasium's rule (the first env's value's type): a float
//! makes float64, an int int64 (every value must be one), a bool bool.
//!
//! [`infos_of`]: a batched env's answer for some of its rows' infos, either a JSON list
//! of objects or, from a JAX env (`rollway.batched.info_columns`), its info's leaves by
//! name, each an array over the rows. The columns skip a dict a row made in Python, its
//! JSON text and the parse here: with Breakout-MinAtar's ~6,500 ended episodes a
//! fragment at N = 1024, that was ~11 ms of a 31 ms fragment (issue 69).

use std::collections::BTreeSet;

use ndarray::{ArrayViewD, Axis};
use numpy::{PyArrayDyn, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use rollway_core::{DType, Info};
use serde_json::Value as Json;

use crate::arrays;

/// The columns of `infos`, or `None` when one of them is not flat (see the module docs).
pub fn columns<'py>(py: Python<'py>, infos: &[Info]) -> PyResult<Option<Bound<'py, PyDict>>> {
    let n = infos.len();
    let keys: BTreeSet<&String> = infos.iter().flat_map(|i| i.0.keys()).collect();
    let out = PyDict::new(py);
    let every = arrays::from_bools(py, &vec![true; n])?;
    for key in keys {
        let Some(vals) = infos.iter().map(|i| i.0.get(key.as_str())).collect::<Option<Vec<&Json>>>() else { return Ok(None) };
        let column = match vals[0] {
            Json::Bool(_) => vals.iter().map(|v| v.as_bool()).collect::<Option<Vec<bool>>>().map(|b| arrays::from_bools(py, &b)),
            Json::Number(x) if x.is_f64() => {
                vals.iter().map(|v| v.as_f64()).collect::<Option<Vec<f64>>>().map(|v| arrays::from_vec(py, v, DType::F64, &[n]))
            }
            Json::Number(_) => {
                vals.iter().map(|v| v.as_i64()).collect::<Option<Vec<i64>>>().map(|v| arrays::from_vec(py, v, DType::I64, &[n]))
            }
            _ => None,
        };
        let Some(column) = column else { return Ok(None) };
        out.set_item(key, column?)?;
        out.set_item(format!("_{key}"), every.call_method0("copy")?)?;
    }
    Ok(Some(out))
}

/// The infos of `rows` rows from a batched env's answer: a JSON list of objects, or a dict
/// of columns (name → array `[rows, ...]` of bool, int64 or float64; a leaf of more
/// dimensions makes nested lists). The error says what is wrong, for the caller to place.
pub fn infos_of(answer: &Bound<'_, PyAny>, rows: usize) -> Result<Vec<Info>, String> {
    let infos: Vec<Info> = if let Ok(text) = answer.cast::<PyString>() {
        let text = text.to_cow().map_err(|e| e.to_string())?;
        serde_json::from_str(&text).map_err(|e| format!("infos are not a JSON list of objects: {e}"))?
    } else if let Ok(columns) = answer.cast::<PyDict>() {
        let mut infos = vec![Info::new(); rows];
        for (name, column) in columns.iter() {
            let name: String = name.extract().map_err(|_| "an info column's name is not a string".to_string())?;
            fill(&mut infos, &name, &column).map_err(|e| format!("info[{name:?}]: {e}"))?;
        }
        infos
    } else {
        return Err(format!("infos must be a JSON list or a dict of columns, not a {}", type_name(answer)));
    };
    match infos.len() == rows {
        true => Ok(infos),
        false => Err(format!("{} infos answered for {rows} rows", infos.len())),
    }
}

fn type_name(x: &Bound<'_, PyAny>) -> String {
    x.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into())
}

/// Sets `name` in every row's info from `column` (`[rows, ...]`).
fn fill(infos: &mut [Info], name: &str, column: &Bound<'_, PyAny>) -> Result<(), String> {
    fn each<T: Copy + numpy::Element>(
        infos: &mut [Info],
        name: &str,
        a: &Bound<'_, PyArrayDyn<T>>,
        value: impl Fn(T) -> Result<Json, String>,
    ) -> Result<(), String> {
        // rust-numpy reads a view of up to 32 dimensions, by strides a whole number of items:
        // anything else is refused here, not read wrongly (rollway's own columns are contiguous).
        if a.ndim() > 32 || !a.is_contiguous() {
            return Err(format!("a column must be a contiguous array of at most 32 dimensions ({} here)", a.ndim()));
        }
        let a = a.try_readonly().map_err(|e| e.to_string())?;
        let view = a.as_array();
        if view.ndim() == 0 || view.len_of(Axis(0)) != infos.len() {
            return Err(format!("{} rows for {} infos", view.shape().first().copied().unwrap_or(0), infos.len()));
        }
        for (info, row) in infos.iter_mut().zip(view.outer_iter()) {
            info.insert(name, nested(&row, &value)?);
        }
        Ok(())
    }
    if let Ok(a) = column.cast::<PyArrayDyn<bool>>() {
        each(infos, name, a, |b| Ok(Json::Bool(b)))
    } else if let Ok(a) = column.cast::<PyArrayDyn<i64>>() {
        each(infos, name, a, |i| Ok(Json::from(i)))
    } else if let Ok(a) = column.cast::<PyArrayDyn<f64>>() {
        // As a Python env's info: JSON has no NaN or infinity, so they cannot be recorded.
        each(infos, name, a, |x| {
            serde_json::Number::from_f64(x).map(Json::Number).ok_or(format!("{x} cannot be recorded (JSON has no NaN or infinity)"))
        })
    } else {
        Err(format!("a column must be an array of bool, int64 or float64, not a {}", type_name(column)))
    }
}

/// One row's value: a scalar, or nested lists for a leaf of more dimensions.
fn nested<T: Copy>(x: &ArrayViewD<'_, T>, value: &impl Fn(T) -> Result<Json, String>) -> Result<Json, String> {
    match x.ndim() {
        0 => x.first().map_or_else(|| Err("no value".to_string()), |v| value(*v)),
        _ => x.outer_iter().map(|r| nested(&r, value)).collect::<Result<Vec<Json>, String>>().map(Json::Array),
    }
}
