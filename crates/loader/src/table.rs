//! The selected episodes' numeric fields in memory (they are small next to frames),
//! laid out row by row: every numeric field of a step side by side. A shuffled window
//! is then one contiguous run of bytes — fewer cache lines and pages than the same
//! steps spread over one column per field, and a gather of scattered windows is
//! bound by exactly those misses. Frames stay on disk and are decoded per window by
//! the loader's threads.
#![allow(unsafe_code)] // measured to matter here; every block says why it is sound (SAFETY)

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use rollway_core::{DType, Layout, Status, StepColumn};
use rollway_store::format::{column_name, is_frame_leaf};
use rollway_store::frames::FrameShard;
use rollway_store::{Dataset, IndexEntry, ShardColumns, ShardIndex};

use crate::config::Selection;
use crate::error::Result;
use crate::row::{Field, Keep};

/// One selected episode.
#[derive(Clone, Debug)]
pub struct EpisodeSpan {
    /// Dataset episode id.
    pub id: u64,
    /// Its first row in the table (its T+1 rows follow).
    pub row: usize,
    /// T.
    pub length: usize,
    /// Index into `Table::frames` of its shard.
    pub shard: usize,
    /// Its first frame in that shard's frame file.
    pub frame_start: u64,
}

pub(crate) struct Table {
    pub obs: Layout,
    pub act: Layout,
    /// `stride` bytes per row; row `r` holds, in order, every non-frame observation
    /// leaf, every action leaf, the reward, terminated and truncated, each kept as
    /// narrow as its values allow (see `row`).
    pub rows: Vec<u8>,
    pub stride: usize,
    /// Those fields' places in a row, in that order.
    pub fields: Vec<Field>,
    /// The agents' recurrent states, `state_width` floats per row, when the dataset
    /// stores them (zeros where a row has none); empty otherwise.
    pub states: Vec<f32>,
    pub state_width: usize,
    pub episodes: Vec<EpisodeSpan>,
    /// A training rollout's policy extras, `width` floats per row (zeros on final
    /// rows and in shards without that extra); empty when no shard has any.
    pub extras: Vec<StepColumn>,
    /// The policy version that chose each row's action (0 on final rows and in shards
    /// without versions); empty when no shard has any.
    pub versions: Vec<u64>,
    /// Per loaded shard, per observation leaf: the frame file (frame leaves only).
    pub frames: Vec<Vec<Option<Box<dyn FrameShard>>>>,
}

/// Decoded shard columns kept between a following loader's rounds, by (shard,
/// rows): a committed shard never changes, so each is decoded once. The Parquet
/// decode is most of what a round would otherwise cost (measured: 19 ms of a
/// round over 107 small CartPole shards, against 4 µs a batch).
pub(crate) type ColumnCache = HashMap<(u32, u64), Arc<ShardColumns>>;

fn keep(sel: &Selection, e: &IndexEntry) -> bool {
    e.status != Status::GivenUp
        // An episode without versions was not made by a training rollout: version 0.
        && sel.min_policy_version.is_none_or(|m| e.policy_version.map_or(0, |v| v[0]) >= m)
        && (sel.labels.is_empty() || e.labels.iter().any(|l| sel.labels.contains(&l.label)))
        && sel.min_return.is_none_or(|m| e.ret >= m)
        && sel.max_return.is_none_or(|m| e.ret <= m)
        && sel.min_length.is_none_or(|m| e.length >= m)
        && sel.max_length.is_none_or(|m| e.length <= m)
}

