//! Minari's `arrow` and `parquet` data formats → episodes.
//!
//! Both keep one folder per episode, `data/<id>/`, holding the episode's rows in
//! one or more files (`part-0.arrow`, Arrow IPC; or `part-0.parquet`) and a
//! `metadata.json` with its `id`, `total_steps` and `seed`. A file has T+1 rows,
//! one per observation: `actions`, `rewards`, `terminations` and `truncations`
//! are padded with a last row that is not a step. Spaces nest as Arrow types:
//!
//! | space | column |
//! |---|---|
//! | Dict | struct, a field per key |
//! | Tuple | struct, fields `"0"`, `"1"`… (`_index_k` in rollway's leaf paths, as in HDF5) |
//! | Box, MultiDiscrete, MultiBinary | fixed-size list of the space's dtype, flattened |
//! | Discrete | the space's dtype |
//! | image Box (with `jpeg_encoding`) | binary, one JPEG a row |
//!
//! `infos` is a struct of the info keys (nested dicts as structs, arrays as
//! fixed-size lists with a `shape` field metadata); it becomes per-step JSON.
//!
//! The files are read whole (an episode at a time), with the same checks as the
//! HDF5 reader: every leaf has the rows and element counts its space says.

use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, RecordBatch, StructArray};
use arrow_schema::DataType;
use rollway_core::{EpisodeResult, Info, Layout, LeafKind, Trajectory};
use serde_json::Value as Json;

use super::infos::{insert, nest};
use super::leaves::{is_image_leaf, jpeg_leaf_rows, scatter_leaf, text_rows, Source};
use super::DataFormat;
use crate::columns;
use crate::{Error, Result};

/// Reads episodes out of a Minari `arrow` or `parquet` data directory.
pub(crate) struct Reader {
    data: PathBuf,
    format: DataFormat,
    ol: Layout,
    al: Layout,
    jpeg: bool,
    skipped: Vec<String>,
}

impl Reader {
    pub fn new(data: &Path, format: DataFormat, ol: Layout, al: Layout, jpeg: bool) -> Reader {
        Reader { data: data.to_path_buf(), format, ol, al, jpeg, skipped: vec![] }
    }

    fn bad(&self, object: impl Into<String>, message: impl Into<String>) -> Error {
        Error::Malformed { path: self.data.clone(), object: object.into(), message: message.into() }
    }

