//! Loader throughput: one shuffled epoch of 16-step windows in batches of 256 over
//! 300k random-action CartPole steps (the workload), in dataset order, and a
//! plain copy of as many bytes as one epoch delivers (the yardstick for MB/s).
//!
//! Run with `cargo bench -p rollway-loader --bench load`. The side-by-side comparison
//! with numpy, TorchRL and Minari is `bench/run_load.sh`.
#![allow(missing_docs)] // criterion_group! makes a public function it cannot document

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rand::{Rng, SeedableRng};
use rollway_loader::{Loader, LoaderConfig};
use rollway_store::{Collector, DatasetWriter};

const STEPS: usize = 300_000;

fn dataset(dir: &std::path::Path) {
    let env = rollway_envs::make("CartPole-v1", &Default::default()).expect("CartPole-v1 exists");
    let w = DatasetWriter::create(dir, env.spec(), "bench", 0, serde_json::json!({}), Default::default()).expect("new dataset");
    let mut c = Collector::new(env, w);
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(0);
    let mut steps = 0;
    while steps < STEPS {
        c.reset(Some(steps as u64)).expect("reset");
        loop {
            steps += 1;
            let s = c.step_discrete(rng.random_range(0..2)).expect("step");
            if s.terminated || s.truncated {
                break;
            }
        }
    }
    c.close().expect("close");
}

fn load(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    dataset(dir.path());
    let mut group = c.benchmark_group("load");
    group.sample_size(20);
    for (name, shuffle) in [("cartpole-300k/clip16/batch256/shuffled", true), ("cartpole-300k/clip16/batch256/in-order", false)] {
        let mut loader = Loader::open(dir.path(), LoaderConfig { shuffle, ..Default::default() }).expect("open");
        group.throughput(Throughput::Elements(loader.num_windows() as u64));
        group.bench_function(name, |b| {
            b.iter(|| {
                let mut bytes = 0;
                while let Some(batch) = loader.next_batch().expect("batch") {
                    bytes += batch.bytes();
                }
                bytes
            })
        });
    }
    // The same bytes an epoch delivers, copied in one piece: the ceiling for MB/s.
    let mut loader = Loader::open(dir.path(), LoaderConfig::default()).expect("open");
    let mut epoch_bytes = 0;
    while let Some(batch) = loader.next_batch().expect("batch") {
        epoch_bytes += batch.bytes();
    }
    let (src, mut dst) = (vec![1u8; epoch_bytes], vec![0u8; epoch_bytes]);
    group.throughput(Throughput::Bytes(epoch_bytes as u64));
    group.bench_function("memcpy-of-one-epoch", |b| b.iter(|| dst.copy_from_slice(std::hint::black_box(&src))));
    group.finish();
}

criterion_group!(benches, load);
criterion_main!(benches);
