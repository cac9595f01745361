//! The generator runs any env and agent factory (the design seam of issue 12), not
//! just the built-in registries, and however a run ends, its worker threads have
//! ended when `run` returns.
//!
//! Everything here is defined in the test: a random walk env, an agent that uses
//! its random stream and recurrent memory, and factories that count what they built.
//! A worker thread owns its envs, so "every env has been dropped when `run`
//! returns" means "every worker thread has been joined"; each env's drop takes a
//! while, so a worker left running would be caught still dropping them.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rand::Rng;
use rollway_core::{
    ActBatch, Agent, AgentFactory, BlockOptions, DType, Env, EnvBlock, EnvFactory, EnvSpec, Error, Info, Op, Result, RowMut, RowRef, Rows,
    SlotResult, Space, StepOutcome,
};
use rollway_runner::{EpisodeResult, Generator, Mode, Observer, Progress, RunConfig, SinkError, Target};

/// Counts what the factories built and what is still alive.
#[derive(Default)]
struct Books {
    made: AtomicUsize,
    live: AtomicUsize,
    agents: AtomicUsize,
}

/// `Walk-v0`: a walk on the integers from a seeded start; ends 6 away from 0 or after 40 steps.
struct Walk {
    spec: EnvSpec,
    books: Arc<Books>,
    /// An episode whose seed is this makes `info` panic on its third step.
    panic_info_seed: Option<u64>,
    seed: u64,
    pos: i64,
    t: u64,
}

impl Env for Walk {
    fn spec(&self) -> &EnvSpec {
        &self.spec
    }
    fn reset(&mut self, seed: Option<u64>, _options: Option<&Info>, mut obs: RowMut<'_>) -> Result<()> {
        (self.seed, self.t) = (seed.unwrap_or(0), 0);
        self.pos = (self.seed % 7) as i64 - 3;
        obs.leaf_mut::<f32>(0).copy_from_slice(&[self.pos as f32, 0.0]);
        Ok(())
    }
    fn step(&mut self, action: RowRef<'_>, mut obs: RowMut<'_>) -> Result<StepOutcome> {
        self.pos += action.discrete(0) - 1;
        self.t += 1;
        obs.leaf_mut::<f32>(0).copy_from_slice(&[self.pos as f32, self.t as f32]);
        Ok(StepOutcome { reward: -(self.pos.abs() as f64), terminated: self.pos.abs() >= 6, truncated: self.t >= 40 })
    }
    fn info(&self) -> Info {
        // A panic here costs the info, nothing else (the run reads infos under guard).
        assert!(self.panic_info_seed != Some(self.seed) || self.t < 3, "Walk-v0: info panics");
        let mut i = Info::new();
        i.insert("pos", self.pos);
        i
    }
}

impl Drop for Walk {
    fn drop(&mut self) {
        // Slow enough that a worker still dropping its envs after `run` returned is seen.
        std::thread::sleep(Duration::from_millis(20));
        self.books.live.fetch_sub(1, Ordering::SeqCst);
    }
}

#[derive(Default)]
struct Walks {
    books: Arc<Books>,
    /// `make` calls (counting from 1) that fail.
    fail_makes: Vec<usize>,
    panic_info_seed: Option<u64>,
    /// The block of this `block` call (counting from 1) panics in its first round.
    panicking_block: Option<usize>,
    blocks: AtomicUsize,
}

/// A block whose host broke in a way its own fault handling did not catch.
struct Broken;

impl EnvBlock for Broken {
    fn run(&mut self, _ops: &[(usize, Op)], _act: &Rows, _obs: &mut Rows, _out: &mut Vec<SlotResult>) {
        panic!("the env host broke");
    }
    fn info(&mut self, _slot: usize) -> Info {
        Info::new()
    }
}

