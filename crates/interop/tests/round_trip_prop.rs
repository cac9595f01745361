//! Issue 15: rollway → Minari (each data format) → rollway and rollway → LeRobot →
//! rollway give back the same episodes, bit for bit, over random spaces and episode
//! lengths.

use crate::common;

use proptest::prelude::*;
use rollway_core::{DType, EnvSpec, Space};
use rollway_interop::{lerobot, minari};
use rollway_store::Dataset;

fn dtype() -> impl Strategy<Value = DType> {
    prop::sample::select(vec![DType::U8, DType::I16, DType::U32, DType::I64, DType::F32, DType::F64])
}

/// A leaf small enough never to be taken for an image (images go to video in LeRobot).
fn leaf() -> impl Strategy<Value = Space> {
    prop_oneof![
        (dtype(), prop::collection::vec(1usize..4, 0..3), -50i32..50, 1i32..60).prop_map(|(dt, shape, lo, span)| {
            let (dmin, dmax) = dt.range();
            let lo = (lo as f64).clamp(dmin, dmax);
            Space::boxed(dt, &shape, lo, (lo + span as f64).min(dmax)).unwrap()
        }),
        (1u64..40, -3i64..3).prop_map(|(n, s)| Space::discrete(n, s).unwrap()),
        prop::collection::vec(1i64..7, 1..4).prop_map(|nvec| Space::multi_discrete(nvec, vec![]).unwrap()),
        prop::collection::vec(1usize..4, 1..3).prop_map(|shape| Space::MultiBinary { shape }),
    ]
}

/// Minari takes any nesting of Dict and Tuple, and Text leaves (strings in every format).
fn nested() -> impl Strategy<Value = Space> {
    let text = (0usize..3, 1usize..6, "[a-zé ]{1,6}").prop_map(|(min, extra, cs)| Space::text(min, min + extra, &cs).unwrap());
    prop_oneof![4 => leaf(), 1 => text].prop_recursive(2, 10, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 1..4).prop_map(Space::Tuple),
            prop::collection::btree_map("[a-z]{1,5}", inner, 1..4).prop_map(|m| Space::dict(m.into_iter().collect()).unwrap()),
        ]
    })
}

/// LeRobot names a feature per leaf of a flat Dict.
fn flat() -> impl Strategy<Value = Space> {
    prop_oneof![leaf(), prop::collection::btree_map("[a-z]{1,5}", leaf(), 1..4).prop_map(|m| Space::dict(m.into_iter().collect()).unwrap())]
}

fn spec(obs: Space, act: Space) -> EnvSpec {
    EnvSpec {
        id: "Sampled-v0".into(),
        observation_space: obs,
        action_space: act,
        max_episode_steps: None,
        render_fps: None,
        reward_threshold: None,
        gymnasium_spec: None,
        agents: None,
    }
}

fn nothing(_: u64, _: u64) {}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn minari_round_trips_in_every_format(obs in nested(), act in nested(), lengths in prop::collection::vec(0u64..9, 1..5), seed in any::<u64>()) {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("src");
        common::write_sampled(&src, &spec(obs, act), &lengths, seed, true);
        for f in minari::DataFormat::ALL {
            let out = tmp.path().join(format!("m/{}-v0", f.name()));
            let back = tmp.path().join(format!("back-{}", f.name()));
            let opts = minari::ExportOptions { data_format: f, ..Default::default() };
            minari::export(&src, &out, &opts, &mut nothing).unwrap();
            minari::import(&out, &back, &mut nothing).unwrap();
            common::assert_same(&Dataset::open(&src).unwrap(), &Dataset::open(&back).unwrap(), &[]);
        }
    }

    #[test]
    fn lerobot_round_trips(obs in flat(), act in flat(), lengths in prop::collection::vec(1u64..9, 1..5), seed in any::<u64>()) {
        let tmp = tempfile::tempdir().unwrap();
        let (src, out, back) = (tmp.path().join("src"), tmp.path().join("lr"), tmp.path().join("back"));
        common::write_sampled(&src, &spec(obs, act), &lengths, seed, false);
        lerobot::export(&src, &out, &lerobot::ExportOptions::default(), &mut nothing).unwrap();
        lerobot::import(&out, &back, &mut nothing).unwrap();
        common::assert_same(&Dataset::open(&src).unwrap(), &Dataset::open(&back).unwrap(), &[]);
    }
}
