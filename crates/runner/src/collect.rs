//! Folds finished episodes, in index order, into the run's summary.
//!
//! Episodes finish in any order; a small reorder buffer releases them by index so
//! that statistics, labels and the step-target prefix never depend on scheduling.

use std::collections::{BTreeMap, VecDeque};

use serde::Serialize;

use crate::filter::{self, EpisodeLabeler};
use crate::{Observer, Target};
use rollway_core::episode::{EpisodeResult, Fault, Status};

/// Mean, population standard deviation, min and max (0 when there is no data).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Stat {
    /// Mean.
    pub mean: f64,
    /// Population standard deviation (numpy's default).
    pub std: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
}

/// Welford's running mean and variance: stable over millions of episodes.
#[derive(Default)]
struct Running {
    n: u64,
    mean: f64,
    m2: f64,
    min: f64,
    max: f64,
}

impl Running {
    fn push(&mut self, x: f64) {
        self.n += 1;
        if self.n == 1 {
            (self.min, self.max) = (x, x);
        }
        self.min = self.min.min(x);
        self.max = self.max.max(x);
        let d = x - self.mean;
        self.mean += d / self.n as f64;
        self.m2 += d * (x - self.mean);
    }

    fn stat(&self) -> Stat {
        if self.n == 0 {
            return Stat::default();
        }
        Stat { mean: self.mean, std: (self.m2 / self.n as f64).sqrt(), min: self.min, max: self.max }
    }
}

/// What a run did: the recorder's report (MineStudio's "yes rate" and more).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Summary {
    /// Env id.
    pub env: String,
    /// Agent name.
    pub agent: String,
    /// Run seed.
    pub seed: u64,
    /// `sync` or `async`.
    pub mode: String,
    /// Worker threads.
    pub workers: usize,
    /// Envs per worker.
    pub envs_per_worker: usize,
    /// Episodes completed (not counting given-up ones).
    pub episodes: u64,
    /// Steps in completed episodes.
    pub steps: u64,
    /// Episode attempts made: completed episodes plus failed attempts.
    pub attempts: u64,
    /// Env and agent rebuilds.
    pub restarts: u64,
    /// Episodes given up after every attempt failed (or with no worker left).
    pub given_up: u64,
    /// Indices of the given-up episodes.
    pub given_up_episodes: Vec<u64>,
    /// Episodes of the target this run did not finish because no live worker was
    /// left (every one used up its restarts): never attempted, interrupted with
    /// attempts left, or finished after such an episode (episodes are reported in
    /// index order). Nothing was reported for them, so a resumed run runs them.
    pub untried: u64,
    /// Episodes finished past a step target (the target is a prefix of indices).
    pub discarded: u64,
    /// Completed episodes that terminated.
    pub terminated: u64,
    /// Completed episodes that were truncated.
    pub truncated: u64,
    /// Label → number of episodes with it.
    pub labels: BTreeMap<String, u64>,
    /// Label → share of completed episodes with it.
    pub label_rates: BTreeMap<String, f64>,
    /// Episode returns.
    #[serde(rename = "return")]
    pub ret: Stat,
    /// Episode lengths.
    pub length: Stat,
    /// Steps per second of wall time.
    pub steps_per_sec: f64,
    /// Episodes per second of wall time.
    pub episodes_per_sec: f64,
    /// Wall time of the run, seconds.
    pub seconds: f64,
    /// Failed attempts (the first 1000).
    pub faults: Vec<Fault>,
    /// Number of failed attempts.
    pub failed_attempts: u64,
    /// Values the envs returned that Gymnasium's checker would warn about (outside
    /// the observation space, say): each kind once, the first 100.
    pub warnings: Vec<String>,
    /// How `envs_per_worker` was chosen when the run did not say (`rollway run`
    /// without `--envs-per-worker`): the sizes tried and their pace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calibration: Option<crate::tune::Calibration>,
    /// What ran the agent's model, when it has one (`Agent::about`): an `onnx:`
    /// agent's engine, version, device and threads, and its calls' time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inference: Option<String>,
}

impl Summary {
    /// What the run left undone, when it did: the one text every front (the CLI's
    /// exit 1, Python's `IncompleteRunError`, Ray's) gives for a run that ended short.
    pub fn shortfall(&self) -> Option<String> {
        // The last error of a given-up episode, else the last failure (what retired the workers).
        let given_up = self.faults.iter().rev().find(|f| self.given_up_episodes.contains(&f.episode));
        let error = given_up.or(self.faults.last()).map(|f| f.error.as_str());
        shortfall(self.given_up, self.untried, error)
    }
}

