//! mp4 files (h264 frame media, LeRobot videos): demux, then decode every frame.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rollway_media::h264::{decode_range, Decoder};

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v.mp4");
    std::fs::write(&path, data).unwrap();
    let Ok(v) = rollway_media::mp4::read(&path) else { return };
    if v.width == 0 || v.height == 0 || v.width > 512 || v.height > 512 || v.frames() == 0 {
        return;
    }
    let Ok(mut dec) = Decoder::new(&v.extradata, v.width, v.height) else { return };
    let n = v.frames().min(64) as i64;
    let _ = decode_range(&mut dec, &v.packets, 0, n, &mut |_, _| Ok(()));
});
