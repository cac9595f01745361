//! Bytes for the store's examples that compress as frames do (shared by `#[path]`: an
//! example is one binary, so this is included, not linked).

/// `n` bytes that compress like frames: mostly one gray, a seventh of them noise.
pub fn frame_like(n: usize) -> Vec<u8> {
    let mut x = 1u32;
    (0..n)
        .map(|i| {
            x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            if i % 7 == 0 {
                (x >> 24) as u8
            } else {
                87
            }
        })
        .collect()
}
