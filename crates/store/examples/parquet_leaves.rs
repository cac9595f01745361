//! Why large observation leaves are `fixed_size_binary` (FORMAT.md, `BINARY_LEAF_BYTES`):
//! Parquet's writer on the same rows of an Atari frame stack (uint8 `(4, 84, 84)`), as the
//! `fixed_size_list<uint8>[28224]` of format version 2 and as the `fixed_size_binary[28224]`
//! of version 3, with the store's writer settings (Snappy, no dictionary).
//!
//!     cargo run --release -p rollway-store --example parquet_leaves [ROWS]

#[path = "common/frame_like.rs"]
mod frame_like;

use std::sync::Arc;
use std::time::Instant;

use arrow_array::{ArrayRef, FixedSizeBinaryArray, FixedSizeListArray, RecordBatch, UInt8Array};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

const WIDTH: usize = 4 * 84 * 84;

/// Rows that compress like frames: mostly one gray, a seventh of the pixels noise.
fn frames(rows: usize) -> Vec<u8> {
    frame_like::frame_like(rows * WIDTH)
}

/// Microseconds a row to write `col` to an in-memory Parquet file, best of three, and its size.
fn write(col: ArrayRef, rows: usize) -> (f64, usize) {
    let schema = Arc::new(Schema::new(vec![Field::new("observations", col.data_type().clone(), false)]));
    let batch = RecordBatch::try_new(schema.clone(), vec![col]).expect("one column of `rows` rows");
    let (mut best, mut size) = (f64::INFINITY, 0);
    for _ in 0..3 {
        let t = Instant::now();
        let props = WriterProperties::builder().set_compression(Compression::SNAPPY).set_dictionary_enabled(false).build();
        let mut w = ArrowWriter::try_new(Vec::new(), schema.clone(), Some(props)).expect("a writer into memory");
        w.write(&batch).expect("writing into memory");
        let bytes = w.into_inner().expect("closing into memory").len();
        (best, size) = (best.min(t.elapsed().as_secs_f64() * 1e6 / rows as f64), bytes);
    }
    (best, size)
}

fn main() {
    let rows: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(2000);
    let values = frames(rows);
    let item = Arc::new(Field::new("item", DataType::UInt8, false));
    let list: ArrayRef = Arc::new(FixedSizeListArray::new(item, WIDTH as i32, Arc::new(UInt8Array::from(values.clone())), None));
    let binary: ArrayRef = Arc::new(FixedSizeBinaryArray::try_new(WIDTH as i32, values.into(), None).expect("whole rows"));
    let (l, lb) = write(list, rows);
    let (b, bb) = write(binary, rows);
    println!("{rows} rows of uint8 (4, 84, 84), Snappy, best of 3:");
    println!("  fixed_size_list<uint8>[{WIDTH}] (format 2): {l:7.1} µs a row, {lb} bytes");
    println!("  fixed_size_binary[{WIDTH}]      (format 3): {b:7.1} µs a row, {bb} bytes ({:.1}× faster)", l / b);
}
