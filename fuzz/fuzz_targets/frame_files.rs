//! Frame files (raw, lz4 and jpeg containers) read as a dataset would: open, then
//! decode every frame the file claims to have.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rollway_store::frames::{media, Geom};

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shard");
    std::fs::write(&path, data).unwrap();
    let geom = Geom { height: 16, width: 16, channels: 3 };
    let mut out = vec![0u8; geom.bytes()];
    for name in ["raw", "lz4", "jpeg"] {
        let m = media(name).unwrap();
        if let Ok(shard) = m.open(&path, &geom) {
            for i in 0..shard.len().min(64) {
                let _ = shard.frame(i, &mut out);
            }
        }
        let mut all = Vec::new();
        let _ = m.read(&path, &geom, 0, 2, &mut all);
    }
});