impl Table {
    /// Loads the selected episodes; with a cache, takes decoded shards from it and
    /// leaves in it exactly the shards this load used.
    pub fn load(ds: &Dataset, sel: &Selection, cache: Option<&mut ColumnCache>) -> Result<Table> {
        let (obs, act) = (ds.obs_layout().clone(), ds.act_layout().clone());
        // Every chosen shard's columns first: how narrow a field can be kept depends on
        // all of its values.
        let (shards, frames) = chosen_shards(ds, sel, cache)?;
        // (dtype, bytes per row) of each field, in row order, and each shard's column of it.
        let mut kinds: Vec<(DType, usize)> = obs.leaves().iter().filter(|l| !is_frame_leaf(l)).map(|l| (l.dtype, l.bytes())).collect();
        kinds.extend(act.leaves().iter().map(|l| (l.dtype, l.bytes())));
        kinds.extend([(DType::F64, 8), (DType::Bool, 1), (DType::Bool, 1)]);
        let sources: Vec<Vec<&[u8]>> = shards
            .iter()
            .map(|(_, cols)| {
                let numeric_obs = obs.leaves().iter().zip(&cols.observations).filter(|(l, _)| !is_frame_leaf(l)).map(|(_, c)| &c[..]);
                numeric_obs
                    .chain(cols.actions.iter().map(|c| &c[..]))
                    .chain([bytemuck::cast_slice(&cols.rewards[..]), &cols.terminations[..], &cols.truncations[..]])
                    .collect()
            })
            .collect();
        let mut fields = Vec::with_capacity(kinds.len());
        let mut stride = 0;
        for (fi, &(dtype, width)) in kinds.iter().enumerate() {
            // Only the chosen episodes' rows count: the others are not loaded.
            let values = shards.iter().zip(&sources).flat_map(|((chosen, _), src)| {
                chosen.iter().map(move |e| &src[fi][e.row_start as usize * width..(e.row_start + e.rows) as usize * width])
            });
            let f = Field::new(stride, width, dtype.size(), Keep::choose(dtype, values));
            stride += f.width;
            fields.push(f);
        }
        let total: usize = shards.iter().flat_map(|(chosen, _)| chosen).map(|e| e.rows as usize).sum();
        let (extras, versions) = training_columns(&shards, total);
        let mut t = Table {
            obs,
            act,
            rows: huge_page_vec(total * stride),
            stride,
            fields,
            states: Vec::new(),
            state_width: 0,
            episodes: Vec::new(),
            extras,
            versions,
            frames,
        };
        t.state_width = shards.iter().map(|(_, cols)| cols.state_width).max().unwrap_or(0);
        t.states = vec![0.0; total * t.state_width];
        let mut row = 0;
        for (si, ((chosen, cols), src)) in shards.iter().zip(&sources).enumerate() {
            for e in chosen {
                let (s, n) = (e.row_start as usize, e.rows as usize);
                let (w, cw) = (t.state_width, cols.state_width);
                if cw > 0 {
                    for r in 0..n {
                        t.states[(row + r) * w..(row + r) * w + cw].copy_from_slice(&cols.states[(s + r) * cw..(s + r + 1) * cw]);
                    }
                }
                copy_training(&mut t, cols, s, n, row);
                let dst = &mut t.rows[row * stride..(row + n) * stride];
                for (f, col) in t.fields.iter().zip(src) {
                    let w = f.out_width();
                    f.pack(stride, &col[s * w..(s + n) * w], dst);
                }
                let frame_start = e.frames.values().next().map_or(0, |f| f.start);
                t.episodes.push(EpisodeSpan { id: e.episode_id, row, length: e.length as usize, shard: si, frame_start });
                row += n;
            }
        }
        Ok(t)
    }
}

/// The shards holding selected episodes, with those episodes, their decoded
/// columns (from `cache` where it has them) and their frame files.
type Chosen<'a> = (Vec<(Vec<&'a IndexEntry>, Arc<ShardColumns>)>, Vec<Vec<Option<Box<dyn FrameShard>>>>);

fn chosen_shards<'a>(ds: &'a Dataset, sel: &Selection, cache: Option<&mut ColumnCache>) -> Result<Chosen<'a>> {
    let (mut shards, mut frames) = (Vec::new(), Vec::new());
    // What this load uses becomes the cache: shards the capacity has let go (or the
    // staleness bound skipped) are freed.
    let mut kept = ColumnCache::new();
    let oldest = oldest_kept(ds, sel);
    for shard in ds.shards() {
        let chosen: Vec<&IndexEntry> = shard.episodes.iter().filter(|e| e.episode_id >= oldest && keep(sel, e)).collect();
        if chosen.is_empty() {
            continue;
        }
        let key = (shard.shard, shard.rows);
        let cols = match cache.as_ref().and_then(|c| c.get(&key)) {
            Some(cols) => cols.clone(),
            None => Arc::new(ds.shard_columns(shard.shard)?),
        };
        kept.insert(key, cols.clone());
        let mut files = Vec::new();
        for leaf in ds.obs_layout().leaves() {
            files.push(if is_frame_leaf(leaf) { Some(ds.open_frames(&column_name("observations", leaf), shard.shard)?) } else { None });
        }
        frames.push(files);
        shards.push((chosen, cols));
    }
    if let Some(c) = cache {
        *c = kept;
    }
    Ok((shards, frames))
}

