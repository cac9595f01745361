//! Reading a LeRobot dataset's metadata for an import: the episodes table, and
//! the spaces and column names — rollway's own (from `meta/rollway.json`) or
//! inferred from `info.json` for a dataset made elsewhere.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rollway_core::{DType, EnvSpec, Layout, Space};
use serde_json::Value as Json;

use super::meta::{self, InfoJson, RollwayMeta, Root};
use super::plan::Plan;
use super::{AGENT_STATE, FINAL_OBSERVATION};
use crate::columns;
use crate::{Error, Result};

/// One row of the episodes table.
#[derive(Clone, Debug)]
pub(crate) struct EpisodeRef {
    pub index: i64,
    pub length: usize,
    pub data: (u64, u64),
    pub tasks: Vec<String>,
    /// Per video key (in `Plan::videos` order): `(chunk, file)` and `from_timestamp`.
    pub videos: Vec<((u64, u64), f64)>,
}

/// Every `meta/episodes/chunk-*/file-*.parquet`, in path order.
fn episode_files(root: &Root) -> Result<Vec<PathBuf>> {
    let dir = root.path.join(meta::EPISODES_DIR);
    let mut files = Vec::new();
    let mut chunks: Vec<PathBuf> =
        std::fs::read_dir(&dir).map(|rd| rd.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect()).unwrap_or_default();
    chunks.sort();
    for c in chunks {
        let mut fs: Vec<PathBuf> = std::fs::read_dir(&c)
            .map(|rd| rd.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "parquet")).collect())
            .unwrap_or_default();
        fs.sort();
        for f in fs {
            files.push(root.inside(f).map_err(|message| Error::Malformed { path: dir.clone(), object: "/".into(), message })?);
        }
    }
    if files.is_empty() {
        return Err(Error::NotLeRobot { path: root.path.clone(), message: format!("no {}/chunk-*/file-*.parquet", meta::EPISODES_DIR) });
    }
    Ok(files)
}

/// The episodes table, sorted by `episode_index`; `video_keys` name the
/// `videos/<key>/…` columns to read.
pub(crate) fn episodes(root: &Root, video_keys: &[String]) -> Result<Vec<EpisodeRef>> {
    let mut out = Vec::new();
    for path in episode_files(root)? {
        let bad = |object: &str, message: String| Error::Malformed { path: path.clone(), object: object.into(), message };
        let b = columns::read_file(&path).map_err(|m| bad("/", m))?;
        let ints =
            |name: &str| -> Result<Vec<i64>> { columns::col(&b, name).and_then(|c| columns::i64s(c.as_ref())).map_err(|m| bad(name, m)) };
        let idx = ints("episode_index")?;
        let length = ints("length")?;
        let (dc, df) = (ints("data/chunk_index")?, ints("data/file_index")?);
        let tasks = match b.column_by_name("tasks") {
            Some(c) => columns::string_lists(c.as_ref()).map_err(|m| bad("tasks", m))?,
            None => vec![vec![]; b.num_rows()],
        };
        let mut videos = Vec::new();
        for k in video_keys {
            let (c, f) = (ints(&format!("videos/{k}/chunk_index"))?, ints(&format!("videos/{k}/file_index"))?);
            let name = format!("videos/{k}/from_timestamp");
            let from = columns::col(&b, &name).and_then(|c| columns::f64s(c.as_ref())).map_err(|m| bad(&name, m))?;
            videos.push((c, f, from));
        }
        for r in 0..b.num_rows() {
            let u = |v: i64, what: &str| u64::try_from(v).map_err(|_| bad(what, format!("{v} at row {r}")));
            let len = u(length[r], "length")?;
            let mut vs = Vec::new();
            for (c, f, from) in &videos {
                vs.push(((u(c[r], "videos/…/chunk_index")?, u(f[r], "videos/…/file_index")?), from[r]));
            }
            out.push(EpisodeRef {
                index: idx[r],
                length: len as usize,
                data: (u(dc[r], "data/chunk_index")?, u(df[r], "data/file_index")?),
                tasks: tasks[r].clone(),
                videos: vs,
            });
        }
    }
    sorted_unique(out, &root.path.join(meta::EPISODES_DIR))
}

