//! Issue 45: datasets on an object store, against a real S3 server on loopback
//! (moto's, started by `tests/python/s3_server.py`; no mocked client). A run records
//! to `s3://`, is killed with SIGKILL and resumed; readers (rollway's commands and
//! pyarrow globbing `steps/` over S3) see committed episodes only, and the end
//! result is exactly what an uninterrupted local run records.

use crate::common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

const BUCKET: &str = "rollway-test";
// Pinned tuning and a seed: the killed run's episodes must equal the reference's.
const JOB: &[&str] =
    &["--env", "CartPole-v1", "--agent", "random", "--episodes", "20000", "--seed", "45", "--max-buffer-episodes", "200", "-q"];

/// The S3 server, the Python that runs the peers, and this test's cache.
struct S3 {
    server: Child,
    endpoint: String,
    py: String,
    tmp: tempfile::TempDir,
}

impl S3 {
    fn start() -> Option<S3> {
        S3::start_with(&[])
    }

    /// The server with `env` set (moto's own settings).
    fn start_with(env: &[(&str, &str)]) -> Option<S3> {
        let py = common::peer_python(&["moto", "pyarrow", "boto3"])?;
        let mut server = Command::new(&py)
            .arg(common::script("s3_server.py"))
            .arg(BUCKET)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(server.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
        assert!(line.starts_with("http://127.0.0.1:"), "the S3 server did not start: {line:?}");
        Some(S3 { server, endpoint: line.trim().to_string(), py, tmp: tempfile::tempdir().unwrap() })
    }

    fn env(&self, c: &mut Command) {
        c.env("AWS_ENDPOINT_URL", &self.endpoint)
            .env("AWS_ACCESS_KEY_ID", "rollway-test")
            .env("AWS_SECRET_ACCESS_KEY", "rollway-test")
            .env("AWS_REGION", "us-east-1")
            .env("ROLLWAY_CACHE_DIR", self.cache());
    }

    fn rollway(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_rollway"));
        c.args(args).current_dir(self.tmp.path());
        self.env(&mut c);
        c
    }

    fn output(&self, args: &[&str]) -> Output {
        self.rollway(args).output().unwrap()
    }

    fn cache(&self) -> PathBuf {
        self.tmp.path().join("cache")
    }

    /// Writers' work directories now in the cache.
    fn work_dirs(&self) -> Vec<PathBuf> {
        std::fs::read_dir(self.cache().join("work")).map_or(vec![], |rd| rd.map(|e| e.unwrap().path()).collect())
    }

    /// pyarrow's glob of `url/steps` over S3: episode id → (rows, reward sum), each
    /// row checked against the index objects read after it.
    fn glob(&self, url: &str) -> BTreeMap<u64, (u64, f64)> {
        let mut c = Command::new(&self.py);
        c.arg(common::script("glob_reader.py")).arg(url);
        self.env(&mut c);
        let o = c.output().unwrap();
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "glob_reader {url}: {}{}", text, String::from_utf8_lossy(&o.stderr));
        let v: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        v["episodes"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, e)| (k.parse().unwrap(), (e[0].as_u64().unwrap(), e[1].as_f64().unwrap())))
            .collect()
    }

    /// Pulls `url` (as `inspect` does) and returns its committed episodes.
    fn pulled(&self, url: &str) -> common::Committed {
        let o = self.output(&["inspect", url]);
        assert!(o.status.success(), "inspect {url}: {}", String::from_utf8_lossy(&o.stderr));
        let prefix = url.strip_prefix(&format!("s3://{BUCKET}/")).unwrap();
        common::committed(&self.cache().join("replicas/s3").join(BUCKET).join(prefix))
    }
}

/// The fault proxy (`tests/python/fault_proxy.py`) between rollway and the server.
struct Proxy {
    child: Child,
    out: BufReader<std::process::ChildStdout>,
}

impl Proxy {
    /// Starts the proxy in front of `s3`'s server and points `s3`'s clients at it.
    fn start(s3: &mut S3) -> Proxy {
        let upstream = s3.endpoint.rsplit(':').next().unwrap().to_string();
        let mut child = Command::new(&s3.py)
            .arg(common::script("fault_proxy.py"))
            .arg(&upstream)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        s3.endpoint = format!("http://127.0.0.1:{}", line.trim());
        Proxy { child, out }
    }

