//! rollway dataset → Minari `data/` directory.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use hdf5_metno as hdf5;
use rollway_store::{Dataset, EpisodeData, Metadata};
use serde_json::{json, Map, Value as Json};

use rollway_core::DType;

use super::{
    arrow_write, check_dataset_id, dataset_id_from_path, gymnasium_env_spec, h5, h5raw, infos, kwargs_of, text_columns, text_values,
    DataFormat, ExportOptions, ExportReport, AGENT_STATE, MINARI_VERSION,
};
use crate::error::IoContext;
use crate::staging::{self, Staging};
use crate::{Error, Result};

/// Exports the rollway dataset at `src` as the Minari dataset directory `out`
/// (writing `out/data/main_data.hdf5` and `out/data/metadata.json`).
///
/// Episodes with data are written in episode-id order as `episode_0…`; given-up
/// episodes are left out. The files are built in a hidden directory inside `out`
/// and renamed to `data/` when complete. `progress(done, total)` is called after
/// each episode.
pub fn export(src: &Path, out: &Path, opts: &ExportOptions, progress: &mut dyn FnMut(u64, u64)) -> Result<ExportReport> {
    let ds = Dataset::open(src).map_err(|source| Error::Store { path: src.to_path_buf(), source })?;
    staging::refuse_overlap(src, out)?;
    let dataset_id = match &opts.dataset_id {
        Some(id) => {
            check_dataset_id(id)?;
            id.clone()
        }
        None => dataset_id_from_path(out)?,
    };
    let data = out.join("data");
    if out.exists() && !out.is_dir() {
        return Err(Error::OutputExists {
            path: out.to_path_buf(),
            hint: "it is a file; the output is the Minari dataset's directory".into(),
        });
    }
    staging::check_replaceable(&data, opts.force, "Minari", "main_data.hdf5 or metadata.json", is_export)?;
    let created = !out.exists();
    std::fs::create_dir_all(out).io("creating", out)?;
    let res = write(&ds, src, out, &dataset_id, opts, progress);
    if res.is_err() && created {
        // Only succeeds while empty: never removes anything but our own directory.
        let _ = std::fs::remove_dir(out);
    }
    res
}

/// Whether `data` is a Minari `data/` directory as our export writes it: what `force` may replace.
fn is_export(data: &Path) -> bool {
    data.join("main_data.hdf5").is_file() || data.join("metadata.json").is_file()
}

/// The largest HDF5 export built in memory before it is written.
const IN_MEMORY_BYTES: u64 = 512 << 20;

/// About how many bytes the episodes take as arrays: rows × (observation + action + 10).
fn estimated_bytes(ds: &Dataset, obs: &rollway_core::Space, act: &rollway_core::Space) -> u64 {
    let row = rollway_core::Layout::of(obs).row_bytes() + rollway_core::Layout::of(act).row_bytes() + 10;
    let rows: u64 = ds.episodes().map(|e| e.length + 1).sum();
    rows.saturating_mul(row as u64)
}

/// Where the episodes go: one HDF5 file, or a folder per episode.
enum Sink {
    /// The file, its path, the columns holding Text values (written as strings), and
    /// what every episode is written with.
    H5(hdf5::File, PathBuf, Vec<String>, h5raw::Writer),
    Folders(arrow_write::Writer, PathBuf),
}

impl Sink {
    fn open(dir: &Path, ds: &Dataset, src: &Path, format: DataFormat) -> Result<Sink> {
        let (obs, act) =
            ds.metadata().env.spaces().map_err(|e| Error::Unsupported { path: src.to_path_buf(), message: format!("spaces: {e}") })?;
        if format == DataFormat::Hdf5 {
            let path = dir.join("main_data.hdf5");
            // Built in memory and written out at close (HDF5's core driver) when it is
            // small enough: an episode is ~20 small objects, each a few pwrites otherwise.
            let small = estimated_bytes(ds, &obs, &act) <= IN_MEMORY_BYTES;
            let created = if small {
                hdf5::File::with_options().with_fapl(|p| p.core_filebacked(true)).create(&path)
            } else {
                hdf5::File::create(&path)
            };
            let file = created.map_err(|source| Error::Hdf5 { path: path.clone(), context: "creating the file".into(), source })?;
            let texts = [text_columns("observations", &obs), text_columns("actions", &act)].concat();
            let w =
                h5raw::Writer::new().map_err(|source| Error::Hdf5 { path: path.clone(), context: "creating the file".into(), source })?;
            return Ok(Sink::H5(file, path, texts, w));
        }
        Ok(Sink::Folders(arrow_write::Writer::new(dir, format, &obs, &act), dir.to_path_buf()))
    }

