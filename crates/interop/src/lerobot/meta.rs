//! The `meta/` files: `info.json` (read and written), `tasks.parquet`,
//! rollway's own `rollway.json`, and LeRobot's path templates.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use rollway_core::{Info, Label, Status};
use rollway_store::format::EnvInfo;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value as Json};

pub(crate) const INFO: &str = "meta/info.json";
pub(crate) const STATS: &str = "meta/stats.json";
pub(crate) const TASKS: &str = "meta/tasks.parquet";
pub(crate) const EPISODES_DIR: &str = "meta/episodes";
/// v2.x lists its episodes one JSON object a line (`episode_index`, `tasks`, `length`).
pub(crate) const EPISODES_JSONL: &str = "meta/episodes.jsonl";
pub(crate) const ROLLWAY: &str = "meta/rollway.json";
pub(crate) const DATA_PATH: &str = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet";
pub(crate) const VIDEO_PATH: &str = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4";
pub(crate) const EPISODES_PATH: &str = "meta/episodes/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet";

/// The frame bookkeeping columns every LeRobot dataset has (`DEFAULT_FEATURES`).
pub(crate) const DEFAULTS: [(&str, &str); 5] =
    [("timestamp", "float32"), ("frame_index", "int64"), ("episode_index", "int64"), ("index", "int64"), ("task_index", "int64")];

/// The widest field a path template may ask for: far beyond any real index, and
/// small enough that filling it cannot exhaust memory.
const MAX_WIDTH: usize = 32;

/// Fills a Python format template such as `data/chunk-{chunk_index:03d}/…`:
/// `{name}`, `{name:d}` and `{name:Nd}`/`{name:0Nd}` fields of `chunk_index`,
/// `file_index` and (with a `key`) `video_key`, which is all LeRobot's templates use.
/// v2.x templates name a file by its episode instead (`{episode_chunk}`,
/// `{episode_index}`): those take `chunk` and `file` too, so a v2.x episode's file
/// is at `(chunk, episode)`.
pub(crate) fn fill(template: &str, key: Option<&str>, chunk: u64, file: u64) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let close = rest[open..].find('}').ok_or("unclosed `{`")? + open;
        let field = &rest[open + 1..close];
        let (name, spec) = field.split_once(':').unwrap_or((field, ""));
        let value = match (name, key) {
            ("chunk_index" | "episode_chunk", _) => chunk.to_string(),
            ("file_index" | "episode_index", _) => file.to_string(),
            ("video_key", Some(k)) => k.to_string(),
            _ => return Err(format!("unknown field `{{{field}}}`")),
        };
        let digits =
            spec.strip_suffix('d').or((spec.is_empty()).then_some("")).ok_or_else(|| format!("unsupported format `{{{field}}}`"))?;
        let width = match digits {
            "" => 0,
            w if w.bytes().all(|b| b.is_ascii_digit()) => {
                w.parse::<usize>().ok().filter(|&w| w <= MAX_WIDTH).ok_or_else(|| format!("width of `{{{field}}}` above {MAX_WIDTH}"))?
            }
            _ => return Err(format!("unsupported format `{{{field}}}`")),
        };
        // Python pads with zeros only when the width starts with one.
        out.push_str(&if digits.starts_with('0') { format!("{value:0>width$}") } else { format!("{value:>width$}") });
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Checks that `rel` stays below the directory it is joined to: no root, no `..`.
fn relative(rel: &str) -> Result<(), String> {
    match Path::new(rel).components().find(|c| !matches!(c, Component::Normal(_) | Component::CurDir)) {
        None => Ok(()),
        Some(Component::ParentDir) => Err(format!("`{rel}` has `..`, which would leave the dataset")),
        Some(_) => Err(format!("`{rel}` is absolute, outside the dataset")),
    }
}

/// Checks an `info.json` path template the way the import will fill it.
fn check_template(field: &str, template: &str, key: Option<&str>) -> Result<(), String> {
    fill(template, key, 0, 0).and_then(|rel| relative(&rel)).map_err(|m| format!("`{field}` `{template}`: {m}"))
}

/// A LeRobot dataset's root directory. Every file an import reads is named
/// through it, so that no `info.json` template, feature name or symlink makes it
/// read outside the dataset.
pub(crate) struct Root {
    pub path: PathBuf,
    /// `path` with symlinks resolved: where every file read must be.
    real: PathBuf,
}

