//! Rendering: a tile atlas made once per env, a pre-rendered image of the whole
//! world, and per-step frames cut out of that image with one row copy per pixel row.
//!
//! Stepping must stay cheap (≥100k steps/s at 64 px), so a frame is never drawn
//! tile by tile: the world image (with a `Void` border of half a view) is kept up to
//! date when a tile changes, and the view is `size` slices of it plus the player sprite.
//!
//! Every texture's centre pixel has a colour no other texture's centre has (its
//! *signature*), so [`decode_view`] can recover the tiles of a frame exactly.

use super::world::{Dir, Tile, World};

/// The view is `VIEW × VIEW` tiles; the agent stands at cell `(VIEW/2, VIEW/2)`.
pub const VIEW: usize = 16;
/// Border of the pre-rendered world image, in tiles: what a view sees beyond the edge.
const PAD: usize = VIEW / 2;
/// Atlas entries: the tiles up to `Void`, then the player facing left/right/up/down.
const PLAYER0: usize = Tile::Player as usize;
const ATLAS_LEN: usize = PLAYER0 + 4;

/// Centre-pixel colours: tiles in `Tile` order (without `Player`), then the player per facing.
const SIGNATURE: [[u8; 3]; ATLAS_LEN] = [
    [86, 152, 58],   // grass
    [222, 204, 142], // sand
    [52, 104, 196],  // water
    [28, 92, 36],    // tree
    [128, 128, 132], // stone
    [104, 92, 80],   // path
    [24, 24, 24],    // coal
    [214, 150, 104], // iron
    [96, 236, 232],  // diamond
    [160, 104, 48],  // table
    [0, 0, 0],       // void
    [250, 214, 176], // player facing left
    [250, 214, 177], // player facing right
    [250, 214, 178], // player facing up
    [250, 214, 179], // player facing down
];

/// Cheap integer hash for texture speckles (deterministic, no RNG state).
fn hash(x: usize, y: usize, k: usize) -> f32 {
    let mut h = (x as u32).wrapping_mul(0x9E37_79B1) ^ (y as u32).wrapping_mul(0x85EB_CA77) ^ (k as u32).wrapping_mul(0xC2B2_AE3D);
    h ^= h >> 15;
    h = h.wrapping_mul(0x2C1B_3C6D);
    h ^= h >> 12;
    (h & 0xFFFF) as f32 / 65535.0
}

fn shade(c: [u8; 3], d: f32) -> [u8; 3] {
    c.map(|v| (v as f32 + d).clamp(0.0, 255.0) as u8)
}

fn near(u: f32, v: f32, cu: f32, cv: f32, r: f32) -> bool {
    (u - cu) * (u - cu) + (v - cv) * (v - cv) < r * r
}

/// Colour of texture `k` at pixel `(x, y)` of a `t × t` tile; `None` is transparent (player only).
fn texel(k: usize, x: usize, y: usize, t: usize) -> Option<[u8; 3]> {
    let (u, v) = ((x as f32 + 0.5) / t as f32, (y as f32 + 0.5) / t as f32);
    let h = hash(x, y, k);
    let grass = shade(SIGNATURE[0], (h - 0.5) * 24.0 - if h > 0.85 { 20.0 } else { 0.0 });
    let stone = shade(SIGNATURE[4], (h - 0.5) * 16.0 - if h > 0.88 { 30.0 } else { 0.0 });
    let ore = |c: [u8; 3]| {
        let dot = near(u, v, 0.5, 0.5, 0.2) || near(u, v, 0.22, 0.25, 0.12) || near(u, v, 0.78, 0.72, 0.12);
        if dot {
            shade(c, (h - 0.5) * 20.0)
        } else {
            stone
        }
    };
    Some(match k {
        0 => grass,
        1 => shade(SIGNATURE[1], (h - 0.5) * 14.0),
        2 => {
            let wave = ((v * 3.0 + 0.25 * (u * 6.3).sin()).fract()) < 0.18;
            shade(SIGNATURE[2], if wave { 40.0 } else { (h - 0.5) * 8.0 })
        }
        3 => {
            if near(u, v, 0.5, 0.42, 0.4) {
                shade(SIGNATURE[3], (h - 0.5) * 30.0)
            } else if (0.4..0.6).contains(&u) && v > 0.7 {
                [110, 72, 40]
            } else {
                grass
            }
        }
        4 => stone,
        5 => shade(SIGNATURE[5], (h - 0.5) * 12.0),
        6 => ore(SIGNATURE[6]),
        7 => ore(SIGNATURE[7]),
        8 => ore(SIGNATURE[8]),
        9 => {
            let top = v < 0.3;
            let leg = v > 0.75 && (0.25..=0.75).contains(&u);
            if leg {
                grass
            } else if top {
                shade(SIGNATURE[9], 30.0 + (h - 0.5) * 10.0)
            } else {
                shade(SIGNATURE[9], if (u * 4.0).fract() < 0.15 { -40.0 } else { (h - 0.5) * 10.0 })
            }
        }
        10 => [0, 0, 0],
        _ => {
            if !near(u, v, 0.5, 0.5, 0.45) {
                return None;
            }
            if v < 0.5 {
                SIGNATURE[PLAYER0]
            } else {
                [40, 70, 180]
            }
        }
    })
}

