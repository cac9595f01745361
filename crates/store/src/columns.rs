//! Episodes ↔ Arrow columns. One row per observation (T+1 per episode,
//! Gymnasium's convention); the action, reward and flags of the last row are null.
//! Leaves with a shape become fixed-size lists, so pyarrow/pandas/polars/DuckDB
//! read every column without knowing rollway.

use std::sync::Arc;

use arrow_array::builder::{Float32Builder, ListBuilder};
use arrow_array::{make_array, Array as _, ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_buffer::{Buffer, NullBuffer};
use arrow_data::ArrayData;
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use rollway_core::{Array, DType, EpisodeResult, Info, Layout, Leaf};

use crate::format::{column_name, is_frame_leaf};
use crate::{Error, Result};

/// The Arrow type that stores values of `d` (FORMAT.md's column types).
pub fn arrow_type(d: DType) -> DataType {
    match d {
        DType::Bool => DataType::Boolean,
        DType::U8 => DataType::UInt8,
        DType::I8 => DataType::Int8,
        DType::U16 => DataType::UInt16,
        DType::I16 => DataType::Int16,
        DType::U32 => DataType::UInt32,
        DType::I32 => DataType::Int32,
        DType::U64 => DataType::UInt64,
        DType::I64 => DataType::Int64,
        DType::F16 => DataType::Float16,
        DType::F32 => DataType::Float32,
        DType::F64 => DataType::Float64,
    }
}

/// Observation leaves of this many bytes or more are stored as `fixed_size_binary`: the
/// row's bytes as they are, not a `fixed_size_list` of numbers.
///
/// Why: Parquet gives every element of a list a repetition level, and the writer builds and
/// encodes those one element at a time. For an Atari frame stack (28,224 bytes a row) that
/// was 540 µs a row against 90 µs as binary (`cargo run --release -p rollway-store --example
/// parquet_leaves`), and it capped a 2-core Atari recording at the writer's core. A reader
/// turns the bytes back into the leaf with the `rollway:shape` and `rollway:dtype` the field
/// carries (numpy: `np.frombuffer(cell, dtype).reshape(shape)`); below the threshold the
/// list keeps a column readable value by value without that step.
pub const BINARY_LEAF_BYTES: usize = 1024;

/// Whether an observation leaf is stored as `fixed_size_binary` (see [`BINARY_LEAF_BYTES`]).
pub fn stored_as_binary(leaf: &Leaf) -> bool {
    !leaf.shape.is_empty() && leaf.dtype != DType::Bool && leaf.bytes() >= BINARY_LEAF_BYTES
}

fn leaf_field(name: String, leaf: &Leaf, nullable: bool, binary: bool) -> Field {
    let meta = [("rollway:shape".to_string(), format!("{:?}", leaf.shape)), ("rollway:dtype".to_string(), leaf.dtype.name().to_string())];
    let dt = if leaf.shape.is_empty() {
        arrow_type(leaf.dtype)
    } else if binary {
        DataType::FixedSizeBinary(leaf.bytes() as i32)
    } else {
        DataType::FixedSizeList(Arc::new(Field::new("item", arrow_type(leaf.dtype), false)), leaf.len() as i32)
    };
    Field::new(name, dt, nullable).with_metadata(meta.into_iter().collect::<std::collections::HashMap<String, String>>())
}

/// The column plan of a dataset.
pub struct Columns {
    /// Observation layout.
    pub obs: Layout,
    /// Action layout.
    pub act: Layout,
    /// Whether per-step infos are stored.
    pub infos: bool,
    /// The Arrow schema of every shard.
    pub schema: SchemaRef,
}

impl Columns {
    /// The plan for these layouts.
    pub fn new(obs: Layout, act: Layout, infos: bool) -> Columns {
        let mut fields = vec![Field::new("episode_id", DataType::Int64, false), Field::new("step", DataType::Int64, false)];
        for leaf in obs.leaves().iter().filter(|l| !is_frame_leaf(l)) {
            fields.push(leaf_field(column_name("observations", leaf), leaf, false, stored_as_binary(leaf)));
        }
        for leaf in act.leaves() {
            fields.push(leaf_field(column_name("actions", leaf), leaf, true, false));
        }
        fields.push(Field::new("rewards", DataType::Float64, true));
        fields.push(Field::new("terminations", DataType::Boolean, true));
        fields.push(Field::new("truncations", DataType::Boolean, true));
        if infos {
            fields.push(Field::new("infos", DataType::Utf8, true));
        }
        let schema = Arc::new(
            Schema::new(fields).with_metadata(
                [("rollway:format_version".to_string(), crate::FORMAT_VERSION.to_string())]
                    .into_iter()
                    .collect::<std::collections::HashMap<String, String>>(),
            ),
        );
        Columns { obs, act, infos, schema }
    }

    /// One shard's columns; `ids[i]` is the dataset episode id of `episodes[i]`. Every
    /// column but the observation leaves' is built here, whole; those are copied out of
    /// the episodes slice by slice as [`ShardColumns::for_each_slice`] writes them.
    pub fn shard<'a>(&self, episodes: &[&'a EpisodeResult], ids: &[u64]) -> Result<ShardColumns<'a>> {
        let rows: usize = episodes.iter().map(|e| e.length as usize + 1).sum();
        let ob = self.obs.row_bytes();
        // Checked once here; every column below walks these.
        let trajs = episodes.iter().map(|e| traj(e)).collect::<Result<Vec<_>>>()?;
        if let Some((e, t)) = episodes.iter().zip(&trajs).find(|(e, t)| t.obs.len() != (e.length as usize + 1) * ob) {
            let message = format!("{} observation bytes for {} rows of {ob}", t.obs.len(), e.length + 1);
            return Err(Error::BadEpisode { episode: e.run_index, message });
        }
        let mut last = Vec::with_capacity(rows);
        let (mut eid, mut step) = (Vec::with_capacity(rows), Vec::with_capacity(rows));
        for (e, &id) in episodes.iter().zip(ids) {
            for t in 0..=e.length {
                eid.push(id as i64);
                step.push(t as i64);
                last.push(t == e.length);
            }
        }
        // Null where a row is an episode's final observation: it has no action.
        let valid = NullBuffer::from(last.iter().map(|&l| !l).collect::<Vec<bool>>());
        let head: Vec<ArrayRef> = vec![Arc::new(Int64Array::from(eid)), Arc::new(Int64Array::from(step))];
        let mut tail = Vec::new();
        let ab = self.act.row_bytes();
        for leaf in self.act.leaves() {
            let mut bytes = Vec::with_capacity(rows * leaf.bytes());
            for t in &trajs {
                for row in t.actions.chunks_exact(ab) {
                    bytes.extend_from_slice(&row[leaf.offset..leaf.offset + leaf.bytes()]);
                }
                bytes.resize(bytes.len() + leaf.bytes(), 0);
            }
            tail.push(leaf_array(leaf, bytes, rows, Some(valid.clone()), false)?);
        }
        self.outcome_columns(episodes, &trajs, rows, &mut tail);
        let mut fields: Vec<Field> = self.schema.fields().iter().map(|f| f.as_ref().clone()).collect();
        // The agents' recurrent states, in shards that have any: a list of floats per
        // step, null on each episode's final-observation row.
        if trajs.iter().any(|t| t.state_width > 0) {
            let mut states = ListBuilder::new(Float32Builder::new());
            for t in &trajs {
                for r in 0..t.rewards.len() {
                    states.values().append_slice(&t.states[r * t.state_width..(r + 1) * t.state_width]);
                    states.append(true);
                }
                states.append(false);
            }
            let states = states.finish();
            fields.push(Field::new(AGENT_STATE, states.data_type().clone(), true));
            tail.push(Arc::new(states));
        }
        step_columns(&trajs, &valid, &mut fields, &mut tail)?;
        let schema = Arc::new(Schema::new_with_metadata(fields, self.schema.metadata().clone()));
        let leaves: Vec<Leaf> = self.obs.leaves().iter().filter(|l| !is_frame_leaf(l)).cloned().collect();
        let first = episodes.first().map_or(0, |e| e.run_index);
        Ok(ShardColumns { schema, head, tail, leaves, trajs, rows, ob, first })
    }

    /// The rewards, terminations and truncations columns of the shard's `rows` (null on
    /// each episode's final-observation row), and the infos where the plan keeps them.
    fn outcome_columns(&self, episodes: &[&EpisodeResult], trajs: &[&rollway_core::Trajectory], rows: usize, cols: &mut Vec<ArrayRef>) {
        let mut rewards = Vec::with_capacity(rows);
        let (mut term, mut trunc) = (Vec::with_capacity(rows), Vec::with_capacity(rows));
        for t in trajs {
            rewards.extend(t.rewards.iter().map(|&r| Some(r)));
            rewards.push(None);
            term.extend(t.terminations.iter().map(|&x| Some(x)));
            term.push(None);
            trunc.extend(t.truncations.iter().map(|&x| Some(x)));
            trunc.push(None);
        }
        cols.push(Arc::new(Float64Array::from(rewards)));
        cols.push(Arc::new(BooleanArray::from(term)));
        cols.push(Arc::new(BooleanArray::from(trunc)));
        if self.infos {
            let mut infos: Vec<Option<String>> = Vec::with_capacity(rows);
            for (e, t) in episodes.iter().zip(trajs) {
                infos.extend((0..=e.length as usize).map(|i| t.infos.get(i).map(Info::to_json)));
            }
            cols.push(Arc::new(StringArray::from(infos)));
        }
    }
}

