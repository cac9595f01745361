//! rollway episodes → Minari's `arrow` / `parquet` episode folders: the layout
//! `arrow.rs` reads (and documents), as Minari's `ArrowStorage` writes it.
//!
//! Each episode becomes `data/<k>/part-0.arrow` (or `.parquet`) with T+1 rows, the
//! action, reward and flag columns padded with a last row of zeros, plus
//! `data/<k>/metadata.json`. Images are stored raw, as fixed-size lists
//! (`jpeg_encoding: false`), so values survive exactly. An episode is built in
//! memory and written with one call, so the cost is one encode and one write a
//! file; pyarrow's `ds.write_dataset` does the same work per episode.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{
    Array as _, ArrayRef, BooleanArray, FixedSizeListArray, Float64Array, Int64Array, RecordBatch, StringArray, StructArray,
};
use arrow_schema::{Field, Fields};
use rollway_core::{Array, Space};
use rollway_store::EpisodeData;
use serde_json::{json, Map, Value as Json};

use super::h5::Kind;
use super::{infos, DataFormat};
use crate::columns;

/// Writes episode folders under `root` (the staging `data/` directory).
pub(super) struct Writer {
    root: PathBuf,
    format: DataFormat,
    obs: Space,
    act: Space,
}

impl Writer {
    pub fn new(root: &Path, format: DataFormat, obs: &Space, act: &Space) -> Writer {
        Writer { root: root.to_path_buf(), format, obs: obs.clone(), act: act.clone() }
    }

    /// Writes episode `k` (with its per-episode `metadata`) into `root/k/`; returns
    /// the info keys that could not be written. Errors are messages; the caller
    /// names the file.
    pub fn episode(&self, k: u64, ep: &EpisodeData, metadata: Map<String, Json>) -> Result<Vec<String>, String> {
        let t = ep.entry.length as usize;
        let n = t + 1;
        let leaves: HashMap<&str, &Array> = ep.observations.iter().chain(&ep.actions).map(|(c, a)| (c.as_str(), a)).collect();
        let mut cols: Vec<(&str, ArrayRef)> = vec![
            ("observations", encode(&self.obs, "observations", &leaves, n)?),
            ("actions", encode(&self.act, "actions", &leaves, n)?),
            ("rewards", Arc::new(Float64Array::from_iter_values(ep.rewards.iter().copied().chain([0.0])))),
            ("terminations", Arc::new(BooleanArray::from_iter(ep.terminations.iter().map(|&b| Some(b)).chain([Some(false)])))),
            ("truncations", Arc::new(BooleanArray::from_iter(ep.truncations.iter().map(|&b| Some(b)).chain([Some(false)])))),
        ];
        let mut skipped = vec![];
        if let Some(rows) = ep.infos.as_ref().filter(|r| !r.is_empty()) {
            let (info_cols, s) = infos::columns(rows);
            skipped = s;
            if !info_cols.is_empty() {
                cols.push(("infos", Arc::new(info_struct(info_cols))));
            }
        }
        let batch = RecordBatch::try_from_iter(cols).map_err(|e| e.to_string())?;
        let dir = self.root.join(k.to_string());
        std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        match self.format {
            DataFormat::Arrow => write_ipc(&dir.join("part-0.arrow"), &batch)?,
            _ => {
                columns::write_file(&dir.join("part-0.parquet"), &batch)?;
            }
        }
        let text = serde_json::to_string(&Json::Object(metadata)).expect("metadata serializes");
        std::fs::write(dir.join("metadata.json"), text).map_err(|e| format!("writing {k}/metadata.json: {e}"))?;
        Ok(skipped)
    }
}

/// One Arrow IPC file holding `batch`, synced.
fn write_ipc(path: &Path, batch: &RecordBatch) -> Result<(), String> {
    let file = File::create(path).map_err(|e| format!("creating {}: {e}", path.display()))?;
    let mut w = arrow_ipc::writer::FileWriter::try_new(file, &batch.schema()).map_err(|e| e.to_string())?;
    w.write(batch).map_err(|e| e.to_string())?;
    w.finish().map_err(|e| e.to_string())?;
    w.into_inner().map_err(|e| e.to_string())?.sync_all().map_err(|e| e.to_string())
}

