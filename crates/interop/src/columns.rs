//! Arrow/Parquet plumbing shared by the LeRobot and Minari (arrow, parquet) formats:
//! rollway's native row bytes ↔ the column types LeRobot
//! (Hugging Face `datasets`) uses — plain values for shape `[1]`, fixed-size lists
//! otherwise — and defensive reads of files we did not write.

use std::fs::File;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef, FixedSizeListArray, ListArray, PrimitiveArray, RecordBatch};
use arrow_buffer::OffsetBuffer;
use arrow_schema::{DataType, Field, SchemaRef};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use rollway_core::DType;
use rollway_store::arrow_type;

/// The type of a feature column: a plain value when it has one element, else a
/// fixed-size list (what `datasets.Sequence(length=n)` writes).
pub(crate) fn feature_type(d: DType, len: usize) -> DataType {
    if len == 1 {
        arrow_type(d)
    } else {
        DataType::FixedSizeList(Arc::new(Field::new("item", arrow_type(d), true)), len as i32)
    }
}

/// Native values of `d`, back to back, as a flat Arrow array (the store's reading of them).
pub(crate) fn flat(d: DType, bytes: &[u8]) -> ArrayRef {
    arrow_array::make_array(rollway_store::flat_values(d, bytes.to_vec()))
}

/// A feature column from `rows` rows of `len` native elements each, back to back.
pub(crate) fn column(d: DType, len: usize, bytes: &[u8]) -> ArrayRef {
    let values = flat(d, bytes);
    if len == 1 {
        return values;
    }
    let DataType::FixedSizeList(field, n) = feature_type(d, len) else { unreachable!("len > 1 is a list") };
    Arc::new(FixedSizeListArray::new(field, n, values, None))
}

/// Nested float64 lists of `shape` per row (`stats/…` columns: `[3,1,1]` for images).
pub(crate) fn f64_lists(rows: &[Vec<f64>], shape: &[usize]) -> ArrayRef {
    fn nest(values: ArrayRef, shape: &[usize], rows: usize) -> ArrayRef {
        // Innermost dimension first: wrap the flat values one list level at a time.
        let mut arr = values;
        let mut count = rows * shape.iter().product::<usize>();
        for &n in shape.iter().rev() {
            count /= n.max(1);
            let offsets = OffsetBuffer::from_lengths(std::iter::repeat_n(n, count));
            let field = Arc::new(Field::new("item", arr.data_type().clone(), true));
            arr = Arc::new(ListArray::new(field, offsets, arr, None));
        }
        arr
    }
    let flat: Vec<f64> = rows.iter().flatten().copied().collect();
    nest(Arc::new(PrimitiveArray::<Float64Type>::from(flat)), shape, rows.len())
}

/// Writes `batch` as one row group of a Snappy Parquet file (what LeRobot writes).
pub(crate) fn write_file(path: &Path, batch: &RecordBatch) -> Result<u64, String> {
    let mut w = Writer::create(path, batch.schema())?;
    w.write(batch)?;
    w.close()
}

/// An open Parquet file, one row group per `write`.
pub(crate) struct Writer {
    w: ArrowWriter<File>,
}

impl Writer {
    pub fn create(path: &Path, schema: SchemaRef) -> Result<Writer, String> {
        let file = File::create(path).map_err(|e| e.to_string())?;
        let props = WriterProperties::builder().set_compression(Compression::SNAPPY).build();
        let w = ArrowWriter::try_new(file, schema, Some(props)).map_err(|e| e.to_string())?;
        Ok(Writer { w })
    }

    /// Writes `batch` as its own row group (LeRobot keeps one per episode).
    pub fn write(&mut self, batch: &RecordBatch) -> Result<(), String> {
        self.w.write(batch).map_err(|e| e.to_string())?;
        self.w.flush().map_err(|e| e.to_string())
    }

    pub fn bytes(&self) -> u64 {
        self.w.bytes_written() as u64
    }

    /// Writes the footer and syncs: the file is complete and durable.
    pub fn close(self) -> Result<u64, String> {
        let file = self.w.into_inner().map_err(|e| e.to_string())?;
        file.sync_all().map_err(|e| e.to_string())?;
        Ok(file.metadata().map_err(|e| e.to_string())?.len())
    }
}

/// Reads a whole Parquet file as one batch. The decoder is not ours: a damaged
/// file must come back as an error, never take the process down.
pub(crate) fn read_file(path: &Path) -> Result<RecordBatch, String> {
    let file = File::open(path).map_err(|e| e.to_string())?;
    catch_unwind(AssertUnwindSafe(|| -> Result<RecordBatch, String> {
        let b = ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| e.to_string())?;
        let schema = b.schema().clone();
        let batches =
            b.with_batch_size(65_536).build().map_err(|e| e.to_string())?.collect::<Result<Vec<_>, _>>().map_err(|e| e.to_string())?;
        arrow_select::concat::concat_batches(&schema, &batches).map_err(|e| e.to_string())
    }))
    .map_err(|_| "the Parquet decoder panicked".to_string())?
}

