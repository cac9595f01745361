//! Typed HDF5 reads of rollway arrays (dtype known only at run time), strings, and
//! the checks that explain a dataset rollway cannot read. Numeric reads and all
//! numeric writes go through `h5raw`'s direct calls.

use hdf5::types::{FloatSize, IntSize, TypeDescriptor};
use hdf5::Group;
use hdf5_metno as hdf5;
use rollway_core::DType;

use super::h5raw;

/// Opens `path` (`a/b/c`) under `root`, creating missing groups.
pub(crate) fn group_at(root: &Group, path: &str) -> hdf5::Result<Group> {
    let mut g = root.clone();
    for part in path.split('/').filter(|p| !p.is_empty()) {
        g = if g.link_exists(part) { g.group(part)? } else { g.create_group(part)? };
    }
    Ok(g)
}

/// The numpy name of a stored type, for messages.
pub(crate) fn type_name(td: &TypeDescriptor) -> String {
    td.to_string()
}

/// Reads a dataset of `shape` (the caller's `ds.shape()`: each query is several HDF5
/// calls, and an import makes about ten reads an episode) as `dtype`, returning
/// native-endian bytes. Numeric types convert as numpy's `astype` would for in-range
/// values (e.g. int32 → int64); for `Bool`, any non-zero number is true.
pub(crate) fn read_array(ds: &hdf5::Dataset, dtype: DType, shape: &[usize]) -> Result<Vec<u8>, String> {
    let Some(mut out) = h5raw::read(ds, dtype, crate::limits::elements(shape)?) else {
        return read_array_checked(ds, dtype, shape);
    };
    if dtype == DType::Bool {
        out.iter_mut().for_each(|b| *b = u8::from(*b != 0));
    }
    Ok(out)
}

/// `read_array` through the wrapper, which says why a dataset cannot be read as `dtype`.
fn read_array_checked(ds: &hdf5::Dataset, dtype: DType, shape: &[usize]) -> Result<Vec<u8>, String> {
    let stored = ds.dtype().and_then(|t| t.to_descriptor()).map_err(|e| e.to_string())?;
    let numeric = matches!(stored, TypeDescriptor::Integer(_) | TypeDescriptor::Unsigned(_) | TypeDescriptor::Float(_));
    let ok = match dtype {
        DType::Bool => numeric || stored == TypeDescriptor::Boolean,
        _ => numeric,
    };
    if !ok {
        return Err(format!("holds {}, expected {dtype}", type_name(&stored)));
    }
    if crate::limits::elements(shape)? == 0 {
        return Ok(vec![]);
    }
    let err = |e: hdf5::Error| format!("reading as {dtype}: {e}");
    if stored == TypeDescriptor::Boolean {
        return Ok(ds.read_raw::<bool>().map_err(err)?.into_iter().map(u8::from).collect());
    }
    rollway_core::with_dtype!(dtype, T => Ok(bytemuck::cast_slice::<T, u8>(&ds.read_raw::<T>().map_err(err)?).to_vec()),
        bool => Ok(ds.read_raw::<i64>().map_err(err)?.into_iter().map(|x| u8::from(x != 0)).collect()))
}

/// Reads a flag dataset: h5py bools, or integers (non-zero = true).
pub(crate) fn read_bools(ds: &hdf5::Dataset, shape: &[usize]) -> Result<Vec<bool>, String> {
    Ok(read_array(ds, DType::Bool, shape)?.into_iter().map(|b| b != 0).collect())
}

/// Reads any numeric dataset of `shape` as float64.
pub(crate) fn read_f64(ds: &hdf5::Dataset, shape: &[usize]) -> Result<Vec<f64>, String> {
    let n = crate::limits::elements(shape)?;
    if let Some(out) = h5raw::read(ds, DType::F64, n) {
        return Ok(out.chunks_exact(8).map(bytemuck::pod_read_unaligned::<f64>).collect());
    }
    let stored = ds.dtype().and_then(|t| t.to_descriptor()).map_err(|e| e.to_string())?;
    if n == 0
        && matches!(stored, TypeDescriptor::Integer(_) | TypeDescriptor::Unsigned(_) | TypeDescriptor::Float(_) | TypeDescriptor::Boolean)
    {
        return Ok(vec![]);
    }
    match stored {
        TypeDescriptor::Integer(_) | TypeDescriptor::Unsigned(_) | TypeDescriptor::Float(_) => {
            ds.read_raw::<f64>().map_err(|e| e.to_string())
        }
        TypeDescriptor::Boolean => {
            Ok(ds.read_raw::<bool>().map_err(|e| e.to_string())?.into_iter().map(|b| f64::from(u8::from(b))).collect())
        }
        other => Err(format!("holds {}, expected numbers", type_name(&other))),
    }
}

/// Refuses a dataset whose declared shape is beyond what a read could hold: a
/// chunked dataset can declare any size without storing it.
pub(crate) fn checked_size(ds: &hdf5::Dataset) -> Result<usize, String> {
    crate::limits::elements(&ds.shape())
}

/// What an info dataset holds, as far as JSON goes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Kind {
    /// Integers (read as int64).
    Int,
    /// Unsigned integers too large for int64 or floats (read as float64).
    Float,
    /// Bools.
    Bool,
}

/// The JSON kind of a stored type, or `None` for strings, compounds and the like.
pub(crate) fn kind_of(ds: &hdf5::Dataset) -> Option<Kind> {
    match ds.dtype().and_then(|t| t.to_descriptor()).ok()? {
        TypeDescriptor::Integer(_) | TypeDescriptor::Unsigned(IntSize::U1 | IntSize::U2 | IntSize::U4) => Some(Kind::Int),
        TypeDescriptor::Unsigned(IntSize::U8) | TypeDescriptor::Float(FloatSize::U4 | FloatSize::U8) => Some(Kind::Float),
        TypeDescriptor::Boolean => Some(Kind::Bool),
        _ => None,
    }
}

/// Writes strings as one variable-length UTF-8 dataset (h5py's `string_dtype("utf-8")`,
/// how Minari stores Text values).
pub(crate) fn write_strings(group: &Group, name: &str, v: &[String]) -> hdf5::Result<()> {
    let vals: Vec<hdf5::types::VarLenUnicode> =
        v.iter().map(|s| s.parse().map_err(|e| hdf5::Error::from(format!("{e}")))).collect::<hdf5::Result<_>>()?;
    group.new_dataset_builder().with_data(&vals).create(name)?;
    Ok(())
}

/// Reads a dataset of strings (variable-length UTF-8 or ASCII, as h5py writes them).
pub(crate) fn read_strings(ds: &hdf5::Dataset) -> Result<Vec<String>, String> {
    let td = ds.dtype().and_then(|t| t.to_descriptor()).map_err(|e| e.to_string())?;
    checked_size(ds)?;
    match td {
        TypeDescriptor::VarLenUnicode => {
            Ok(ds.read_raw::<hdf5::types::VarLenUnicode>().map_err(|e| e.to_string())?.iter().map(|s| s.to_string()).collect())
        }
        TypeDescriptor::VarLenAscii => {
            Ok(ds.read_raw::<hdf5::types::VarLenAscii>().map_err(|e| e.to_string())?.iter().map(|s| s.to_string()).collect())
        }
        other => Err(format!("holds {}, expected strings (a Text space)", type_name(&other))),
    }
}
