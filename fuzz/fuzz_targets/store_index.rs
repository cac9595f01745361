//! An index object read from an object store (issue 45): whatever the bytes, a pull
//! writes only shard files inside the replica.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(paths) = rollway_remote::index_paths(data) {
        for p in paths {
            let parts: Vec<&str> = p.split('/').collect();
            assert!(matches!(parts[0], "steps" | "frames"), "{p}");
            assert!(parts.iter().all(|c| !c.is_empty() && *c != "." && *c != ".."), "{p}");
        }
    }
});
