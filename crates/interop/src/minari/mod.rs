//! Minari 0.5 datasets: export a rollway dataset so `minari.load_dataset` reads
//! it (HDF5), and import one that Minari wrote in any of its data formats (HDF5,
//! below; `arrow` and `parquet`: a folder per episode, see `arrow.rs`).
//!
//! A Minari dataset is a directory `<root>/<dataset_id>/data/` with
//! `metadata.json` and `main_data.hdf5`. The HDF5 file has one group per episode,
//! `episode_0 … episode_{N-1}`, with attributes `id`, `total_steps` and `seed`, and:
//!
//! | HDF5 object | rows | rollway |
//! |---|---|---|
//! | `observations` (or `observations/<key>/…` for Dict, `_index_k` for Tuple) | T+1 | observation columns of the same names |
//! | `actions` (same nesting) | T | action columns |
//! | `rewards` float64 | T | `rewards` |
//! | `terminations`, `truncations` bool (int8 enum) | T | same |
//! | `infos/<key>/…` | T+1 | per-step infos (numeric ones) |
//! | `agent_state` float32 `[T, S]` (rollway's own; Minari reads past it) | T | the agent's recurrent state |
//!
//! Both use Gymnasium's convention of T+1 observations (the reset observation
//! first) for T steps, so rows map one to one. Images are stored raw
//! (`jpeg_encoding: false`), so values survive a round trip exactly.

mod arrow;
mod arrow_write;
mod export;
mod h5;
mod h5raw;
mod import;
mod infos;
mod leaves;

use std::path::{Path, PathBuf};

pub use export::export;
pub use import::import;

use crate::{Error, Result};

/// The Minari version written to `metadata.json`: the format this module writes
/// and was checked against (Minari accepts datasets of versions 0.4.0–0.5.4).
pub const MINARI_VERSION: &str = "0.5.4";

/// A Text leaf's rows (uint32 code points `[rows, max_length]`) as strings.
fn text_values(a: &rollway_core::Array) -> Vec<String> {
    let max = a.shape.get(1).copied().unwrap_or(1).max(1);
    a.data
        .chunks_exact(4 * max)
        .map(|row| rollway_core::text_string(row.chunks_exact(4).map(bytemuck::pod_read_unaligned::<u32>)))
        .collect()
}

/// The column names (`observations/…`, `actions/…`) of a space's Text leaves.
fn text_columns(prefix: &str, space: &rollway_core::Space) -> Vec<String> {
    let layout = rollway_core::Layout::of(space);
    layout
        .leaves()
        .iter()
        .filter(|l| matches!(l.kind, rollway_core::LeafKind::Text { .. }))
        .map(|l| rollway_store::format::column_name(prefix, l))
        .collect()
}

/// The episode dataset holding the agent's recurrent state after each step.
const AGENT_STATE: &str = "agent_state";

/// Minari's storage formats (`data_format` in `metadata.json`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DataFormat {
    /// `main_data.hdf5`, one group per episode (Minari's default).
    #[default]
    Hdf5,
    /// A folder per episode holding an Arrow IPC file.
    Arrow,
    /// A folder per episode holding a Parquet file.
    Parquet,
}

impl DataFormat {
    /// Every format, in the order help texts list them.
    pub const ALL: [DataFormat; 3] = [DataFormat::Hdf5, DataFormat::Arrow, DataFormat::Parquet];

    /// Minari's name for it.
    pub fn name(self) -> &'static str {
        match self {
            DataFormat::Hdf5 => "hdf5",
            DataFormat::Arrow => "arrow",
            DataFormat::Parquet => "parquet",
        }
    }
}

impl std::str::FromStr for DataFormat {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<DataFormat, String> {
        DataFormat::ALL.into_iter().find(|f| f.name() == s).ok_or_else(|| {
            let names: Vec<&str> = DataFormat::ALL.iter().map(|f| f.name()).collect();
            format!("data format `{s}`: Minari's formats are {}", names.join(", "))
        })
    }
}

/// How to export.
#[derive(Clone, Debug, Default)]
pub struct ExportOptions {
    /// Minari's storage format to write (default hdf5, as Minari's).
    pub data_format: DataFormat,
    /// Minari dataset id (`namespace/name-vN`); by default the last two
    /// components of the output path.
    pub dataset_id: Option<String>,
    /// Replace an existing `OUT/data`, which must be a previous Minari export (hold
    /// `main_data.hdf5` or `metadata.json`); anything else is refused.
    pub force: bool,
    /// `author` metadata.
    pub author: Option<String>,
    /// `description` metadata (a default names the source dataset).
    pub description: Option<String>,
}

/// What an export wrote.
#[derive(Clone, Debug)]
pub struct ExportReport {
    /// The Minari dataset id.
    pub dataset_id: String,
    /// The `data/` directory written.
    pub data_dir: PathBuf,
    /// Episodes written.
    pub episodes: u64,
    /// Steps written.
    pub steps: u64,
    /// Bytes of `main_data.hdf5` and `metadata.json`.
    pub bytes: u64,
    /// Given-up episodes (no data) left out.
    pub given_up: u64,
    /// Info keys not written (not numeric, or not present at every step).
    pub skipped_infos: Vec<String>,
    /// Whether `env_spec` was written (`recover_environment` works).
    pub env_spec: bool,
}

