//! The selected episodes' numeric fields in memory (they are small next to frames),
//! laid out row by row: every numeric field of a step side by side. A shuffled window
//! is then one contiguous run of bytes — fewer cache lines and pages than the same
//! steps spread over one column per field, and a gather of scattered windows is
//! bound by exactly those misses. Frames stay on disk and are decoded per window by
//! the loader's threads.

use rollway_core::{Layout, Status};
use rollway_store::format::{column_name, is_frame_leaf};
use rollway_store::frames::FrameShard;
use rollway_store::{Dataset, IndexEntry};

use crate::{Result, Selection};

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

/// Where one numeric field sits inside a row.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Field {
    pub offset: usize,
    pub width: usize,
}

pub(crate) struct Table {
    pub obs: Layout,
    pub act: Layout,
    /// `stride` bytes per row; row `r` holds, in order, every non-frame observation
    /// leaf, every action leaf, the reward (f64), terminated and truncated (u8 each).
    pub rows: Vec<u8>,
    pub stride: usize,
    /// Those fields' places in a row, in that order.
    pub fields: Vec<Field>,
    pub episodes: Vec<EpisodeSpan>,
    /// Per loaded shard, per observation leaf: the frame file (frame leaves only).
    pub frames: Vec<Vec<Option<Box<dyn FrameShard>>>>,
}

fn keep(sel: &Selection, e: &IndexEntry) -> bool {
    e.status != Status::GivenUp
        && (sel.labels.is_empty() || e.labels.iter().any(|l| sel.labels.contains(&l.label)))
        && sel.min_return.is_none_or(|m| e.ret >= m)
        && sel.max_return.is_none_or(|m| e.ret <= m)
        && sel.min_length.is_none_or(|m| e.length >= m)
        && sel.max_length.is_none_or(|m| e.length <= m)
}

impl Table {
    pub fn load(ds: &Dataset, sel: &Selection) -> Result<Table> {
        let (obs, act) = (ds.obs_layout().clone(), ds.act_layout().clone());
        let mut widths: Vec<usize> = obs.leaves().iter().filter(|l| !is_frame_leaf(l)).map(|l| l.bytes()).collect();
        widths.extend(act.leaves().iter().map(|l| l.bytes()));
        widths.extend([8, 1, 1]);
        let mut fields = Vec::with_capacity(widths.len());
        let mut stride = 0;
        for width in widths {
            fields.push(Field { offset: stride, width });
            stride += width;
        }
        let total: usize = ds.shards().iter().flat_map(|s| &s.episodes).filter(|e| keep(sel, e)).map(|e| e.rows as usize).sum();
        let mut t = Table { obs, act, rows: huge_page_vec(total * stride), stride, fields, episodes: Vec::new(), frames: Vec::new() };
        let mut row = 0;
        for shard in ds.shards() {
            let chosen: Vec<&IndexEntry> = shard.episodes.iter().filter(|e| keep(sel, e)).collect();
            if chosen.is_empty() {
                continue;
            }
            let cols = ds.shard_columns(shard.shard)?;
            let si = t.frames.len();
            let mut frames = Vec::new();
            for leaf in t.obs.leaves() {
                frames.push(if is_frame_leaf(leaf) { Some(ds.open_frames(&column_name("observations", leaf), shard.shard)?) } else { None });
            }
            t.frames.push(frames);
            let numeric_obs = t.obs.leaves().iter().zip(&cols.observations).filter(|(l, _)| !is_frame_leaf(l)).map(|(_, c)| &c[..]);
            let sources: Vec<&[u8]> = numeric_obs
                .chain(cols.actions.iter().map(|c| &c[..]))
                .chain([bytemuck::cast_slice(&cols.rewards[..]), &cols.terminations[..], &cols.truncations[..]])
                .collect();
            for e in chosen {
                let (s, n) = (e.row_start as usize, e.rows as usize);
                let dst = &mut t.rows[row * stride..(row + n) * stride];
                for (f, src) in t.fields.iter().zip(&sources) {
                    let src = &src[s * f.width..(s + n) * f.width];
                    for (d, v) in dst.chunks_exact_mut(stride).zip(src.chunks_exact(f.width)) {
                        d[f.offset..f.offset + f.width].copy_from_slice(v);
                    }
                }
                let frame_start = e.frames.values().next().map_or(0, |f| f.start);
                t.episodes.push(EpisodeSpan { id: e.episode_id, row, length: e.length as usize, shard: si, frame_start });
                row += n;
            }
        }
        Ok(t)
    }
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
