//! Follow mode: a loader over a dataset that a rollout keeps filling (the replay
//! buffer of MineStudio's online training, seed 002), in this process or another.
//!
//! A following loader delivers *rounds* instead of epochs. Each round starts by
//! reading the dataset's index again, so every commit that has landed joins at the
//! next round; the round's windows are those of the episodes the selection keeps
//! (its capacity: `last_episodes` / `last_steps`; its staleness bound: episodes a
//! policy older than the learner's version − `max_version_lag` acted in are
//! skipped), less the windows already delivered `max_reuse` times, cut to at most
//! `round_windows` of them drawn uniformly, and shuffled. Within a round each window comes
//! once; `max_reuse` bounds how many rounds it may come in.
//!
//! When no window is eligible (nothing committed yet, or everything used up), the
//! round is empty and [`crate::Loader::next_batch`] returns `None` at once: the
//! caller asks again (Python's iterator waits with signals checked).
//!
//! Cost: a round re-reads the index (JSON, a few hundred bytes an episode), decodes
//! the shards committed since (the others' columns are kept from the last round)
//! and lays the kept episodes out again (a copy of what a capacity bounds).
//! `round_windows` trades that cost against how soon new commits are sampled.

use std::collections::HashMap;
use std::sync::Arc;

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rollway_core::seed::derive_seed;

use crate::{Loader, LoaderState, Result, View};

/// How a following loader samples a growing dataset (see the module docs).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Follow {
    /// Skip episodes with a step chosen by a policy older than the learner's version
    /// ([`Loader::set_version`]) minus this.
    pub max_version_lag: Option<u64>,
    /// Rounds a window may be delivered in.
    pub max_reuse: Option<u32>,
    /// The most windows in one round, drawn uniformly each round from every eligible
    /// window: smaller rounds take in new commits sooner.
    pub round_windows: Option<usize>,
}

/// What a following loader keeps between rounds.
#[derive(Default)]
pub(crate) struct Following {
    pub cfg: Follow,
    /// The learner's policy version.
    pub version: u64,
    /// Rounds started so far.
    pub rounds: u64,
    /// Rounds each window was delivered in, by (episode id, start).
    uses: HashMap<(u64, u32), u32>,
    /// The shards the last round used, decoded.
    columns: crate::table::ColumnCache,
}

impl Following {
    pub fn new(cfg: Follow) -> Following {
        Following { cfg, ..Following::default() }
    }
}

impl Loader {
    /// The learner's policy version, which a following loader's staleness bound
    /// (`Follow::max_version_lag`) counts from; it applies from the next round.
    pub fn set_version(&mut self, version: u64) {
        if let Some(f) = self.follow.as_mut() {
            f.version = version;
        }
    }

    /// Starts the next round of a following loader: the dataset read again and the
    /// round's windows chosen. Returns how many windows it has (0: nothing eligible yet).
    pub(crate) fn next_round(&mut self) -> Result<usize> {
        self.bring_up_to_date()?;
        let f = self.follow.as_mut().expect("only a following loader has rounds");
        let mut cfg = self.cfg.clone();
        if let Some(k) = f.cfg.max_version_lag {
            cfg.select.min_policy_version = Some(f.version.saturating_sub(k));
        }
        let ds = rollway_store::Dataset::open(&self.root)?;
        let mut view = View::load(&ds, &cfg, Some(&mut f.columns))?;
        let eps = &view.table.episodes;
        let key = |w: &crate::Window| (eps[w.episode as usize].id, w.start);
        let mut wins: Vec<crate::Window> = match f.cfg.max_reuse {
            Some(m) => view.windows.iter().filter(|w| f.uses.get(&key(w)).is_none_or(|&u| u < m)).copied().collect(),
            None => view.windows.to_vec(),
        };
        if let Some(r) = f.cfg.round_windows.filter(|&r| r < wins.len()) {
            let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(derive_seed(cfg.seed ^ 0x666f_6c6c_6f77, f.rounds));
            // `partial_shuffle` draws its `r` windows into the slice's *end* and returns them
            // first: keeping the slice's head instead kept the index's oldest windows (issue 72).
            let (drawn, _) = wins.partial_shuffle(&mut rng, r);
            wins = drawn.to_vec();
        }
        if f.cfg.max_reuse.is_some() {
            // Windows of episodes the capacity has let go can never come back.
            let oldest = eps.iter().map(|e| e.id).min().unwrap_or(u64::MAX);
            f.uses.retain(|&(id, _), _| id >= oldest);
            for w in &wins {
                *f.uses.entry(key(w)).or_default() += 1;
            }
        }
        let n = wins.len();
        view.windows = Arc::new(wins);
        self.state = LoaderState { epoch: f.rounds, batches: 0 };
        f.rounds += 1;
        self.switch(view);
        Ok(n)
    }

    /// A following loader's next batch: the current round's, or the next round's
    /// first; `None` when no window is eligible now.
    pub(crate) fn follow_batch(&mut self) -> Result<Option<&crate::Batch>> {
        let ready = (!self.view.windows.is_empty() && self.step()?) || (self.next_round()? > 0 && self.step()?);
        Ok(if ready { self.current() } else { None })
    }
}
