//! A dataset's JSON files (rollway.json, index/shard-N.json) and run parameters.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = serde_json::from_slice::<rollway_store::Metadata>(data);
    let _ = serde_json::from_slice::<rollway_store::ShardIndex>(data);
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = rollway_core::Params::parse(text);
    }
});