/// About how many bytes of observations a shard hands the Parquet writer at a time.
///
/// Why slices: a shard's observations are the bulk of it (a pistonball shard holds
/// ~400 MB an episode), and building them as one column, which the Parquet writer then
/// copies whole into a buffer of its own, cost two fresh allocations that size a
/// shard: glibc maps any block over 32 MiB anew and the kernel faults in and zeroes
/// every page, over half of the writer's time on such rows (`perf` of
/// `crates/store/examples/writer_ceiling.rs`). Slices well under that size reuse the
/// same memory from one to the next (2.6× the writer's rate on pistonball's rows, 1.5–2×
/// on 1.6–28 kB rows: bench/RESULTS.md). Readers see the same shard either way: the
/// slices go into the one row group, in order.
pub const SLICE_BYTES: usize = 8 << 20;

/// One shard's columns, the observation leaves copied out a slice of rows at a time
/// (see [`SLICE_BYTES`]).
pub struct ShardColumns<'a> {
    schema: SchemaRef,
    /// The columns before the observation leaves (`episode_id`, `step`) and after them, whole.
    head: Vec<ArrayRef>,
    tail: Vec<ArrayRef>,
    /// The observation leaves stored in Parquet (frame leaves go to their own files).
    leaves: Vec<Leaf>,
    trajs: Vec<&'a rollway_core::Trajectory>,
    rows: usize,
    /// Bytes of an observation row.
    ob: usize,
    /// The first episode's run index, for errors.
    first: u64,
}

