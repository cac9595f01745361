//! A vector env's infos in Gymnasium's layout (`key` → an array over the envs,
//! `_key` → which envs set it), built here for the common case: every env has every
//! key, each a plain number or bool, as the MuJoCo tasks' infos are. That skips a
//! JSON text and its parsing and laying out in Python, which was a fifth of
//! `make_vec`'s step of HalfCheetah at N = 8. Any other info (a key some env lacks,
//! strings, lists, nested dicts) goes the JSON way, laid out by `rollway.vector`.
//!
//! The dtype follows Gymnasium's rule (the first env's value's type): a float
//! makes float64, an int int64 (every value must be one), a bool bool.

use std::collections::BTreeSet;

use pyo3::prelude::*;
use pyo3::types::PyDict;
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
