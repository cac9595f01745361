//! Reading a rollway dataset's episodes in episode-id order, decoding each shard
//! once. `Dataset::read_episode` decodes its shard's Parquet pages again for every
//! episode, which makes a whole-dataset export quadratic in the shard size.

use std::collections::BTreeMap;

use arrow_array::{Array as _, StringArray};
use rollway_core::{Array, Info, Layout, Leaf, Status};
use rollway_store::format::{column_name, is_frame_leaf};
use rollway_store::frames::FrameShard;
use rollway_store::{Dataset, EpisodeData, Error, IndexEntry, Result, ShardColumns};

/// One decoded shard.
struct Shard {
    n: u32,
    cols: ShardColumns,
    /// Per-row info JSON, when the dataset records infos.
    infos: Option<Vec<Option<String>>>,
    frames: BTreeMap<String, Box<dyn FrameShard>>,
}

/// Episodes with data, in id order, read shard by shard.
pub(crate) struct Episodes<'a> {
    ds: &'a Dataset,
    entries: Vec<IndexEntry>,
    cur: Option<Shard>,
}

impl<'a> Episodes<'a> {
    pub(crate) fn new(ds: &'a Dataset) -> Episodes<'a> {
        let mut entries: Vec<IndexEntry> = ds.episodes().filter(|e| e.status != Status::GivenUp).cloned().collect();
        entries.sort_by_key(|e| e.episode_id);
        Episodes { ds, entries, cur: None }
    }

    /// The entries of the episodes `read` returns, in order.
    pub(crate) fn entries(&self) -> &[IndexEntry] {
        &self.entries
    }

    fn load(&mut self, n: u32) -> Result<&Shard> {
        if !matches!(&self.cur, Some(s) if s.n == n) {
            let ds = self.ds;
            let rows = ds.shards().iter().find(|s| s.shard == n).map_or(0, |s| s.rows);
            let cols = ds.shard_columns(n)?;
            // Infos are a JSON column the native-bytes view leaves out; a one-row read says if it exists.
            let infos = if rows > 0 && ds.read_rows(n, 0, 1)?.column_by_name("infos").is_some() {
                let batch = ds.read_rows(n, 0, rows)?;
                let col = batch.column_by_name("infos").expect("checked above");
                let s = col.as_any().downcast_ref::<StringArray>().ok_or_else(|| Error::Corrupt { path: ds.root().to_path_buf(), message: format!("shard {n}: infos are not strings") })?;
                Some((0..s.len()).map(|i| (!s.is_null(i)).then(|| s.value(i).to_string())).collect())
            } else {
                None
            };
            let mut frames = BTreeMap::new();
            for key in &ds.metadata().frame_keys {
                frames.insert(key.clone(), ds.open_frames(key, n)?);
            }
            self.cur = Some(Shard { n, cols, infos, frames });
        }
        Ok(self.cur.as_ref().expect("loaded above"))
    }

    /// Episode `k` of [`Episodes::entries`].
    pub(crate) fn read(&mut self, k: usize) -> Result<EpisodeData> {
        let entry = self.entries[k].clone();
        let ds = self.ds;
        let corrupt = |m: String| Error::Corrupt { path: ds.root().to_path_buf(), message: format!("episode {}: {m}", entry.episode_id) };
        let shard = self.load(entry.shard)?;
        let (r0, t1, t) = (entry.row_start as usize, entry.rows as usize, entry.length as usize);
        let slice = |all: &[u8], leaf: &Leaf, rows: usize| -> Result<Vec<u8>> {
            let lb = leaf.bytes();
            all.get(r0 * lb..(r0 + rows) * lb).map(<[u8]>::to_vec).ok_or_else(|| corrupt(format!("rows {r0}..{} are outside the shard", r0 + rows)))
        };
        let stacked = |leaf: &Leaf, rows: usize, data: Vec<u8>| {
            let mut shape = vec![rows];
            shape.extend_from_slice(&leaf.shape);
            Array { dtype: leaf.dtype, shape, data }
        };
        let mut observations = Vec::new();
        for (leaf, all) in layout(ds.obs_layout()).zip(&shard.cols.observations) {
            let name = column_name("observations", leaf);
            let data = if is_frame_leaf(leaf) {
                let fr = entry.frames.get(&name).ok_or_else(|| corrupt(format!("no frames for `{name}`")))?;
                let fs = shard.frames.get(&name).ok_or_else(|| corrupt(format!("no frame file for `{name}`")))?;
                let mut out = vec![0u8; t1 * leaf.bytes()];
                fs.frames(fr.start, &mut out, leaf.bytes())?;
                out
            } else {
                slice(all, leaf, t1)?
            };
            observations.push((name, stacked(leaf, t1, data)));
        }
        let mut actions = Vec::new();
        for (leaf, all) in layout(ds.act_layout()).zip(&shard.cols.actions) {
            actions.push((column_name("actions", leaf), stacked(leaf, t, slice(all, leaf, t)?)));
        }
        let rows = |v: &[u8]| -> Result<Vec<bool>> { Ok(v.get(r0..r0 + t).ok_or_else(|| corrupt("flags outside the shard".into()))?.iter().map(|&x| x != 0).collect()) };
        let rewards = shard.cols.rewards.get(r0..r0 + t).ok_or_else(|| corrupt("rewards outside the shard".into()))?.to_vec();
        let (terminations, truncations) = (rows(&shard.cols.terminations)?, rows(&shard.cols.truncations)?);
        let infos = match &shard.infos {
            None => None,
            Some(all) => {
                let mine = all.get(r0..r0 + t1).ok_or_else(|| corrupt("infos outside the shard".into()))?;
                Some(mine.iter().enumerate().map(|(i, s)| s.as_deref().map_or(Ok(Info::new()), |s| serde_json::from_str(s).map_err(|e| corrupt(format!("info row {i}: {e}"))))).collect::<Result<_>>()?)
            }
        };
        Ok(EpisodeData { entry, observations, actions, rewards, terminations, truncations, infos })
    }
}

fn layout(l: &Layout) -> impl Iterator<Item = &Leaf> {
    l.leaves().iter()
}