    /// The data files of episode `k`, in name order (pyarrow's `part-0`, `part-1`…).
    fn files(&self, k: u64) -> Result<Vec<PathBuf>> {
        let dir = self.data.join(k.to_string());
        let rd = std::fs::read_dir(&dir).map_err(|_| self.bad(k.to_string(), "missing (metadata.json counts more episodes)"))?;
        let mut files: Vec<PathBuf> = rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
                p.is_file() && name != "metadata.json" && !name.starts_with(['_', '.'])
            })
            .collect();
        files.sort();
        if files.is_empty() {
            return Err(self.bad(k.to_string(), "no data file"));
        }
        Ok(files)
    }

    /// Episode `k`'s rows, every file of its folder in order, as one batch.
    fn batch(&self, k: u64) -> Result<RecordBatch> {
        let mut batches = Vec::new();
        for f in self.files(k)? {
            let read = match self.format {
                DataFormat::Arrow => columns::read_ipc_file(&f),
                _ => columns::read_file(&f),
            };
            batches.push(read.map_err(|m| Error::Malformed { path: f.clone(), object: "/".into(), message: m })?);
        }
        let schema = batches[0].schema();
        arrow_select::concat::concat_batches(&schema, &batches).map_err(|e| self.bad(k.to_string(), format!("files disagree: {e}")))
    }

    /// The seed in `data/<k>/metadata.json` (0 when the episode had none).
    fn seed(&self, k: u64) -> Result<u64> {
        let path = self.data.join(k.to_string()).join("metadata.json");
        let Ok(text) = std::fs::read_to_string(&path) else { return Ok(0) };
        let j: Json = serde_json::from_str(&text).map_err(|e| self.bad(format!("{k}/metadata.json"), format!("not valid JSON: {e}")))?;
        match j.get("seed") {
            None | Some(Json::Null) => Ok(0),
            Some(v) => {
                v.as_u64().ok_or_else(|| self.bad(format!("{k}/metadata.json"), format!("seed {v}, expected a non-negative integer")))
            }
        }
    }

    /// The first `rows` rows of every leaf of `layout` under column `c`, as rollway rows.
    fn rows(&self, c: &ArrayRef, ep: &str, prefix: &str, layout: &Layout, rows: usize) -> Result<Vec<u8>> {
        let rb = layout.row_bytes();
        let mut out = vec![0u8; crate::limits::mul(rows, rb).map_err(|m| self.bad(format!("{ep}/{prefix}"), m))?];
        for leaf in layout.leaves() {
            let object = format!("{ep}/{}", rollway_store::format::column_name(prefix, leaf));
            let arr = field_at(c, &leaf.path).map_err(|m| self.bad(&object, m))?;
            let bytes = if matches!(leaf.kind, LeafKind::Text { .. }) {
                let strings = columns::strings(arr.as_ref()).map_err(|m| self.bad(&object, m))?;
                text_rows(strings, leaf, rows).map_err(|m| self.bad(&object, m))?
            } else if self.jpeg && is_image_leaf(leaf) && matches!(arr.data_type(), DataType::Binary | DataType::LargeBinary) {
                jpeg_leaf_rows(blobs(&arr), leaf, rows).map_err(|m| self.bad(&object, m))?
            } else {
                columns::rows(arr.as_ref(), leaf.dtype, leaf.len(), 0, rows).map_err(|m| self.bad(&object, m))?
            };
            scatter_leaf(&mut out, rb, leaf, &bytes);
        }
        Ok(out)
    }
}

impl Source for Reader {
    /// Episode folders (`data/<id>/`), when the metadata does not say how many.
    fn count_episodes(&self) -> Result<u64> {
        let rd = std::fs::read_dir(&self.data).map_err(|source| Error::Io { op: "listing", path: self.data.clone(), source })?;
        let mut n = 0;
        for e in rd.flatten() {
            if e.path().is_dir() && e.file_name().to_str().is_some_and(|s| s.parse::<u64>().is_ok()) {
                n += 1;
            }
        }
        Ok(n)
    }

    /// Whether the episode has an `infos` column: its first file's schema, not its rows.
    fn has_infos(&self, k: u64) -> Result<bool> {
        let f = &self.files(k)?[0];
        let schema = columns::file_schema(f, self.format == DataFormat::Arrow).map_err(|m| Error::Malformed {
            path: f.clone(),
            object: "/".into(),
            message: m,
        })?;
        Ok(schema.column_with_name("infos").is_some())
    }

    fn episode(&mut self, k: u64) -> Result<EpisodeResult> {
        let b = self.batch(k)?;
        let ep = k.to_string();
        let col = |name: &str| columns::col(&b, name).map_err(|m| self.bad(&ep, m));
        let rows = b.num_rows();
        let t = rows.checked_sub(1).ok_or_else(|| self.bad(&ep, "no rows (an episode has its reset observation at least)"))?;
        let flags = |name: &str| -> Result<Vec<bool>> {
            let mut v = columns::bools(col(name)?.as_ref()).map_err(|m| self.bad(format!("{ep}/{name}"), m))?;
            v.truncate(t);
            Ok(v)
        };
        let mut rewards = columns::f64s(col("rewards")?.as_ref()).map_err(|m| self.bad(format!("{ep}/rewards"), m))?;
        rewards.truncate(t);
        let (terminations, truncations) = (flags("terminations")?, flags("truncations")?);
        let obs = self.rows(col("observations")?, &ep, "observations", &self.ol, rows)?;
        let actions = self.rows(col("actions")?, &ep, "actions", &self.al, t)?;
        let infos = match b.column_by_name("infos") {
            Some(c) => {
                let s =
                    c.as_struct_opt().ok_or_else(|| self.bad(format!("{ep}/infos"), format!("{}, expected a struct", c.data_type())))?;
                let mut out = vec![Info::new(); rows];
                structs_into(s, "", &mut out, &mut self.skipped);
                out
            }
            None => vec![],
        };
        let seed = self.seed(k)?;
        Ok(EpisodeResult::from_trajectory(
            k,
            seed,
            Trajectory { obs, actions, rewards, terminations, truncations, infos, ..Default::default() },
        ))
    }

