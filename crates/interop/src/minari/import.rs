//! Minari `data/` directory → rollway dataset.

use std::path::{Path, PathBuf};

use hdf5_metno as hdf5;
use rollway_core::{DType, EnvSpec, EpisodeResult, Layout, LeafKind, Space, Trajectory};
use rollway_store::format::column_name;
use rollway_store::{DatasetWriter, WriterConfig};
use serde_json::{json, Value as Json};

use super::arrow;
use super::leaves::{is_image_leaf, jpeg_leaf_rows, scatter_leaf, text_rows, Source};
use super::{data_dir, h5, infos, DataFormat, ImportReport};
use crate::error::IoContext;
use crate::staging::{self, Staging};
use crate::{Error, Result};

/// What an import needs from `metadata.json`.
struct Meta {
    format: DataFormat,
    dataset_id: Option<String>,
    obs: Space,
    act: Space,
    jpeg: bool,
    total_episodes: Option<u64>,
    env_id: Option<String>,
    max_episode_steps: Option<u64>,
    reward_threshold: Option<f64>,
    /// The `env_spec` text, kept as it is when it parses: exporting the import again keeps it.
    gymnasium_spec: Option<String>,
    agent: Option<String>,
    minari_version: Option<String>,
}

fn read_meta(path: &Path) -> Result<Meta> {
    let bad = |m: String| Error::BadMetadata { path: path.to_path_buf(), message: m };
    let text = std::fs::read_to_string(path).io("reading", path)?;
    let j: Json = serde_json::from_str(&text).map_err(|e| bad(format!("not valid JSON: {e}")))?;
    let m = j.as_object().ok_or_else(|| bad("not a JSON object".into()))?;
    let format = m
        .get("data_format")
        .and_then(Json::as_str)
        .unwrap_or("hdf5")
        .parse::<DataFormat>()
        .map_err(|message| Error::Unsupported { path: path.to_path_buf(), message })?;
    let space = |key: &str| -> Result<Space> {
        let text = match m.get(key) {
            Some(Json::String(s)) => s.clone(),
            Some(other @ Json::Object(_)) => other.to_string(),
            Some(other) => return Err(bad(format!("`{key}` is {other}, expected Minari's space JSON (a string)"))),
            None => return Err(bad(format!("no `{key}` (rollway cannot rebuild spaces from env_spec)"))),
        };
        Space::from_json(&text).map_err(|e| {
            let msg = format!("`{key}`: {e}");
            if msg.contains("unknown space type") {
                Error::Unsupported { path: path.to_path_buf(), message: msg }
            } else {
                bad(msg)
            }
        })
    };
    let (obs, act) = (space("observation_space")?, space("action_space")?);
    let total_episodes = match m.get("total_episodes") {
        None => None,
        Some(v) => Some(v.as_u64().ok_or_else(|| bad(format!("`total_episodes` is {v}, expected a count")))?),
    };
    // env_spec only names the env; a damaged one costs nothing but the name.
    let spec_text = m.get("env_spec").and_then(Json::as_str);
    let spec: Option<Json> = spec_text.and_then(|s| serde_json::from_str(s).ok());
    let spec_field = |k: &str| spec.as_ref().and_then(|s| s.get(k)).cloned();
    Ok(Meta {
        format,
        dataset_id: m.get("dataset_id").and_then(Json::as_str).map(String::from),
        obs,
        act,
        jpeg: m.get("jpeg_encoding").and_then(Json::as_bool).unwrap_or(true),
        total_episodes,
        env_id: spec_field("id").and_then(|v| v.as_str().map(String::from)),
        max_episode_steps: spec_field("max_episode_steps").and_then(|v| v.as_u64()),
        reward_threshold: spec_field("reward_threshold").and_then(|v| v.as_f64()),
        gymnasium_spec: spec.as_ref().and(spec_text).map(String::from),
        agent: m.get("algorithm_name").and_then(Json::as_str).map(String::from),
        minari_version: m.get("minari_version").and_then(Json::as_str).map(String::from),
    })
}

