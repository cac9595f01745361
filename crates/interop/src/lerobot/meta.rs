//! The `meta/` files: `info.json` (read and written), `tasks.parquet`,
//! rollway's own `rollway.json`, and LeRobot's path templates.

use std::collections::BTreeMap;
use std::path::Path;
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
pub(crate) const ROLLWAY: &str = "meta/rollway.json";
pub(crate) const DATA_PATH: &str = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet";
pub(crate) const VIDEO_PATH: &str = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4";
pub(crate) const EPISODES_PATH: &str = "meta/episodes/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet";

/// The frame bookkeeping columns every LeRobot dataset has (`DEFAULT_FEATURES`).
pub(crate) const DEFAULTS: [(&str, &str); 5] = [("timestamp", "float32"), ("frame_index", "int64"), ("episode_index", "int64"), ("index", "int64"), ("task_index", "int64")];

/// Fills a Python format template such as `data/chunk-{chunk_index:03d}/…`:
/// `{name}` and `{name:0Nd}` fields only, which is all LeRobot's templates use.
pub(crate) fn fill(template: &str, key: Option<&str>, chunk: u64, file: u64) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let close = rest[open..].find('}').ok_or_else(|| format!("unclosed `{{` in `{template}`"))? + open;
        let field = &rest[open + 1..close];
        let (name, spec) = field.split_once(':').unwrap_or((field, ""));
        let value = match (name, key) {
            ("chunk_index", _) => chunk.to_string(),
            ("file_index", _) => file.to_string(),
            ("video_key", Some(k)) => k.to_string(),
            _ => return Err(format!("unknown field `{{{field}}}` in `{template}`")),
        };
        let width = match spec.strip_suffix('d') {
            Some(w) => w.trim_start_matches('0').parse::<usize>().unwrap_or(0),
            None if spec.is_empty() => 0,
            None => return Err(format!("unsupported format `{{{field}}}` in `{template}`")),
        };
        out.push_str(&format!("{value:0>width$}"));
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    Ok(out)
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
    pub data_path: String,
    pub video_path: Option<String>,
    pub features: BTreeMap<String, Feature>,
}

impl InfoJson {
    pub fn parse(text: &str) -> Result<InfoJson, String> {
        let j: Json = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
        let m = j.as_object().ok_or("not a JSON object")?;
        let version = m.get("codebase_version").and_then(Json::as_str).ok_or("no `codebase_version`")?.to_string();
        let fps = m.get("fps").and_then(Json::as_u64).filter(|&f| f > 0 && f <= 100_000).ok_or("`fps` is missing or not a positive integer")? as u32;
        let mut features = BTreeMap::new();
        for (name, f) in m.get("features").and_then(Json::as_object).ok_or("no `features` object")? {
            let dtype = f.get("dtype").and_then(Json::as_str).ok_or_else(|| format!("feature `{name}` has no dtype"))?.to_string();
            let shape = f
                .get("shape")
                .and_then(Json::as_array)
                .and_then(|s| s.iter().map(|d| d.as_u64().map(|d| d as usize)).collect::<Option<Vec<_>>>())
                .ok_or_else(|| format!("feature `{name}` has no shape (a list of sizes)"))?;
            features.insert(name.clone(), Feature { dtype, shape });
        }
        let s = |k: &str| m.get(k).and_then(Json::as_str).map(String::from);
        Ok(InfoJson {
            version,
            fps,
            robot_type: s("robot_type"),
            total_episodes: m.get("total_episodes").and_then(Json::as_u64),
            data_path: s("data_path").unwrap_or_else(|| DATA_PATH.into()),
            video_path: s("video_path"),
            features,
        })
    }
}

/// The `info` block LeRobot's `get_video_info` records for a video feature.
pub(crate) fn video_info(h: usize, w: usize, fps: u32, crf: f32, keyint: u32) -> Json {
    json!({
        "video.height": h,
        "video.width": w,
        "video.codec": "h264",
        "video.pix_fmt": "yuv420p",
        "video.is_depth_map": false,
        "video.fps": fps,
        "video.channels": 3,
        "video.g": keyint,
        "video.crf": crf,
        "has_audio": false,
    })
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
    let cols: Vec<ArrayRef> = vec![Arc::new(Int64Array::from_iter_values(0..tasks.len() as i64)), Arc::new(StringArray::from_iter_values(tasks))];
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
pub(crate) fn read_rollway(root: &Path) -> Result<Option<RollwayMeta>, String> {
    let p = root.join(ROLLWAY);
    match std::fs::read(&p) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.to_string()),
        Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_fill_like_python() {
        assert_eq!(fill(DATA_PATH, None, 0, 12).unwrap(), "data/chunk-000/file-012.parquet");
        assert_eq!(fill(VIDEO_PATH, Some("observation.images.rgb"), 3, 1000).unwrap(), "videos/observation.images.rgb/chunk-003/file-1000.mp4");
        assert!(fill("x/{episode_chunk}", None, 0, 0).is_err());
        assert!(fill("x/{chunk_index", None, 0, 0).is_err());
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
