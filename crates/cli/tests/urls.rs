//! Issue 45: a dataset argument that is a URL of a scheme this build does not support
//! (`gs://bucket/x`) is a usage error naming the supported schemes, and never becomes
//! the relative directory `./s3:/bucket/x`; a `file://` URL names a local directory.

use std::path::Path;
use std::process::{Command, Output};

fn rollway_in(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rollway")).args(args).current_dir(cwd).output().expect("binary runs")
}

#[test]
fn issue45_unsupported_schemes_exit_2_naming_the_supported_ones_and_create_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let url = "gs://bucket/prefix/ds";
    let commands: [&[&str]; 12] = [
        &["run", "--env", "CartPole-v1", "--episodes", "2", "--out", url],
        &["run", "--resume", url],
        &["inspect", url],
        &["verify", url],
        &["verify", "--repair", url],
        &["report", url],
        &["load", url],
        &["relabel", url],
        &["export", url, "--to", "minari", "out/x-v0"],
        &["export", "data", "--to", "lerobot", "az://b/lerobot"],
        &["import", "minari", "data", url],
        &["import", "lerobot", "az://c/x", "data"],
    ];
    for args in commands {
        let o = rollway_in(tmp.path(), args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("not supported by this build") && err.contains("file://"), "{args:?}: {err}");
    }
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(left.is_empty(), "nothing was created: {left:?}");
}

#[test]
fn issue45_a_file_url_names_a_local_dataset() {
    let tmp = tempfile::tempdir().unwrap();
    let url = format!("file://{}", tmp.path().join("ds").display());
    let o = rollway_in(tmp.path(), &["run", "--env", "CartPole-v1", "--agent", "random", "--episodes", "3", "-q", "--out", &url]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(rollway_store::Dataset::open(&tmp.path().join("ds")).unwrap().episodes().count(), 3);
    let o = rollway_in(tmp.path(), &["inspect", &url]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn issue54_a_url_with_credentials_exits_2_naming_the_aws_variables_and_never_echoes_them() {
    let tmp = tempfile::tempdir().unwrap();
    let url = "s3://AKIAEXAMPLE:hunter2secret@bucket/ds";
    let commands: [&[&str]; 7] = [
        &["run", "--env", "CartPole-v1", "--episodes", "2", "--out", url],
        &["run", "--resume", url],
        &["inspect", url],
        &["verify", url],
        &["report", url],
        &["load", url],
        &["export", url, "--to", "minari", "out/x-v0"],
    ];
    for args in commands {
        let o = rollway_in(tmp.path(), args);
        let (out, err) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("AWS_ACCESS_KEY_ID") && err.contains("AWS_SECRET_ACCESS_KEY"), "{args:?}: {err}");
        for secret in ["hunter2secret", "AKIAEXAMPLE"] {
            assert!(!err.contains(secret) && !out.contains(secret), "{args:?} echoed the credentials: {err}");
        }
    }
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(left.is_empty(), "nothing was created: {left:?}");
}