/// Builds the atlas (`ATLAS_LEN` textures of `t×t` RGB pixels) and the player's opacity mask.
#[allow(clippy::needless_range_loop)] // `k` is the texture id, passed on and compared, not just an index
fn build_atlas(t: usize) -> (Vec<u8>, Vec<bool>) {
    let tex = t * t * 3;
    let mut atlas = vec![0u8; ATLAS_LEN * tex];
    let mut mask = vec![false; t * t];
    let c = t / 2;
    for k in 0..ATLAS_LEN {
        for y in 0..t {
            for x in 0..t {
                let px = texel(k, x, y, t);
                if k == PLAYER0 {
                    mask[y * t + x] = px.is_some();
                }
                let o = k * tex + (y * t + x) * 3;
                atlas[o..o + 3].copy_from_slice(&px.unwrap_or([0, 0, 0]));
            }
        }
        if k >= PLAYER0 {
            // The facing shows as a dark "eye" towards the front.
            let (dx, dy) = Dir::ALL[k - PLAYER0].delta();
            let ex = ((0.5 + 0.3 * dx as f32) * t as f32) as usize;
            let ey = ((0.5 + 0.3 * dy as f32) * t as f32) as usize;
            if (ex, ey) != (c, c) {
                let o = k * tex + (ey.min(t - 1) * t + ex.min(t - 1)) * 3;
                atlas[o..o + 3].copy_from_slice(&[20, 20, 30]);
                mask[ey.min(t - 1) * t + ex.min(t - 1)] = true;
            }
        }
        let o = k * tex + (c * t + c) * 3;
        atlas[o..o + 3].copy_from_slice(&SIGNATURE[k]);
    }
    mask[c * t + c] = true;
    (atlas, mask)
}

/// Draws frames of one world at one size.
pub struct Renderer {
    size: usize,
    t: usize,
    atlas: Vec<u8>,
    player_mask: Vec<bool>,
    /// The world plus a `PAD`-tile `Void` border, `stride` bytes per pixel row.
    image: Vec<u8>,
    stride: usize,
}

impl Renderer {
    /// A renderer for `size × size` frames (`size` a positive multiple of [`VIEW`]) of a `side`-tile world.
    pub fn new(size: usize, side: usize) -> Renderer {
        let t = size / VIEW;
        let (atlas, player_mask) = build_atlas(t);
        let padded = side + 2 * PAD;
        let stride = padded * t * 3;
        let mut r = Renderer { size, t, atlas, player_mask, image: vec![0; stride * padded * t], stride };
        for y in 0..padded {
            for x in 0..padded {
                r.blit(x, y, Tile::Void as usize);
            }
        }
        r
    }

    /// Tile size in pixels.
    pub fn tile_px(&self) -> usize {
        self.t
    }

    fn blit(&mut self, px: usize, py: usize, k: usize) {
        let (t, row) = (self.t, self.t * 3);
        let src = &self.atlas[k * t * row..(k + 1) * t * row];
        for (i, line) in src.chunks_exact(row).enumerate() {
            let o = (py * t + i) * self.stride + px * row;
            self.image[o..o + row].copy_from_slice(line);
        }
    }