impl Root {
    pub fn new(path: &Path) -> std::io::Result<Root> {
        Ok(Root { path: path.to_path_buf(), real: path.canonicalize()? })
    }

    /// `rel` below the root, or why not: absolute, with `..`, or resolving outside
    /// the root through a symlink. A file that does not exist is not an error here.
    pub fn file(&self, rel: &str) -> Result<PathBuf, String> {
        relative(rel)?;
        self.inside(self.path.join(rel))
    }

    /// `path` (under the root) unless a symlink takes it outside.
    pub fn inside(&self, path: PathBuf) -> Result<PathBuf, String> {
        match path.canonicalize() {
            Ok(real) if !real.starts_with(&self.real) => Err(format!(
                "{} resolves to {}, outside the dataset root {}; copy the dataset with its links resolved (`cp -rL`)",
                path.display(),
                real.display(),
                self.real.display()
            )),
            _ => Ok(path),
        }
    }
}

/// One entry of `info.json`'s `features`.
#[derive(Clone, Debug)]
pub(crate) struct Feature {
    pub dtype: String,
    pub shape: Vec<usize>,
}

/// What an import needs from `info.json`.
#[derive(Clone, Debug)]
pub(crate) struct InfoJson {
    pub version: String,
    pub fps: u32,
    pub robot_type: Option<String>,
    pub total_episodes: Option<u64>,
    /// Episodes a chunk directory holds (v2.x names files by episode within chunks).
    pub chunks_size: u64,
    pub data_path: String,
    pub video_path: Option<String>,
    pub features: BTreeMap<String, Feature>,
}

impl InfoJson {
    pub fn parse(text: &str) -> Result<InfoJson, String> {
        let j: Json = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
        let m = j.as_object().ok_or("not a JSON object")?;
        let version = m.get("codebase_version").and_then(Json::as_str).ok_or("no `codebase_version`")?.to_string();
        let fps =
            m.get("fps").and_then(Json::as_u64).filter(|&f| f > 0 && f <= 100_000).ok_or("`fps` is missing or not a positive integer")?
                as u32;
        let mut features = BTreeMap::new();
        for (name, f) in m.get("features").and_then(Json::as_object).ok_or("no `features` object")? {
            let dtype = f.get("dtype").and_then(Json::as_str).ok_or_else(|| format!("feature `{name}` has no dtype"))?.to_string();
            let shape = f
                .get("shape")
                .and_then(Json::as_array)
                .and_then(|s| s.iter().map(|d| d.as_u64().and_then(|d| usize::try_from(d).ok())).collect::<Option<Vec<_>>>())
                .ok_or_else(|| format!("feature `{name}` has no shape (a list of sizes)"))?;
            crate::limits::elements(&shape).map_err(|m| format!("feature `{name}`: {m}"))?;
            features.insert(name.clone(), Feature { dtype, shape });
        }
        let s = |k: &str| m.get(k).and_then(Json::as_str).map(String::from);
        let (data_path, video_path) = (s("data_path").unwrap_or_else(|| DATA_PATH.into()), s("video_path"));
        check_template("data_path", &data_path, None)?;
        if let Some(v) = &video_path {
            check_template("video_path", v, Some("key"))?;
        }
        Ok(InfoJson {
            version,
            fps,
            robot_type: s("robot_type"),
            total_episodes: m.get("total_episodes").and_then(Json::as_u64),
            chunks_size: m.get("chunks_size").and_then(Json::as_u64).filter(|&c| c > 0).unwrap_or(1000),
            data_path,
            video_path,
            features,
        })
    }
}

/// `meta/tasks.parquet` as pandas writes LeRobot's task table: a `task_index`
/// column and the `task` index, which the pandas metadata restores as the index.
pub(crate) fn tasks_batch(tasks: &[String]) -> RecordBatch {
    let pandas = json!({
        "index_columns": ["task"],
        "column_indexes": [{"name": null, "field_name": null, "pandas_type": "unicode", "numpy_type": "object", "metadata": {"encoding": "UTF-8"}}],
        "columns": [
            {"name": "task_index", "field_name": "task_index", "pandas_type": "int64", "numpy_type": "int64", "metadata": null},
            {"name": "task", "field_name": "task", "pandas_type": "unicode", "numpy_type": "object", "metadata": null},
        ],
        "creator": {"library": "rollway", "version": env!("CARGO_PKG_VERSION")},
        "pandas_version": "2.2.3",
    });
    let schema = Schema::new(vec![Field::new("task_index", DataType::Int64, true), Field::new("task", DataType::Utf8, true)])
        .with_metadata([("pandas".to_string(), pandas.to_string())].into_iter().collect::<std::collections::HashMap<_, _>>());
    let cols: Vec<ArrayRef> =
        vec![Arc::new(Int64Array::from_iter_values(0..tasks.len() as i64)), Arc::new(StringArray::from_iter_values(tasks))];
    RecordBatch::try_new(Arc::new(schema), cols).expect("two equally long columns")
}