/// The column of `space` at `path`: structs for Dict (by key) and Tuple (`"0"`, `"1"`…),
/// the dtype for Discrete, fixed-size lists for the other leaves; `rows` rows, the
/// leaf's own rows first and zeros after (the action of the final observation).
fn encode(space: &Space, path: &str, leaves: &HashMap<&str, &Array>, rows: usize) -> Result<ArrayRef, String> {
    let children: Vec<(String, String, &Space)> = match space {
        Space::Dict(items) => items.iter().map(|(k, s)| (k.clone(), format!("{path}/{k}"), s)).collect(),
        Space::Tuple(items) => items.iter().enumerate().map(|(i, s)| (i.to_string(), format!("{path}/_index_{i}"), s)).collect(),
        Space::Text { .. } => {
            let a = leaves.get(path).ok_or_else(|| format!("no column `{path}`"))?;
            // Minari pads a Text column with nulls, not empty strings.
            let mut vals: Vec<Option<String>> = super::text_values(a).into_iter().map(Some).collect();
            vals.resize(rows, None);
            return Ok(Arc::new(StringArray::from(vals)));
        }
        _ => {
            let a = leaves.get(path).ok_or_else(|| format!("no column `{path}`"))?;
            let mut bytes = a.data.clone();
            let len: usize = a.shape.iter().skip(1).product();
            bytes.resize(rows * len * a.dtype.size(), 0);
            return Ok(match space {
                Space::Discrete { .. } => columns::flat(a.dtype, &bytes),
                _ => fixed_list(len, columns::flat(a.dtype, &bytes)),
            });
        }
    };
    let mut fields = Vec::new();
    let mut arrays = Vec::new();
    for (name, child_path, s) in children {
        let a = encode(s, &child_path, leaves, rows)?;
        fields.push(Field::new(name, a.data_type().clone(), true));
        arrays.push(a);
    }
    Ok(Arc::new(StructArray::try_new(Fields::from(fields), arrays, None).map_err(|e| format!("{path}: {e}"))?))
}

/// `values` as rows of `len` (Minari's `pa.list_(dtype, list_size=len)`).
fn fixed_list(len: usize, values: ArrayRef) -> ArrayRef {
    let item = Arc::new(Field::new("item", values.data_type().clone(), true));
    Arc::new(FixedSizeListArray::new(item, len as i32, values, None))
}

/// A node of the infos struct: a column, or nested keys.
enum Node {
    Leaf(Field, ArrayRef),
    Tree(BTreeMap<String, Node>),
}

/// The `infos` struct (Minari's `_encode_info` layout): nested dicts as structs,
/// arrays as fixed-size lists whose field metadata `shape` gives one row's shape.
fn info_struct(cols: Vec<(String, infos::Column)>) -> StructArray {
    let mut root = BTreeMap::new();
    for (path, c) in cols {
        let values: ArrayRef = match c.kind {
            Kind::Int => Arc::new(Int64Array::from(c.ints)),
            Kind::Float => Arc::new(Float64Array::from(c.floats)),
            Kind::Bool => Arc::new(BooleanArray::from_iter(c.ints.iter().map(|&x| Some(x != 0)))),
        };
        let name = path.rsplit('/').next().unwrap_or(&path).to_string();
        let (array, field) = if c.shape.is_empty() {
            let f = Field::new(&name, values.data_type().clone(), true);
            (values, f)
        } else {
            let len = c.shape.iter().product();
            let a = fixed_list(len, values);
            let shape = c.shape.iter().map(usize::to_string).collect::<Vec<_>>().join(",");
            let f = Field::new(&name, a.data_type().clone(), true)
                .with_metadata(std::collections::HashMap::from([("shape".to_string(), shape)]));
            (a, f)
        };
        let mut at = &mut root;
        let parts: Vec<&str> = path.split('/').collect();
        for p in &parts[..parts.len() - 1] {
            let e = at.entry(p.to_string()).or_insert_with(|| Node::Tree(BTreeMap::new()));
            let Node::Tree(next) = e else { unreachable!("info paths are a tree: a value is never also a dict") };
            at = next;
        }
        at.insert(name, Node::Leaf(field, array));
    }
    fn build(tree: BTreeMap<String, Node>) -> StructArray {
        let (fields, arrays): (Vec<Field>, Vec<ArrayRef>) = tree
            .into_iter()
            .map(|(name, node)| match node {
                Node::Leaf(f, a) => (f, a),
                Node::Tree(t) => {
                    let s = build(t);
                    (Field::new(name, s.data_type().clone(), true), Arc::new(s) as ArrayRef)
                }
            })
            .unzip();
        StructArray::new(Fields::from(fields), arrays, None)
    }
    build(root)
}

/// Minari's per-episode `metadata.json`: id, steps, seed, and the reward statistics
/// its default episode callback adds.
pub(super) fn episode_metadata(k: u64, ep: &EpisodeData, stats: &[(&str, f64)]) -> Map<String, Json> {
    let mut m = Map::new();
    m.insert("id".into(), json!(k));
    m.insert("total_steps".into(), json!(ep.entry.length));
    m.insert("seed".into(), json!(ep.entry.seed));
    for (k, v) in stats {
        m.insert((*k).into(), json!(v));
    }
    m
}
