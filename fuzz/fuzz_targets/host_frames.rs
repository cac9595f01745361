//! What an env process sends back: frames on its pipe, with a hello or a round's
//! reply inside (a buggy or crashing env process may send anything).
#![no_main]
use libfuzzer_sys::fuzz_target;
use rollway_host::proto::{read_frame, Hello, RoundReply};

fuzz_target!(|data: &[u8]| {
    let mut r = data;
    while let Ok(Some(frame)) = read_frame(&mut r) {
        let _ = serde_json::from_slice::<Hello>(&frame);
        let _ = serde_json::from_slice::<RoundReply>(&frame);
    }
});
