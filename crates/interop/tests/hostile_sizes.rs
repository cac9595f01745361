//! Issue #10: sizes and counts that an input file declares (info.json shapes,
//! metadata.json totals, HDF5 extents) are checked before they are used, so a
//! hostile or damaged file is a typed input error, never a panic, abort or hang.

use crate::common;

use std::path::Path;

use hdf5_metno as hdf5;
use rollway_interop::{lerobot, minari, Error};
use serde_json::Value as Json;

fn nothing(_: u64, _: u64) {}

fn edit_json(p: &Path, f: impl FnOnce(&mut Json)) {
    let mut j: Json = serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap();
    f(&mut j);
    std::fs::write(p, j.to_string()).unwrap();
}

/// A CartPole Minari export in `root/ns/cp-v0`.
fn minari_export(root: &Path) -> std::path::PathBuf {
    let (src, out) = (root.join("src"), root.join("ns/cp-v0"));
    common::record(&src, "CartPole-v1", "", "random", 3, Some(10), false, 5, 7);
    minari::export(&src, &out, &minari::ExportOptions::default(), &mut nothing).unwrap();
    out
}

fn import_refused(e: Error, needle: &str) {
    assert!(e.is_input() && e.to_string().contains(needle), "`{e}` should be an input error saying `{needle}`");
}

/// Was: "capacity overflow" panic sizing the bounds of a 2^62-element feature.
#[test]
fn issue10_lerobot_import_refuses_a_huge_feature_shape() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, out) = (tmp.path().join("src"), tmp.path().join("lr"));
    common::record(&src, "CartPole-v1", "", "random", 2, Some(5), false, 5, 7);
    lerobot::export(&src, &out, &lerobot::ExportOptions::default(), &mut nothing).unwrap();
    // Without rollway.json the spaces are inferred from info.json alone.
    std::fs::remove_file(out.join("meta/rollway.json")).unwrap();
    edit_json(&out.join("meta/info.json"), |i| i["features"]["observation.state"]["shape"] = serde_json::json!([1u64 << 62]));
    let e = lerobot::import(&out, &tmp.path().join("back"), &mut nothing).unwrap_err();
    import_refused(e, "observation.state");
    assert!(!tmp.path().join("back").exists());
}

/// Was: a loop over 2^63 episode indices before the first error.
#[test]
fn issue10_minari_import_checks_total_episodes_against_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let out = minari_export(tmp.path());
    edit_json(&out.join("data/metadata.json"), |m| m["total_episodes"] = (1u64 << 63).into());
    let e = minari::import(&out, &tmp.path().join("back"), &mut nothing).unwrap_err();
    import_refused(e, "the data has 3");
}

/// Was: an allocation abort reading a chunked dataset that declares 2^40 values it never stored.
#[test]
fn issue10_minari_import_refuses_huge_declared_extents() {
    let tmp = tempfile::tempdir().unwrap();
    let out = minari_export(tmp.path());
    let h5 = out.join("data/main_data.hdf5");
    let steps = |f: &hdf5::File, ep: &str| f.dataset(&format!("{ep}/terminations")).unwrap().size();
    {
        let f = hdf5::File::open_rw(&h5).unwrap();
        f.unlink("episode_0/rewards").unwrap();
        f.group("episode_0").unwrap().new_dataset::<f64>().chunk(1024).shape(1usize << 40).create("rewards").unwrap();
    }
    let e = minari::import(&out, &tmp.path().join("back"), &mut nothing).unwrap_err();
    import_refused(e, "episode_0/rewards");
    // An info that declares as much is skipped, not read.
    {
        let f = hdf5::File::open_rw(&h5).unwrap();
        f.unlink("episode_0/rewards").unwrap();
        let t = steps(&f, "episode_0");
        f.group("episode_0").unwrap().new_dataset_builder().with_data(&vec![0.5f64; t]).create("rewards").unwrap();
        let rows = steps(&f, "episode_1") + 1;
        f.group("episode_1/infos").unwrap().new_dataset::<f64>().chunk([rows, 1024]).shape([rows, 1usize << 40]).create("huge").unwrap();
    }
    let rep = minari::import(&out, &tmp.path().join("back2"), &mut nothing).unwrap();
    assert_eq!(rep.skipped_infos, ["huge"]);
}
