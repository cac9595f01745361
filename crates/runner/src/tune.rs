//! Fast defaults: envs per worker chosen by measuring, not guessed.
//!
//! The best number of envs per worker differs by three orders of magnitude between
//! envs. A cheap env (CartPole: ~50 ns a step) wants a thousand a worker, so that a
//! round's fixed cost (a hand-off to the central stage and back, tens of µs) is
//! spread over many steps; an env whose reset builds a world (PixelMine) wants
//! few, since every extra slot is one more world built and kept warm in the cache,
//! and a run whose target is a few long episodes gains nothing from slots that
//! would sit idle. No formula over one env's step time predicted both, so
//! [`calibrate`] measures: it runs the real generator for a moment with a few
//! candidate sizes, from small to large, stopping once a size scores clearly worse
//! than the best so far, and keeps the best. Each probe costs [`WARMUP`] + [`WINDOW`]; a
//! calibration ~0.2–1 s, paid only by runs that did not say what they want.
//!
//! A probe's pace is not all a size is worth: when the target is reached, the
//! episodes still running are cut (a step target) or their slots idle (an episode
//! target), about an episode a slot. So a size is scored by its pace times the
//! share of the run's episodes that is not this tail, `N / (N + slots)`, with `N`
//! the episodes the target needs (from the probes' mean length for a step
//! target). Probes go on while a size scores at least [`GIVE_UP`] of the best so
//! far (one dip is as likely noise on a busy machine as a real turn), and while
//! the calibration has cost less than [`BUDGET`] of the run it is for, as the
//! best pace so far predicts it: a short run is not made slower by measuring it.
//!
//! Nor are larger sizes tried when a step at the smallest already costs more than
//! [`COSTLY_STEP`] of a worker's time: a round of such steps dwarfs the round's
//! fixed cost, so more envs can gain little, and their probes would mislead. A
//! probe sees only the first moments of its episodes, and the more envs share a
//! window, the less of each episode it sees (PixelMine's first steps are cheaper
//! than its later ones: 64 envs a worker probe at 75k steps/s and then run at 39k).
//! The bar sits well above what a round's fixed cost alone spreads over the
//! smallest size on any machine seen: PixelMine with its miner agent costs ~55 µs a
//! step of a worker's time, a cheap env's round 0.7–6 µs a step (CartPole at 8 envs
//! a worker: 2–3M steps/s on one 2-core VM, 329k on a faster one whose thread
//! wake-ups cost more), where a bar of 5 µs once kept that machine at 8 envs and 75%
//! of the hand-tuned pace. A smallest-size probe that reads as costly is taken
//! again before it ends the search, when the run is long enough that the second look
//! costs under [`REPROBE_SHARE`] of it: one stall of the machine in a 120 ms window
//! (seen: 73k steps/s for CartPole, 2.6M on the next try) reads the same as a costly
//! env, and the faster of the two readings counts. (A short run of a really costly env,
//! PixelMine's 300k steps, is not worth the second look: 5% of its time.)
//!
//! When the run left its mode open too, one more probe runs sync at the chosen
//! size, and sync is kept when it scores [`SYNC_MARGIN`] better than async's best.
//! Sync can only win when the envs step in the run's own threads and each worker
//! has a core: then the central thread steps worker 0 and the threads poll for each
//! other (`pool.rs`, `spin.rs`), and with a cheap agent a round costs less than
//! async's hand-offs (2 × 1024 CartPole envs: ~25M steps/s against ~22M). A
//! costly agent makes sync wait out every call, and its probe says so.
//!
//! The pace is the agent's rows acted on per second ([`Progress::acted`]), which
//! moves with every round, where completed steps move only as episodes end. The
//! probes' episodes are thrown away; the run itself starts afresh, so calibrating
//! changes how fast a run goes, never what it records.

use std::sync::Arc;
use std::time::Duration;

use rollway_core::{AgentFactory, EnvFactory};
use serde::Serialize;

use crate::{Error, Generator, Mode, Observer, Progress, Result, RunConfig, SinkError, Target};

