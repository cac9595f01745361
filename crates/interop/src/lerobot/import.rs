//! LeRobot v3.x (and v2.x) directory → rollway dataset.
//!
//! The two versions differ only in where episodes are listed and how files are
//! named: v3 keeps many episodes per data and video file (the episodes table
//! gives each one's file and first timestamp), v2.x one file per episode
//! (`meta/episodes.jsonl`). Both come down to [`EpisodeRef`]s; reading is shared.

use std::path::{Path, PathBuf};

use arrow_array::{Array, RecordBatch};
use rollway_core::{DType, EpisodeResult, Info, Layout, Trajectory};
use rollway_media::h264::{decode_range, Decoder};
use rollway_media::mp4::{self, Video};
use rollway_store::{DatasetWriter, WriterConfig};
use serde_json::json;

use super::meta::{self, InfoJson, Root};
use super::plan::Col;
use super::source::{self, EpisodeRef, Mapping};
use super::{ImportReport, AGENT_STATE, FINAL_OBSERVATION};
use crate::error::IoContext;
use crate::staging::{self, Staging};
use crate::{Error, Result};

/// Imports the LeRobot v3.x or v2.x dataset at `src` (its root, holding `meta/info.json`)
/// as a new rollway dataset at `out`, which must not exist (or be an empty directory).
///
/// A rollway export comes back as it was (see the module docs on the final
/// observation); any other dataset maps `observation.*` and `action` features to
/// spaces, and each of its frames to a step. Videos may be H.264, HEVC or AV1
/// (LeRobot's default). Nothing appears
/// at `out` unless the whole import succeeds. `progress(done, total)` is called
/// after each episode.
pub fn import(src: &Path, out: &Path, progress: &mut dyn FnMut(u64, u64)) -> Result<ImportReport> {
    let info_path = src.join(meta::INFO);
    if !info_path.is_file() {
        let message = if src.exists() { format!("no {}", meta::INFO) } else { "it does not exist".into() };
        return Err(Error::NotLeRobot { path: src.to_path_buf(), message });
    }
    let root = Root::new(src).io("resolving", src)?;
    let info_path = root.inside(info_path).map_err(|message| Error::BadMetadata { path: src.join(meta::INFO), message })?;
    let text = std::fs::read_to_string(&info_path).io("reading", &info_path)?;
    let info = InfoJson::parse(&text).map_err(|message| Error::BadMetadata { path: info_path.clone(), message })?;
    let v2 = info.version.starts_with("v2.");
    if !v2 && !info.version.starts_with("v3.") {
        return Err(Error::Unsupported {
            path: info_path,
            message: format!("codebase_version {}; rollway reads v2.x and v3.x", info.version),
        });
    }
    let rw = source::rollway(&root)?;
    let env = info.robot_type.clone().unwrap_or_else(|| {
        std::path::absolute(src)
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "lerobot".into())
    });
    let map = match &rw {
        Some(rw) => source::from_rollway(rw, &info, &src.join(meta::ROLLWAY))?,
        None => source::infer(&root, &info, env)?,
    };
    source::check(&map.plan, &info, &info_path)?;
    let keys: Vec<String> = map.plan.videos().map(|c| c.name.clone()).collect();
    if !keys.is_empty() && info.video_path.is_none() {
        return Err(Error::BadMetadata { path: info_path, message: "video features but no `video_path`".into() });
    }
    let eps = if v2 { source::episodes_v2(&root, info.chunks_size, &keys)? } else { source::episodes(&root, &keys)? };
    if let Some(t) = info.total_episodes.filter(|&t| t != eps.len() as u64) {
        return Err(Error::Malformed {
            path: src.join(meta::EPISODES_DIR),
            object: "/".into(),
            message: format!("{} episodes listed, info.json says {t}", eps.len()),
        });
    }
    staging::require_new(out)?;
    let (staging, out_abs) = Staging::beside(out, "import into a new directory")?;
    let config = json!({"imported_from": {"format": "lerobot", "path": std::path::absolute(src).unwrap_or(src.to_path_buf()), "codebase_version": info.version}});
    let store_err = |source| Error::Store { path: out.to_path_buf(), source };
    let cfg = WriterConfig { record_infos: map.infos, ..Default::default() };
    let writer = DatasetWriter::create(staging.path(), &map.spec, &map.agent, 0, config, cfg).map_err(store_err)?;
    let mut r = Reader { root: &root, info: &info, map: &map, data: None, videos: (0..keys.len()).map(|_| None).collect() };
    let n = eps.len() as u64;
    let mut steps = 0;
    for (k, e) in eps.iter().enumerate() {
        let mut ep = r.episode(e)?;
        ep.run_index = k as u64;
        // Per-episode fields only when the table still lists the episodes exported.
        if let Some(m) = rw.as_ref().filter(|rw| rw.episodes.len() == eps.len()).map(|rw| &rw.episodes[k]).filter(|m| m.steps == ep.length)
        {
            (ep.seed, ep.status, ep.labels, ep.info) = (m.seed, m.status, m.labels.clone(), m.info.clone());
        }
        steps += ep.length;
        writer.write(ep).map_err(store_err)?;
        progress(k as u64 + 1, n);
    }
    writer.finish().map_err(store_err)?;
    let bytes = staging::dir_bytes(staging.path());
    staging.commit(&out_abs)?;
    Ok(ImportReport {
        env: map.spec.id.clone(),
        out: out.to_path_buf(),
        episodes: n,
        steps,
        bytes,
        from_rollway: rw.is_some(),
        skipped_features: map.skipped.clone(),
    })
}