impl ShardColumns<'_> {
    /// The shard's schema: the plan's, with the recurrent-state and per-step columns its
    /// episodes carry.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// Calls `write` with the shard's rows in order, as batches holding about
    /// `slice_bytes` of observations each (one row at least).
    pub fn for_each_slice(&self, slice_bytes: usize, mut write: impl FnMut(&RecordBatch) -> Result<()>) -> Result<()> {
        let leaf_bytes: usize = self.leaves.iter().map(Leaf::bytes).sum();
        let per_slice = (slice_bytes / leaf_bytes.max(1)).max(1);
        // Rows are checked to be whole in `Columns::shard`; with no observation bytes there is nothing to walk.
        let mut obs_rows = self.trajs.iter().flat_map(|t| t.obs.chunks_exact(self.ob.max(1)));
        let mut start = 0;
        while start < self.rows {
            let len = per_slice.min(self.rows - start);
            let part: Vec<&[u8]> = if self.ob == 0 { vec![&[][..]; len] } else { obs_rows.by_ref().take(len).collect() };
            let mut cols: Vec<ArrayRef> = self.head.iter().map(|c| c.slice(start, len)).collect();
            for leaf in &self.leaves {
                let mut bytes = Vec::with_capacity(len * leaf.bytes());
                for row in &part {
                    bytes.extend_from_slice(&row[leaf.offset..leaf.offset + leaf.bytes()]);
                }
                cols.push(leaf_array(leaf, bytes, len, None, stored_as_binary(leaf))?);
            }
            cols.extend(self.tail.iter().map(|c| c.slice(start, len)));
            let batch = RecordBatch::try_new(self.schema.clone(), cols)
                .map_err(|e| Error::BadEpisode { episode: self.first, message: e.to_string() })?;
            write(&batch)?;
            start += len;
        }
        Ok(())
    }
}