    /// Sends `command`; its answer line.
    fn send(&mut self, command: &str) -> String {
        use std::io::Write;
        writeln!(self.child.stdin.as_mut().unwrap(), "{command}").unwrap();
        let mut line = String::new();
        self.out.read_line(&mut line).unwrap();
        line.trim().to_string()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for S3 {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

fn local_reference(s3: &S3) -> (PathBuf, common::Committed) {
    let dir = s3.tmp.path().join("reference");
    let st = s3.rollway(&["run", "--out", dir.to_str().unwrap()]).args(common::PINNED_TUNING).args(JOB).status().unwrap();
    assert!(st.success());
    let want = common::committed(&dir);
    assert_eq!(want.len(), 20000);
    (dir, want)
}

fn ok(o: &Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{err}");
    String::from_utf8_lossy(&o.stdout).into_owned() + &err
}

#[test]
fn issue45_a_run_to_s3_holds_what_a_local_run_records_and_every_reader_takes_the_url() {
    let Some(s3) = S3::start() else { return };
    let (reference, want) = local_reference(&s3);
    let url = format!("s3://{BUCKET}/runs/cartpole");
    let o = s3.rollway(&["run", "--out", &url]).args(common::PINNED_TUNING).args(JOB).output().unwrap();
    ok(&o);
    assert!(s3.work_dirs().is_empty(), "a writer that pushed everything removes its work directory");
    assert_eq!(s3.pulled(&url), want, "the store holds the local run's episodes");
    let local_glob = common::run_script(&s3.py, "glob_reader.py", &[&reference]);
    let local: serde_json::Value = serde_json::from_str(local_glob.lines().last().unwrap()).unwrap();
    assert_eq!(s3.glob(&url).len(), local["episodes"].as_object().unwrap().len(), "pyarrow over S3 reads every episode");
    let inspect = ok(&s3.output(&["inspect", "--json", &url]));
    assert!(inspect.contains("\"episodes\""), "{inspect}");
    assert!(ok(&s3.output(&["verify", &url])).contains("20000 episodes"));
    ok(&s3.output(&["load", &url, "--clip", "8", "--batch", "64"]));
    ok(&s3.output(&["load", &url, "--clip", "8", "--batch", "64", "--follow", "--epochs", "2"]));
    ok(&s3.output(&["report", &url]));
    assert!(s3.tmp.path().join("cartpole.report.html").exists(), "a store dataset's report goes to the working directory");
    ok(&s3.output(&["export", &url, "--to", "minari", "exported/cartpole-v0"]));
    // A second read pulls nothing new; an append adds a run after the first.
    assert!(ok(&s3.output(&["inspect", &url])).contains("pulled 0 new shard(s)"));
    ok(&s3.output(&["run", "--out", &url, "--append", "--env", "CartPole-v1", "--agent", "random", "--episodes", "30", "-q"]));
    assert_eq!(s3.pulled(&url).len(), 20030);
}

#[test]
fn issue45_killed_writers_lose_no_committed_episode_and_resume_finishes_the_run() {
    let Some(s3) = S3::start() else { return };
    let (_, want) = local_reference(&s3);
    let url = format!("s3://{BUCKET}/killed");
    let mut rng = 0x45u64;
    let mut kills = 0;
    for life in 0..8 {
        if kills >= 3 {
            break;
        }
        let mut cmd = if life == 0 { s3.rollway(&["run", "--out", &url]) } else { s3.rollway(&["run", "--resume", &url, "-q"]) };
        if life == 0 {
            cmd.args(common::PINNED_TUNING).args(JOB);
        }
        let have = s3.glob(&url).len() as u64;
        let shards_left = ((20000 - have) / 200).max(1);
        let target = 1 + common::next(&mut rng) % (shards_left / 2).max(1);
        let mut child = cmd.stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        // Killed once its work directory has committed a random share of what is
        // left: mid-upload, mid-commit or mid-publish, wherever the pusher is.
        let finished = common::kill_at(&mut child, target, || local_shards(&s3.work_dirs()), common::next(&mut rng) % 20);
        kills += usize::from(!finished);
        // Before any rollway command: what pyarrow reads over S3 is committed and right.
        for (id, (rows, _)) in s3.glob(&url) {
            assert_eq!(Some(rows), want.get(&id).map(|fp| fp.4), "life {life}: episode {id} differs from the local run");
        }
    }
    assert!(kills >= 3, "kills landed mid-run only {kills} times");
    let o = s3.output(&["run", "--resume", &url, "-q"]);
    ok(&o);
    assert_eq!(s3.pulled(&url), want, "after resuming: exactly the local run's episodes, each once");
    assert_eq!(s3.glob(&url).len(), 20000);
}

/// Index files in every work directory (one writer at a time: the live one's).
fn local_shards(dirs: &[PathBuf]) -> u64 {
    dirs.iter().map(|d| common::committed_shards(d)).sum()
}

#[test]
fn issue45_a_missing_bucket_or_a_live_writer_is_an_input_error_before_any_env_starts() {
    let Some(s3) = S3::start() else { return };
    let o = s3.output(&["run", "--env", "CartPole-v1", "--episodes", "5", "--out", "s3://no-such-bucket/x"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("no-such-bucket") && !err.contains("episodes/s"), "{err}");
    assert!(s3.work_dirs().is_empty());
    for args in [&["inspect", "s3://no-such-bucket/x"][..], &["inspect", "s3://rollway-test/nothing-here"]] {
        let o = s3.output(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
    }
    // A second writer while the first runs: refused, naming the holder; the first finishes.
    let url = format!("s3://{BUCKET}/busy");
    let mut first =
        s3.rollway(&["run", "--out", &url, "--env", "CartPole-v1", "--agent", "random", "--episodes", "100000", "-q"]).spawn().unwrap();
    while s3.work_dirs().is_empty() && first.try_wait().unwrap().is_none() {
        std::thread::sleep(Duration::from_millis(5));
    }
    let o = s3.output(&["run", "--out", &url, "--append", "--env", "CartPole-v1", "--episodes", "5"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("is being written by"), "{err}");
    assert!(first.wait().unwrap().success());
    assert_eq!(s3.pulled(&url).len(), 100000);
}

#[test]
fn issue45_refused_credentials_are_an_input_error_before_any_env_starts() {
    // moto checks keys against its IAM once this many requests (the bucket's creation) went unchecked.
    let Some(s3) = S3::start_with(&[("INITIAL_NO_AUTH_ACTION_COUNT", "1")]) else { return };
    let url = format!("s3://{BUCKET}/refused");
    for args in [&["run", "--env", "CartPole-v1", "--episodes", "5", "--out", &url][..], &["inspect", &url]] {
        let o = s3.output(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("cannot reach") && err.contains("credentials") && err.contains("InvalidAccessKeyId"), "{args:?}: {err}");
        assert!(!err.contains("episodes/s"), "no env started: {err}");
    }
    assert!(s3.work_dirs().is_empty());
}

/// `relabel` needs a local dataset: refused. A distributed run's parts on a store
/// belong to its driver (rollway.ray), which holds the dataset's lease: `--prepare`
/// by hand, or a member with no driver, is refused. `verify --repair` settles the
/// store under the lease (what it cleans: test_s3.py).
#[test]
fn issue45_commands_that_need_a_local_dataset_or_a_driver_say_so() {
    let Some(s3) = S3::start() else { return };
    let url = format!("s3://{BUCKET}/x");
    let cases: [(&[&str], &str); 3] = [
        (&["relabel", &url], "local dataset"),
        (&["run", "--env", "CartPole-v1", "--episodes", "4", "--prepare", "--out", &url], "prepared by its driver"),
        (&["run", "--join", &url, "--part", "0:0:4:stray"], "no run's driver holds the dataset's lease"),
    ];
    ok(&s3.output(&["run", "--env", "CartPole-v1", "--agent", "random", "--episodes", "4", "--out", &url]));
    let repaired = ok(&s3.output(&["verify", "--repair", &url]));
    assert!(repaired.contains("ok: 4 episodes") && repaired.contains("repair: 0 file(s) published"), "{repaired}");
    for (args, says) in cases {
        let o = s3.output(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn issue45_a_store_that_throttles_or_goes_away_for_seconds_is_retried_and_the_run_completes() {
    let Some(mut s3) = S3::start() else { return };
    let (_, want) = local_reference(&s3);
    let mut proxy = Proxy::start(&mut s3);
    let url = format!("s3://{BUCKET}/faults");
    let mut run = s3.rollway(&["run", "--out", &url]).args(common::PINNED_TUNING).args(JOB).stdout(Stdio::null()).spawn().unwrap();
    while local_shards(&s3.work_dirs()) < 5 && run.try_wait().unwrap().is_none() {
        std::thread::sleep(Duration::from_millis(2));
    }
    // `503 SlowDown` for the next 30 requests, then every connection dropped and
    // reset for 3 s (a store restarting, and on until one was), while shards are
    // being pushed.
    assert_eq!(proxy.send("slowdown 30"), "ok");
    assert_eq!(proxy.send("down 3"), "ok");
    assert!(run.wait().unwrap().success(), "the run rode out the faults");
    let stats = proxy.send("stats");
    assert!(stats.starts_with("slowdowns_left 0 reset ") && !stats.ends_with(" 0"), "every fault reached the client: {stats}");
    assert_eq!(s3.pulled(&url), want, "every episode on the store, once, as the local run's");
}