/// Imports the Minari dataset at `src` (its directory or its `data/`) as a new
/// rollway dataset at `out`, which must not exist (or be an empty directory).
///
/// Nothing appears at `out` unless the whole import succeeds: the dataset is
/// written to a hidden sibling directory and renamed. `progress(done, total)` is
/// called after each episode.
pub fn import(src: &Path, out: &Path, progress: &mut dyn FnMut(u64, u64)) -> Result<ImportReport> {
    let data = data_dir(src)?;
    let meta_path = data.join("metadata.json");
    let meta = read_meta(&meta_path)?;
    let (ol, al) = (Layout::of(&meta.obs), Layout::of(&meta.act));
    let mut r: Box<dyn Source> = match meta.format {
        DataFormat::Hdf5 => {
            let h5_path = data.join("main_data.hdf5");
            if !h5_path.is_file() {
                return Err(Error::NotMinari { path: data, message: "no main_data.hdf5".into() });
            }
            Box::new(Reader::open(&h5_path, ol, al, meta.jpeg)?)
        }
        f => Box::new(arrow::Reader::new(&data, f, ol, al, meta.jpeg)),
    };
    staging::require_new(out)?;
    let dataset_id = meta
        .dataset_id
        .clone()
        .unwrap_or_else(|| data.parent().and_then(|p| p.file_name()).map_or("minari".into(), |n| n.to_string_lossy().into_owned()));
    let env = meta.env_id.clone().unwrap_or_else(|| dataset_id.clone());
    // Counted, not trusted: a huge `total_episodes` would otherwise drive the loops below.
    let groups = r.count_episodes()?;
    let n = match meta.total_episodes {
        Some(n) if n > groups => {
            let message = format!("metadata.json counts {n} episodes, the data has {groups}");
            return Err(Error::Malformed { path: data, object: "/".into(), message });
        }
        Some(n) => n,
        None => groups,
    };
    let spec = EnvSpec {
        id: env.clone(),
        observation_space: meta.obs.clone(),
        action_space: meta.act.clone(),
        max_episode_steps: meta.max_episode_steps,
        render_fps: None,
        reward_threshold: meta.reward_threshold,
        gymnasium_spec: meta.gymnasium_spec.clone(),
        agents: None,
    };
    let config = json!({"imported_from": {"format": "minari", "path": std::path::absolute(&data).unwrap_or(data.clone()), "dataset_id": dataset_id, "minari_version": meta.minari_version}});
    let job = Job { out, spec: &spec, agent: meta.agent.as_deref().unwrap_or("minari"), config: &config, n };
    // Whether the dataset records infos is fixed when its writer starts, and asking every
    // episode first costs an extra open of each (measured: ~12% of a CartPole import).
    // Minari datasets record infos for all episodes or for none, so the first episode
    // decides; an import that meets infos later starts over with them on.
    let first = n > 0 && r.has_infos(0)?;
    let (staging, out_abs, steps) = match write_all(r.as_mut(), &job, first, progress)? {
        Some(done) => done,
        None => write_all(r.as_mut(), &job, true, progress)?.expect("an import recording infos takes every episode"),
    };
    let bytes = staging::dir_bytes(staging.path());
    staging.commit(&out_abs)?;
    let mut skipped = std::mem::take(r.skipped());
    skipped.sort();
    skipped.dedup();
    Ok(ImportReport { dataset_id, env, out: out.to_path_buf(), episodes: n, steps, bytes, skipped_infos: skipped })
}

/// What `write_all` writes: where, the dataset's spec and run, and how many episodes.
struct Job<'a> {
    out: &'a Path,
    spec: &'a EnvSpec,
    agent: &'a str,
    config: &'a Json,
    n: u64,
}