    fn skipped(&mut self) -> &mut Vec<String> {
        &mut self.skipped
    }
}

/// The array at leaf `path` (`a/_index_1/b`) inside nested struct columns.
fn field_at(c: &ArrayRef, path: &str) -> std::result::Result<ArrayRef, String> {
    let mut arr = c.clone();
    for part in path.split('/').filter(|p| !p.is_empty()) {
        let name = part.strip_prefix("_index_").filter(|i| i.parse::<usize>().is_ok()).unwrap_or(part);
        let s = arr.as_struct_opt().ok_or_else(|| format!("{} where a struct with field `{name}` was expected", arr.data_type()))?;
        arr = s.column_by_name(name).ok_or_else(|| format!("no field `{name}`"))?.clone();
    }
    Ok(arr)
}

/// The image blobs of a binary column (one JPEG a row).
fn blobs(arr: &ArrayRef) -> Box<dyn Iterator<Item = &[u8]> + '_> {
    match arr.data_type() {
        DataType::LargeBinary => Box::new(arr.as_binary::<i64>().iter().map(Option::unwrap_or_default)),
        _ => Box::new(arr.as_binary::<i32>().iter().map(Option::unwrap_or_default)),
    }
}

/// Adds every field of an `infos` struct to the rows' infos (nested structs as
/// nested objects); fields that do not convert are recorded in `skipped`.
fn structs_into(s: &StructArray, prefix: &str, out: &mut [Info], skipped: &mut Vec<String>) {
    for (field, c) in s.fields().iter().zip(s.columns()) {
        let path = if prefix.is_empty() { field.name().clone() } else { format!("{prefix}/{}", field.name()) };
        if let Some(inner) = c.as_struct_opt() {
            structs_into(inner, &path, out, skipped);
            continue;
        }
        let shape: Option<Vec<usize>> = field.metadata().get("shape").map(|s| s.split(',').filter_map(|d| d.trim().parse().ok()).collect());
        match info_values(c.as_ref(), shape.as_deref()) {
            Some(vals) if vals.len() >= out.len() => {
                for (info, v) in out.iter_mut().zip(vals) {
                    insert(info, &path, v);
                }
            }
            _ => skipped.push(path),
        }
    }
}

/// One JSON value a row: numbers, bools and strings, fixed-size lists as (reshaped) arrays.
fn info_values(c: &dyn Array, shape: Option<&[usize]>) -> Option<Vec<Json>> {
    match c.data_type() {
        DataType::Boolean => Some(c.as_boolean().iter().map(|b| b.map_or(Json::Null, Json::from)).collect()),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            Some(columns::strings(c).ok()?.into_iter().map(|s| s.map_or(Json::Null, Json::from)).collect())
        }
        DataType::FixedSizeList(_, n) => {
            let n = *n as usize;
            let flat = info_values(c.as_fixed_size_list().values().as_ref(), None)?;
            let shape: Vec<usize> = match shape {
                Some(s) if s.iter().product::<usize>() == n => s.to_vec(),
                _ => vec![n],
            };
            let l = c.as_fixed_size_list();
            Some((0..c.len()).map(|r| nest(&shape, &mut flat[l.value_offset_at(r)..].iter().cloned())).collect())
        }
        d if d.is_integer() => Some(columns::i64s(c).ok().map(|v| v.into_iter().map(Json::from).collect()).unwrap_or_else(|| {
            // Unsigned values beyond i64 (or nulls): as floats.
            columns::f64s(c).unwrap_or_default().into_iter().map(Json::from).collect()
        })),
        d if d.is_floating() => Some(columns::f64s(c).ok()?.into_iter().map(Json::from).collect()),
        _ => None,
    }
}
