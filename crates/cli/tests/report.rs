//! `rollway report` and `run --report`: the page is one file with no outside
//! references, shows what the dataset holds (labels, faults, killed runs), renders
//! in a real headless Chromium with no console errors, its plots drawn, its clips
//! decodable and its thumbnails loaded; and it changes nothing in the dataset.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

fn rollway(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rollway")).args(args).output().expect("binary runs")
}

fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = vec![];
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files(&p));
        } else {
            out.push((p.display().to_string(), std::fs::read(&p).unwrap()));
        }
    }
    out.sort();
    out
}

/// The page plus a script that reports, into the DOM, what the browser made of it.
const PROBE: &str = r#"<script>
window.addEventListener('load', () => {
  const out = document.createElement('pre'); out.id = 'probe'; document.body.appendChild(out);
  const vids = [...document.querySelectorAll('video')];
  const report = () => { out.textContent = JSON.stringify({
    plots: [...document.querySelectorAll('svg.plot')].filter(s => s.getBoundingClientRect().width > 100).length,
    marks: document.querySelectorAll('svg.plot rect.bar, svg.plot polyline').length,
    videos: vids.length,
    decoded: vids.filter(v => v.readyState >= 2 && v.videoWidth > 0).length,
    images: [...document.images].filter(i => i.complete && i.naturalWidth > 0).length,
  }); };
  report(); vids.forEach(v => v.addEventListener('loadeddata', report));
});
</script>"#;

#[test]
fn issue14_report_renders_in_headless_chromium_with_plots_clips_and_thumbnails() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("mine");
    let d = dir.to_str().unwrap();
    let job = ["run", "--env", "PixelMine-v0", "--env-opt", "size=64", "--agent", "miner", "--episodes", "6", "--max-episode-steps", "80"];
    let o = rollway(&[&job[..], &["--frame-media", "h264", "--filter", "kind=return,min=1,label=scored", "--out", d, "--report"]].concat());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let page = tmp.path().join("mine.report.html");
    assert!(String::from_utf8_lossy(&o.stdout).contains(&format!("report             {}", page.display())));
    let html = std::fs::read_to_string(&page).unwrap();
    // Self-contained: nothing fetched from anywhere (the SVG namespace is a name, not a fetch).
    let outside = html.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    assert!(!outside.contains("http://") && !outside.contains("https://") && !outside.contains("<link"), "the page refers outside");
    for section in ["Runs: config and provenance", "Episodes: outcomes", "Throughput", "Faults", "Frames"] {
        assert!(html.contains(section), "no section {section}");
    }
    let Some(chrome) = common::chromium() else { return };
    let probe = tmp.path().join("probe.html");
    std::fs::write(&probe, html.replace("</body>", &format!("{PROBE}</body>"))).unwrap();
    let (dom, log) = common::headless(&chrome, &probe, &["--dump-dom"]);
    let console: Vec<&str> = log.lines().filter(|l| l.contains("CONSOLE") || l.contains("Uncaught")).collect();
    assert!(console.is_empty(), "console messages: {console:#?}");
    let json = dom.split("<pre id=\"probe\">").nth(1).and_then(|s| s.split("</pre>").next()).expect("the probe ran");
    let got: serde_json::Value = serde_json::from_str(json).unwrap();
    assert_eq!(got["plots"], 4, "{got}");
    assert!(got["marks"].as_u64().unwrap() >= 4, "{got}");
    let videos = got["videos"].as_u64().unwrap();
    assert!(videos >= 2, "a clip per sampled episode: {got}");
    assert_eq!(got["decoded"].as_u64(), Some(videos), "every clip decodes: {got}");
    assert!(got["images"].as_u64().unwrap() >= 16, "thumbnails load: {got}");
}

#[test]
fn issue14_report_shows_faults_and_killed_runs_and_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("faulty");
    let d = dir.to_str().unwrap();
    // Episode 1's seed always fails (given up); every 25th step call errors (retried).
    let base = [
        "run",
        "--env",
        "Faulty-v0",
        "--agent",
        "random",
        "--episodes",
        "12",
        "--workers",
        "1",
        "--envs-per-worker",
        "2",
        "--mode",
        "sync",
    ];
    let seeds = tmp.path().join("seeds.jsonl");
    assert!(rollway(&[&base[..], &["--no-record", "-q", "--episodes-json", seeds.to_str().unwrap()]].concat()).status.success());
    let seed = std::fs::read_to_string(&seeds)
        .unwrap()
        .lines()
        .find(|l| l.contains("\"index\":1,"))
        .unwrap()
        .split("\"seed\":")
        .nth(1)
        .unwrap()
        .split(',')
        .next()
        .unwrap()
        .to_string();
    let opts = format!("error_every=25,poison_seeds={seed}");
    let o = rollway(&[&base[..], &["--env-opt", &opts, "--max-restarts", "1000", "--out", d, "-q"]].concat());
    assert_eq!(o.status.code(), Some(1), "a run that gave episodes up: {}", String::from_utf8_lossy(&o.stderr));
    // A run without a stored summary, as a killed run leaves it.
    let meta_path = dir.join("rollway.json");
    let mut meta: serde_json::Value = serde_json::from_slice(&std::fs::read(&meta_path).unwrap()).unwrap();
    assert!(meta["runs"][0]["summary"]["timeline"].as_array().is_some_and(|t| !t.is_empty()), "a clean run stores its summary");
    let given_up: Vec<String> = files(&dir.join("index"))
        .iter()
        .flat_map(|(_, b)| serde_json::from_slice::<serde_json::Value>(b).unwrap()["episodes"].as_array().unwrap().clone())
        .filter(|e| e["status"] == "given_up")
        .map(|e| e["error"].as_str().unwrap().to_string())
        .collect();
    assert!(!given_up.is_empty(), "the job gives some episodes up");
    let out = tmp.path().join("page.html");
    let o = rollway(&["report", d, "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(&out).unwrap();
    let escaped = |s: &str| s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;");
    assert!(html.contains(&escaped(&given_up[0])), "the given-up episode's error is shown");
    assert!(html.contains("<th>given-up episode</th>"));
    assert!(html.contains("Steps per second over the run"));
    meta["runs"][0].as_object_mut().unwrap().remove("summary");
    std::fs::write(&meta_path, serde_json::to_vec(&meta).unwrap()).unwrap();
    let before = files(&dir);
    let o = rollway(&["report", d, "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.contains("no (killed, or still running)") && !html.contains("Steps per second over the run"));
    assert_eq!(files(&dir), before, "reporting changed the dataset");
}

#[test]
fn issue14_report_on_a_non_dataset_is_an_input_error_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let o = rollway(&["report", tmp.path().to_str().unwrap(), "-o", tmp.path().join("x.html").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a rollway dataset"), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
    // A run that records nothing has nothing to report on: refused before it runs.
    let o = rollway(&["run", "--env", "CartPole-v1", "--agent", "random", "--episodes", "3", "--report", "-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--report"), "{}", String::from_utf8_lossy(&o.stderr));
}