/// Envs per worker tried, in order.
pub const CANDIDATES: [usize; 5] = [8, 64, 256, 1024, 4096];
/// Time a probe runs before it is timed (threads start, envs are built); the window
/// also waits for every block of envs to have stepped once ([`Progress::warm`]):
/// envs hosted in processes take a second or so to start, one process after another.
pub const WARMUP: Duration = Duration::from_millis(60);
/// A probe whose envs are not all up by then is timed anyway (a slot whose env keeps failing).
pub const WARM_LIMIT: Duration = Duration::from_secs(20);
/// Time a probe is timed over.
pub const WINDOW: Duration = Duration::from_millis(120);
/// How much better sync must score than async's best to be chosen: async keeps the
/// envs stepping while the agent works, so it stays the choice when the two are close.
pub const SYNC_MARGIN: f64 = 1.05;
/// Larger sizes are not tried once one scores below this share of the best.
pub const GIVE_UP: f64 = 0.75;
/// The most a calibration may cost, as a share of the run's predicted time.
pub const BUDGET: f64 = 0.2;
/// The most a second look at a costly-seeming smallest size may cost, as a share of
/// the run's predicted time (see the module docs).
pub const REPROBE_SHARE: f64 = 0.03;
/// A step costlier than this (a worker's time, at the smallest size) ends the search.
pub const COSTLY_STEP: Duration = Duration::from_micros(20);

/// One size tried.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Probe {
    /// Envs per worker.
    pub envs_per_worker: usize,
    /// The mode probed.
    pub mode: Mode,
    /// Env steps a second over the probe's window.
    pub steps_per_s: f64,
    /// The pace less the run's expected tail (see the module docs).
    pub score: f64,
}

/// What [`calibrate`] chose, and what it measured to choose it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Calibration {
    /// The envs per worker chosen.
    pub envs_per_worker: usize,
    /// The mode chosen: the run's own, or sync when the run left the mode open
    /// (`choose_mode`) and sync probed faster.
    pub mode: Mode,
    /// The probes, in order: sizes in the run's mode, then sync at the chosen size.
    pub probes: Vec<Probe>,
    /// Time spent calibrating.
    pub seconds: f64,
    /// Where a run's Python envs step, when the front offered a choice (the engine's `host`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<HostChoice>,
}

/// Where a run's Python envs step, and what was measured to choose it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HostChoice {
    /// `"inline"` (in the run's worker thread, under the front's interpreter) or `"process"` (env processes).
    pub host: String,
    /// Why: `"asked"` (the caller named it), `"measured"`, or what ruled the other out.
    pub why: String,
    /// Env steps a second measured inline, when measured.
    pub inline_steps_per_s: Option<f64>,
    /// Env steps a second measured in env processes, when measured.
    pub process_steps_per_s: Option<f64>,
}

/// Env steps a second of `base` as it is (its workers, envs per worker and mode),
/// timed as [`calibrate`] times a size, once every env is up, and the mean length
/// of the episodes that ended meanwhile.
pub fn measure(base: &RunConfig, envs: Arc<dyn EnvFactory>, agents: Arc<dyn AgentFactory>) -> Result<(f64, Option<f64>)> {
    probe(base, base.envs_per_worker, envs, agents)
}

