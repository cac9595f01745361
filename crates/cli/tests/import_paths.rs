//! Issue #10: a LeRobot import reads only files inside the dataset it is given,
//! whatever `meta/info.json`'s path templates, feature names or symlinks say.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

fn rollway(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rollway"));
    for a in args {
        c.arg(a);
    }
    c.output().expect("binary runs")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let t = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &t);
        } else {
            std::fs::copy(e.path(), t).unwrap();
        }
    }
}

fn edit_info(d: &Path, field: &str, value: &str) {
    let p = d.join("meta/info.json");
    let mut j: serde_json::Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
    j[field] = value.into();
    std::fs::write(&p, j.to_string()).unwrap();
}

/// Imports `bad`, expecting an input error whose message has every one of `needles`, and nothing written.
fn refused(bad: &Path, needles: &[&str]) {
    let back = bad.with_extension("back");
    let o = rollway(&[&"import", &"lerobot", &bad, &back]);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{}: {err}", bad.display());
    for n in needles {
        assert!(err.contains(n), "`{err}` should say `{n}`");
    }
    assert!(!back.exists());
}

#[test]
fn issue10_lerobot_import_confines_paths_to_the_dataset() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, good) = (tmp.path().join("src"), tmp.path().join("good"));
    common::rollway(&[
        &"run",
        &"--env",
        &"PixelMine-v0",
        &"--env-opt",
        &"size=32,max_steps=10",
        &"--agent",
        &"miner",
        &"--episodes",
        &"3",
        &"--out",
        &src,
        &"-q",
    ]);
    common::rollway(&[&"export", &src, &"--to", &"lerobot", &good, &"-q"]);
    // A copy of the files outside the dataset, where an escaping path would lead.
    let outside = tmp.path().join("outside");
    copy_dir(&good, &outside);
    let abs = format!("{}/data/chunk-{{chunk_index:03d}}/file-{{file_index:03d}}.parquet", outside.display());
    let abs_video = format!("{}/videos/{{video_key}}/chunk-{{chunk_index:03d}}/file-{{file_index:03d}}.mp4", outside.display());
    let cases = [
        ("data_path", "../outside/data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"),
        ("data_path", abs.as_str()),
        ("data_path", "data/chunk-{chunk_index:099999999d}/file-{file_index:03d}.parquet"),
        ("data_path", "data/chunk-{chunk_index:033d}/file-{file_index:03d}.parquet"),
        ("data_path", "data/{task_index}/file-{file_index:03d}.parquet"),
        ("video_path", "../outside/videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"),
        ("video_path", abs_video.as_str()),
    ];
    for (i, (field, value)) in cases.iter().enumerate() {
        let bad = tmp.path().join(format!("bad{i}"));
        copy_dir(&good, &bad);
        edit_info(&bad, field, value);
        refused(&bad, &[field, value]);
    }
    // A symlink inside the dataset that points out of it.
    let linked = tmp.path().join("linked");
    copy_dir(&good, &linked);
    std::fs::remove_dir_all(linked.join("data")).unwrap();
    std::os::unix::fs::symlink(outside.join("data"), linked.join("data")).unwrap();
    refused(&linked, &["data_path", "outside the dataset root"]);
    // The dataset itself may be reached through a symlink.
    let alias = tmp.path().join("alias");
    std::os::unix::fs::symlink(&good, &alias).unwrap();
    common::rollway(&[&"import", &"lerobot", &alias, &tmp.path().join("back"), &"-q"]);
}