/// A training rollout's per-step columns, in shards whose episodes have them: each
/// policy extra as `extras.<name>` (float32, a fixed-size list for a shaped extra)
/// and the acting version as `policy_version` (uint64), null on each episode's
/// final-observation row as actions are. Every episode of a shard must carry the
/// same extras (one rollout records them all).
fn step_columns(trajs: &[&rollway_core::Trajectory], valid: &NullBuffer, fields: &mut Vec<Field>, cols: &mut Vec<ArrayRef>) -> Result<()> {
    let Some(first) = trajs.iter().find(|t| !t.extras.is_empty() || !t.versions.is_empty()) else { return Ok(()) };
    let rows = valid.len();
    for (k, x) in first.extras.iter().enumerate() {
        let kind = rollway_core::LeafKind::Box { low: vec![], high: vec![] };
        let leaf = Leaf { path: x.name.clone(), dtype: DType::F32, shape: x.shape.clone(), offset: 0, kind };
        let mut bytes = Vec::with_capacity(rows * leaf.bytes());
        for t in trajs {
            let col = t.extras.get(k).filter(|c| c.name == x.name && c.shape == x.shape);
            let Some(col) = col else {
                return Err(Error::BadEpisode { episode: 0, message: format!("an episode without extra `{}` beside one with it", x.name) });
            };
            // Native bytes, as every leaf's rows: `leaf_array` takes the row layout's byte order.
            bytes.extend(col.values.iter().flat_map(|v| v.to_ne_bytes()));
            bytes.resize(bytes.len() + leaf.bytes(), 0);
        }
        fields.push(leaf_field(format!("{EXTRAS}{}", x.name), &leaf, true, false));
        cols.push(leaf_array(&leaf, bytes, rows, Some(valid.clone()), false)?);
    }
    if !first.versions.is_empty() {
        let v: Vec<Option<u64>> = trajs.iter().flat_map(|t| t.versions.iter().map(|&v| Some(v)).chain([None])).collect();
        if v.len() != rows {
            return Err(Error::BadEpisode { episode: 0, message: "an episode without policy versions beside one with them".into() });
        }
        fields.push(Field::new(POLICY_VERSION, DataType::UInt64, true));
        cols.push(Arc::new(arrow_array::UInt64Array::from(v)));
    }
    Ok(())
}

/// The prefix of a policy extra's column (`extras.log_prob`).
pub const EXTRAS: &str = "extras.";

