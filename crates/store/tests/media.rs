//! Lossy frame media (`jpeg`, `h264`): every frame is kept, numeric data stays exact,
//! frames decode within a stated PSNR, ranged reads equal whole-episode reads, and
//! damaged files give errors, not panics.

use crate::common;

use common::{episodes, write_all};
use rand::{Rng, SeedableRng};
use rollway_core::Layout;
use rollway_store::{Dataset, Error, WriterConfig};

/// PSNR floors for 64×64 mining frames at the default settings (h264 CRF 23, jpeg
/// quality 95). Both subsample chroma 4:2:0, which costs most on 4-pixel tiles of
/// saturated colour: single frames and episode means measure ≈ 30–32 dB at worst; a wrong frame scores ≈ 12.
const MIN_FRAME_PSNR: f64 = 28.0;
const MIN_MEAN_PSNR: f64 = 30.0;

fn lossy_round_trip(media: &str) {
    let dir = tempfile::tempdir().unwrap();
    let (spec, eps) = episodes("PixelMine-v0", "size=64,max_steps=80", 5, 80);
    write_all(dir.path(), &spec, &eps, WriterConfig { max_buffer_episodes: Some(2), frame_media: media.into(), ..Default::default() });
    let ds = Dataset::open(dir.path()).unwrap();
    assert_eq!(ds.metadata().frame_media, media);
    assert_eq!(ds.shards().len(), 3);
    let ol = Layout::of(&spec.observation_space);
    let rgb = ol.leaves().iter().position(|l| l.path == "rgb").unwrap();
    let inv = ol.leaves().iter().position(|l| l.path == "inventory").unwrap();
    for e in &eps {
        let got = ds.read_episode(e.run_index).unwrap();
        let t = e.trajectory.as_ref().unwrap();
        let leaf = &ol.leaves()[inv];
        let want: Vec<u8> = t.obs.chunks_exact(ol.row_bytes()).flat_map(|r| r[leaf.offset..leaf.offset + leaf.bytes()].to_vec()).collect();
        assert_eq!(got.observations[inv].1.data, want, "numeric leaves stay exact");
        let leaf = &ol.leaves()[rgb];
        let frames = &got.observations[rgb].1;
        assert_eq!(frames.shape, vec![e.length as usize + 1, 64, 64, 3], "every step keeps its frame");
        let mut sum = 0.0;
        for (k, row) in t.obs.chunks_exact(ol.row_bytes()).enumerate() {
            let p =
                rollway_media::psnr(&frames.data[k * leaf.bytes()..(k + 1) * leaf.bytes()], &row[leaf.offset..leaf.offset + leaf.bytes()]);
            assert!(p >= MIN_FRAME_PSNR, "{media}: episode {} frame {k}: {p:.1} dB", e.run_index);
            sum += p.min(99.0);
        }
        let mean = sum / (e.length + 1) as f64;
        assert!(mean >= MIN_MEAN_PSNR, "{media}: episode {} mean {mean:.1} dB", e.run_index);
        // Random access through the shard equals the sequential read.
        let entry = ds.entry(e.run_index).unwrap().clone();
        let fr = &entry.frames["observations/rgb"];
        let shard = ds.open_frames("observations/rgb", entry.shard).unwrap();
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(e.run_index);
        for _ in 0..5 {
            let a = rng.random_range(0..fr.count);
            let n = rng.random_range(1..=(fr.count - a).min(16));
            let mut out = vec![0u8; n as usize * leaf.bytes()];
            shard.frames(fr.start + a, &mut out, leaf.bytes()).unwrap();
            assert_eq!(out, frames.data[a as usize * leaf.bytes()..(a + n) as usize * leaf.bytes()], "{media}: frames {a}..{}", a + n);
        }
    }
    let report = rollway_store::verify(&ds);
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

#[test]
fn jpeg_frames_round_trip_within_psnr() {
    lossy_round_trip("jpeg");
}

#[test]
fn h264_frames_round_trip_within_psnr() {
    lossy_round_trip("h264");
}

#[test]
fn h264_refuses_frames_it_cannot_store_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    // 16×16 RGBA frames: h264 stores RGB (odd sides it pads, see h264.rs).
    let (mut spec, _) = episodes("CartPole-v1", "", 1, 5);
    spec.observation_space = rollway_core::Space::boxed(rollway_core::DType::U8, &[16, 16, 4], 0.0, 255.0).unwrap();
    let r = rollway_store::DatasetWriter::create(
        dir.path(),
        &spec,
        "random",
        0,
        serde_json::json!({}),
        WriterConfig { frame_media: "h264".into(), ..Default::default() },
    );
    assert!(matches!(r, Err(Error::Unsupported(_))), "{:?}", r.err());
    assert!(!dir.path().join("rollway.json").exists(), "nothing written");
}

