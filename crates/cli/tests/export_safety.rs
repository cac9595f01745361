//! Issue #10: `rollway export --force` never destroys its source or anything that
//! is not a previous export, and a killed export always leaves a whole one.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn rollway(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rollway"));
    for a in args {
        c.arg(a);
    }
    c.output().expect("binary runs")
}

fn record(dir: &Path, episodes: u32) {
    common::rollway(&[&"run", &"--env", &"CartPole-v1", &"--agent", &"random", &"--episodes", &episodes.to_string(), &"--out", &dir, &"-q"]);
}

/// Runs an export that must be refused as an input error naming every path in `names`.
fn refused(args: &[&dyn AsRef<std::ffi::OsStr>], names: &[&Path]) -> String {
    let o = rollway(args);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{err}");
    for n in names {
        assert!(err.contains(&n.display().to_string()), "`{err}` should name {}", n.display());
    }
    err
}

/// Every file under `dir` with its contents, sorted: equal listings mean nothing changed.
fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                todo.push(e.path());
            } else {
                out.push((e.path().strip_prefix(dir).unwrap().to_path_buf(), std::fs::read(e.path()).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn issue10_export_force_refuses_source_inside_out() {
    let tmp = tempfile::tempdir().unwrap();
    let (anc, ds) = (tmp.path().join("anc"), tmp.path().join("anc/ds"));
    record(&ds, 3);
    std::fs::write(anc.join("notes.txt"), "the user's own file").unwrap();
    let link = tmp.path().join("link");
    std::os::unix::fs::symlink(&anc, &link).unwrap();
    let before = tree(&anc);
    for to in ["lerobot", "minari"] {
        // OUT is the source, contains it (directly or through a symlink), or is inside it (existing or not).
        for out in [ds.clone(), anc.clone(), link.clone(), link.join("ds"), ds.join("steps"), ds.join("new/cp-v0")] {
            let err = refused(&[&"export", &ds, &"--to", &to, &out, &"--force"], &[&out, &ds]);
            assert!(err.contains("overlaps the source"), "{err}");
        }
    }
    assert_eq!(tree(&anc), before, "nothing under the source's parent changed");
    let verified = common::rollway(&[&"verify", &ds]);
    assert!(verified.starts_with("ok: 3 episodes"), "{verified}");
}

#[test]
fn issue10_export_force_replaces_only_previous_exports() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    record(&src, 3);
    // A directory of the user's: --force does not make it an export.
    let user = tmp.path().join("user");
    std::fs::create_dir_all(user.join("meta")).unwrap();
    std::fs::write(user.join("thesis.tex"), "years of work").unwrap();
    std::fs::write(user.join("meta/info.json"), r#"{"note": "no codebase_version"}"#).unwrap();
    let before = tree(&user);
    let err = refused(&[&"export", &src, &"--to", &"lerobot", &user, &"--force"], &[&user]);
    assert!(err.contains("not a previous LeRobot export"), "{err}");
    // Minari replaces OUT/data: only one holding what our export writes.
    let mout = tmp.path().join("ns/x-v0");
    std::fs::create_dir_all(mout.join("data")).unwrap();
    std::fs::write(mout.join("data/notes.txt"), "mine").unwrap();
    let err = refused(&[&"export", &src, &"--to", &"minari", &mout, &"--force"], &[&mout.join("data")]);
    assert!(err.contains("not a previous Minari export"), "{err}");
    assert_eq!((tree(&user), std::fs::read(mout.join("data/notes.txt")).unwrap()), (before, b"mine".to_vec()));

    // An empty directory needs no --force; previous exports are replaced with it.
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    common::rollway(&[&"export", &src, &"--to", &"lerobot", &empty, &"-q"]);
    common::rollway(&[&"export", &src, &"--to", &"lerobot", &empty, &"--force", &"--fps", &"10", &"-q"]);
    let info: serde_json::Value = serde_json::from_slice(&std::fs::read(empty.join("meta/info.json")).unwrap()).unwrap();
    assert_eq!(info["fps"], 10);
    let mout = tmp.path().join("ns/y-v0");
    common::rollway(&[&"export", &src, &"--to", &"minari", &mout, &"-q"]);
    common::rollway(&[&"export", &src, &"--to", &"minari", &mout, &"--force", &"-q"]);
    assert!(mout.join("data/main_data.hdf5").is_file());
}