/// The column of the policy version that chose each action.
pub const POLICY_VERSION: &str = "policy_version";

impl Columns {
    /// Checks a shard's schema against this plan: every column the spaces call for,
    /// with its type and width, and nothing unknown (an Acrobot shard dropped into a
    /// CartPole dataset has the right names and the wrong widths).
    pub(crate) fn check(&self, schema: &Schema) -> std::result::Result<(), String> {
        // A leaf's list and its binary hold the same bytes: shards written before
        // BINARY_LEAF_BYTES (format version 2) keep their lists beside newer shards.
        let bytes_of = |f: &Field| match f.data_type() {
            DataType::FixedSizeList(item, n) => item.data_type().primitive_width().map(|w| w * *n as usize),
            DataType::FixedSizeBinary(n) => Some(*n as usize),
            _ => None,
        };
        let same = |a: &Field, b: &Field| match (a.data_type(), b.data_type()) {
            (DataType::FixedSizeList(fa, na), DataType::FixedSizeList(fb, nb)) => na == nb && fa.data_type() == fb.data_type(),
            (DataType::FixedSizeList(item, _), DataType::FixedSizeBinary(_)) => {
                let dtype = b.metadata().get("rollway:dtype").and_then(|d| DType::parse(d).ok());
                dtype.is_some_and(|d| item.data_type() == &arrow_type(d)) && bytes_of(a) == bytes_of(b)
            }
            (DataType::FixedSizeBinary(_), DataType::FixedSizeList(item, _)) => {
                item.data_type() != &DataType::Boolean && bytes_of(a) == bytes_of(b)
            }
            (x, y) => x == y,
        };
        for want in self.schema.fields().iter().filter(|f| f.name() != "infos") {
            let got = schema.field_with_name(want.name()).map_err(|_| format!("no column `{}`", want.name()))?;
            if !same(got, want) {
                return Err(format!(
                    "column `{}` is {} where the dataset's spaces give {}",
                    want.name(),
                    got.data_type(),
                    want.data_type()
                ));
            }
        }
        for got in schema.fields() {
            let ok = match got.name().as_str() {
                "infos" => got.data_type() == &DataType::Utf8,
                AGENT_STATE => {
                    matches!(got.data_type(), DataType::List(f) if f.data_type() == &DataType::Float32)
                }
                POLICY_VERSION => got.data_type() == &DataType::UInt64,
                name if name.starts_with(EXTRAS) => match got.data_type() {
                    DataType::FixedSizeList(f, _) => f.data_type() == &DataType::Float32,
                    t => t == &DataType::Float32,
                },
                name => self.schema.field_with_name(name).is_ok(),
            };
            if !ok {
                return Err(format!("unexpected column `{}` ({})", got.name(), got.data_type()));
            }
        }
        Ok(())
    }
}

/// The column of the agents' recurrent states (`Trajectory::states`), in shards that have any.
pub const AGENT_STATE: &str = "agent_state";

/// An episode's trajectory, checked for Gymnasium's T+1 / T shape.
pub(crate) fn traj(e: &EpisodeResult) -> Result<&rollway_core::Trajectory> {
    let t = e
        .trajectory
        .as_deref()
        .ok_or_else(|| Error::BadEpisode { episode: e.run_index, message: "no per-step data (run with record_steps)".into() })?;
    let n = e.length as usize;
    if t.rewards.len() != n || t.terminations.len() != n || t.truncations.len() != n {
        return Err(Error::BadEpisode { episode: e.run_index, message: format!("{} rewards for {n} steps", t.rewards.len()) });
    }
    if let Some(x) = t.extras.iter().find(|x| x.values.len() != n * x.width()) {
        return Err(Error::BadEpisode {
            episode: e.run_index,
            message: format!("extra `{}` has {} floats for {n} steps of {:?}", x.name, x.values.len(), x.shape),
        });
    }
    if !t.versions.is_empty() && t.versions.len() != n {
        return Err(Error::BadEpisode { episode: e.run_index, message: format!("{} policy versions for {n} steps", t.versions.len()) });
    }
    if t.states.len() != n * t.state_width {
        return Err(Error::BadEpisode {
            episode: e.run_index,
            message: format!("{} state floats for {n} steps of {}", t.states.len(), t.state_width),
        });
    }
    Ok(t)
}