/// Writes the first `job.n` episodes into a new staging directory; returns it, `out`
/// made absolute and the steps written, or `None` (the staging removed) when
/// `record_infos` is off and an episode has infos.
fn write_all(
    r: &mut dyn Source,
    job: &Job,
    record_infos: bool,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Option<(Staging, PathBuf, u64)>> {
    let (staging, out_abs) = Staging::beside(job.out, "import into a new directory")?;
    let store_err = |source| Error::Store { path: job.out.to_path_buf(), source };
    let cfg = WriterConfig { record_infos, ..Default::default() };
    let writer = DatasetWriter::create(staging.path(), job.spec, job.agent, 0, job.config.clone(), cfg).map_err(store_err)?;
    let mut steps = 0;
    for k in 0..job.n {
        let ep = r.episode(k)?;
        if !record_infos && ep.trajectory.as_ref().is_some_and(|t| !t.infos.is_empty()) {
            return Ok(None);
        }
        steps += ep.length;
        writer.write(ep).map_err(store_err)?;
        progress(k + 1, job.n);
    }
    writer.finish().map_err(store_err)?;
    Ok(Some((staging, out_abs, steps)))
}

/// The largest `main_data.hdf5` an import reads into memory at once.
const IN_MEMORY_BYTES: u64 = 512 << 20;

/// Reads episodes out of `main_data.hdf5`, checking them against the spaces.
struct Reader {
    path: PathBuf,
    file: hdf5::File,
    ol: Layout,
    al: Layout,
    /// Image leaves may hold one JPEG per row (`jpeg_encoding`, Minari's default).
    jpeg: bool,
    skipped: Vec<String>,
}

impl Reader {
    fn open(path: &Path, ol: Layout, al: Layout, jpeg: bool) -> Result<Reader> {
        // A file that fits comfortably in memory is read whole (HDF5's core driver): an
        // episode costs about ten small dataset reads, and from memory each is a copy
        // instead of a pread (measured: ~1.3× faster on 1,500 CartPole episodes). Bigger files
        // are read in place.
        let whole = std::fs::metadata(path).is_ok_and(|m| m.len() <= IN_MEMORY_BYTES);
        let opened =
            if whole { hdf5::File::with_options().with_fapl(|p| p.core_filebacked(false)).open(path) } else { hdf5::File::open(path) };
        let file = opened.map_err(|e| Error::Malformed {
            path: path.to_path_buf(),
            object: "/".into(),
            message: format!("not a readable HDF5 file: {e}"),
        })?;
        Ok(Reader { path: path.to_path_buf(), file, ol, al, jpeg, skipped: vec![] })
    }

    fn bad(&self, object: impl Into<String>, message: impl Into<String>) -> Error {
        Error::Malformed { path: self.path.clone(), object: object.into(), message: message.into() }
    }

    /// Reads leaf datasets `prefix/…` of `layout`, each `[rows, ...shape]`, into rows.
    fn rows(&self, g: &hdf5::Group, ep: &str, prefix: &str, layout: &Layout, rows: usize) -> Result<Vec<u8>> {
        let rb = layout.row_bytes();
        let mut out = vec![0u8; crate::limits::mul(rows, rb).map_err(|m| self.bad(format!("{ep}/{prefix}"), m))?];
        for leaf in layout.leaves() {
            let name = column_name(prefix, leaf);
            let object = format!("{ep}/{name}");
            let ds = g.dataset(&name).map_err(|_| self.bad(&object, "missing"))?;
            if matches!(leaf.kind, LeafKind::Text { .. }) {
                let strings = h5::read_strings(&ds).map_err(|m| self.bad(&object, m))?;
                if strings.len() != rows {
                    return Err(self.bad(&object, format!("{} rows, expected {rows}", strings.len())));
                }
                let bytes = text_rows(strings.into_iter().map(Some), leaf, rows).map_err(|m| self.bad(&object, m))?;
                scatter_leaf(&mut out, rb, leaf, &bytes);
                continue;
            }
            let mut want = vec![rows];
            want.extend(&leaf.shape);
            let got = ds.shape();
            if self.jpeg && is_image_leaf(leaf) && got != want {
                self.jpeg_rows(&ds, &object, leaf, rows, &mut out, rb)?;
                continue;
            }
            if got != want {
                let what = if got.first() != Some(&rows) {
                    format!("{} rows, expected {rows}", got.first().copied().unwrap_or(0))
                } else {
                    format!("shape {got:?}, expected {want:?} for {}", leaf.dtype)
                };
                return Err(self.bad(&object, what));
            }
            let bytes = h5::read_array(&ds, leaf.dtype, &got).map_err(|m| self.bad(&object, m))?;
            scatter_leaf(&mut out, rb, leaf, &bytes);
        }
        Ok(out)
    }

    /// Decodes an image leaf stored as one JPEG a row into `out`'s rows: Minari keeps
    /// them as variable-length bytes, or as a `[rows, bytes]` array when every JPEG
    /// happens to have the same length.
    fn jpeg_rows(&self, ds: &hdf5::Dataset, object: &str, leaf: &rollway_core::Leaf, rows: usize, out: &mut [u8], rb: usize) -> Result<()> {
        use hdf5::types::{TypeDescriptor, VarLenArray};
        let td = ds.dtype().and_then(|t| t.to_descriptor()).map_err(|e| self.bad(object, e.to_string()))?;
        let blobs: Vec<Vec<u8>> = match (td, ds.shape().as_slice()) {
            (TypeDescriptor::VarLenArray(_), [n]) if *n == rows => {
                ds.read_raw::<VarLenArray<u8>>().map_err(|e| self.bad(object, e.to_string()))?.iter().map(|v| v.to_vec()).collect()
            }
            (TypeDescriptor::Unsigned(hdf5::types::IntSize::U1), &[n, len]) if n == rows => {
                let flat = ds.read_raw::<u8>().map_err(|e| self.bad(object, e.to_string()))?;
                flat.chunks_exact(len.max(1)).map(<[u8]>::to_vec).collect()
            }
            (td, shape) => {
                return Err(self.bad(object, format!("{td} {shape:?}: neither {rows} JPEG images nor {rows} raw {:?} images", leaf.shape)))
            }
        };
        let bytes = jpeg_leaf_rows(blobs.iter().map(Vec::as_slice), leaf, rows).map_err(|m| self.bad(object, m))?;
        scatter_leaf(out, rb, leaf, &bytes);
        Ok(())
    }

    /// The agent states a rollway export stores (`agent_state`, float32 `[T, S]`), if any.
    fn states(&self, g: &hdf5::Group, ep: &str, t: usize) -> Result<(Vec<f32>, usize)> {
        let Ok(ds) = g.dataset(super::AGENT_STATE) else { return Ok((vec![], 0)) };
        let object = format!("{ep}/{}", super::AGENT_STATE);
        let shape = ds.shape();
        if shape.len() != 2 || shape[0] != t {
            return Err(self.bad(&object, format!("shape {shape:?}, expected [{t}, width]")));
        }
        let bytes = h5::read_array(&ds, DType::F32, &shape).map_err(|m| self.bad(&object, m))?;
        Ok((bytes.chunks_exact(4).map(bytemuck::pod_read_unaligned::<f32>).collect(), shape[1]))
    }

    fn seed(&self, g: &hdf5::Group, ep: &str) -> Result<u64> {
        let Ok(a) = g.attr("seed") else { return Ok(0) };
        let object = format!("{ep} attribute seed");
        let td = a.dtype().and_then(|t| t.to_descriptor()).map_err(|e| self.bad(&object, e.to_string()))?;
        match td {
            hdf5::types::TypeDescriptor::Unsigned(_) => a.read_scalar::<u64>().map_err(|e| self.bad(&object, e.to_string())),
            hdf5::types::TypeDescriptor::Integer(_) => {
                let s = a.read_scalar::<i64>().map_err(|e| self.bad(&object, e.to_string()))?;
                u64::try_from(s).map_err(|_| self.bad(&object, format!("negative seed {s}")))
            }
            other => Err(self.bad(&object, format!("holds {other}, expected an integer"))),
        }
    }
}

impl Source for Reader {
    /// `episode_<k>` groups, when the metadata does not say how many.
    fn count_episodes(&self) -> Result<u64> {
        let names = self.file.member_names().map_err(|e| self.bad("/", e.to_string()))?;
        Ok(names.iter().filter(|n| n.strip_prefix("episode_").is_some_and(|k| k.parse::<u64>().is_ok())).count() as u64)
    }

    /// Whether the episode has a non-empty `infos` group.
    fn has_infos(&self, k: u64) -> Result<bool> {
        Ok(self.file.group(&format!("episode_{k}/infos")).is_ok_and(|g| !g.is_empty()))
    }

    fn episode(&mut self, k: u64) -> Result<EpisodeResult> {
        let ep = format!("episode_{k}");
        let g = self.file.group(&ep).map_err(|_| self.bad(&ep, "missing (metadata.json counts more episodes)"))?;
        let field = |name: &str| -> Result<hdf5::Dataset> { g.dataset(name).map_err(|_| self.bad(format!("{ep}/{name}"), "missing")) };
        let rds = field("rewards")?;
        let shape = rds.shape();
        if shape.len() != 1 {
            return Err(self.bad(format!("{ep}/rewards"), format!("shape {shape:?}, expected one reward per step")));
        }
        let rewards = h5::read_f64(&rds, &shape).map_err(|m| self.bad(format!("{ep}/rewards"), m))?;
        let t = rewards.len();
        let flags = |name: &str| -> Result<Vec<bool>> {
            let ds = field(name)?;
            let shape = ds.shape();
            if shape != [t] {
                return Err(self.bad(format!("{ep}/{name}"), format!("shape {shape:?}, expected [{t}] (one per reward)")));
            }
            h5::read_bools(&ds, &shape).map_err(|m| self.bad(format!("{ep}/{name}"), m))
        };
        let (terminations, truncations) = (flags("terminations")?, flags("truncations")?);
        let obs = self.rows(&g, &ep, "observations", &self.ol, t + 1)?;
        let actions = self.rows(&g, &ep, "actions", &self.al, t)?;
        let seed = self.seed(&g, &ep)?;
        let infos = match g.group("infos") {
            Ok(ig) if !ig.is_empty() => {
                let (rows, skipped) = infos::read(&ig, t + 1).map_err(|e| self.bad(format!("{ep}/infos"), e.to_string()))?;
                self.skipped.extend(skipped);
                rows
            }
            _ => vec![],
        };
        let (states, state_width) = self.states(&g, &ep, t)?;
        Ok(EpisodeResult::from_trajectory(
            k,
            seed,
            Trajectory { obs, actions, rewards, terminations, truncations, infos, states, state_width, ..Default::default() },
        ))
    }

    fn skipped(&mut self) -> &mut Vec<String> {
        &mut self.skipped
    }
}