/// The episodes of a v2.x dataset, from `meta/episodes.jsonl`, sorted by index.
/// Each episode has files of its own: its data at `(chunk, episode)` (see
/// [`meta::fill`]) and its videos likewise, each starting at timestamp 0.
pub(crate) fn episodes_v2(root: &Root, chunks_size: u64, video_keys: &[String]) -> Result<Vec<EpisodeRef>> {
    let path =
        root.file(meta::EPISODES_JSONL).map_err(|message| Error::BadMetadata { path: root.path.join(meta::EPISODES_JSONL), message })?;
    let text =
        std::fs::read_to_string(&path).map_err(|e| Error::NotLeRobot { path: path.clone(), message: format!("v2.x needs it: {e}") })?;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let bad = |message: String| Error::Malformed { path: path.clone(), object: format!("line {}", n + 1), message };
        let j: Json = serde_json::from_str(line).map_err(|e| bad(format!("not JSON: {e}")))?;
        let int = |k: &str| j.get(k).and_then(Json::as_u64).ok_or_else(|| bad(format!("no `{k}` (a non-negative integer)")));
        let (index, length) = (int("episode_index")?, int("length")?);
        let tasks = j.get("tasks").and_then(Json::as_array).map(|t| t.iter().filter_map(|x| x.as_str().map(String::from)).collect());
        let at = (index / chunks_size, index);
        out.push(EpisodeRef {
            index: i64::try_from(index).map_err(|_| bad(format!("episode_index {index}")))?,
            length: usize::try_from(length).map_err(|_| bad(format!("length {length}")))?,
            data: at,
            tasks: tasks.unwrap_or_default(),
            videos: video_keys.iter().map(|_| (at, 0.0)).collect(),
        });
    }
    sorted_unique(out, &path)
}

/// `eps` sorted by index, or an error naming an episode listed twice.
fn sorted_unique(mut eps: Vec<EpisodeRef>, listed_in: &Path) -> Result<Vec<EpisodeRef>> {
    eps.sort_by_key(|e| e.index);
    if let Some(w) = eps.windows(2).find(|w| w[0].index == w[1].index) {
        return Err(Error::Malformed {
            path: listed_in.to_path_buf(),
            object: "episode_index".into(),
            message: format!("episode {} is listed twice", w[0].index),
        });
    }
    Ok(eps)
}

/// How an import reads the data columns.
pub(crate) struct Mapping {
    pub spec: EnvSpec,
    pub plan: Plan,
    /// Whether each episode ends with rollway's final-observation frame.
    pub final_frame: bool,
    pub infos: bool,
    /// Floats of `rollway.agent_state` per frame (0: none stored).
    pub state_width: usize,
    pub agent: String,
    pub skipped: Vec<String>,
}

/// The mapping of a rollway export, from `meta/rollway.json`.
pub(crate) fn from_rollway(rw: &RollwayMeta, info: &InfoJson, meta_path: &Path) -> Result<Mapping> {
    let bad = |message: String| Error::BadMetadata { path: meta_path.to_path_buf(), message };
    let (obs, act) = rw.env.spaces().map_err(|e| bad(format!("spaces: {e}")))?;
    let plan = Plan::new(&Layout::of(&obs), &Layout::of(&act), Some(&rw.columns)).map_err(bad)?;
    let spec = EnvSpec {
        id: rw.env.id.clone(),
        observation_space: obs,
        action_space: act,
        max_episode_steps: rw.env.max_episode_steps,
        render_fps: rw.env.render_fps,
        reward_threshold: None,
        gymnasium_spec: None,
        agents: None,
    };
    let skipped = info.features.keys().filter(|k| !known(k) && !plan.obs.iter().chain(&plan.act).any(|c| &c.name == *k)).cloned().collect();
    Ok(Mapping {
        spec,
        plan,
        final_frame: info.features.contains_key(FINAL_OBSERVATION),
        infos: info.features.contains_key("rollway.info"),
        state_width: info.features.get(AGENT_STATE).map_or(0, |f| f.shape.iter().product()),
        agent: rw.agent.clone(),
        skipped,
    })
}

/// Features with a fixed meaning: bookkeeping, rewards and flags.
fn known(name: &str) -> bool {
    meta::DEFAULTS.iter().any(|d| d.0 == name)
        || ["next.reward", "next.done", "next.terminated", "next.truncated", FINAL_OBSERVATION, "rollway.info", AGENT_STATE].contains(&name)
}

/// Integer bounds from `meta/stats.json` (`min`/`max` per element) when it has
/// them, else the dtype's range (within ±2^53, what JSON readers keep exact).
fn bounds(dtype: DType, n: usize, stats: Option<&Json>) -> (Vec<f64>, Vec<f64>) {
    if dtype.is_float() {
        return (vec![f64::NEG_INFINITY; n], vec![f64::INFINITY; n]);
    }
    let (lo, hi) = dtype.range();
    let (lo, hi) = (lo.max(-(2f64.powi(53))), hi.min(2f64.powi(53)));
    let get = |k: &str| -> Option<Vec<f64>> {
        let v: Vec<f64> = stats?.get(k)?.as_array()?.iter().map(Json::as_f64).collect::<Option<_>>()?;
        (v.len() == n).then_some(v)
    };
    match (get("min"), get("max")) {
        (Some(a), Some(b)) if a.iter().zip(&b).all(|(x, y)| x <= y && *x >= lo && *y <= hi) => {
            (a.iter().map(|x| x.floor()).collect(), b.iter().map(|x| x.ceil()).collect())
        }
        _ => (vec![lo; n], vec![hi; n]),
    }
}

