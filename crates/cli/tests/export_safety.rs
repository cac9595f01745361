//! Issue #10: `rollway export --force` never destroys its source or anything that
//! is not a previous export, and a killed export always leaves a whole one.

use crate::common;

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
    common::rollway(&[
        &"run",
        &"--env",
        &"CartPole-v1",
        &"--agent",
        &"random",
        &"--episodes",
        &episodes.to_string(),
        &"--out",
        &dir,
        &"-q",
    ]);
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

/// Whether `out` holds a whole export of `episodes` episodes in format `to`: the
/// file each export writes last is there, and its totals are the source's.
fn assert_whole(to: &str, out: &Path, episodes: u64, when: &str) {
    let (meta, last) = match to {
        "lerobot" => (out.join("meta/info.json"), out.join("meta/rollway.json")),
        _ => (out.join("data/metadata.json"), out.join("data/main_data.hdf5")),
    };
    let text = std::fs::read(&meta).unwrap_or_else(|e| panic!("{when}: {}: {e}", meta.display()));
    let j: serde_json::Value = serde_json::from_slice(&text).unwrap();
    assert_eq!(j["total_episodes"], episodes, "{when}");
    assert!(last.is_file(), "{when}: no {}", last.display());
}

fn hidden(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).filter(|n| n.starts_with('.')).collect()
}

#[test]
fn issue10_killed_export_force_always_leaves_a_whole_export() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    // Big enough that an export takes a few hundred ms.
    record(&src, 3000);
    // A fixed-seed xorshift: the kill instants are the same on every run.
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    for (to, out) in [("lerobot", tmp.path().join("l/out")), ("minari", tmp.path().join("ns/cp-v0"))] {
        common::rollway(&[&"export", &src, &"--to", &to, &out, &"-q"]);
        let t0 = std::time::Instant::now();
        common::rollway(&[&"export", &src, &"--to", &to, &out, &"--force", &"-q"]);
        let full = t0.elapsed().as_millis() as u64;
        for i in 0..12 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            // Mostly late in the run, where the old export is being replaced.
            let delay = full * (30 + rng % 90) / 100;
            let mut child = Command::new(env!("CARGO_BIN_EXE_rollway"))
                .arg("export")
                .arg(&src)
                .args(["--to", to])
                .arg(&out)
                .args(["--force", "-q"])
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap();
            std::thread::sleep(std::time::Duration::from_millis(delay));
            child.kill().unwrap();
            child.wait().unwrap();
            assert_whole(to, &out, 3000, &format!("{to}: killed after {delay} ms of {full} (round {i})"));
        }
        // The next export cleans what the killed ones left, and leaves nothing of its own.
        common::rollway(&[&"export", &src, &"--to", &to, &out, &"--force", &"-q"]);
        assert_whole(to, &out, 3000, "after a clean export");
        let beside = if to == "lerobot" { out.parent().unwrap().to_path_buf() } else { out.clone() };
        assert_eq!(hidden(&beside), Vec::<String>::new(), "{to}: debris left in {}", beside.display());
    }
}

/// Debris is only ever removed for a process that is gone, and only under its exact names.
#[test]
fn issue10_export_keeps_what_a_live_process_or_the_user_owns() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, out) = (tmp.path().join("src"), tmp.path().join("out"));
    record(&src, 3);
    // A live process (this test) still building; a user's look-alike names; a symlinked debris name.
    let live = tmp.path().join(format!(".out.partial-{}", std::process::id()));
    let dead = tmp.path().join(".out.old-999999999");
    let keep = [
        live.clone(),
        tmp.path().join(".out.partial-12x"),
        tmp.path().join(".out.old-0"),
        tmp.path().join(".outer.partial-999999998"),
        tmp.path().join("out.partial-999999997"),
    ];
    for d in keep.iter().chain([&dead]) {
        std::fs::create_dir_all(d.join("inside")).unwrap();
    }
    let target = tmp.path().join("target");
    std::fs::create_dir_all(target.join("precious")).unwrap();
    std::os::unix::fs::symlink(&target, tmp.path().join(".out.partial-999999996")).unwrap();
    common::rollway(&[&"export", &src, &"--to", &"lerobot", &out, &"-q"]);
    assert!(!dead.exists(), "a dead process's debris is removed");
    for d in &keep {
        assert!(d.join("inside").is_dir(), "{} kept", d.display());
    }
    assert!(tmp.path().join(".out.partial-999999996").is_symlink() && target.join("precious").is_dir());
}
