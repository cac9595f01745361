//! Issue 5, checked with the real peers: every mp4 rollway writes opens in PyAV with
//! the exact frame count and decodes within a PSNR bound of the same frames recorded
//! losslessly; every JPEG frame opens with Pillow. The loader reads video datasets.

use crate::common;

use common::{peer_python, rollway, run_script};

/// Mean PSNR floor over all frames of 64×64 mining episodes at the default settings
/// (h264 CRF 23, jpeg quality 95; both measure ≈ 31–35 dB on these frames).
const MIN_MEAN_PSNR: &str = "30";

fn record(dir: &std::path::Path, media: &str) {
    let d = dir.join(media);
    rollway(&[
        &"run",
        &"--env",
        &"PixelMine-v0",
        &"--env-opt",
        &"size=64,max_steps=120",
        &"--agent",
        &"random",
        &"--episodes",
        &"6",
        &"--seed",
        &"3",
        &"--max-buffer-episodes",
        &"4",
        &"--frame-media",
        &media,
        &"--out",
        &d,
        &"-q",
    ]);
}

#[test]
fn pyav_reads_every_frame_we_write_and_pillow_opens_our_jpegs() {
    let Some(py) = peer_python(&["av", "PIL", "numpy"]) else { return };
    let tmp = tempfile::tempdir().unwrap();
    for media in ["raw", "h264", "jpeg"] {
        record(tmp.path(), media);
    }
    for media in ["h264", "jpeg"] {
        let out = run_script(&py, "check_video.py", &[&tmp.path().join(media), &tmp.path().join("raw"), &MIN_MEAN_PSNR]);
        assert!(out.contains(&format!("{media}: ")), "{out}");
        // Our own checker agrees.
        rollway(&[&"verify", &tmp.path().join(media)]);
    }
}

#[test]
fn loader_decodes_video_windows() {
    let tmp = tempfile::tempdir().unwrap();
    record(tmp.path(), "h264");
    let out = rollway(&[&"load", &tmp.path().join("h264"), &"--clip", &"16", &"--stride", &"8", &"--batch", &"8", &"--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    // 6 episodes of 120 steps: windows start at 0, 8, …, 104 → 14 per episode.
    assert_eq!(v["windows"], 6 * 14, "{out}");
}

#[test]
fn bad_media_settings_exit_2_naming_the_field() {
    let tmp = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 5] = [
        (&["--image-media", "gif"], "`gif` is not a frame media"),
        (&["--image-media", "h264", "--crf", "60"], "--crf: 60"),
        (&["--image-media", "h264", "--preset", "warp"], "--preset: `warp`"),
        (&["--image-media", "jpeg", "--jpeg-quality", "0"], "--jpeg-quality: 0"),
        (&["--image-media", "observations/depth=h264"], "observations/depth"),
    ];
    for (i, (flags, want)) in cases.iter().enumerate() {
        let out = tmp.path().join(format!("d{i}"));
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_rollway"))
            .args(["run", "--env", "PixelMine-v0", "--env-opt", "size=32,max_steps=5", "--episodes", "1", "-q", "--out"])
            .arg(&out)
            .args(*flags)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{flags:?}: {err}");
        assert!(err.contains(want), "{flags:?}: {err}");
        assert!(!out.join("rollway.json").exists(), "{flags:?} wrote a dataset");
    }
}

#[test]
fn image_media_is_also_a_config_file_key() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("job.toml");
    std::fs::write(&cfg, "env = \"PixelMine-v0\"\nepisodes = 2\nmax_steps = 10\nimage_media = \"jpeg\"\n[env_params]\nsize = 32\n")
        .unwrap();
    let out = tmp.path().join("d");
    rollway(&[&"run", &cfg, &"--out", &out, &"-q"]);
    assert!(out.join("frames/observations.rgb/shard-000000.jpg").exists());
}