/// Times the generator of `base` (its workers and mode, nothing recorded) at each
/// of [`CANDIDATES`] up to what the target can use, and returns the fastest size.
/// Sizes stop growing once one is slower than the best so far, or once the
/// target would leave slots idle (fewer than two episodes a slot). With
/// `choose_mode`, sync is then tried at that size (see the module docs).
pub fn calibrate(base: &RunConfig, envs: Arc<dyn EnvFactory>, agents: Arc<dyn AgentFactory>, choose_mode: bool) -> Result<Calibration> {
    let started = std::time::Instant::now();
    let mut probes: Vec<Probe> = Vec::new();
    let mut best = (CANDIDATES[0], 0.0);
    let mut length = None;
    let over_budget = |best: f64, length| run_seconds(base, best, length).is_some_and(|t| started.elapsed().as_secs_f64() > BUDGET * t);
    let costly = |rate: f64| base.workers as f64 / rate.max(1e-9) > COSTLY_STEP.as_secs_f64();
    // The second look costs about what the calibration has so far.
    let reprobe_pays =
        |rate, length| run_seconds(base, rate, length).is_none_or(|t| 2.0 * started.elapsed().as_secs_f64() <= REPROBE_SHARE * t);
    for &n in &CANDIDATES {
        if n > CANDIDATES[0]
            && (n > useful_size(base, length) || over_budget(best.1, length) || probes.first().is_some_and(|p| costly(p.steps_per_s)))
        {
            break;
        }
        let (mut rate, mut mean_length) = probe(base, n, envs.clone(), agents.clone())?;
        if n == CANDIDATES[0] && costly(rate) && reprobe_pays(rate, mean_length) {
            // A stall reads as a costly env: look once more (see the module docs).
            let (again, again_length) = probe(base, n, envs.clone(), agents.clone())?;
            if again > rate {
                (rate, mean_length) = (again, again_length.or(mean_length));
            }
        }
        length = mean_length.or(length);
        let score = rate * tail_share(base, n, length);
        probes.push(Probe { envs_per_worker: n, mode: base.mode, steps_per_s: rate, score });
        if score > best.1 {
            best = (n, score);
        } else if score < best.1 * GIVE_UP {
            break;
        }
    }
    let mut mode = base.mode;
    if choose_mode && sync_can_pay(base, envs.as_ref()) && !over_budget(best.1, length) {
        let sync = RunConfig { mode: Mode::Sync, ..base.clone() };
        let (rate, _) = probe(&sync, best.0, envs, agents)?;
        let score = rate * tail_share(base, best.0, length);
        probes.push(Probe { envs_per_worker: best.0, mode: Mode::Sync, steps_per_s: rate, score });
        if score > best.1 * SYNC_MARGIN {
            mode = Mode::Sync;
        }
    }
    Ok(Calibration { envs_per_worker: best.0, mode, probes, seconds: started.elapsed().as_secs_f64(), host: None })
}

/// Whether a sync run of `base` would poll with worker 0 on the central thread,
/// the only way sync can beat async (see the module docs).
fn sync_can_pay(base: &RunConfig, envs: &dyn EnvFactory) -> bool {
    // A sync run has a thread a worker (worker 0 is the central thread).
    base.mode == Mode::Async && crate::spin::polls(base.workers, envs.steps_in_worker())
}

/// Whether the target of `base` can use more than the smallest size, so that
/// calibrating has a choice to make (for a step target, until episode lengths are known, it can).
pub fn has_choice(base: &RunConfig) -> bool {
    useful_size(base, None) > CANDIDATES[0]
}

/// The most envs per worker the target keeps busy: two episodes a slot or more.
fn useful_size(base: &RunConfig, mean_length: Option<f64>) -> usize {
    let slots_for = |episodes: f64| (episodes / (2.0 * base.workers as f64)).floor().max(1.0) as usize;
    match base.target {
        Target::Episodes(n) => slots_for(n as f64),
        Target::Steps(s) => mean_length.map_or(usize::MAX, |l| slots_for(s as f64 / l.max(1.0))),
    }
}

/// How long the run will take at `rate` steps a second, when that can be told.
fn run_seconds(base: &RunConfig, rate: f64, mean_length: Option<f64>) -> Option<f64> {
    let steps = match base.target {
        Target::Steps(s) => s as f64,
        Target::Episodes(e) => e as f64 * mean_length?,
    };
    (rate > 0.0).then(|| steps / rate)
}

/// The share of a run's episodes that are not its tail at `n` envs per worker.
fn tail_share(base: &RunConfig, n: usize, mean_length: Option<f64>) -> f64 {
    let episodes = match base.target {
        Target::Episodes(e) => e as f64,
        Target::Steps(s) => match mean_length {
            Some(l) => s as f64 / l.max(1.0),
            None => return 1.0,
        },
    };
    episodes / (episodes + (base.workers * n) as f64)
}

/// One probe: the steps a second at `n` envs per worker, and the mean length of
/// the episodes that ended during it (if any did).
fn probe(base: &RunConfig, n: usize, envs: Arc<dyn EnvFactory>, agents: Arc<dyn AgentFactory>) -> Result<(f64, Option<f64>)> {
    let cfg = RunConfig {
        envs_per_worker: n,
        target: Target::Steps(u64::MAX / 4),
        record_steps: false,
        record_infos: false,
        start_index: 0,
        start_steps: 0,
        ..base.clone()
    };
    let mut timer = Timer::default();
    match Generator::new(cfg, envs, agents, Vec::new())?.run(&mut timer) {
        Ok(_) | Err(Error::Sink(_)) => {}
        Err(e) => return Err(e),
    }
    let rate = match (timer.from, timer.to) {
        (Some((t0, a0)), Some((t1, a1))) if t1 > t0 => (a1 - a0) as f64 / (t1 - t0).as_secs_f64(),
        _ => 0.0,
    };
    let length = (timer.episodes > 0).then(|| timer.steps as f64 / timer.episodes as f64);
    Ok((rate, length))
}

