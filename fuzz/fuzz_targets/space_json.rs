//! Space JSON (rollway.json, Minari's metadata.json): parse, and what parses must
//! round-trip through our own writer.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(space) = rollway_core::Space::from_json(text) {
        let again = rollway_core::Space::from_json(&space.to_json()).expect("our own JSON parses");
        assert_eq!(space, again);
    }
});
