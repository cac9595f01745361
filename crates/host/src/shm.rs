//! The shared region of one env block: what a round needs, by slot, in a file both
//! processes map.
//!
//! ```text
//! ops      u8 × n      0 idle, 1 step, 2 reset          (worker writes)
//! flags    u8 × n      bit 0 terminated, 1 truncated, 2 failed   (process writes)
//! seeds    u64 × n     reset seeds                       (worker writes)
//! rewards  f64 × n                                       (process writes)
//! actions  n rows of the action layout                   (worker writes)
//! obs      n rows of the observation layout              (process writes)
//! ```
//!
//! Each section starts at a multiple of 8 bytes. Ownership alternates with the
//! pipe: the worker writes its parts, then sends the round command; the process
//! writes its parts, then replies. Neither side touches the region while the other
//! owns it, and the pipe's write/read pair orders the memory accesses around it.
//! The file lives in `/dev/shm` when there is one (memory, never written to disk)
//! and is unlinked once the process has mapped it, so a crash leaves nothing behind.
#![allow(unsafe_code)] // measured to matter here; every block says why it is sound (SAFETY)

use std::fs::File;
use std::io;
use std::path::Path;

use memmap2::MmapMut;

/// Op code: nothing this round.
pub const IDLE: u8 = 0;
/// Op code: step with the action row.
pub const STEP: u8 = 1;
/// Op code: reset with the seed.
pub const RESET: u8 = 2;
/// Op code: reset without a seed (the env's random stream goes on).
pub const RESET_UNSEEDED: u8 = 3;
/// Flag: the step terminated the episode.
pub const TERMINATED: u8 = 1;
/// Flag: the step truncated the episode.
pub const TRUNCATED: u8 = 2;
/// Flag: the op raised; the reply says what.
pub const FAILED: u8 = 4;

fn pad8(x: usize) -> usize {
    x.div_ceil(8) * 8
}

/// Byte offsets of the sections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Offsets {
    flags: usize,
    seeds: usize,
    rewards: usize,
    act: usize,
    obs: usize,
    end: usize,
}

impl Offsets {
    fn new(n: usize, act_row: usize, obs_row: usize) -> Offsets {
        let flags = pad8(n);
        let seeds = flags + pad8(n);
        let rewards = seeds + 8 * n;
        let act = rewards + 8 * n;
        let obs = act + n * act_row;
        Offsets { flags, seeds, rewards, act, obs, end: obs + n * obs_row }
    }
}

/// One block's mapped region.
pub struct Region {
    map: MmapMut,
    n: usize,
    act_row: usize,
    obs_row: usize,
    at: Offsets,
}

impl Region {
    /// Creates the file for `n` slots under `/dev/shm` (or the temp dir), maps it,
    /// and returns it with its path; the caller unlinks the path once the other
    /// side has mapped it.
    pub fn create(n: usize, act_row: usize, obs_row: usize) -> io::Result<(Region, tempfile::TempPath)> {
        let at = Offsets::new(n, act_row, obs_row);
        let shm = Path::new("/dev/shm");
        let builder = tempfile::Builder::new().prefix("rollway-block-").tempfile_in(if shm.is_dir() {
            shm.to_path_buf()
        } else {
            std::env::temp_dir()
        });
        let file = builder.or_else(|_| tempfile::Builder::new().prefix("rollway-block-").tempfile())?;
        file.as_file().set_len(at.end.max(1) as u64)?;
        let (file, path) = file.into_parts();
        Ok((Region::map(&file, n, act_row, obs_row)?, path))
    }

    /// Maps the region another process created.
    pub fn open(path: &Path, n: usize, act_row: usize, obs_row: usize) -> io::Result<Region> {
        let file = File::options().read(true).write(true).open(path)?;
        let want = Offsets::new(n, act_row, obs_row).end.max(1) as u64;
        let have = file.metadata()?.len();
        if have != want {
            return Err(io::Error::new(io::ErrorKind::InvalidData, format!("{}: {have} bytes, expected {want}", path.display())));
        }
        Region::map(&file, n, act_row, obs_row)
    }

    fn map(file: &File, n: usize, act_row: usize, obs_row: usize) -> io::Result<Region> {
        // SAFETY: the file is private to one worker thread and the process it
        // spawned (created with a random name, mode 0600, unlinked after setup), its
        // size was fixed before mapping and never changes, and the two sides never
        // access it at the same time (ownership alternates with the pipe, see the
        // module docs), so no access through this map races another.
        let map = unsafe { MmapMut::map_mut(file)? };
        Ok(Region { map, n, act_row, obs_row, at: Offsets::new(n, act_row, obs_row) })
    }

    /// Slots.
    pub fn len(&self) -> usize {
        self.n
    }

    /// True for a region without slots.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Op codes by slot.
    pub fn ops(&self) -> &[u8] {
        &self.map[..self.n]
    }

    /// Op codes by slot, to write.
    pub fn ops_mut(&mut self) -> &mut [u8] {
        &mut self.map[..self.n]
    }

