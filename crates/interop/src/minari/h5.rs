//! Typed HDF5 reads and writes of rollway arrays (dtype known only at run time).
//!
//! Datasets are contiguous, not chunked and resizable as h5py makes Minari's:
//! Minari never grows a stored episode (new data becomes new `episode_<k>`
//! groups), and chunk indexes cost ~11 KB per episode, over 3x the file size
//! for short episodes. The file format stays HDF5's oldest, which every reader opens.

use hdf5::types::{FloatSize, IntSize, TypeDescriptor};
use hdf5::Group;
use hdf5_metno as hdf5;
use rollway_core::DType;

/// Dispatches on a numeric (non-bool) dtype with `$T` bound to its Rust type.
macro_rules! numeric {
    ($dtype:expr, $T:ident => $body:expr, bool => $b:expr) => {
        match $dtype {
            DType::Bool => $b,
            DType::U8 => {
                type $T = u8;
                $body
            }
            DType::I8 => {
                type $T = i8;
                $body
            }
            DType::U16 => {
                type $T = u16;
                $body
            }
            DType::I16 => {
                type $T = i16;
                $body
            }
            DType::U32 => {
                type $T = u32;
                $body
            }
            DType::I32 => {
                type $T = i32;
                $body
            }
            DType::U64 => {
                type $T = u64;
                $body
            }
            DType::I64 => {
                type $T = i64;
                $body
            }
            DType::F32 => {
                type $T = f32;
                $body
            }
            DType::F64 => {
                type $T = f64;
                $body
            }
        }
    };
}

/// Copies native-endian bytes into a typed (aligned) vector.
fn typed<T: bytemuck::Pod>(bytes: &[u8]) -> Vec<T> {
    let mut v = vec![T::zeroed(); bytes.len() / std::mem::size_of::<T>()];
    bytemuck::cast_slice_mut::<T, u8>(&mut v).copy_from_slice(bytes);
    v
}

fn create<T: hdf5::H5Type>(group: &Group, name: &str, shape: &[usize], data: &[T]) -> hdf5::Result<()> {
    let ds = group.new_dataset::<T>().shape(shape).create(name)?;
    if !data.is_empty() {
        ds.write_raw(data)?;
    }
    Ok(())
}

/// Writes a `[rows, ...]` array of native-endian bytes as dataset `name`.
pub(crate) fn write_array(group: &Group, name: &str, dtype: DType, shape: &[usize], bytes: &[u8]) -> hdf5::Result<()> {
    numeric!(dtype, T => create::<T>(group, name, shape, &typed::<T>(bytes)),
        bool => create::<bool>(group, name, shape, &bytes.iter().map(|&b| b != 0).collect::<Vec<_>>()))
}

/// Writes flags as h5py's bool (an int8 enum FALSE=0/TRUE=1), which numpy reads as `bool`.
pub(crate) fn write_bools(group: &Group, name: &str, v: &[bool]) -> hdf5::Result<()> {
    create::<bool>(group, name, &[v.len()], v)
}

/// Writes float64 values.
pub(crate) fn write_f64(group: &Group, name: &str, v: &[f64]) -> hdf5::Result<()> {
    create::<f64>(group, name, &[v.len()], v)
}

/// Writes a scalar attribute.
pub(crate) fn attr<T: hdf5::H5Type>(loc: &hdf5::Location, name: &str, v: T) -> hdf5::Result<()> {
    loc.new_attr::<T>().create(name)?.write_scalar(&v)
}

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
/// values (e.g. int32 → int64).
pub(crate) fn read_array(ds: &hdf5::Dataset, dtype: DType, shape: &[usize]) -> Result<Vec<u8>, String> {
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
    numeric!(dtype, T => Ok(bytemuck::cast_slice::<T, u8>(&ds.read_raw::<T>().map_err(err)?).to_vec()),
        bool => Ok(ds.read_raw::<i64>().map_err(err)?.into_iter().map(|x| u8::from(x != 0)).collect()))
}

/// Reads a flag dataset: h5py bools, or integers (non-zero = true).
pub(crate) fn read_bools(ds: &hdf5::Dataset, shape: &[usize]) -> Result<Vec<bool>, String> {
    Ok(read_array(ds, DType::Bool, shape)?.into_iter().map(|b| b != 0).collect())
}

/// Reads any numeric dataset of `shape` as float64.
pub(crate) fn read_f64(ds: &hdf5::Dataset, shape: &[usize]) -> Result<Vec<f64>, String> {
    let stored = ds.dtype().and_then(|t| t.to_descriptor()).map_err(|e| e.to_string())?;
    if crate::limits::elements(shape)? == 0
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