/// Native values of `d`, back to back (a whole number of them), as a flat Arrow array
/// of [`arrow_type`]`(d)`: the one reading of rollway's row bytes as Arrow values, for
/// the store's columns and the exports' (`rollway-interop`). Numbers take the bytes as
/// they are; bools become Arrow's bits.
pub fn flat_values(d: DType, bytes: Vec<u8>) -> ArrayData {
    if d == DType::Bool {
        return BooleanArray::from(bytes.iter().map(|&b| b != 0).collect::<Vec<bool>>()).into_data();
    }
    let len = bytes.len() / d.size();
    ArrayData::builder(arrow_type(d))
        .len(len)
        .add_buffer(aligned(bytes, d.size()))
        .build()
        .expect("a buffer of `len` aligned values of the type is a valid array")
}

fn leaf_array(leaf: &Leaf, bytes: Vec<u8>, rows: usize, nulls: Option<NullBuffer>, binary: bool) -> Result<ArrayRef> {
    let n = leaf.len();
    if bytes.len() != rows * n * leaf.dtype.size() {
        return Err(Error::BadEpisode { episode: 0, message: format!("building columns: {} bytes for {rows} rows of {n}", bytes.len()) });
    }
    if binary {
        let dt = DataType::FixedSizeBinary(leaf.bytes() as i32);
        let data = ArrayData::builder(dt).len(rows).add_buffer(Buffer::from_vec(bytes)).nulls(nulls).build().map_err(corrupt_build)?;
        return Ok(make_array(data));
    }
    let child = flat_values(leaf.dtype, bytes);
    let data = if leaf.shape.is_empty() {
        child.into_builder().nulls(nulls).build().map_err(corrupt_build)?
    } else {
        let dt = DataType::FixedSizeList(Arc::new(Field::new("item", arrow_type(leaf.dtype), false)), n as i32);
        ArrayData::builder(dt).len(rows).add_child_data(child).nulls(nulls).build().map_err(corrupt_build)?
    };
    Ok(make_array(data))
}

/// A buffer Arrow accepts for values of `align` bytes. The allocator hands out
/// suitably aligned memory for any non-empty `Vec`, so this is free then; an empty
/// `Vec`'s dangling pointer is aligned to 1 only (a shard of given-up episodes has no
/// rows), and that case — or any other misaligned one — gets a copy.
fn aligned(bytes: Vec<u8>, align: usize) -> Buffer {
    if (bytes.as_ptr() as usize).is_multiple_of(align.max(1)) {
        Buffer::from_vec(bytes)
    } else {
        Buffer::from_slice_ref(&bytes)
    }
}

fn corrupt_build(e: arrow_schema::ArrowError) -> Error {
    Error::BadEpisode { episode: 0, message: format!("building columns: {e}") }
}