impl EnvFactory for Walks {
    fn name(&self) -> &str {
        "walk"
    }
    fn make(&self) -> Result<Box<dyn Env>> {
        let n = self.books.made.fetch_add(1, Ordering::SeqCst) + 1;
        if self.fail_makes.contains(&n) {
            return Err(Error::Env { env: "Walk-v0".into(), message: format!("simulator would not start (make call {n})") });
        }
        let spec = EnvSpec {
            id: "Walk-v0".into(),
            observation_space: Space::boxed(DType::F32, &[2], -100.0, 100.0)?,
            action_space: Space::discrete(3, 0)?,
            max_episode_steps: None,
            render_fps: None,
            reward_threshold: None,
            gymnasium_spec: None,
            agents: None,
        };
        self.books.live.fetch_add(1, Ordering::SeqCst);
        Ok(Box::new(Walk { spec, books: self.books.clone(), panic_info_seed: self.panic_info_seed, seed: 0, pos: 0, t: 0 }))
    }
    fn block(&self, _n: usize, _options: BlockOptions) -> Option<Box<dyn EnvBlock>> {
        let n = self.blocks.fetch_add(1, Ordering::SeqCst) + 1;
        (self.panicking_block == Some(n)).then(|| Box::new(Broken) as Box<dyn EnvBlock>)
    }
}

/// Every other step leans right, unless its random stream says stay; memory counts the steps.
struct Drift {
    fail: bool,
}

impl Agent for Drift {
    fn act(&mut self, batch: &mut ActBatch<'_>) -> Result<()> {
        if self.fail {
            return Err(Error::Agent { agent: "drift".into(), message: "no policy today".into() });
        }
        batch.for_each_row(|mut row| {
            if row.memory.is_empty() {
                row.memory.push(0.0);
            }
            row.memory[0] += 1.0;
            let lean = if (row.memory[0] as u64).is_multiple_of(2) { 2 } else { 0 };
            row.action.set_discrete(0, if row.rng.random_range(0..3) == 0 { 1 } else { lean });
            Ok(())
        })
    }
}

#[derive(Default)]
struct Drifts {
    books: Arc<Books>,
    /// Agents act with an error.
    fail_act: bool,
    /// At most this many agents can be made.
    max_made: Option<usize>,
}

impl AgentFactory for Drifts {
    fn name(&self) -> &str {
        "drift"
    }
    fn make(&self, spec: &EnvSpec) -> Result<Box<dyn Agent>> {
        if spec.action_space != Space::discrete(3, 0)? {
            return Err(Error::Param {
                name: "agent".into(),
                message: format!("drift needs Discrete(3) actions, not {}", spec.action_space.describe()),
            });
        }
        let n = self.books.agents.fetch_add(1, Ordering::SeqCst) + 1;
        if self.max_made.is_some_and(|m| n > m) {
            return Err(Error::Agent { agent: "drift".into(), message: "cannot load the policy again".into() });
        }
        Ok(Box::new(Drift { fail: self.fail_act }))
    }
}

fn walk(workers: usize, envs: usize, mode: Mode) -> RunConfig {
    RunConfig {
        env: "walk".into(),
        agent: "drift".into(),
        workers,
        envs_per_worker: envs,
        mode,
        target: Target::Episodes(200),
        seed: 11,
        restart_backoff: Duration::ZERO,
        ..Default::default()
    }
}

fn generator(cfg: RunConfig, envs: Walks, agents: Drifts) -> Generator {
    Generator::new(cfg, Arc::new(envs), Arc::new(agents), vec![]).unwrap()
}

fn outcomes(cfg: RunConfig, envs: Walks) -> Vec<String> {
    let mut eps: Vec<EpisodeResult> = Vec::new();
    let s = generator(cfg, envs, Drifts::default()).run(&mut eps).unwrap();
    assert_eq!((s.episodes, s.given_up, s.untried), (200, 0, 0));
    eps.iter().map(EpisodeResult::outcome_json).collect()
}

