//! Generator throughput: envs stepped by worker threads, actions from the central
//! batched stage, episodes accounted — everything but writing a dataset.
//!
//! Run with `cargo bench -p rollway-runner --bench generator`. The side-by-side
//! comparison with Gymnasium and EnvPool is `bench/run_all.sh`.
#![allow(missing_docs)] // criterion_group! makes a public function it cannot document

use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rollway_core::Params;
use rollway_runner::{Generator, Mode, RunConfig, Target};

fn bench_run(c: &mut Criterion, name: &str, cfg: RunConfig, steps: u64) {
    let envs = Arc::new(rollway_envs::Registered::new(&cfg.env, cfg.env_params.clone()));
    let agents = Arc::new(rollway_agents::Registered::new(&cfg.agent, cfg.agent_params.clone()));
    let generator = Generator::new(RunConfig { target: Target::Steps(steps), ..cfg }, envs, agents, vec![]).expect("valid config");
    let mut group = c.benchmark_group("generator");
    group.sample_size(10);
    group.throughput(Throughput::Elements(steps));
    group.bench_function(name, |b| b.iter(|| generator.run(&mut ()).expect("run succeeds")));
    group.finish();
}

fn generator(c: &mut Criterion) {
    let cartpole = |workers, envs, mode| RunConfig {
        env: "CartPole-v1".into(),
        agent: "random".into(),
        workers,
        envs_per_worker: envs,
        mode,
        ..Default::default()
    };
    bench_run(c, "CartPole-v1/random/2x1024/async", cartpole(2, 1024, Mode::Async), 5_000_000);
    bench_run(c, "CartPole-v1/random/2x4096/sync", cartpole(2, 4096, Mode::Sync), 5_000_000);
    bench_run(c, "CartPole-v1/random/1x256/sync", cartpole(1, 256, Mode::Sync), 2_000_000);
    let mine =
        RunConfig { env_params: Params::new().with("size", 64), workers: 2, envs_per_worker: 16, mode: Mode::Async, ..Default::default() };
    bench_run(c, "PixelMine-v0/miner/size=64/2x16/async", mine, 200_000);
}

criterion_group!(benches, generator);
criterion_main!(benches);