/// Copies rows of a leaf column out as native bytes (`leaf.bytes()` per row).
pub(crate) fn leaf_bytes(col: &dyn arrow_array::Array, leaf: &Leaf, out: &mut Vec<u8>) -> std::result::Result<(), String> {
    let data = col.to_data();
    if let DataType::FixedSizeBinary(width) = data.data_type() {
        let width = *width as usize;
        if width != leaf.bytes() {
            return Err(format!("binary column of {width} bytes a row for a leaf of {}", leaf.bytes()));
        }
        let buf = data.buffers().first().ok_or("column without data buffer")?;
        let (from, to) = (data.offset() * width, (data.offset() + col.len()) * width);
        out.extend_from_slice(buf.as_slice().get(from..to).ok_or("column shorter than its length")?);
        return Ok(());
    }
    let (values, offset) = if leaf.shape.is_empty() {
        (data.clone(), data.offset())
    } else {
        let child = data.child_data().first().ok_or("list column without values")?.clone();
        let off = data.offset() * leaf.len() + child.offset();
        (child, off)
    };
    let n = col.len() * leaf.len();
    if leaf.dtype == DType::Bool {
        let arr = BooleanArray::from(values);
        out.extend((offset..offset + n).map(|i| arr.values().value(i) as u8));
        return Ok(());
    }
    let size = leaf.dtype.size();
    let buf = values.buffers().first().ok_or("column without data buffer")?;
    let bytes = buf.as_slice().get(offset * size..(offset + n) * size).ok_or("column shorter than its length")?;
    out.extend_from_slice(bytes);
    Ok(())
}

