//! Direct HDF5 calls for the per-episode hot path of Minari imports and exports.
//!
//! A Minari episode is about ten tiny HDF5 objects (a group, five or more datasets,
//! eight attributes), so the cost of a CartPole import or export is per-object
//! overhead, not bytes. The `hdf5-metno` wrapper wraps each call in objects of its own:
//! a dataset read makes and frees the stored type, the memory type, a conversion check,
//! the dataspace and a transfer property list; a dataset create makes and frees three
//! property lists, a type and a dataspace. Profiled on 1,500 CartPole episodes, that
//! wrapping was about a fifth of an export and a tenth of an import, for the same
//! handful of HDF5 calls underneath.
//!
//! So the hot path calls HDF5 itself: reads go straight into the caller's buffer as a
//! native type (HDF5 converts stored numbers as `read_raw` would), and a [`Writer`]
//! keeps the property lists, the bool type and the scalar dataspace of a whole export.
//! Everything else (opening files and groups, strings, JPEG blobs, infos, and every
//! error message) stays on the wrapper. A read that fails here returns `false` and its
//! caller asks the wrapper again, which explains what is wrong.
//!
//! Locking: `hdf5-metno` serialises all HDF5 calls with one reentrant lock (the library
//! is built without its own thread safety); every call here holds that lock too.
#![allow(unsafe_code)] // measured to matter here; every block says why it is sound (SAFETY)

use std::ffi::CString;

use hdf5::types::TypeDescriptor;
use hdf5::{Dataspace, Datatype, Group};
use hdf5_metno as hdf5;
use hdf5_metno_sys as sys;
use rollway_core::DType;
use sys::h5i::hid_t;

/// HDF5's native memory type for a numeric dtype (`Bool` maps to int8; see [`Writer`]
/// for the bool enum h5py writes). `None` for float16, which HDF5 has no predefined
/// type for here: [`Writer`] keeps one, and reads of it go through the wrapper.
fn native(dtype: DType) -> Option<hid_t> {
    use sys::h5t as t;
    Some(*match dtype {
        DType::Bool | DType::I8 => t::H5T_NATIVE_INT8,
        DType::U8 => t::H5T_NATIVE_UINT8,
        DType::I16 => t::H5T_NATIVE_INT16,
        DType::U16 => t::H5T_NATIVE_UINT16,
        DType::I32 => t::H5T_NATIVE_INT32,
        DType::U32 => t::H5T_NATIVE_UINT32,
        DType::I64 => t::H5T_NATIVE_INT64,
        DType::U64 => t::H5T_NATIVE_UINT64,
        DType::F32 => t::H5T_NATIVE_FLOAT,
        DType::F64 => t::H5T_NATIVE_DOUBLE,
        DType::F16 => return None,
    })
}

/// Reads all of `ds`, whose extent holds `elements` (> 0) values, as native-endian
/// bytes of `dtype` (`Bool` as int8: HDF5 clamps what does not fit, which keeps a
/// number's non-zeroness). `None` when HDF5 refuses (no conversion from the stored
/// type, a damaged file) or there is nothing to read: the caller then reads through
/// the wrapper, which explains the error.
pub(crate) fn read(ds: &hdf5::Dataset, dtype: DType, elements: usize) -> Option<Vec<u8>> {
    let ty = native(dtype).filter(|_| elements > 0)?;
    let mut out = vec![0u8; elements * dtype.size()];
    let _lock = sys::LOCK.lock();
    // SAFETY: `out` holds exactly `elements` values of `dtype`'s native type, which is
    // the whole extent of `ds` (the caller's shape query of this dataset, in a file this
    // process opened read-only, so the extent cannot change): H5S_ALL selects that extent
    // in file and memory, and HDF5 writes no more. Native numeric types hold no
    // pointers, so no memory is handed to HDF5 to free.
    let status =
        unsafe { sys::h5d::H5Dread(ds.id(), ty, sys::h5s::H5S_ALL, sys::h5s::H5S_ALL, sys::h5p::H5P_DEFAULT, out.as_mut_ptr().cast()) };
    (status >= 0).then_some(out)
}

/// What an export writes with for every episode: made once, used for thousands of
/// episode groups.
///
/// Datasets are contiguous or compact, not chunked and resizable as h5py makes
/// Minari's: Minari never grows a stored episode (new data becomes new `episode_<k>`
/// groups), and chunk indexes cost ~11 KB per episode, over 3× the file size of a
/// short one. The file format stays HDF5's oldest, which every reader opens.
pub(crate) struct Writer {
    /// Contiguous layout, no modification times (h5py's default: times make files
    /// differ run to run).
    contiguous: hdf5::plist::DatasetCreate,
    /// Data kept in the object header, for datasets of at most [`COMPACT_BYTES`]:
    /// one object to write instead of two, and nothing to look up when read.
    compact: hdf5::plist::DatasetCreate,
    /// h5py's bool: an int8 enum FALSE = 0, TRUE = 1.
    bool_type: Datatype,
    /// IEEE half precision, as h5py writes numpy's float16.
    f16_type: Datatype,
    scalar: Dataspace,
}

/// The largest dataset kept compact; HDF5 allows up to 64 KiB in an object header.
const COMPACT_BYTES: usize = 16 << 10;