/// What rollway adds beside LeRobot's files so that an import restores what
/// LeRobot has no place for: spaces, seeds, statuses, labels, final infos.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct RollwayMeta {
    /// Version of this file's layout.
    pub rollway_lerobot: u32,
    pub env: EnvInfo,
    pub agent: String,
    /// rollway column (`observations/rgb`) → LeRobot feature.
    pub columns: BTreeMap<String, String>,
    pub episodes: Vec<EpisodeMeta>,
}

/// One exported episode, in `episode_index` order.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct EpisodeMeta {
    pub episode_id: u64,
    pub seed: u64,
    pub steps: u64,
    pub status: Status,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<Label>,
    #[serde(default, skip_serializing_if = "Info::is_empty")]
    pub info: Info,
}

/// Reads `meta/rollway.json` when there is one; a damaged one is an error (it
/// says the data is rollway's, so guessing would silently lose the final frames).
pub(crate) fn read_rollway(root: &Root) -> Result<Option<RollwayMeta>, String> {
    let p = root.file(ROLLWAY)?;
    match std::fs::read(&p) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.to_string()),
        Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| e.to_string()),
    }
}

/// The `(chunk, file)` after `at`, with `chunks` files a chunk (LeRobot's
/// `chunks_size`): where the next data or video file goes.
pub(super) fn next_file(at: (u64, u64), chunks: u64) -> (u64, u64) {
    if at.1 + 1 >= chunks {
        (at.0 + 1, 0)
    } else {
        (at.0, at.1 + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_fill_like_python() {
        assert_eq!(fill(DATA_PATH, None, 0, 12).unwrap(), "data/chunk-000/file-012.parquet");
        assert_eq!(
            fill(VIDEO_PATH, Some("observation.images.rgb"), 3, 1000).unwrap(),
            "videos/observation.images.rgb/chunk-003/file-1000.mp4"
        );
        // v2.x names files by episode: `(chunk, file)` is `(episode_chunk, episode_index)`.
        assert_eq!(
            fill("data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet", None, 1, 1042).unwrap(),
            "data/chunk-001/episode_001042.parquet"
        );
        assert!(fill("x/{task_index}", None, 0, 0).is_err());
        assert!(fill("x/{chunk_index", None, 0, 0).is_err());
        // Python's widths: zero-padded only with a leading 0, and capped so a template cannot exhaust memory.
        assert_eq!(fill("{chunk_index:3d}-{file_index:d}-{file_index}", None, 5, 7).unwrap(), "  5-7-7");
        assert_eq!(fill("{chunk_index:032d}", None, 1, 0).unwrap().len(), 32);
        for bad in ["{chunk_index:033d}", "{chunk_index:0999999999999999999999d}", "{chunk_index:+3d}", "{chunk_index:03x}", "{video_key}"]
        {
            assert!(fill(bad, None, 0, 0).is_err(), "{bad}");
        }
        assert!(InfoJson::parse(r#"{"codebase_version": "v3.0", "fps": 10, "features": {}, "data_path": "/etc/{chunk_index}"}"#)
            .unwrap_err()
            .contains("`data_path` `/etc/{chunk_index}`"));
        assert!(InfoJson::parse(r#"{"codebase_version": "v3.0", "fps": 10, "features": {}, "video_path": "v/../../{video_key}"}"#)
            .unwrap_err()
            .contains("`..`"));
    }

    #[test]
    fn info_json_needs_fps_and_features() {
        let ok = r#"{"codebase_version": "v3.0", "fps": 10, "features": {"action": {"dtype": "float32", "shape": [2], "names": null}}}"#;
        let i = InfoJson::parse(ok).unwrap();
        assert_eq!((i.fps, i.features["action"].shape.clone(), i.data_path.as_str()), (10, vec![2], DATA_PATH));
        assert!(InfoJson::parse(r#"{"codebase_version": "v3.0", "features": {}}"#).unwrap_err().contains("fps"));
        assert!(InfoJson::parse("[1]").is_err());
    }
}