#[test]
fn a_run_takes_envs_and_agent_from_the_callers_factories() {
    let books = Arc::new(Books::default());
    let mut eps: Vec<EpisodeResult> = Vec::new();
    let g = generator(
        walk(2, 3, Mode::Sync),
        Walks { books: books.clone(), ..Default::default() },
        Drifts { books: books.clone(), ..Default::default() },
    );
    assert_eq!(g.spec().id, "Walk-v0");
    let s = g.run(&mut eps).unwrap();
    assert_eq!((s.env.as_str(), s.agent.as_str(), s.episodes), ("Walk-v0", "drift", 200));
    assert!(s.terminated > 0 && s.truncated > 0, "both endings happen: {} terminated, {} truncated", s.terminated, s.truncated);
    assert_eq!(books.made.load(Ordering::SeqCst), 1 + 2 * 3, "one env to read the spec, then one per slot");
    assert_eq!(books.agents.load(Ordering::SeqCst), 2, "one agent to check it fits, one to run");
    assert_eq!(books.live.load(Ordering::SeqCst), 0);
}

#[test]
fn custom_factories_are_as_deterministic_as_the_registry() {
    let one = outcomes(walk(1, 4, Mode::Sync), Walks::default());
    let variants =
        [walk(3, 5, Mode::Async), RunConfig { max_batch: 4, min_batch: 2, max_wait: Duration::from_micros(50), ..walk(2, 7, Mode::Async) }];
    for cfg in variants {
        assert!(one == outcomes(cfg, Walks::default()), "outcomes depend on the schedule");
    }
    // Failed env builds are failed attempts: with one worker, the failing calls are known.
    let books = Arc::new(Books::default());
    let envs = Walks { books: books.clone(), fail_makes: vec![2, 5, 6], ..Default::default() };
    let mut eps: Vec<EpisodeResult> = Vec::new();
    let s = generator(RunConfig { max_restarts: 10, ..walk(1, 4, Mode::Sync) }, envs, Drifts::default()).run(&mut eps).unwrap();
    assert_eq!((s.failed_attempts, s.restarts, s.given_up), (3, 3, 0));
    assert!(s.faults.iter().all(|f| f.error.contains("simulator would not start")));
    assert!(one == eps.iter().map(EpisodeResult::outcome_json).collect::<Vec<_>>(), "retried episodes match");
}

#[test]
fn config_names_must_be_the_factories_names() {
    let err =
        |cfg| Generator::new(cfg, Arc::new(Walks::default()), Arc::new(Drifts::default()), vec![]).err().expect("names differ").to_string();
    assert!(err(RunConfig { env: "CartPole-v1".into(), ..walk(1, 1, Mode::Sync) }).contains("`env`"));
    assert!(err(RunConfig { agent: "random".into(), ..walk(1, 1, Mode::Sync) }).contains("`agent`"));
}

/// Fails on the `n`-th episode, or on the first progress report.
struct FailingObserver {
    episodes: usize,
    on_progress: bool,
}

impl Observer for FailingObserver {
    fn on_episode(&mut self, _episode: EpisodeResult) -> std::result::Result<(), SinkError> {
        self.episodes = self.episodes.checked_sub(1).ok_or("disk full")?;
        Ok(())
    }
    fn on_progress(&mut self, _progress: &Progress) -> std::result::Result<(), SinkError> {
        if self.on_progress {
            return Err("interrupted".into());
        }
        Ok(())
    }
}

/// Runs until it fails, then checks that every worker was joined.
fn fails_and_joins(cfg: RunConfig, envs: Walks, agents: Drifts, observer: &mut dyn Observer) -> String {
    let books = envs.books.clone();
    let err = generator(cfg, envs, agents).run(observer).expect_err("the run fails");
    assert_eq!(books.live.load(Ordering::SeqCst), 0, "an env is still alive, so its worker thread still runs after: {err}");
    err.to_string()
}