/// What an import wrote.
#[derive(Clone, Debug)]
pub struct ImportReport {
    /// The Minari dataset id read.
    pub dataset_id: String,
    /// The env id recorded in the rollway dataset.
    pub env: String,
    /// The rollway dataset written.
    pub out: PathBuf,
    /// Episodes imported.
    pub episodes: u64,
    /// Steps imported.
    pub steps: u64,
    /// Bytes of the rollway dataset.
    pub bytes: u64,
    /// Info datasets not imported (non-numeric or not one row per observation).
    pub skipped_infos: Vec<String>,
}

/// The dataset id implied by an output directory: its path below
/// `$MINARI_DATASETS_PATH` (or `~/.minari/datasets`) when it is inside, else its
/// last two components, `<namespace>/<name>-vN` (`/data/cartpole/random-v0` →
/// `cartpole/random-v0`), or just the last when the parent cannot be a namespace.
pub fn dataset_id_from_path(out: &Path) -> Result<String> {
    let abs = std::path::absolute(out).map_err(|source| Error::Io { op: "resolving", path: out.to_path_buf(), source })?;
    let names = |p: &Path| -> Vec<String> {
        p.components()
            .filter_map(|c| match c {
                std::path::Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
                _ => None,
            })
            .collect()
    };
    // Under Minari's root the id is the path below it, namespaces and all.
    let roots = [
        std::env::var_os("MINARI_DATASETS_PATH").map(PathBuf::from),
        std::env::var_os("HOME").map(|h| Path::new(&h).join(".minari").join("datasets")),
    ];
    for root in roots.into_iter().flatten() {
        if let Ok(rel) = abs.strip_prefix(std::path::absolute(&root).unwrap_or(root)) {
            let id = names(rel).join("/");
            if check_dataset_id(&id).is_ok() {
                return Ok(id);
            }
        }
    }
    let parts = names(&abs);
    let name = parts.last().cloned().unwrap_or_default();
    let two = parts.len().checked_sub(2).map(|i| format!("{}/{name}", parts[i]));
    match two {
        Some(id) if check_dataset_id(&id).is_ok() => Ok(id),
        _ => {
            check_dataset_id(&name).map_err(|e| match e {
                Error::BadDatasetId { id, message } => Error::BadDatasetId {
                    id,
                    message: format!("{message} (derived from {}; name the directory `<name>-v0` or pass a dataset id)", out.display()),
                },
                other => other,
            })?;
            Ok(name)
        }
    }
}

/// Checks an id against Minari's `(namespace/)name-vN` pattern (`DATASET_ID_RE`).
pub fn check_dataset_id(id: &str) -> Result<()> {
    let bad = |m: &str| Err(Error::BadDatasetId { id: id.into(), message: m.into() });
    let word = |c: char| c.is_alphanumeric() || c == '_' || c == '-';
    let (ns, rest) = match id.rsplit_once('/') {
        Some((ns, rest)) => (Some(ns), rest),
        None => (None, id),
    };
    if let Some(ns) = ns {
        if ns.chars().count() < 2 || ns.starts_with('/') || !ns.chars().all(|c| word(c) || c == '/') {
            return bad("the namespace must be at least two of [A-Za-z0-9_-/], not starting with `/`");
        }
    }
    let Some((name, version)) = rest.rsplit_once("-v") else { return bad("expected `(namespace/)name-vN`, e.g. `cartpole/random-v0`") };
    if name.is_empty() || !name.chars().all(word) {
        return bad("the name must be non-empty [A-Za-z0-9_-]");
    }
    if version.is_empty() || !version.chars().all(|c| c.is_ascii_digit()) {
        return bad("the version after `-v` must be a number");
    }
    Ok(())
}

/// Finds `data/` for a path that is either the Minari dataset directory or its `data/`.
pub fn data_dir(path: &Path) -> Result<PathBuf> {
    if path.join("data").join("metadata.json").is_file() {
        return Ok(path.join("data"));
    }
    if path.join("metadata.json").is_file() {
        return Ok(path.to_path_buf());
    }
    let message = if path.exists() { "no data/metadata.json or metadata.json in it".to_string() } else { "it does not exist".to_string() };
    Err(Error::NotMinari { path: path.to_path_buf(), message })
}

/// Gymnasium's registration of an env (what `EnvSpec.to_json()` needs).
struct GymEnv {
    id: &'static str,
    entry_point: &'static str,
    reward_threshold: Option<f64>,
    max_episode_steps: u64,
    vector_entry_point: Option<&'static str>,
}