/// Marks the window's ends and stops the probe at the second.
#[derive(Default)]
struct Timer {
    from: Option<(Duration, u64)>,
    to: Option<(Duration, u64)>,
    episodes: u64,
    steps: u64,
}

impl Observer for Timer {
    fn on_episode(&mut self, episode: crate::EpisodeResult) -> std::result::Result<(), SinkError> {
        self.episodes += 1;
        self.steps += episode.length;
        Ok(())
    }

    fn on_progress(&mut self, p: &Progress) -> std::result::Result<(), SinkError> {
        match self.from {
            None if p.elapsed >= WARMUP && (p.warm || p.elapsed >= WARM_LIMIT) => self.from = Some((p.elapsed, p.acted)),
            Some((t0, _)) if p.elapsed >= t0 + WINDOW => {
                self.to = Some((p.elapsed, p.acted));
                return Err("probe done".into());
            }
            _ => {}
        }
        Ok(())
    }
}

/// The mode a run gets when it names none, before calibrating: async, since the
/// agent works on one block while the envs step the other, so a costly agent (a
/// policy network) never leaves the envs idle. With a cheap agent and envs in the
/// worker threads, sync can be faster (it steps worker 0 on the central thread and
/// polls: 256 CartPole envs on 2 workers, ~24M steps/s against async's 16–21M;
/// bench/RESULTS.md, issue 12 follow-ups); a calibrating run measures that and
/// takes sync when it wins ([`calibrate`], `choose_mode`).
pub const DEFAULT_MODE: Mode = Mode::Async;

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(workers: usize, target: Target) -> RunConfig {
        RunConfig { env: "CartPole-v1".into(), agent: "random".into(), workers, target, ..Default::default() }
    }

    fn factories(c: &RunConfig) -> (Arc<dyn EnvFactory>, Arc<dyn AgentFactory>) {
        (
            Arc::new(rollway_envs::Registered::new(&c.env, c.env_params.clone())),
            Arc::new(rollway_agents::Registered::new(&c.agent, c.agent_params.clone())),
        )
    }

    #[test]
    fn sizes_stop_where_the_target_would_leave_slots_idle() {
        assert_eq!(useful_size(&cfg(2, Target::Episodes(40)), None), 10);
        assert_eq!(useful_size(&cfg(2, Target::Episodes(3)), None), 1);
        // A step target needs the episodes' length to say; unknown, it does not limit.
        assert_eq!(useful_size(&cfg(2, Target::Steps(1_000_000)), None), usize::MAX);
        assert_eq!(useful_size(&cfg(2, Target::Steps(1_000_000)), Some(1000.0)), 250);
        assert!(has_choice(&cfg(2, Target::Episodes(40))) && !has_choice(&cfg(2, Target::Episodes(32))));
    }

    #[test]
    fn the_tail_weighs_more_the_fewer_episodes_a_slot_runs() {
        let c = cfg(2, Target::Episodes(100));
        assert_eq!(tail_share(&c, 50, None), 0.5);
        assert!(tail_share(&c, 8, None) > tail_share(&c, 64, None));
        assert_eq!(tail_share(&cfg(2, Target::Steps(10_000)), 8, None), 1.0);
        assert_eq!(tail_share(&cfg(2, Target::Steps(10_000)), 8, Some(100.0)), 100.0 / 116.0);
        assert_eq!(run_seconds(&cfg(1, Target::Steps(1000)), 500.0, None), Some(2.0));
        assert_eq!(run_seconds(&cfg(1, Target::Episodes(10)), 500.0, None), None);
    }

    #[test]
    fn calibration_measures_candidates_and_keeps_the_best_scoring_one() {
        let c = cfg(1, Target::Steps(u64::MAX / 8));
        let (envs, agents) = factories(&c);
        let cal = calibrate(&c, envs, agents, false).unwrap();
        assert!(!cal.probes.is_empty() && cal.probes.iter().all(|p| p.steps_per_s > 0.0), "{cal:?}");
        let sizes: Vec<usize> = cal.probes.iter().map(|p| p.envs_per_worker).collect();
        assert_eq!(sizes[..], CANDIDATES[..sizes.len()], "tried in order, from the smallest");
        let best = cal.probes.iter().max_by(|a, b| a.score.total_cmp(&b.score)).unwrap();
        assert_eq!(cal.envs_per_worker, best.envs_per_worker);
    }

    #[test]
    fn a_target_of_few_episodes_tries_only_the_smallest_size() {
        let c = cfg(2, Target::Episodes(40));
        let (envs, agents) = factories(&c);
        let cal = calibrate(&c, envs, agents, false).unwrap();
        assert_eq!((cal.envs_per_worker, cal.probes.len()), (CANDIDATES[0], 1));
    }

    #[test]
    fn a_run_free_to_choose_its_mode_gets_sync_only_where_the_sync_probe_wins() {
        let c = RunConfig { mode: Mode::Async, ..cfg(1, Target::Steps(u64::MAX / 8)) };
        let (envs, agents) = factories(&c);
        let fixed = calibrate(&c, envs.clone(), agents.clone(), false).unwrap();
        assert!(fixed.mode == Mode::Async && fixed.probes.iter().all(|p| p.mode == Mode::Async), "{fixed:?}");
        let free = calibrate(&c, envs, agents, true).unwrap();
        let (sync, sizes) = free.probes.split_last().unwrap();
        assert_eq!((sync.mode, sync.envs_per_worker), (Mode::Sync, free.envs_per_worker), "one sync probe, at the chosen size");
        let best = sizes.iter().map(|p| p.score).fold(0.0, f64::max);
        assert_eq!(free.mode == Mode::Sync, sync.score > best * SYNC_MARGIN, "{free:?}");
    }

    /// CartPole as a host whose envs step in processes of their own would be.
    struct Elsewhere(Arc<dyn EnvFactory>);

    impl EnvFactory for Elsewhere {
        fn name(&self) -> &str {
            self.0.name()
        }
        fn make(&self) -> rollway_core::Result<Box<dyn rollway_core::Env>> {
            self.0.make()
        }
        fn steps_in_worker(&self) -> bool {
            false
        }
    }

    #[test]
    fn sync_is_not_tried_where_it_cannot_poll_or_the_run_named_its_mode() {
        let c = RunConfig { mode: Mode::Async, ..cfg(1, Target::Steps(u64::MAX / 8)) };
        let (envs, agents) = factories(&c);
        let cal = calibrate(&c, Arc::new(Elsewhere(envs.clone())), agents.clone(), true).unwrap();
        assert!(cal.mode == Mode::Async && cal.probes.iter().all(|p| p.mode == Mode::Async), "envs in processes: {cal:?}");
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let crowded = RunConfig { workers: cores + 1, target: Target::Steps(u64::MAX / 8), ..c.clone() };
        assert!(!sync_can_pay(&crowded, envs.as_ref()), "more workers than cores");
        let named = RunConfig { mode: Mode::Sync, ..c };
        assert!(!sync_can_pay(&named, envs.as_ref()), "a sync run has nothing to switch to");
    }

    fn at(ms: u64, acted: u64, warm: bool) -> Progress {
        let elapsed = Duration::from_millis(ms);
        Progress { episodes: 0, steps: 0, target: Target::Steps(1), elapsed, restarts: 0, given_up: 0, acted, warm }
    }

    #[test]
    fn the_window_starts_once_every_block_has_stepped() {
        // Envs in processes: one block steps from 100 ms, the last from 900 ms.
        let mut t = Timer::default();
        for (ms, acted) in [(70, 0), (100, 8), (500, 800)] {
            assert!(t.on_progress(&at(ms, acted, false)).is_ok());
        }
        assert_eq!(t.from, None, "not timed while a block has not stepped");
        assert!(t.on_progress(&at(900, 900, true)).is_ok());
        assert_eq!(t.from, Some((Duration::from_millis(900), 900)));
        assert!(t.on_progress(&at(1000, 5000, true)).is_ok());
        assert!(t.on_progress(&at(1020, 6000, true)).is_err(), "the probe ends after its window");
        assert_eq!(t.to, Some((Duration::from_millis(1020), 6000)));
        // A block that never comes up is waited for only so long.
        let mut stuck = Timer::default();
        assert!(stuck.on_progress(&at(WARM_LIMIT.as_millis() as u64, 10, false)).is_ok());
        assert!(stuck.from.is_some());
    }
}