/// An `Array` of shape `[rows, ...leaf.shape]`.
pub(crate) fn stacked(leaf: &Leaf, rows: usize, data: Vec<u8>) -> Array {
    let mut shape = vec![rows];
    shape.extend_from_slice(&leaf.shape);
    Array { dtype: leaf.dtype, shape, data }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rollway_core::Space;

    /// A plan's schema with its `observations` column replaced by `dt`.
    fn with_obs(plan: &Columns, dt: DataType) -> Schema {
        let fields: Vec<Field> = plan
            .schema
            .fields()
            .iter()
            .map(|f| if f.name() == "observations" { f.as_ref().clone().with_data_type(dt.clone()) } else { f.as_ref().clone() })
            .collect();
        Schema::new(fields)
    }

    #[test]
    fn a_stack_is_binary_and_shards_of_its_older_list_still_check() {
        let obs = Space::box_with(DType::U8, &[4, 84, 84], vec![0.0; 28224], vec![255.0; 28224]).unwrap();
        let plan = Columns::new(Layout::of(&obs), Layout::of(&Space::discrete(6, 0).unwrap()), false);
        assert_eq!(plan.schema.field_with_name("observations").unwrap().data_type(), &DataType::FixedSizeBinary(28224));
        let list = |t: DataType, n| DataType::FixedSizeList(Arc::new(Field::new("item", t, false)), n);
        assert_eq!(plan.check(&with_obs(&plan, list(DataType::UInt8, 28224))), Ok(()), "a version-2 shard's list");
        assert!(plan.check(&with_obs(&plan, list(DataType::UInt16, 14112))).is_err(), "the same bytes as other numbers");
        assert!(plan.check(&with_obs(&plan, DataType::FixedSizeBinary(28000))).is_err());
        let small = Space::box_with(DType::F32, &[255], vec![0.0; 255], vec![1.0; 255]).unwrap();
        let plan = Columns::new(Layout::of(&small), Layout::of(&Space::discrete(6, 0).unwrap()), false);
        assert!(matches!(plan.schema.field_with_name("observations").unwrap().data_type(), DataType::FixedSizeList(_, 255)));
    }

    /// A shard of `lengths`-step episodes of a Dict space (a 1,200-byte leaf of stacked crops
    /// stored as binary beside a small list leaf), with infos, recurrent states and an extra.
    fn shard_episodes(plan: &Columns, lengths: &[usize]) -> Vec<EpisodeResult> {
        let (ob, ab) = (plan.obs.row_bytes(), plan.act.row_bytes());
        let mut byte = 0u8;
        let mut next = |n: usize| -> Vec<u8> {
            (0..n)
                .map(|_| {
                    byte = byte.wrapping_mul(31).wrapping_add(7);
                    byte
                })
                .collect()
        };
        let mut episode = |(i, &n): (usize, &usize)| {
            let mut t = rollway_core::Trajectory { obs: next((n + 1) * ob), actions: next(n * ab), ..Default::default() };
            t.rewards = (0..n).map(|s| s as f64 - 0.5).collect();
            t.terminations = (0..n).map(|s| s + 1 == n).collect();
            t.truncations = vec![false; n];
            t.infos = (0..=n)
                .map(|s| {
                    let mut info = Info::new();
                    info.insert("s", s);
                    info
                })
                .collect();
            (t.states, t.state_width) = ((0..n * 2).map(|v| v as f32).collect(), 2);
            let values = (0..n).map(|v| v as f32 * 0.25).collect();
            t.extras = vec![rollway_core::StepColumn { name: "value".into(), shape: vec![], values }];
            t.versions = vec![3; n];
            EpisodeResult::from_trajectory(i as u64, 0, t)
        };
        lengths.iter().enumerate().map(|(i, n)| episode((i, n))).collect()
    }

    #[test]
    fn a_shard_written_a_row_at_a_time_reads_back_as_the_whole() {
        use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
        use parquet::arrow::ArrowWriter;

        let image = Space::boxed(DType::U8, &[2, 20, 10, 3], 0.0, 255.0).unwrap();
        let pos = Space::box_with(DType::F32, &[3], vec![-1.0; 3], vec![1.0; 3]).unwrap();
        let obs = Space::dict(vec![("image".into(), image), ("pos".into(), pos)]).unwrap();
        let plan = Columns::new(Layout::of(&obs), Layout::of(&Space::discrete(6, 0).unwrap()), true);
        let episodes = shard_episodes(&plan, &[4, 1, 6]);
        let refs: Vec<&EpisodeResult> = episodes.iter().collect();
        let shard = plan.shard(&refs, &[10, 11, 12]).unwrap();
        let read = |slice_bytes: usize| {
            let (file, mut slices) = (tempfile::tempfile().unwrap(), 0);
            let mut w = ArrowWriter::try_new(file.try_clone().unwrap(), shard.schema(), None).unwrap();
            shard
                .for_each_slice(slice_bytes, |b| {
                    slices += 1;
                    w.write(b).map_err(|e| Error::BadEpisode { episode: 0, message: e.to_string() })
                })
                .unwrap();
            w.close().unwrap();
            let reader = ParquetRecordBatchReaderBuilder::try_new(file).unwrap().build().unwrap();
            let batches = reader.collect::<std::result::Result<Vec<_>, _>>().unwrap();
            (arrow_select::concat::concat_batches(&shard.schema(), &batches).unwrap(), slices)
        };
        let (whole, one) = read(usize::MAX);
        let (sliced, many) = read(1);
        assert_eq!((one, many, whole.num_rows()), (1, 14, 14), "a slice of one row each: 5 + 2 + 7 rows");
        assert_eq!(sliced, whole);
        let col = whole.column_by_name("observations/image").unwrap();
        let mut got = Vec::new();
        leaf_bytes(col.as_ref(), &plan.obs.leaves()[0], &mut got).unwrap();
        let ob = plan.obs.row_bytes();
        let want: Vec<u8> =
            episodes.iter().flat_map(|e| e.trajectory.as_ref().unwrap().obs.chunks_exact(ob)).flat_map(|r| r[..1200].to_vec()).collect();
        assert_eq!(got, want, "the image leaf's rows, in order");
    }

    #[test]
    fn a_trajectory_whose_observations_are_not_whole_rows_is_refused() {
        let plan =
            Columns::new(Layout::of(&Space::boxed(DType::U8, &[8], 0.0, 1.0).unwrap()), Layout::of(&Space::discrete(2, 0).unwrap()), false);
        let mut episodes = shard_episodes(&plan, &[3]);
        episodes[0].trajectory.as_mut().unwrap().obs.pop();
        let err = plan.shard(&[&episodes[0]], &[0]).err().expect("an error").to_string();
        assert!(err.contains("31 observation bytes for 4 rows of 8"), "{err}");
    }
}