/// The classic-control envs rollway reproduces, as Gymnasium 1.x registers them.
const GYMNASIUM: &[GymEnv] = &[
    GymEnv {
        id: "CartPole-v1",
        entry_point: "gymnasium.envs.classic_control.cartpole:CartPoleEnv",
        reward_threshold: Some(475.0),
        max_episode_steps: 500,
        vector_entry_point: Some("gymnasium.envs.classic_control.cartpole:CartPoleVectorEnv"),
    },
    GymEnv {
        id: "MountainCar-v0",
        entry_point: "gymnasium.envs.classic_control.mountain_car:MountainCarEnv",
        reward_threshold: Some(-110.0),
        max_episode_steps: 200,
        vector_entry_point: None,
    },
    GymEnv {
        id: "Acrobot-v1",
        entry_point: "gymnasium.envs.classic_control.acrobot:AcrobotEnv",
        reward_threshold: Some(-100.0),
        max_episode_steps: 500,
        vector_entry_point: None,
    },
    GymEnv {
        id: "Pendulum-v1",
        entry_point: "gymnasium.envs.classic_control.pendulum:PendulumEnv",
        reward_threshold: None,
        max_episode_steps: 200,
        vector_entry_point: None,
    },
];

/// `EnvSpec.to_json()` of a Gymnasium-registered env, with rollway's env params as
/// its kwargs; `None` for envs Gymnasium does not have (Minari then simply cannot
/// `recover_environment`, which it tolerates).
pub(crate) fn gymnasium_env_spec(id: &str, kwargs: &serde_json::Map<String, serde_json::Value>, max_steps: Option<u64>) -> Option<String> {
    let g = GYMNASIUM.iter().find(|g| g.id == id)?;
    let py = |v: Option<&str>| v.map_or("null".to_string(), |s| serde_json::to_string(s).expect("strings serialize"));
    let threshold = g.reward_threshold.map_or("null".to_string(), |t| format!("{t:?}"));
    let kwargs = serde_json::to_string(kwargs).expect("maps serialize");
    // Python's json.dumps layout, which is what Minari's own env_spec strings look like.
    Some(format!(
        r#"{{"id": "{}", "entry_point": "{}", "reward_threshold": {threshold}, "nondeterministic": false, "max_episode_steps": {}, "order_enforce": true, "disable_env_checker": false, "kwargs": {kwargs}, "additional_wrappers": [], "vector_entry_point": {}}}"#,
        g.id,
        g.entry_point,
        max_steps.unwrap_or(g.max_episode_steps),
        py(g.vector_entry_point)
    ))
}

/// rollway env params (`key=value` strings) as Python kwargs: bools and numbers typed.
pub(crate) fn kwargs_of(params: &serde_json::Map<String, serde_json::Value>) -> serde_json::Map<String, serde_json::Value> {
    params
        .iter()
        .map(|(k, v)| {
            let typed = match v.as_str() {
                Some(s) => serde_json::from_str::<serde_json::Value>(s)
                    .ok()
                    .filter(|j| j.is_number() || j.is_boolean())
                    .unwrap_or_else(|| v.clone()),
                None => v.clone(),
            };
            (k.clone(), typed)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dataset_ids_follow_minari() {
        for ok in ["cartpole/random-v0", "D4RL/door/human-v2", "random-v12", "a_b/c-d-v0"] {
            check_dataset_id(ok).unwrap();
        }
        for bad in ["random", "x/random-v0", "cartpole/random-vX", "cartpole/-v0", "cart pole/random-v0", "/ab/random-v0"] {
            assert!(matches!(check_dataset_id(bad), Err(Error::BadDatasetId { .. })), "{bad}");
        }
    }

    #[test]
    fn ids_come_from_the_last_two_components() {
        assert_eq!(dataset_id_from_path(Path::new("/tmp/root/cartpole/random-v0")).unwrap(), "cartpole/random-v0");
        assert_eq!(dataset_id_from_path(Path::new("/x/random-v3")).unwrap(), "random-v3");
        assert!(matches!(dataset_id_from_path(Path::new("/tmp/out")), Err(Error::BadDatasetId { .. })));
    }

    #[test]
    fn env_spec_is_gymnasiums_json() {
        let s = gymnasium_env_spec("CartPole-v1", &Default::default(), Some(500)).unwrap();
        assert_eq!(
            s,
            r#"{"id": "CartPole-v1", "entry_point": "gymnasium.envs.classic_control.cartpole:CartPoleEnv", "reward_threshold": 475.0, "nondeterministic": false, "max_episode_steps": 500, "order_enforce": true, "disable_env_checker": false, "kwargs": {}, "additional_wrappers": [], "vector_entry_point": "gymnasium.envs.classic_control.cartpole:CartPoleVectorEnv"}"#
        );
        assert!(gymnasium_env_spec("PixelMine-v0", &Default::default(), None).is_none());
        let kw = kwargs_of(&serde_json::json!({"g": "9.5", "name": "x"}).as_object().unwrap().clone());
        assert_eq!(serde_json::Value::Object(kw), serde_json::json!({"g": 9.5, "name": "x"}));
    }
}