#[test]
fn every_way_a_run_stops_joins_every_worker() {
    let forever = |mode| RunConfig { target: Target::Episodes(1 << 40), ..walk(2, 4, mode) };
    let mut quiet = FailingObserver { episodes: usize::MAX, on_progress: false };
    for mode in [Mode::Sync, Mode::Async] {
        let mut sink = FailingObserver { episodes: 30, on_progress: false };
        assert!(fails_and_joins(forever(mode), Walks::default(), Drifts::default(), &mut sink).contains("disk full"));
        let mut progress = FailingObserver { episodes: usize::MAX, on_progress: true };
        assert!(fails_and_joins(forever(mode), Walks::default(), Drifts::default(), &mut progress).contains("interrupted"));
        let gave_up = fails_and_joins(forever(mode), Walks::default(), Drifts { fail_act: true, ..Default::default() }, &mut quiet);
        assert!(gave_up.contains("agent failed"), "{gave_up}");
        let rebuild = Drifts { fail_act: true, max_made: Some(2), ..Default::default() };
        let rebuild = fails_and_joins(RunConfig { max_restarts: 5, ..forever(mode) }, Walks::default(), rebuild, &mut quiet);
        assert!(rebuild.contains("cannot load the policy again"), "{rebuild}");
    }
    // A worker thread that dies outside the fault handling: the other one is joined too.
    let envs = Walks { panicking_block: Some(2), ..Default::default() };
    let died = fails_and_joins(
        RunConfig { record_steps: true, record_infos: true, ..walk(2, 4, Mode::Sync) },
        envs,
        Drifts::default(),
        &mut quiet,
    );
    assert!(died.contains("thread ended unexpectedly"), "{died}");
    // The same on worker 0, which a sync run steps on the central thread: an error, not a panic of the run.
    let envs = Walks { panicking_block: Some(1), ..Default::default() };
    let died = fails_and_joins(walk(2, 4, Mode::Sync), envs, Drifts::default(), &mut quiet);
    assert!(died.contains("worker 0") && died.contains("panicked: the env host broke"), "{died}");
}

#[test]
fn an_info_that_panics_costs_only_that_info() {
    let poison = rollway_core::seed::episode_seed(11, 9);
    let envs = Walks { panic_info_seed: Some(poison), ..Default::default() };
    let cfg = RunConfig { record_steps: true, record_infos: true, ..walk(2, 4, Mode::Sync) };
    let mut eps: Vec<EpisodeResult> = Vec::new();
    let s = generator(cfg, envs, Drifts::default()).run(&mut eps).expect("the run completes");
    assert_eq!((s.given_up, s.restarts), (0, 0));
    for ep in &eps {
        let infos = &ep.trajectory.as_ref().expect("recorded").infos;
        assert_eq!(infos.len() as u64, ep.length + 1);
        let empty = infos.iter().filter(|i| i.get("pos").is_none()).count() as u64;
        if ep.run_index == 9 {
            // Reset and the first two steps have theirs; the final info is empty too.
            assert_eq!((empty, ep.info.get("pos")), (ep.length - 2, None));
        } else {
            assert_eq!((empty, ep.info.get("pos").is_some()), (0, true));
        }
    }
}

/// An observer that hands each episode's observation buffer straight back, as a
/// dataset writer does once it has committed the episode, noting each buffer's address.
struct GivesBack(rollway_core::Recycler, Vec<usize>);

impl Observer for GivesBack {
    fn on_episode(&mut self, e: EpisodeResult) -> std::result::Result<(), SinkError> {
        let t = e.trajectory.expect("recorded");
        self.1.push(t.obs.as_ptr() as usize);
        self.0.give(t.obs);
        Ok(())
    }
    fn recycler(&self) -> Option<rollway_core::Recycler> {
        Some(self.0.clone())
    }
}

#[test]
fn a_recording_run_builds_new_episodes_in_the_buffers_its_observer_hands_back() {
    let pool = rollway_core::Recycler::new();
    // Buffers large enough to be kept (a walk's own would be left to the allocator), taken
    // and handed back, as committed episodes' are.
    let big: Vec<Vec<u8>> = (0..4).map(|_| pool.take(rollway_core::Recycler::MIN_BYTES)).collect();
    let ours: Vec<usize> = big.iter().map(|b| b.as_ptr() as usize).collect();
    big.into_iter().for_each(|b| pool.give(b));
    let cfg = RunConfig { record_steps: true, target: Target::Episodes(40), ..walk(1, 2, Mode::Sync) };
    let mut seen = GivesBack(pool.clone(), Vec::new());
    generator(cfg, Walks::default(), Drifts::default()).run(&mut seen).unwrap();
    assert_eq!(seen.1.len(), 40);
    assert!(seen.1.iter().all(|p| ours.contains(p)), "every episode was built in a buffer handed back");
}