/// [`Summary::shortfall`] from its parts (`error`: the last failure, the reason),
/// for summaries made elsewhere (a Ray run's, from its dataset's index).
pub fn shortfall(given_up: u64, untried: u64, error: Option<&str>) -> Option<String> {
    let mut parts = Vec::new();
    if given_up > 0 {
        parts.push(format!("{given_up} episode(s) given up after failed attempts"));
    }
    if untried > 0 {
        parts.push(format!("{untried} episode(s) untried: every worker used up its max_restarts"));
    }
    let why = error.map_or(String::new(), |e| format!(" (last error: {e})"));
    (!parts.is_empty()).then(|| parts.join("; ") + &why)
}

/// The summary's books: episodes counted as they are released, in index order.
/// A run keeps them as it goes ([`Delivery`]); [`Summary::tally`] keeps them for
/// episodes already recorded (a Ray run's, from its dataset's index).
#[derive(Default)]
struct Books {
    summary: Summary,
    ret: Running,
    len: Running,
}

impl Books {
    /// Counts a labelled episode.
    fn count(&mut self, ep: &EpisodeResult) {
        let s = &mut self.summary;
        if ep.status == Status::GivenUp {
            s.given_up += 1;
            s.given_up_episodes.push(ep.run_index);
            return;
        }
        s.episodes += 1;
        s.steps += ep.length;
        match ep.status {
            Status::Terminated => s.terminated += 1,
            _ => s.truncated += 1,
        }
        for l in &ep.labels {
            *s.labels.entry(l.label.clone()).or_default() += 1;
        }
        self.ret.push(ep.ret);
        self.len.push(ep.length as f64);
    }

    /// The summary of what was counted, over `seconds` of wall time.
    fn close(mut self, seconds: f64) -> Summary {
        let s = &mut self.summary;
        s.ret = self.ret.stat();
        s.length = self.len.stat();
        // Given-up episodes' attempts are all among the failed ones.
        s.attempts = s.episodes + s.failed_attempts;
        s.seconds = seconds;
        s.steps_per_sec = s.steps as f64 / seconds.max(1e-9);
        s.episodes_per_sec = s.episodes as f64 / seconds.max(1e-9);
        let n = s.episodes.max(1) as f64;
        s.label_rates = s.labels.iter().map(|(k, &v)| (k.clone(), v as f64 / n)).collect();
        self.summary
    }
}

impl Summary {
    /// The most failed attempts a summary lists ([`Summary::faults`]); all are counted.
    pub const MAX_FAULTS: usize = 1000;
    /// The most distinct warnings a summary lists.
    pub const MAX_WARNINGS: usize = 100;

    /// Lists a failed attempt, if fewer than [`Summary::MAX_FAULTS`] are listed
    /// (counting it is the caller's: `failed_attempts`).
    pub fn keep_fault(&mut self, f: Fault) {
        if self.faults.len() < Self::MAX_FAULTS {
            self.faults.push(f);
        }
    }

    /// Lists a warning once, if fewer than [`Summary::MAX_WARNINGS`] are listed.
    pub fn keep_warning(&mut self, w: String) {
        if self.warnings.len() < Self::MAX_WARNINGS && !self.warnings.contains(&w) {
            self.warnings.push(w);
        }
    }

    /// The summary of episodes already labelled (in index order), over `seconds`
    /// of wall time, as a run that made them would have counted them; `base`
    /// carries what the episodes do not tell (names, failed attempts, faults,
    /// restarts) and no episodes of its own.
    pub fn tally<'e>(base: Summary, episodes: impl IntoIterator<Item = &'e EpisodeResult>, seconds: f64) -> Summary {
        let mut books = Books { summary: base, ..Books::default() };
        for ep in episodes {
            books.count(ep);
        }
        books.close(seconds)
    }
}

/// Hands a run's finished episodes on in index order, each through three
/// stages: the filters label it, the books count it, the caller's observer
/// takes it.
pub(crate) struct Delivery<'a> {
    target: Target,
    filters: &'a [Box<dyn EpisodeLabeler>],
    observer: &'a mut dyn Observer,
    /// Reorder buffer: slot `k` holds episode `next + k` once it has finished.
    pending: VecDeque<Option<EpisodeResult>>,
    next: u64,
    /// Steps of episodes done before this run started (resume), for the step target.
    prior_steps: u64,
    finished_steps: u64,
    complete: bool,
    books: Books,
    /// The first error the observer returned; the run stops on it.
    pub sink_error: Option<crate::SinkError>,
}

impl<'a> Delivery<'a> {
    pub fn new(
        target: Target,
        start: u64,
        prior_steps: u64,
        filters: &'a [Box<dyn EpisodeLabeler>],
        observer: &'a mut dyn Observer,
    ) -> Self {
        Delivery {
            target,
            filters,
            observer,
            pending: VecDeque::new(),
            next: start,
            prior_steps,
            finished_steps: prior_steps,
            complete: false,
            books: Books::default(),
            sink_error: None,
        }
    }