/// A loaded data file and where each episode's rows are in it.
struct DataFile {
    at: (u64, u64),
    path: PathBuf,
    batch: RecordBatch,
    /// `(episode_index, first row, rows)`, in file order.
    spans: Vec<(i64, usize, usize)>,
}

/// A loaded mp4 and its decoder.
struct VideoFile {
    path: PathBuf,
    video: Video,
    dec: Decoder,
}

struct Reader<'a> {
    root: &'a Root,
    info: &'a InfoJson,
    map: &'a Mapping,
    data: Option<DataFile>,
    videos: Vec<Option<VideoFile>>,
}

fn malformed(path: &Path, object: impl Into<String>, message: impl Into<String>) -> Error {
    Error::Malformed { path: path.to_path_buf(), object: object.into(), message: message.into() }
}

impl Reader<'_> {
    /// The file `template` (info.json's `field`) names for `at`, confined to the dataset.
    fn path_of(&self, field: &str, template: &str, key: Option<&str>, at: (u64, u64)) -> Result<PathBuf> {
        let bad = |m: String| {
            let key = key.map_or(String::new(), |k| format!(" with video_key `{k}`"));
            Error::BadMetadata { path: self.root.path.join(meta::INFO), message: format!("`{field}` `{template}`{key}: {m}") }
        };
        let rel = meta::fill(template, key, at.0, at.1).map_err(bad)?;
        self.root.file(&rel).map_err(bad)
    }

    fn data_file(&mut self, at: (u64, u64)) -> Result<&DataFile> {
        if self.data.as_ref().is_none_or(|d| d.at != at) {
            let path = self.path_of("data_path", &self.info.data_path, None, at)?;
            if !path.is_file() {
                return Err(malformed(&path, "/", "missing (the episodes table points here)"));
            }
            let batch = crate::columns::read_file(&path).map_err(|m| malformed(&path, "/", m))?;
            let ids = crate::columns::col(&batch, "episode_index")
                .and_then(|c| crate::columns::i64s(c.as_ref()))
                .map_err(|m| malformed(&path, "episode_index", m))?;
            let mut spans: Vec<(i64, usize, usize)> = Vec::new();
            for (i, &id) in ids.iter().enumerate() {
                match spans.last_mut() {
                    Some(s) if s.0 == id => s.2 += 1,
                    _ => spans.push((id, i, 1)),
                }
            }
            self.data = Some(DataFile { at, path, batch, spans });
        }
        Ok(self.data.as_ref().expect("loaded above"))
    }

    /// The episode's `n` frames of video key `v`, back to back.
    fn frames(&mut self, v: usize, c: &Col, e: &EpisodeRef, n: usize) -> Result<Vec<u8>> {
        let (at, from_ts) = e.videos[v];
        let template = self.info.video_path.as_deref().expect("checked before reading");
        let path = self.path_of("video_path", template, Some(&c.name), at)?;
        let [h, w, _] = c.video.expect("video column");
        if self.videos[v].as_ref().is_none_or(|f| f.path != path) {
            if !path.is_file() {
                return Err(malformed(&path, "/", "missing (the episodes table points here)"));
            }
            let video = mp4::read(&path).map_err(|e| {
                // Our error names the path already.
                let m = match e {
                    rollway_media::Error::File { message, .. } => message,
                    other => other.to_string(),
                };
                if m.starts_with("video codec is") {
                    Error::Unsupported { path: path.clone(), message: m }
                } else {
                    malformed(&path, "/", m)
                }
            })?;
            if (video.width, video.height) != (w, h) {
                return Err(malformed(&path, "/", format!("{}×{} frames, info.json says {w}×{h}", video.width, video.height)));
            }
            let dec = Decoder::new(video.codec, &video.extradata, w, h).map_err(|e| malformed(&path, "/", e.to_string()))?;
            self.videos[v] = Some(VideoFile { path: path.clone(), video, dec });
        }
        let f = self.videos[v].as_mut().expect("loaded above");
        let start = (from_ts * f64::from(self.info.fps)).round();
        if !(0.0..=1e12).contains(&start) || start as usize + n > f.video.frames() {
            return Err(malformed(
                &path,
                format!("episode {}", e.index),
                format!("frames {start}..{start}+{n} of a {}-frame video", f.video.frames()),
            ));
        }
        let mut out =
            Vec::with_capacity(crate::limits::mul(n, h * w * 3).map_err(|m| malformed(&path, format!("episode {}", e.index), m))?);
        let s = start as i64;
        decode_range(&mut f.dec, &f.video.packets, s, s + n as i64, &mut |_, rgb| {
            out.extend_from_slice(rgb);
            Ok(())
        })
        .map_err(|err| malformed(&path, format!("episode {}", e.index), err.to_string()))?;
        Ok(out)
    }

    fn episode(&mut self, e: &EpisodeRef) -> Result<EpisodeResult> {
        let map = self.map;
        let d = self.data_file(e.data)?;
        let object = format!("episode {}", e.index);
        let &(_, start, rows) = d.spans.iter().find(|s| s.0 == e.index).ok_or_else(|| malformed(&d.path, &object, "no rows"))?;
        if rows != e.length || rows == 0 {
            return Err(malformed(&d.path, &object, format!("{rows} rows, the episodes table says {}", e.length)));
        }
        let cols = Cols { batch: d.batch.clone(), path: d.path.clone(), features: &self.info.features, start, object };
        let t = cols.steps(map.final_frame, rows)?;
        let obs = self.observations(&cols, e, rows, t)?;
        let actions = cols.actions(map, t)?;
        let (rewards, terminations, truncations) = cols.outcomes(map.final_frame, t)?;
        let infos = if map.infos { cols.infos(t)? } else { vec![] };
        let states = if map.state_width > 0 { cols.states(map.state_width, t)? } else { vec![] };
        let state_width = if states.is_empty() { 0 } else { map.state_width };
        let mut episode = EpisodeResult::from_trajectory(
            0,
            0,
            Trajectory { obs, actions, rewards, terminations, truncations, infos, states, state_width, ..Default::default() },
        );
        if !map.final_frame {
            episode.info.insert("lerobot", json!({"episode_index": e.index, "tasks": e.tasks}));
        }
        Ok(episode)
    }

    /// The episode's `t + 1` observation rows: video frames decoded, other columns
    /// copied into place.
    fn observations(&mut self, cols: &Cols, e: &EpisodeRef, rows: usize, t: usize) -> Result<Vec<u8>> {
        let map = self.map;
        let ol = Layout::of(&map.spec.observation_space);
        let ob = ol.row_bytes();
        let mut obs = vec![0u8; cols.size(t + 1, ob)?];
        for (v, c) in map.plan.videos().enumerate() {
            let px = self.frames(v, c, e, rows)?;
            scatter(&mut obs, ob, ol.leaves()[c.leaf].offset, c.bytes(), &px);
        }
        for c in map.plan.obs.iter().filter(|c| c.video.is_none()) {
            let bytes = cols.rows(&c.name, c.dtype, c.len, rows)?;
            scatter(&mut obs, ob, ol.leaves()[c.leaf].offset, c.bytes(), &bytes);
        }
        if !map.final_frame {
            // A foreign episode's last frame is a step too; its successor is not recorded.
            obs.copy_within((t - 1) * ob..t * ob, t * ob);
        }
        Ok(obs)
    }
}