#[test]
fn damaged_video_and_jpeg_files_are_errors_not_panics() {
    for (media, file) in [("h264", "frames/observations.rgb/shard-000000.mp4"), ("jpeg", "frames/observations.rgb/shard-000000.jpg")] {
        let dir = tempfile::tempdir().unwrap();
        let (spec, eps) = episodes("PixelMine-v0", "size=32,max_steps=30", 3, 30);
        write_all(dir.path(), &spec, &eps, WriterConfig { frame_media: media.into(), ..Default::default() });
        let path = dir.path().join(file);
        let pristine = std::fs::read(&path).unwrap();
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(5);
        let mut errors = 0;
        for round in 0..60 {
            let mut bytes = pristine.clone();
            if round % 2 == 0 {
                bytes.truncate(rng.random_range(0..bytes.len()));
            } else {
                for _ in 0..rng.random_range(1..8) {
                    let i = rng.random_range(0..bytes.len());
                    bytes[i] = rng.random();
                }
            }
            std::fs::write(&path, &bytes).unwrap();
            let outcome = std::panic::catch_unwind(|| {
                let ds = Dataset::open(dir.path()).unwrap();
                let bad = !rollway_store::verify(&ds).problems.is_empty();
                let read_err = (0..3).any(|id| ds.read_episode(id).is_err());
                bad || read_err
            });
            errors += outcome.expect("no panic on a damaged file") as usize;
        }
        // Truncation always breaks these files; bit flips may land in tolerated bytes.
        assert!(errors >= 30, "{media}: only {errors} of 60 damaged files were noticed");
        std::fs::write(&path, &pristine).unwrap();
    }
}

#[test]
fn frame_media_can_be_chosen_per_image_key() {
    let dir = tempfile::tempdir().unwrap();
    let (spec, eps) = episodes("PixelMine-v0", "size=32,max_steps=20", 2, 20);
    write_all(dir.path(), &spec, &eps, WriterConfig { frame_media: "raw,observations/rgb=h264".into(), ..Default::default() });
    assert!(dir.path().join("frames/observations.rgb/shard-000000.mp4").exists());
    let ds = Dataset::open(dir.path()).unwrap();
    let got = ds.read_episode(1).unwrap();
    assert_eq!(
        got.observations.iter().find(|(k, _)| k == "observations/rgb").unwrap().1.shape,
        vec![eps[1].length as usize + 1, 32, 32, 3]
    );
    assert!(rollway_store::verify(&ds).problems.is_empty());
    // A key the env does not have is refused before anything is written.
    let other = tempfile::tempdir().unwrap();
    let r = rollway_store::DatasetWriter::create(
        other.path(),
        &spec,
        "random",
        0,
        serde_json::json!({}),
        WriterConfig { frame_media: "observations/depth=h264".into(), ..Default::default() },
    );
    assert!(matches!(r, Err(Error::Unsupported(ref m)) if m.contains("observations/depth")), "{:?}", r.err());
}

#[test]
fn h264_stores_odd_sided_frames_padded_and_reads_them_at_their_own_size() {
    // PixelMine's 64×64 frames cropped to 63×63 (Craftax-Classic's size): odd sides.
    let (spec, eps) = episodes("PixelMine-v0", "size=64,max_steps=40", 2, 40);
    let ol = Layout::of(&spec.observation_space);
    let rgb = ol.leaves().iter().find(|l| l.path == "rgb").unwrap().clone();
    let mut odd = spec.clone();
    odd.observation_space = rollway_core::Space::boxed(rollway_core::DType::U8, &[63, 63, 3], 0.0, 255.0).unwrap();
    let row = Layout::of(&odd.observation_space).row_bytes();
    let crop = |r: &[u8]| {
        let mut out: Vec<u8> = (0..63).flat_map(|y| r[rgb.offset + y * 64 * 3..][..63 * 3].to_vec()).collect();
        out.resize(row, 0);
        out
    };
    let eps: Vec<_> = eps
        .into_iter()
        .map(|e| {
            let mut t = *e.trajectory.clone().unwrap();
            t.obs = t.obs.chunks_exact(ol.row_bytes()).flat_map(crop).collect();
            rollway_core::EpisodeResult::from_trajectory(e.run_index, e.run_index, t)
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    write_all(dir.path(), &odd, &eps, WriterConfig { frame_media: "h264".into(), ..Default::default() });
    let ds = Dataset::open(dir.path()).unwrap();
    assert!(rollway_store::verify(&ds).problems.is_empty());
    for e in &eps {
        let got = ds.read_episode(e.run_index).unwrap();
        let frames = &got.observations[0].1;
        assert_eq!(frames.shape, vec![e.length as usize + 1, 63, 63, 3]);
        for (k, want) in e.trajectory.as_ref().unwrap().obs.chunks_exact(row).enumerate() {
            let p = rollway_media::psnr(&frames.data[k * 63 * 63 * 3..(k + 1) * 63 * 63 * 3], &want[..63 * 63 * 3]);
            assert!(p >= MIN_FRAME_PSNR, "episode {} frame {k}: {p:.1} dB", e.run_index);
        }
        let entry = ds.entry(e.run_index).unwrap().clone();
        let fr = &entry.frames["observations"];
        let mut out = vec![0u8; 5 * 63 * 63 * 3];
        ds.open_frames("observations", entry.shard).unwrap().frames(fr.start + 3, &mut out, 63 * 63 * 3).unwrap();
        assert_eq!(out, frames.data[3 * 63 * 63 * 3..8 * 63 * 63 * 3], "a ranged read equals the episode's");
    }
}