    /// Repaints every world tile into the image (after a reset).
    pub fn paint_world(&mut self, world: &World) {
        let side = world.side();
        for y in 0..side {
            for x in 0..side {
                let k = world.tiles()[y * side + x] as usize;
                self.blit(x + PAD, y + PAD, k);
            }
        }
    }

    /// Repaints one world tile (after it changed).
    #[inline]
    pub fn paint_tile(&mut self, x: i32, y: i32, tile: Tile) {
        self.blit(x as usize + PAD, y as usize + PAD, tile as usize);
    }

    /// Writes the view around `pos` (facing `facing`) into `out` (`size*size*3` bytes).
    #[inline]
    pub fn draw(&self, pos: (i32, i32), facing: Dir, out: &mut [u8]) {
        let (t, s) = (self.t, self.size);
        let row = s * 3;
        // The view's top-left tile is pos - PAD, i.e. padded tile `pos`.
        let base = pos.1 as usize * t * self.stride + pos.0 as usize * t * 3;
        for (i, line) in out[..s * row].chunks_exact_mut(row).enumerate() {
            let o = base + i * self.stride;
            line.copy_from_slice(&self.image[o..o + row]);
        }
        let k = PLAYER0 + facing as usize;
        let tex = &self.atlas[k * t * t * 3..(k + 1) * t * t * 3];
        let c = PAD * t;
        for y in 0..t {
            for x in 0..t {
                if self.player_mask[y * t + x] {
                    let o = ((c + y) * s + c + x) * 3;
                    out[o..o + 3].copy_from_slice(&tex[(y * t + x) * 3..(y * t + x) * 3 + 3]);
                }
            }
        }
    }
}

/// The atlas entry whose signature is `px`, if any.
#[inline]
fn signature_of(px: &[u8]) -> Option<usize> {
    SIGNATURE.iter().position(|s| s[..] == px[..3])
}

fn center_pixel(rgb: &[u8], size: usize, col: usize, row: usize) -> Option<&[u8]> {
    let t = size / VIEW;
    let o = ((row * t + t / 2) * size + col * t + t / 2) * 3;
    rgb.get(o..o + 3)
}

/// Recovers the tile types of a frame (`[row][col]`, the agent at `[VIEW/2][VIEW/2]`
/// as `Tile::Player`). Unknown colours and malformed input decode as `Void`.
pub fn decode_view(rgb: &[u8], size: usize) -> [[Tile; VIEW]; VIEW] {
    let mut out = [[Tile::Void; VIEW]; VIEW];
    if size == 0 || !size.is_multiple_of(VIEW) || rgb.len() < size * size * 3 {
        return out;
    }
    for (r, line) in out.iter_mut().enumerate() {
        for (c, cell) in line.iter_mut().enumerate() {
            if let Some(k) = center_pixel(rgb, size, c, r).and_then(signature_of) {
                *cell = Tile::ALL[k.min(PLAYER0)];
            }
        }
    }
    out
}

/// The agent's facing, read from its sprite at the centre of a frame.
pub fn decode_facing(rgb: &[u8], size: usize) -> Option<Dir> {
    if size == 0 || !size.is_multiple_of(VIEW) || rgb.len() < size * size * 3 {
        return None;
    }
    let k = center_pixel(rgb, size, PAD, PAD).and_then(signature_of)?;
    k.checked_sub(PLAYER0).map(|d| Dir::ALL[d])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mine::world::NUM_TILES;

    #[test]
    fn signatures_are_unique() {
        for (i, a) in SIGNATURE.iter().enumerate() {
            assert!(SIGNATURE[i + 1..].iter().all(|b| a != b), "signature {i} repeated");
        }
        assert_eq!(SIGNATURE.len(), NUM_TILES + 3);
    }

    #[test]
    fn every_size_keeps_signatures_at_centres() {
        for t in [1, 2, 4, 8, 16] {
            let (atlas, mask) = build_atlas(t);
            let c = t / 2;
            for (k, sig) in SIGNATURE.iter().enumerate() {
                let o = k * t * t * 3 + (c * t + c) * 3;
                assert_eq!(&atlas[o..o + 3], sig);
            }
            assert!(mask[c * t + c]);
        }
    }
}