impl Writer {
    pub(crate) fn new() -> hdf5::Result<Writer> {
        use hdf5::plist::dataset_create::Layout;
        let plist = |layout| hdf5::plist::DatasetCreate::build().layout(layout).obj_track_times(false).finish();
        Ok(Writer {
            contiguous: plist(Layout::Contiguous)?,
            compact: plist(Layout::Compact)?,
            bool_type: Datatype::from_descriptor(&TypeDescriptor::Boolean)?,
            f16_type: Datatype::from_type::<rollway_core::half::f16>()?,
            scalar: Dataspace::try_new(())?,
        })
    }

    /// The type values of `dtype` are written as: native, or the types kept here.
    fn memory_type(&self, dtype: DType) -> hid_t {
        match dtype {
            DType::Bool => self.bool_type.id(),
            DType::F16 => self.f16_type.id(),
            d => native(d).expect("every other dtype is native"),
        }
    }

    /// Writes `[rows, ...]` values of `dtype` (native-endian `bytes`; bools as 0/1
    /// bytes) as dataset `name` of `parent`.
    pub(crate) fn array(&self, parent: &Group, name: &str, dtype: DType, shape: &[usize], bytes: &[u8]) -> hdf5::Result<()> {
        let ty = self.memory_type(dtype);
        let elements = crate::limits::elements(shape).map_err(hdf5::Error::from)?;
        if bytes.len() != elements * dtype.size() || (dtype == DType::Bool && bytes.iter().any(|&b| b > 1)) {
            return Err(format!("`{name}`: {} bytes for {shape:?} {dtype}", bytes.len()).into());
        }
        let dims: Vec<sys::h5::hsize_t> = shape.iter().map(|&d| d as sys::h5::hsize_t).collect();
        let dcpl = if bytes.len() <= COMPACT_BYTES { &self.compact } else { &self.contiguous };
        let cname = CString::new(name).map_err(|_| hdf5::Error::from(format!("`{name}` holds a NUL byte")))?;
        let _lock = sys::LOCK.lock();
        // SAFETY: `dims` has `shape.len()` entries and outlives the call; a null maxdims
        // means fixed at `dims`.
        let space = check(unsafe { sys::h5s::H5Screate_simple(dims.len() as i32, dims.as_ptr(), std::ptr::null()) }, name)?;
        // SAFETY: valid ids (the parent group, a live type, the dataspace just made, a
        // live property list) and a NUL-terminated name that outlives the call.
        let ds = unsafe {
            sys::h5d::H5Dcreate2(parent.id(), cname.as_ptr(), ty, space, sys::h5p::H5P_DEFAULT, dcpl.id(), sys::h5p::H5P_DEFAULT)
        };
        let written = (ds >= 0 && !bytes.is_empty()).then(|| {
            // SAFETY: `bytes` holds exactly the extent's `elements` values of `ty` (checked
            // above: size, and bools as 0/1 for the int8 enum); H5S_ALL writes that extent.
            unsafe { sys::h5d::H5Dwrite(ds, ty, sys::h5s::H5S_ALL, sys::h5s::H5S_ALL, sys::h5p::H5P_DEFAULT, bytes.as_ptr().cast()) }
        });
        let err = (ds < 0 || written.is_some_and(|s| s < 0)).then(|| failed(name));
        // SAFETY: each id was made above and is closed once; closing an invalid (failed) id is
        // skipped.
        unsafe {
            if ds >= 0 {
                sys::h5d::H5Dclose(ds);
            }
            sys::h5s::H5Sclose(space);
        }
        err.map_or(Ok(()), Err)
    }

    /// Writes a scalar attribute of a numeric `dtype` from its native-endian bytes.
    pub(crate) fn attr(&self, loc: &Group, name: &str, dtype: DType, bytes: &[u8]) -> hdf5::Result<()> {
        if dtype == DType::Bool || bytes.len() != dtype.size() {
            return Err(format!("attribute `{name}`: {} bytes for one {dtype}", bytes.len()).into());
        }
        let cname = CString::new(name).map_err(|_| hdf5::Error::from(format!("`{name}` holds a NUL byte")))?;
        let ty = self.memory_type(dtype);
        let _lock = sys::LOCK.lock();
        // SAFETY: valid ids (the group, a native type, the scalar dataspace) and a
        // NUL-terminated name that outlives the call.
        let a =
            unsafe { sys::h5a::H5Acreate2(loc.id(), cname.as_ptr(), ty, self.scalar.id(), sys::h5p::H5P_DEFAULT, sys::h5p::H5P_DEFAULT) };
        let a = check(a, name)?;
        // SAFETY: `bytes` is one value of the native type `ty`, all a scalar attribute holds.
        let status = unsafe { sys::h5a::H5Awrite(a, ty, bytes.as_ptr().cast()) };
        let err = (status < 0).then(|| failed(name));
        // SAFETY: `a` was made above and is closed once.
        unsafe { sys::h5a::H5Aclose(a) };
        err.map_or(Ok(()), Err)
    }
}

/// The id, or HDF5's error for `what` (the caller holds the lock).
fn check(id: hid_t, what: &str) -> hdf5::Result<hid_t> {
    if id < 0 {
        Err(failed(what))
    } else {
        Ok(id)
    }
}

/// HDF5's own account of the call that just failed for `what`.
fn failed(what: &str) -> hdf5::Error {
    match hdf5::Error::query() {
        Ok(e) => format!("`{what}`: {e}").into(),
        Err(_) => format!("`{what}`: HDF5 failed").into(),
    }
}
