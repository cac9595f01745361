//! What a training rollout records beside the steps: the policy's extras as
//! `extras.<name>` columns and the acting version as `policy_version`, read back
//! exactly, summarised in the index, checked by `verify`, and refused when ragged.

use crate::common;

use common::{episodes, write_all};
use rollway_core::StepColumn;
use rollway_store::{verify, Dataset, DatasetWriter, WriterConfig};

/// `eps` with a scalar extra, a shaped one and versions `first..` added to each.
fn with_training_columns(mut eps: Vec<rollway_core::EpisodeResult>) -> Vec<rollway_core::EpisodeResult> {
    for (i, e) in eps.iter_mut().enumerate() {
        let n = e.length as usize;
        let t = e.trajectory.as_mut().unwrap();
        t.extras = vec![
            StepColumn { name: "logprob".into(), shape: vec![], values: (0..n).map(|k| -(k as f32) / 8.0).collect() },
            StepColumn { name: "logits".into(), shape: vec![2], values: (0..2 * n).map(|k| k as f32 + i as f32).collect() },
        ];
        t.versions = (0..n as u64).map(|k| i as u64 * 3 + k / 4).collect();
    }
    eps
}

#[test]
fn extras_and_policy_versions_round_trip_and_verify() {
    let dir = tempfile::tempdir().unwrap();
    let (spec, eps) = episodes("CartPole-v1", "", 5, 40);
    let eps = with_training_columns(eps);
    write_all(dir.path(), &spec, &eps, WriterConfig { max_buffer_episodes: Some(2), ..Default::default() });
    let ds = Dataset::open(dir.path()).unwrap();
    for e in &eps {
        let got = ds.read_episode(e.run_index).unwrap();
        let t = e.trajectory.as_ref().unwrap();
        assert_eq!(got.policy_version.as_deref(), Some(&t.versions[..]));
        assert_eq!(got.entry.policy_version, Some([*t.versions.iter().min().unwrap(), *t.versions.iter().max().unwrap()]));
        assert_eq!(got.extras.len(), 2);
        for ((name, a), want) in got.extras.iter().zip(&t.extras) {
            assert_eq!(name, &want.name);
            assert_eq!(a.shape, [&[e.length as usize][..], &want.shape].concat());
            let bytes: Vec<u8> = want.values.iter().flat_map(|v| v.to_ne_bytes()).collect();
            assert_eq!(a.data, bytes, "extra {name}");
        }
    }
    let report = verify(&ds);
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

#[test]
fn a_dataset_without_training_columns_reads_as_before() {
    let dir = tempfile::tempdir().unwrap();
    let (spec, eps) = episodes("CartPole-v1", "", 2, 20);
    write_all(dir.path(), &spec, &eps, WriterConfig::default());
    let got = Dataset::open(dir.path()).unwrap().read_episode(0).unwrap();
    assert_eq!((got.extras.len(), got.policy_version, got.entry.policy_version), (0, None, None));
}

#[test]
fn ragged_training_columns_are_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let (spec, eps) = episodes("CartPole-v1", "", 1, 20);
    let mut eps = with_training_columns(eps);
    eps[0].trajectory.as_mut().unwrap().versions.pop();
    let w = DatasetWriter::create(dir.path(), &spec, "x", 0, serde_json::json!({}), WriterConfig::default()).unwrap();
    let e = w.write(eps[0].clone()).err().unwrap().to_string();
    assert!(e.contains("policy versions"), "{e}");
    eps[0].trajectory.as_mut().unwrap().versions.push(0);
    eps[0].trajectory.as_mut().unwrap().extras[1].values.pop();
    let e = w.write(eps[0].clone()).err().unwrap().to_string();
    assert!(e.contains("extra `logits`"), "{e}");
    w.finish().unwrap();
    assert_eq!(Dataset::open(dir.path()).unwrap().episodes().count(), 0);
}
