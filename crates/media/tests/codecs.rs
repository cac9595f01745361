//! H.264/mp4 and JPEG round trips on rendered mining-world frames: frame counts,
//! frame-accurate random access, and quality (PSNR) bounds.

use rand::{Rng, SeedableRng};
use rollway_core::{Layout, Params, RowMut, RowRef, Rows};
use rollway_media::h264::{decode_range, encode, Decoder, H264Options};
use rollway_media::{jpeg, mp4, psnr};

/// `n` RGB frames of a PixelMine episode under random actions.
fn mine_frames(size: usize, n: usize, seed: u64) -> Vec<Vec<u8>> {
    let mut env = rollway_envs::make("PixelMine-v0", &Params::parse(&format!("size={size},max_steps=100000")).unwrap()).unwrap();
    let spec = env.spec().clone();
    let (ol, al) = (Layout::of(&spec.observation_space), Layout::of(&spec.action_space));
    let rgb = ol.leaves().iter().find(|l| l.path == "rgb").unwrap().clone();
    let (mut obs, mut act) = (Rows::new(ol.row_bytes(), 1), Rows::new(al.row_bytes(), 1));
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
    env.reset(Some(seed), None, RowMut::new(&ol, obs.row_mut(0))).unwrap();
    let mut out = vec![obs.row(0)[rgb.offset..rgb.offset + rgb.bytes()].to_vec()];
    while out.len() < n {
        al.sample_row(&mut rng, act.row_mut(0));
        env.step(RowRef::new(&al, act.row(0)), RowMut::new(&ol, obs.row_mut(0))).unwrap();
        out.push(obs.row(0)[rgb.offset..rgb.offset + rgb.bytes()].to_vec());
    }
    out
}

#[test]
fn h264_keeps_every_frame_and_decodes_any_range_frame_accurately() {
    let frames = mine_frames(64, 150, 1);
    let opts = H264Options::default();
    let enc = encode(frames.iter().map(|f| f.as_slice()), 64, 64, &opts).unwrap();
    assert_eq!(enc.packets.len(), frames.len());
    assert!(enc.packets[0].key);
    // Keyframes exactly on the interval: random access never decodes more than keyint frames.
    let keys: Vec<i64> = enc.packets.iter().filter(|p| p.key).map(|p| p.pts).collect();
    assert_eq!(keys, (0..150).step_by(opts.keyint as usize).collect::<Vec<i64>>());
    let mut dec = Decoder::new(enc.codec, &enc.extradata, 64, 64).unwrap();
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(2);
    let mut whole = Vec::new();
    decode_range(&mut dec, &enc.packets, 0, 150, &mut |i, rgb| {
        whole.push((i, rgb.to_vec()));
        Ok(())
    })
    .unwrap();
    assert_eq!(whole.len(), 150);
    for (i, rgb) in &whole {
        let p = psnr(rgb, &frames[*i as usize]);
        assert!(p > 30.0, "frame {i}: PSNR {p:.1} dB");
    }
    for _ in 0..20 {
        let from = rng.random_range(0..140i64);
        let to = from + rng.random_range(1..=10);
        let mut got = Vec::new();
        decode_range(&mut dec, &enc.packets, from, to, &mut |i, rgb| {
            got.push((i, rgb.to_vec()));
            Ok(())
        })
        .unwrap();
        // Decoding from a keyframe gives the very same pixels as decoding from the start.
        assert_eq!(got, whole[from as usize..to as usize].to_vec(), "range {from}..{to}");
    }
    // Ranges in increasing order continue where the last one stopped (gaps, GOP
    // boundaries and the stream's end included) and still give the same pixels.
    let mut at = 0i64;
    for (k, gap) in [0i64, 3, 0, 25, 1, 0, 51].iter().enumerate() {
        let from = at + gap;
        let to = (from + 7 + k as i64).min(150);
        let mut got = Vec::new();
        decode_range(&mut dec, &enc.packets, from, to, &mut |i, rgb| {
            got.push((i, rgb.to_vec()));
            Ok(())
        })
        .unwrap();
        assert_eq!(got, whole[from as usize..to as usize].to_vec(), "continued range {from}..{to}");
        at = to;
    }
    assert_eq!(at, 150, "the last range reached the end of the stream");
}

#[test]
fn episodes_share_one_mp4_with_continuous_timestamps() {
    let dir = tempfile::tempdir().unwrap();
    let eps: Vec<Vec<Vec<u8>>> = [40, 1, 77].iter().enumerate().map(|(i, &n)| mine_frames(32, n, i as u64)).collect();
    let opts = H264Options::default();
    let encoded: Vec<_> = eps.iter().map(|e| encode(e.iter().map(|f| f.as_slice()), 32, 32, &opts).unwrap()).collect();
    let path = dir.path().join("v.mp4");
    let n = mp4::write(&path, 32, 32, opts.fps, &encoded.iter().collect::<Vec<_>>()).unwrap();
    assert_eq!(n, 118);
    let v = mp4::read(&path).unwrap();
    assert_eq!((v.width, v.height, v.fps, v.frames()), (32, 32, 30, 118));
    let mut pts: Vec<i64> = v.packets.iter().map(|p| p.pts).collect();
    pts.sort();
    assert_eq!(pts, (0..118).collect::<Vec<_>>());
    // Every episode starts on a keyframe, so each decodes on its own.
    let all: Vec<&Vec<u8>> = eps.iter().flatten().collect();
    let mut dec = Decoder::new(v.codec, &v.extradata, 32, 32).unwrap();
    for (from, to) in [(0, 40), (40, 41), (41, 118), (39, 45)] {
        decode_range(&mut dec, &v.packets, from, to, &mut |i, rgb| {
            let p = psnr(rgb, all[i as usize]);
            // 32×32 pixel art is hard on 4:2:0 chroma; a wrong frame scores far lower.
            assert!(p > 25.0, "frame {i}: {p}");
            Ok(())
        })
        .unwrap();
    }
}

#[test]
fn bad_inputs_are_errors_not_panics() {
    assert!(encode([[0u8; 10].as_slice()], 3, 3, &H264Options::default()).is_err(), "odd sizes");
    assert!(encode([[0u8; 10].as_slice()], 4, 4, &H264Options::default()).is_err(), "short frame");
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.mp4");
    std::fs::write(&junk, b"not an mp4 at all").unwrap();
    assert!(mp4::read(&junk).is_err());
    assert!(mp4::read(&dir.path().join("missing.mp4")).is_err());
    let mut out = vec![0u8; 16 * 16 * 3];
    assert!(jpeg::decode(b"\xff\xd8 not a jpeg", 16, 16, 3, &mut out).is_err());
}

#[test]
fn jpeg_round_trip_within_quality_bounds() {
    let frames = mine_frames(64, 10, 3);
    let mut enc = jpeg::Encoder::new(95, 3).unwrap();
    let mut out = vec![0u8; 64 * 64 * 3];
    for f in &frames {
        let j = enc.encode(f, 64, 64, 3).unwrap();
        assert_eq!(&j[..2], b"\xff\xd8");
        jpeg::decode(&j, 64, 64, 3, &mut out).unwrap();
        assert!(psnr(&out, f) > 30.0);
        assert!(jpeg::decode(&j, 32, 64, 3, &mut out).is_err(), "wrong size is refused");
    }
}