    /// Takes a finished episode; returns true once enough steps have finished (in
    /// any order) that no fresh episode is needed for a step target.
    pub fn add(&mut self, ep: EpisodeResult) -> bool {
        self.finished_steps += ep.length;
        if self.complete {
            self.books.summary.discarded += 1;
            return true;
        }
        let k = (ep.run_index - self.next) as usize;
        if self.pending.len() <= k {
            self.pending.resize_with(k + 1, || None);
        }
        self.pending[k] = Some(ep);
        while let Some(Some(_)) = self.pending.front() {
            let mut ep = self.pending.pop_front().flatten().expect("front is Some");
            self.next += 1;
            // Three stages, in order: the filters label the episode, the books
            // count it, the observer (the caller's sinks) takes it.
            if ep.status != Status::GivenUp {
                filter::apply(self.filters, &mut ep);
            }
            self.books.count(&ep);
            if self.sink_error.is_none() {
                if let Err(e) = self.observer.on_episode(ep) {
                    self.sink_error = Some(e);
                }
            }
            if let Target::Steps(n) = self.target {
                if self.prior_steps + self.books.summary.steps >= n {
                    self.complete = true;
                    self.books.summary.discarded += self.pending.iter().flatten().count() as u64;
                    self.pending.clear();
                    break;
                }
            }
        }
        matches!(self.target, Target::Steps(n) if self.finished_steps >= n)
    }

    /// Takes the episodes and faults a block carries; true as for [`Delivery::add`].
    pub fn take_from(&mut self, b: &mut crate::worker::AgentBlock) -> bool {
        for f in b.faults.drain(..) {
            self.fault(f);
        }
        b.restarts = 0;
        for w in b.warnings.drain(..) {
            self.books.summary.keep_warning(w);
        }
        let mut covered = false;
        for ep in b.finished.drain(..) {
            covered |= self.add(ep);
        }
        covered
    }

    pub fn fault(&mut self, f: Fault) {
        self.books.summary.failed_attempts += 1;
        self.books.summary.keep_fault(f);
    }

    pub fn progress(&mut self, p: &crate::Progress) {
        if let Err(e) = self.observer.on_progress(p) {
            self.sink_error.get_or_insert(e);
        }
    }

    /// The books so far.
    pub fn summary(&self) -> &Summary {
        &self.books.summary
    }

    /// Steps folded so far, counting resumed ones.
    pub fn steps_so_far(&self) -> u64 {
        self.prior_steps + self.books.summary.steps
    }

    /// Episodes folded so far (completed or given up), counting resumed ones.
    pub fn folded(&self) -> u64 {
        self.next
    }

    /// Ends the books; `end` is one past the last index the run was to report.
    pub fn finish(mut self, seconds: f64, end: u64) -> Summary {
        // Episodes still buffered wait behind one that never finished: reporting
        // them would leave a gap in the index order, so they are left to a later run.
        self.pending.clear();
        self.books.summary.untried = if self.complete { 0 } else { end.saturating_sub(self.next) };
        self.books.close(seconds)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::{filter, Generator, RunConfig};

    /// A run many writers ran is summed up from its recorded episodes: the same
    /// books as the run's own, so the same numbers.
    #[test]
    fn tallied_episodes_give_the_run_summary() {
        let cfg = RunConfig { env: "CartPole-v1".into(), agent: "random".into(), target: Target::Episodes(40), ..Default::default() };
        let envs = Arc::new(rollway_envs::Registered::new(&cfg.env, cfg.env_params.clone()));
        let agents = Arc::new(rollway_agents::Registered::new(&cfg.agent, cfg.agent_params.clone()));
        let filters = vec![filter::parse("kind=length,min=20,label=long").unwrap()];
        let mut episodes: Vec<EpisodeResult> = Vec::new();
        let run = Generator::new(cfg, envs, agents, filters).unwrap().run(&mut episodes).unwrap();
        let base = Summary { env: run.env.clone(), failed_attempts: run.failed_attempts, ..Summary::default() };
        let t = Summary::tally(base, &episodes, run.seconds);
        assert_eq!(
            (t.episodes, t.steps, t.given_up, t.terminated, t.truncated),
            (run.episodes, run.steps, run.given_up, run.terminated, run.truncated)
        );
        assert_eq!((&t.labels, &t.label_rates, t.ret, t.length), (&run.labels, &run.label_rates, run.ret, run.length));
        assert_eq!((t.attempts, t.steps_per_sec), (run.attempts, run.steps_per_sec));
        assert!(run.labels["long"] > 0 && run.labels["long"] < run.episodes, "{:?}", run.labels);
    }
}