/// A training rollout's extras and policy versions for `total` rows, zeroed: the
/// extras are those of the first shard that has any (a shard without one of them
/// gives zeros); the versions are there when any shard has them.
fn training_columns(shards: &[(Vec<&IndexEntry>, Arc<ShardColumns>)], total: usize) -> (Vec<StepColumn>, Vec<u64>) {
    let extras = match shards.iter().find(|(_, c)| !c.extras.is_empty()) {
        Some((_, cols)) => cols
            .extras
            .iter()
            .map(|x| StepColumn { name: x.name.clone(), shape: x.shape.clone(), values: vec![0.0; total * x.width()] })
            .collect(),
        None => Vec::new(),
    };
    let versions = if shards.iter().any(|(_, c)| !c.versions.is_empty()) { vec![0; total] } else { Vec::new() };
    (extras, versions)
}

/// Copies rows `s..s + n` of a shard's extras and policy versions to table row `row`.
fn copy_training(t: &mut Table, cols: &ShardColumns, s: usize, n: usize, row: usize) {
    for x in &mut t.extras {
        let w = x.width();
        if let Some(src) = cols.extras.iter().find(|c| c.name == x.name && c.shape == x.shape) {
            x.values[row * w..(row + n) * w].copy_from_slice(&src.values[s * w..(s + n) * w]);
        }
    }
    if !cols.versions.is_empty() && !t.versions.is_empty() {
        t.versions[row..row + n].copy_from_slice(&cols.versions[s..s + n]);
    }
}

/// The smallest episode id the selection's capacity (`last_episodes`, `last_steps`:
/// the newest selected episodes, by id) keeps; 0 without one.
fn oldest_kept(ds: &Dataset, sel: &Selection) -> u64 {
    oldest_of(ds.episodes(), sel)
}

fn oldest_of<'a>(episodes: impl Iterator<Item = &'a IndexEntry>, sel: &Selection) -> u64 {
    if sel.last_episodes.is_none() && sel.last_steps.is_none() {
        return 0;
    }
    let mut newest: Vec<(u64, u64)> = episodes.filter(|e| keep(sel, e)).map(|e| (e.episode_id, e.length)).collect();
    newest.sort_unstable_by_key(|e| std::cmp::Reverse(e.0));
    let (mut steps, mut oldest) = (0u64, u64::MAX);
    for (i, &(id, len)) in newest.iter().enumerate() {
        if sel.last_episodes.is_some_and(|k| i >= k) || sel.last_steps.is_some_and(|k| steps >= k) {
            break;
        }
        (steps, oldest) = (steps + len, id);
    }
    oldest
}

/// For a reader of a store: the shards to fetch, chosen by [`needed_shards`]; `None`
/// when `sel` keeps every episode (fetch them all, without choosing).
#[allow(clippy::type_complexity)]
pub fn shard_chooser(sel: Selection) -> Option<Box<dyn Fn(&[&ShardIndex]) -> BTreeSet<u32> + Send + Sync>> {
    sel.narrows().then(|| Box::new(move |shards: &[&ShardIndex]| needed_shards(shards, &sel)) as Box<_>)
}

/// The shards (by number) that hold an episode `sel` keeps, given every shard's
/// index: all a loader with this selection reads. A reader of a dataset on an object
/// store fetches only these (`rollway_remote::Replica::open_chosen`).
pub fn needed_shards(shards: &[&ShardIndex], sel: &Selection) -> BTreeSet<u32> {
    let oldest = oldest_of(shards.iter().flat_map(|s| &s.episodes), sel);
    let needed = |s: &&&ShardIndex| s.episodes.iter().any(|e| e.episode_id >= oldest && keep(sel, e));
    shards.iter().filter(needed).map(|s| s.shard).collect()
}

/// A zeroed buffer that asks for 2 MiB pages where the kernel allows it (Linux,
/// transparent huge pages in `madvise` mode): scattered window reads over many
/// megabytes otherwise miss the TLB on most windows.
fn huge_page_vec(len: usize) -> Vec<u8> {
    let mut v: Vec<u8> = Vec::with_capacity(len);
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = v.as_mut_ptr() as usize;
        let (from, to) = (start.next_multiple_of(HUGE), (start + len) / HUGE * HUGE);
        if to > from {
            // SAFETY: the range lies inside this vector's allocation and madvise only
            // changes how the kernel backs it; a refusal is harmless, so it is ignored.
            unsafe { libc::madvise(from as *mut libc::c_void, to - from, libc::MADV_HUGEPAGE) };
        }
    }
    v.resize(len, 0);
    v
}