    /// Writes episode `k`; returns the info keys it could not write.
    fn episode(&mut self, k: u64, ep: &EpisodeData) -> Result<Vec<String>> {
        let ctx = format!("episode_{k}");
        match self {
            Sink::H5(file, path, texts, w) => {
                write_episode(file, w, &ctx, k as i64, ep, texts).map_err(|source| Error::Hdf5 { path: path.clone(), context: ctx, source })
            }
            Sink::Folders(w, dir) => w
                .episode(k, ep, arrow_write::episode_metadata(k, ep, &reward_stats(&ep.rewards)))
                .map_err(|message| Error::Malformed { path: dir.join(k.to_string()), object: ctx, message }),
        }
    }

    /// Closes the file; returns the bytes written.
    fn finish(self) -> Result<u64> {
        match self {
            Sink::H5(file, path, ..) => {
                file.close().map_err(|source| Error::Hdf5 { path: path.clone(), context: "closing the file".into(), source })?;
                Ok(std::fs::metadata(&path).io("reading size of", &path)?.len())
            }
            Sink::Folders(_, dir) => Ok(staging::dir_bytes(&dir)),
        }
    }
}

fn write(
    ds: &Dataset,
    src: &Path,
    out: &Path,
    dataset_id: &str,
    opts: &ExportOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<ExportReport> {
    let staging = Staging::new(out, "data")?;
    let mut episodes = ds.episode_reader();
    let total = episodes.entries().len() as u64;
    let given_up = ds.episodes().count() as u64 - total;
    let mut steps = 0u64;
    let mut skipped = BTreeSet::new();
    let mut sink = Sink::open(staging.path(), ds, src, opts.data_format)?;
    for k in 0..episodes.entries().len() {
        let ep = episodes.read(k).map_err(|source| Error::Store { path: src.to_path_buf(), source })?;
        skipped.extend(sink.episode(k as u64, &ep)?);
        steps += ep.entry.length;
        progress(k as u64 + 1, total);
    }
    let data_bytes = sink.finish()?;
    let env_spec = env_spec(ds.metadata());
    let meta = metadata(ds, src, dataset_id, opts, (total, steps, data_bytes), env_spec.as_deref());
    let meta_path = staging.path().join("metadata.json");
    let text = serde_json::to_string_pretty(&Json::Object(meta)).expect("metadata serializes");
    std::fs::write(&meta_path, &text).io("writing", &meta_path)?;
    let data = out.join("data");
    staging::replace_dir(staging, &data)?;
    Ok(ExportReport {
        dataset_id: dataset_id.to_string(),
        data_dir: data,
        episodes: total,
        steps,
        bytes: data_bytes + text.len() as u64,
        given_up,
        skipped_infos: skipped.into_iter().collect(),
        env_spec: env_spec.is_some(),
    })
}

/// The dataset's `metadata.json`; `counts` is (episodes, steps, bytes of episode data).
fn metadata(
    ds: &Dataset,
    src: &Path,
    dataset_id: &str,
    opts: &ExportOptions,
    counts: (u64, u64, u64),
    env_spec: Option<&str>,
) -> Map<String, Json> {
    let (total, steps, data_bytes) = counts;
    let mut meta = Map::new();
    meta.insert("dataset_id".into(), json!(dataset_id));
    meta.insert("total_episodes".into(), json!(total));
    meta.insert("total_steps".into(), json!(steps));
    meta.insert("data_format".into(), json!(opts.data_format.name()));
    // Without this key Minari assumes JPEG for uint8 image Boxes; we store raw pixels.
    meta.insert("jpeg_encoding".into(), json!(false));
    meta.insert("observation_space".into(), json!(ds.metadata().env.observation_space));
    meta.insert("action_space".into(), json!(ds.metadata().env.action_space));
    if let Some(s) = env_spec {
        meta.insert("env_spec".into(), json!(s));
    }
    let mut agents: Vec<&str> = Vec::new();
    for r in &ds.metadata().runs {
        if !agents.contains(&r.agent.as_str()) {
            agents.push(&r.agent);
        }
    }
    meta.insert("algorithm_name".into(), json!(agents.join(", ")));
    if let Some(a) = &opts.author {
        // Minari reads `author` back as a set: a list, not a bare string.
        meta.insert("author".into(), json!([a]));
    }
    let description = opts.description.clone().unwrap_or_else(|| {
        format!(
            "{} episodes of {} exported from the rollway dataset {}",
            total,
            ds.metadata().env.id,
            std::path::absolute(src).unwrap_or_else(|_| src.to_path_buf()).display()
        )
    });
    meta.insert("description".into(), json!(description));
    meta.insert("minari_version".into(), json!(MINARI_VERSION));
    // Minari's `get_size()`: MB with one decimal.
    meta.insert("dataset_size".into(), json!((data_bytes as f64 / 1e5).round() / 10.0));
    meta
}

/// What Minari's default `EpisodeMetadataCallback` adds to every episode with steps.
fn reward_stats(r: &[f64]) -> Vec<(&'static str, f64)> {
    if r.is_empty() {
        return vec![];
    }
    let t = r.len() as f64;
    let sum: f64 = r.iter().sum();
    let mean = sum / t;
    let std = (r.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / t).sqrt();
    vec![
        ("rewards_sum", sum),
        ("rewards_mean", mean),
        ("rewards_std", std),
        ("rewards_max", r.iter().copied().fold(f64::NEG_INFINITY, f64::max)),
        ("rewards_min", r.iter().copied().fold(f64::INFINITY, f64::min)),
    ]
}

/// Writes one episode group; returns the info keys it could not write.
fn write_episode(
    file: &hdf5::File,
    w: &h5raw::Writer,
    name: &str,
    k: i64,
    ep: &EpisodeData,
    texts: &[String],
) -> hdf5::Result<Vec<String>> {
    let g = file.create_group(name)?;
    let t = ep.entry.length as usize;
    w.attr(&g, "id", DType::I64, &k.to_ne_bytes())?;
    w.attr(&g, "total_steps", DType::I64, &(t as i64).to_ne_bytes())?;
    match i64::try_from(ep.entry.seed) {
        Ok(s) => w.attr(&g, "seed", DType::I64, &s.to_ne_bytes())?,
        Err(_) => w.attr(&g, "seed", DType::U64, &ep.entry.seed.to_ne_bytes())?,
    }
    for (col, a) in ep.observations.iter().chain(&ep.actions) {
        let (parent, leaf) = col.rsplit_once('/').unwrap_or(("", col));
        let parent = h5::group_at(&g, parent)?;
        if texts.contains(col) {
            h5::write_strings(&parent, leaf, &text_values(a))?;
        } else {
            w.array(&parent, leaf, a.dtype, &a.shape, &a.data)?;
        }
    }
    w.array(&g, "rewards", DType::F64, &[t], bytemuck::cast_slice(&ep.rewards))?;
    if let Some(a) = &ep.agent_state {
        // Minari has no place for it and reads past it; rollway's import takes it back.
        w.array(&g, AGENT_STATE, a.dtype, &a.shape, &a.data)?;
    }
    for (flag, v) in [("terminations", &ep.terminations), ("truncations", &ep.truncations)] {
        w.array(&g, flag, DType::Bool, &[v.len()], &v.iter().map(|&b| u8::from(b)).collect::<Vec<_>>())?;
    }
    // Minari's DataCollector writes an `infos` group even when it records none.
    let ig = g.create_group("infos")?;
    let skipped = match &ep.infos {
        Some(rows) => infos::write(w, &ig, rows)?,
        None => vec![],
    };
    for (name, v) in reward_stats(&ep.rewards) {
        w.attr(&g, name, DType::F64, &v.to_ne_bytes())?;
    }
    Ok(skipped)
}

/// `env_spec`, when every run used the same env params: Gymnasium's own spec of an env it
/// made (recorded with the dataset), else the registered spec of a rollway env Gymnasium has.
fn env_spec(meta: &Metadata) -> Option<String> {
    let params: Vec<Map<String, Json>> =
        meta.runs.iter().map(|r| r.config.get("env_params").and_then(Json::as_object).cloned().unwrap_or_default()).collect();
    if params.windows(2).any(|w| w[0] != w[1]) {
        return None;
    }
    if let Some(own) = &meta.env.gymnasium_spec {
        return Some(own.clone());
    }
    let kwargs = params.first().map(kwargs_of).unwrap_or_default();
    gymnasium_env_spec(&meta.env.id, &kwargs, meta.env.max_episode_steps)
}
