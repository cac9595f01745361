//! Raw single-core stepping throughput of built-in envs (random valid actions,
//! reset at episode end, rendering included), in env steps per second.
//!
//! Run with `cargo bench -p rollway-envs --bench step`.
#![allow(missing_docs)] // criterion_group! makes a public function it cannot document

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rand::SeedableRng;
use rollway_core::{Env, Layout, Params, RowMut, RowRef, Rows};

/// Steps per measured iteration: enough to cross several episode ends.
const STEPS: u64 = 10_000;

fn bench_env(c: &mut Criterion, id: &str, params: &str, label: &str) {
    let mut env = rollway_envs::make(id, &Params::parse(params).unwrap()).expect("built-in env");
    let spec = env.spec().clone();
    let (ol, al) = (Layout::of(&spec.observation_space), Layout::of(&spec.action_space));
    let mut obs = Rows::new(ol.row_bytes(), 1);
    // Actions are pre-sampled so the bench measures the env, not the sampler.
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(0);
    let mut actions = Rows::new(al.row_bytes(), 4096);
    for i in 0..actions.len() {
        al.sample_row(&mut rng, actions.row_mut(i));
    }
    let mut seed = 0u64;
    env.reset(Some(seed), None, RowMut::new(&ol, obs.row_mut(0))).unwrap();
    let mut group = c.benchmark_group("step");
    group.throughput(Throughput::Elements(STEPS));
    group.bench_function(label, |b| {
        b.iter(|| {
            for i in 0..STEPS as usize {
                let a = RowRef::new(&al, actions.row(i % actions.len()));
                let out = env.step(a, RowMut::new(&ol, obs.row_mut(0))).unwrap();
                if out.terminated || out.truncated {
                    seed += 1;
                    env.reset(Some(seed), None, RowMut::new(&ol, obs.row_mut(0))).unwrap();
                }
            }
        })
    });
    group.finish();
}

fn steps(c: &mut Criterion) {
    bench_env(c, "PixelMine-v0", "size=64", "PixelMine-v0/size=64");
    bench_env(c, "PixelMine-v0", "size=128", "PixelMine-v0/size=128");
    bench_env(c, "CartPole-v1", "", "CartPole-v1");
}

criterion_group!(benches, steps, atari_resize);
criterion_main!(benches);

/// The Atari preprocessing's shrink of one 210×160 screen to 84×84 (OpenCV's INTER_AREA),
/// which every Atari agent step pays once.
fn atari_resize(c: &mut Criterion) {
    let frame: Vec<u8> = (0..210 * 160).map(|i| (i * 31 % 251) as u8).collect();
    let mut out = vec![0u8; 84 * 84];
    let mut area = rollway_envs::atari::resize::Area::new(210, 160, 84, 84);
    let mut group = c.benchmark_group("atari");
    group.throughput(Throughput::Elements(1));
    group.bench_function("resize 210x160 to 84x84", |b| b.iter(|| area.run(std::hint::black_box(&frame), &mut out)));
    group.finish();
}