/// Reads a whole Arrow IPC file (Feather v2, what pyarrow's `format="arrow"` writes)
/// as one batch; like [`read_file`], a damaged file is an error, never a crash.
pub(crate) fn read_ipc_file(path: &Path) -> Result<RecordBatch, String> {
    let file = File::open(path).map_err(|e| e.to_string())?;
    catch_unwind(AssertUnwindSafe(|| -> Result<RecordBatch, String> {
        let r = arrow_ipc::reader::FileReader::try_new(std::io::BufReader::new(file), None).map_err(|e| e.to_string())?;
        let schema = r.schema();
        let batches = r.collect::<Result<Vec<_>, _>>().map_err(|e| e.to_string())?;
        arrow_select::concat::concat_batches(&schema, &batches).map_err(|e| e.to_string())
    }))
    .map_err(|_| "the Arrow IPC decoder panicked".to_string())?
}

/// The schema of an Arrow IPC (`ipc`) or Parquet file, from its footer alone (no
/// rows are decoded); a damaged file is an error, never a crash.
pub(crate) fn file_schema(path: &Path, ipc: bool) -> Result<SchemaRef, String> {
    let file = File::open(path).map_err(|e| e.to_string())?;
    catch_unwind(AssertUnwindSafe(|| -> Result<SchemaRef, String> {
        if ipc {
            Ok(arrow_ipc::reader::FileReader::try_new(std::io::BufReader::new(file), None).map_err(|e| e.to_string())?.schema())
        } else {
            Ok(ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| e.to_string())?.schema().clone())
        }
    }))
    .map_err(|_| "the file's decoder panicked".to_string())?
}

/// The column `name`, or an error naming it.
pub(crate) fn col<'a>(b: &'a RecordBatch, name: &str) -> Result<&'a ArrayRef, String> {
    b.column_by_name(name).ok_or_else(|| format!("no column `{name}`"))
}

/// Rows `start..start+n` of a feature column as native bytes of `d`, `len`
/// elements per row. Lists must hold `len` elements per row; numbers of another
/// type are converted (exactly when the value fits).
pub(crate) fn rows(c: &dyn Array, d: DType, len: usize, start: usize, n: usize) -> Result<Vec<u8>, String> {
    if start + n > c.len() {
        return Err(format!("rows {start}..{} of a {}-row column", start + n, c.len()));
    }
    let c = c.slice(start, n);
    let values: ArrayRef = match c.data_type() {
        DataType::FixedSizeList(_, k) => {
            if *k as usize != len {
                return Err(format!("lists of {k}, expected {len} per row"));
            }
            c.as_fixed_size_list().values().clone()
        }
        DataType::List(_) => list_values(c.as_list::<i32>(), len)?,
        DataType::LargeList(_) => list_values(c.as_list::<i64>(), len)?,
        _ if len == 1 => c.clone(),
        other => return Err(format!("{other} values, expected lists of {len}")),
    };
    if values.len() != n * len {
        return Err(format!("{} values for {n} rows of {len}", values.len()));
    }
    native(values.as_ref(), d)
}

fn list_values<O: arrow_array::OffsetSizeTrait>(l: &arrow_array::GenericListArray<O>, len: usize) -> Result<ArrayRef, String> {
    let off = l.value_offsets();
    if let Some(i) = (0..l.len()).find(|&i| off[i + 1].as_usize() - off[i].as_usize() != len) {
        return Err(format!("row {i} has {} values, expected {len}", off[i + 1].as_usize() - off[i].as_usize()));
    }
    let (a, b) = (off[0].as_usize(), off[l.len()].as_usize());
    Ok(l.values().slice(a, b - a))
}

/// A flat array's values as native bytes of `d`.
fn native(v: &dyn Array, d: DType) -> Result<Vec<u8>, String> {
    if v.data_type() == &arrow_type(d) && d != DType::Bool {
        macro_rules! same {
            ($($t:ty),*) => {{
                $(if let Some(p) = v.as_primitive_opt::<$t>() {
                    return Ok(bytemuck::cast_slice(p.values().as_ref()).to_vec());
                })*
            }};
        }
        same!(UInt8Type, Int8Type, UInt16Type, Int16Type, UInt32Type, Int32Type, UInt64Type, Int64Type, Float32Type, Float64Type);
    }
    let vals = f64s(v)?;
    let mut out = vec![0u8; vals.len() * d.size()];
    for (i, x) in vals.into_iter().enumerate() {
        d.write_f64(&mut out, i, x);
    }
    Ok(out)
}