/// A space for a dataset made elsewhere: `observation.*` features (videos as
/// uint8 frames) become a Dict (a bare Box for a lone `observation.state`),
/// `action`/`action.*` the action space.
pub(crate) fn infer(root: &Root, info: &InfoJson, env: String) -> Result<Mapping> {
    let meta_path = root.path.join(meta::INFO);
    let stats_path = root.file(meta::STATS).map_err(|message| Error::BadMetadata { path: root.path.join(meta::STATS), message })?;
    let stats: Option<Json> = std::fs::read(stats_path).ok().and_then(|b| serde_json::from_slice(&b).ok());
    let (mut obs, mut act, mut skipped) = (Vec::new(), Vec::new(), Vec::new());
    for (name, f) in &info.features {
        if known(name) {
            continue;
        }
        let key = |prefix: &str| name.strip_prefix(prefix).unwrap_or(name).to_string();
        if f.dtype == "video" {
            let (h, w) = match *f.shape.as_slice() {
                [h, w, 3] => (h, w),
                [3, h, w] => (h, w),
                _ => {
                    skipped.push(name.clone());
                    continue;
                }
            };
            let k = if name.starts_with("observation.images.") { key("observation.images.") } else { key("observation.") };
            obs.push((k, name.clone(), Space::boxed(DType::U8, &[h, w, 3], 0.0, 255.0).expect("uint8 bounds")));
            continue;
        }
        let (Ok(dtype), &[n]) = (DType::parse(&f.dtype), f.shape.as_slice()) else {
            skipped.push(name.clone());
            continue;
        };
        let (lo, hi) = bounds(dtype, n, stats.as_ref().and_then(|s| s.get(name)));
        let space = Space::box_with(dtype, &[n], lo, hi)
            .map_err(|e| Error::BadMetadata { path: meta_path.clone(), message: format!("feature `{name}`: {e}") })?;
        if name == "action" || name.starts_with("action.") {
            act.push((key("action."), name.clone(), space));
        } else if name.starts_with("observation.") {
            obs.push((key("observation."), name.clone(), space));
        } else {
            skipped.push(name.clone());
        }
    }
    let unsupported = |m: &str| Error::Unsupported { path: meta_path.clone(), message: m.into() };
    if obs.is_empty() {
        return Err(unsupported("no `observation.*` feature rollway can import (numeric 1-D, or video)"));
    }
    if act.is_empty() {
        return Err(unsupported("no `action` feature rollway can import (numeric 1-D)"));
    }
    let mut names = BTreeMap::new();
    let mut space = |items: Vec<(String, String, Space)>, prefix: &str, bare: &str| -> Result<Space> {
        if items.len() == 1 && items[0].1 == bare {
            let (_, name, s) = items.into_iter().next().expect("one item");
            names.insert(prefix.to_string(), name);
            return Ok(s);
        }
        for (k, name, _) in &items {
            names.insert(format!("{prefix}/{k}"), name.clone());
        }
        Space::dict(items.into_iter().map(|(k, _, s)| (k, s)).collect())
            .map_err(|e| unsupported(&format!("{e} (feature names that differ only by their prefix)")))
    };
    let obs = space(obs, "observations", "observation.state")?;
    let act = space(act, "actions", "action")?;
    // Nested keys would need `/` in a feature name; flat Dicts name each leaf `prefix/key`.
    let plan = Plan::new(&Layout::of(&obs), &Layout::of(&act), Some(&names)).map_err(|m| unsupported(&m))?;
    let spec = EnvSpec {
        id: env,
        observation_space: obs,
        action_space: act,
        max_episode_steps: None,
        render_fps: Some(info.fps),
        reward_threshold: None,
        gymnasium_spec: None,
        agents: None,
    };
    Ok(Mapping { spec, plan, final_frame: false, infos: false, state_width: 0, agent: "lerobot".into(), skipped })
}

/// Checks that every planned column is a feature of the matching kind and size.
pub(crate) fn check(plan: &Plan, info: &InfoJson, meta_path: &Path) -> Result<()> {
    for c in plan.obs.iter().chain(&plan.act) {
        let bad = |m: String| Error::BadMetadata { path: meta_path.to_path_buf(), message: format!("feature `{}`: {m}", c.name) };
        let f = info.features.get(&c.name).ok_or_else(|| bad("missing".into()))?;
        let n: usize = f.shape.iter().product();
        match c.video {
            Some([h, w, _]) if f.dtype == "video" && (f.shape == [h, w, 3] || f.shape == [3, h, w]) => {}
            None if f.dtype != "video" && n == c.len => {}
            _ => {
                return Err(bad(format!(
                    "{} {:?} does not fit {} with {} elements",
                    f.dtype,
                    f.shape,
                    if c.video.is_some() { "a video" } else { c.dtype.name() },
                    c.len
                )))
            }
        }
    }
    Ok(())
}

/// `meta/rollway.json`, when the dataset is a rollway export.
pub(crate) fn rollway(root: &Root) -> Result<Option<RollwayMeta>> {
    meta::read_rollway(root).map_err(|message| Error::BadMetadata { path: root.path.join(meta::ROLLWAY), message })
}