    /// Flags by slot.
    pub fn flags(&self) -> &[u8] {
        &self.map[self.at.flags..self.at.flags + self.n]
    }

    /// Flags by slot, to write.
    pub fn flags_mut(&mut self) -> &mut [u8] {
        let at = self.at.flags;
        &mut self.map[at..at + self.n]
    }

    fn word(&self, base: usize, slot: usize) -> [u8; 8] {
        self.map[self.row(base, 8, slot)].try_into().expect("8 bytes")
    }

    fn set_word(&mut self, base: usize, slot: usize, w: [u8; 8]) {
        let r = self.row(base, 8, slot);
        self.map[r].copy_from_slice(&w);
    }

    /// The reset seed of `slot`.
    pub fn seed(&self, slot: usize) -> u64 {
        u64::from_ne_bytes(self.word(self.at.seeds, slot))
    }

    /// Sets the reset seed of `slot`.
    pub fn set_seed(&mut self, slot: usize, seed: u64) {
        self.set_word(self.at.seeds, slot, seed.to_ne_bytes());
    }

    /// The reward of `slot`'s step.
    pub fn reward(&self, slot: usize) -> f64 {
        f64::from_ne_bytes(self.word(self.at.rewards, slot))
    }

    /// Sets the reward of `slot`'s step.
    pub fn set_reward(&mut self, slot: usize, r: f64) {
        self.set_word(self.at.rewards, slot, r.to_ne_bytes());
    }

    /// The action row of `slot`.
    pub fn act(&self, slot: usize) -> &[u8] {
        &self.map[self.row(self.at.act, self.act_row, slot)]
    }

    /// The action row of `slot`, to write.
    pub fn act_mut(&mut self, slot: usize) -> &mut [u8] {
        let r = self.row(self.at.act, self.act_row, slot);
        &mut self.map[r]
    }

    /// The observation row of `slot`.
    pub fn obs(&self, slot: usize) -> &[u8] {
        &self.map[self.row(self.at.obs, self.obs_row, slot)]
    }

    /// The observation row of `slot`, to write.
    pub fn obs_mut(&mut self, slot: usize) -> &mut [u8] {
        let r = self.row(self.at.obs, self.obs_row, slot);
        &mut self.map[r]
    }

    /// The action row of `slot` to read and its observation row to write, at once
    /// (the two sections never overlap).
    pub fn act_obs_mut(&mut self, slot: usize) -> (&[u8], &mut [u8]) {
        let (a, o) = (self.row(self.at.act, self.act_row, slot), self.row(self.at.obs, self.obs_row, slot));
        if a.end <= o.start {
            let (lo, hi) = self.map.split_at_mut(o.start);
            (&lo[a], &mut hi[..o.len()])
        } else {
            let (lo, hi) = self.map.split_at_mut(a.start);
            (&hi[..a.len()], &mut lo[o])
        }
    }

    /// Every slot's action rows to read and observation rows to write, at once (a
    /// block stepped as one batch reads and writes them all).
    pub fn act_obs_rows_mut(&mut self) -> (&[u8], &mut [u8]) {
        let (act, obs, end) = (self.at.act, self.at.obs, self.at.end);
        let (lo, hi) = self.map.split_at_mut(obs);
        (&lo[act..], &mut hi[..end - obs])
    }

    /// Where row `slot` of a section of `size`-byte rows starting at `base` lies.
    fn row(&self, base: usize, size: usize, slot: usize) -> std::ops::Range<usize> {
        base + slot * size..base + (slot + 1) * size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_are_aligned_and_disjoint() {
        for n in [1, 3, 8, 9] {
            let at = Offsets::new(n, 8, 24);
            for off in [at.flags, at.seeds, at.rewards, at.act, at.obs, at.end] {
                assert_eq!(off % 8, 0);
            }
            assert!(at.flags >= n && at.seeds >= at.flags + n && at.obs == at.act + 8 * n && at.end == at.obs + 24 * n);
        }
    }

    #[test]
    fn two_maps_of_one_file_see_each_other() {
        let (mut a, path) = Region::create(3, 8, 16).unwrap();
        let mut b = Region::open(&path, 3, 8, 16).unwrap();
        a.ops_mut()[1] = RESET;
        a.set_seed(1, u64::MAX - 5);
        a.act_mut(2).copy_from_slice(&7i64.to_ne_bytes());
        assert_eq!((b.ops()[1], b.seed(1), b.act(2)), (RESET, u64::MAX - 5, &7i64.to_ne_bytes()[..]));
        b.set_reward(1, -0.5);
        b.flags_mut()[1] = TERMINATED | TRUNCATED;
        b.obs_mut(1)[15] = 9;
        assert_eq!((a.reward(1), a.flags()[1], a.obs(1)[15]), (-0.5, 3, 9));
        // A region of another shape is refused, not misread.
        assert!(Region::open(&path, 4, 8, 16).is_err());
    }
}