/// Any numeric or bool array as f64 (nulls as 0).
pub(crate) fn f64s(v: &dyn Array) -> Result<Vec<f64>, String> {
    macro_rules! conv {
        ($($t:ty),*) => {{
            $(if let Some(p) = v.as_primitive_opt::<$t>() {
                return Ok((0..p.len()).map(|i| if p.is_null(i) { 0.0 } else { p.value(i) as f64 }).collect());
            })*
        }};
    }
    conv!(UInt8Type, Int8Type, UInt16Type, Int16Type, UInt32Type, Int32Type, UInt64Type, Int64Type, Float32Type, Float64Type);
    if let Some(b) = v.as_boolean_opt() {
        return Ok((0..b.len()).map(|i| f64::from(u8::from(!b.is_null(i) && b.value(i)))).collect());
    }
    Err(format!("{} values, expected numbers", v.data_type()))
}

/// An integer column (any integer type) as i64.
pub(crate) fn i64s(v: &dyn Array) -> Result<Vec<i64>, String> {
    macro_rules! conv {
        ($($t:ty),*) => {{
            $(if let Some(p) = v.as_primitive_opt::<$t>() {
                return (0..p.len()).map(|i| if p.is_null(i) { Err(format!("null at row {i}")) } else { i64::try_from(p.value(i)).map_err(|_| format!("{} at row {i} is out of range", p.value(i))) }).collect();
            })*
        }};
    }
    conv!(UInt8Type, Int8Type, UInt16Type, Int16Type, UInt32Type, Int32Type, UInt64Type, Int64Type);
    Err(format!("{} values, expected integers", v.data_type()))
}

/// A bool (or 0/1 integer) column.
pub(crate) fn bools(v: &dyn Array) -> Result<Vec<bool>, String> {
    Ok(f64s(v)?.into_iter().map(|x| x != 0.0).collect())
}

/// A string column (nulls as `None`).
pub(crate) fn strings(v: &dyn Array) -> Result<Vec<Option<String>>, String> {
    match v.data_type() {
        DataType::Utf8 => Ok(v.as_string::<i32>().iter().map(|s| s.map(String::from)).collect()),
        DataType::LargeUtf8 => Ok(v.as_string::<i64>().iter().map(|s| s.map(String::from)).collect()),
        DataType::Utf8View => Ok(v.as_string_view().iter().map(|s| s.map(String::from)).collect()),
        other => Err(format!("{other} values, expected strings")),
    }
}

/// A list-of-strings column (LeRobot's per-episode `tasks`).
pub(crate) fn string_lists(v: &dyn Array) -> Result<Vec<Vec<String>>, String> {
    let rows = |offsets: Vec<usize>, values: &dyn Array| -> Result<Vec<Vec<String>>, String> {
        let s = strings(values)?;
        Ok(offsets.windows(2).map(|w| s[w[0]..w[1]].iter().flatten().cloned().collect()).collect())
    };
    match v.data_type() {
        DataType::List(_) => {
            let l = v.as_list::<i32>();
            rows(l.value_offsets().iter().map(|&o| o as usize).collect(), l.values().as_ref())
        }
        DataType::LargeList(_) => {
            let l = v.as_list::<i64>();
            rows(l.value_offsets().iter().map(|&o| o as usize).collect(), l.values().as_ref())
        }
        other => Err(format!("{other} values, expected lists of strings")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_round_trip_through_columns() {
        let vals: Vec<f32> = (0..12).map(|i| i as f32 * 0.5).collect();
        let bytes: Vec<u8> = bytemuck::cast_slice(&vals).to_vec();
        let c = column(DType::F32, 4, &bytes);
        assert_eq!(c.data_type(), &feature_type(DType::F32, 4));
        assert_eq!(rows(c.as_ref(), DType::F32, 4, 1, 2).unwrap(), bytes[16..48].to_vec());
        // Other numeric types convert; wrong list lengths are errors, not panics.
        let back = rows(c.as_ref(), DType::F64, 4, 0, 3).unwrap();
        assert_eq!(
            back.chunks_exact(8).map(bytemuck::pod_read_unaligned::<f64>).collect::<Vec<_>>(),
            vals.iter().map(|&v| v as f64).collect::<Vec<_>>()
        );
        assert!(rows(c.as_ref(), DType::F32, 3, 0, 3).is_err());
        assert!(rows(c.as_ref(), DType::F32, 4, 2, 2).is_err());
        let scalars = column(DType::I64, 1, bytemuck::cast_slice(&[3i64, -1]));
        assert_eq!(i64s(scalars.as_ref()).unwrap(), vec![3, -1]);
        let nested = f64_lists(&[vec![0.1, 0.2, 0.3], vec![1.0, 2.0, 3.0]], &[3, 1, 1]);
        assert_eq!(nested.len(), 2);
        let inner = nested.as_list::<i32>().value(1);
        let inner = inner.as_list::<i32>().value(2);
        assert_eq!(f64s(inner.as_list::<i32>().value(0).as_ref()).unwrap(), vec![3.0]);
    }
}