/// One episode's rows of a data file, read column by column. Columns that
/// info.json does not declare are not part of the dataset.
struct Cols<'a> {
    batch: RecordBatch,
    path: PathBuf,
    features: &'a std::collections::BTreeMap<String, super::meta::Feature>,
    /// The episode's first row.
    start: usize,
    /// `episode N`, for errors.
    object: String,
}

impl Cols<'_> {
    fn column(&self, name: &str) -> Option<&std::sync::Arc<dyn Array>> {
        self.batch.column_by_name(name).filter(|_| self.features.contains_key(name))
    }

    fn bad(&self, object: &str, message: impl Into<String>) -> Error {
        malformed(&self.path, object, message)
    }

    fn size(&self, rows: usize, per_row: usize) -> Result<usize> {
        crate::limits::mul(rows, per_row).map_err(|m| self.bad(&self.object, m))
    }

    /// `count` rows of a declared column of `len` values of `dtype` each, as bytes.
    fn rows(&self, name: &str, dtype: DType, len: usize, count: usize) -> Result<Vec<u8>> {
        let c = self.column(name).ok_or_else(|| self.bad(name, "missing column"))?;
        crate::columns::rows(c.as_ref(), dtype, len, self.start, count).map_err(|m| self.bad(name, m))
    }

    fn flags(&self, name: &str, count: usize) -> Result<Option<Vec<bool>>> {
        self.column(name).map(|c| crate::columns::bools(&c.slice(self.start, count)).map_err(|m| self.bad(name, m))).transpose()
    }

    /// The episode's steps: its frames, less the final-observation frame that
    /// rollway's exports end each episode with.
    fn steps(&self, final_frame: bool, rows: usize) -> Result<usize> {
        if !final_frame {
            return Ok(rows);
        }
        let f = self.flags(FINAL_OBSERVATION, rows)?.ok_or_else(|| self.bad(FINAL_OBSERVATION, "missing column"))?;
        if rows < 2 || !f[rows - 1] || f[..rows - 1].iter().any(|&x| x) {
            return Err(self.bad(&self.object, format!("`{FINAL_OBSERVATION}` must be true on the last frame only")));
        }
        Ok(rows - 1)
    }

    fn actions(&self, map: &Mapping, t: usize) -> Result<Vec<u8>> {
        let al = Layout::of(&map.spec.action_space);
        let ab = al.row_bytes();
        let mut actions = vec![0u8; self.size(t, ab)?];
        for c in &map.plan.act {
            let bytes = self.rows(&c.name, c.dtype, c.len, t)?;
            scatter(&mut actions, ab, al.leaves()[c.leaf].offset, c.bytes(), &bytes);
        }
        Ok(actions)
    }

    /// Rewards, terminations and truncations of the `t` steps.
    fn outcomes(&self, final_frame: bool, t: usize) -> Result<(Vec<f64>, Vec<bool>, Vec<bool>)> {
        let rewards = match self.column("next.reward") {
            Some(c) => crate::columns::f64s(&c.slice(self.start, t)).map_err(|m| self.bad("next.reward", m))?,
            None => vec![0.0; t],
        };
        let mut terminations = match self.flags("next.terminated", t)? {
            Some(f) => f,
            None => self.flags("next.done", t)?.unwrap_or_else(|| vec![false; t]),
        };
        let mut truncations = self.flags("next.truncated", t)?.unwrap_or_else(|| vec![false; t]);
        if !final_frame && !terminations[t - 1] && !truncations[t - 1] {
            // Every LeRobot episode ends; one that did not terminate was cut off.
            truncations[t - 1] = true;
        }
        terminations.truncate(t);
        truncations.truncate(t);
        Ok((rewards, terminations, truncations))
    }

    /// rollway's own infos, one per observation, when the export kept them.
    fn infos(&self, t: usize) -> Result<Vec<Info>> {
        let Some(c) = self.column("rollway.info") else {
            return Ok(vec![]);
        };
        let texts = crate::columns::strings(&c.slice(self.start, t + 1)).map_err(|m| self.bad("rollway.info", m))?;
        let parse = |(i, s): (usize, Option<String>)| {
            s.map_or(Ok(Info::new()), |s| {
                serde_json::from_str(&s).map_err(|err| self.bad("rollway.info", format!("{} frame {i}: {err}", self.object)))
            })
        };
        texts.into_iter().enumerate().map(parse).collect()
    }

    /// The recurrent state going into each step, `w` floats a row.
    fn states(&self, w: usize, t: usize) -> Result<Vec<f32>> {
        let Some(c) = self.column(AGENT_STATE) else {
            return Ok(vec![]);
        };
        let bytes = crate::columns::rows(c.as_ref(), DType::F32, w, self.start, t).map_err(|m| self.bad(AGENT_STATE, m))?;
        Ok(bytes.chunks_exact(4).map(bytemuck::pod_read_unaligned::<f32>).collect())
    }
}

/// Copies `leaf_bytes`-sized pieces of `src` into consecutive rows of `rows` at `offset`.
fn scatter(rows: &mut [u8], row_bytes: usize, offset: usize, leaf_bytes: usize, src: &[u8]) {
    for (row, piece) in rows.chunks_exact_mut(row_bytes).zip(src.chunks_exact(leaf_bytes)) {
        row[offset..offset + leaf_bytes].copy_from_slice(piece);
    }
}
