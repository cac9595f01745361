//! Tiles, directions and seeded world generation for PixelMine.
//!
//! Generation is value noise: a few coarse lattices of uniform random numbers,
//! interpolated per tile. Lattice and tile buffers live in [`World`] and are
//! refilled on every reset, so a reset allocates nothing and costs tens of µs.

use rand::Rng;
use rand_pcg::Pcg64Mcg;

/// A tile type. The discriminant indexes the render atlas.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum Tile {
    /// Open ground; walkable.
    #[default]
    Grass = 0,
    /// Beach around water; walkable.
    Sand,
    /// Blocks movement; stone can be placed onto it.
    Water,
    /// Gives wood on `do` and stays.
    Tree,
    /// Needs a wooden pickaxe; leaves a path.
    Stone,
    /// Floor of caves, tunnels and mined blocks; walkable.
    Path,
    /// Coal ore inside stone; needs a wooden pickaxe.
    Coal,
    /// Iron ore inside stone; needs a stone pickaxe.
    Iron,
    /// Diamond ore deep inside stone; needs an iron pickaxe.
    Diamond,
    /// A placed crafting table.
    Table,
    /// Outside the world (only seen in views near the border).
    Void,
    /// The agent (only seen in views, at the centre cell).
    Player,
}

/// Number of tile types, including the view-only `Void` and `Player`.
pub const NUM_TILES: usize = 12;

impl Tile {
    /// Every tile type, in discriminant order.
    pub const ALL: [Tile; NUM_TILES] = [
        Tile::Grass,
        Tile::Sand,
        Tile::Water,
        Tile::Tree,
        Tile::Stone,
        Tile::Path,
        Tile::Coal,
        Tile::Iron,
        Tile::Diamond,
        Tile::Table,
        Tile::Void,
        Tile::Player,
    ];

    /// True for tiles the agent can stand on.
    #[inline]
    pub fn walkable(self) -> bool {
        matches!(self, Tile::Grass | Tile::Sand | Tile::Path)
    }

    /// Short lowercase name (for debugging and ASCII maps).
    pub fn name(self) -> &'static str {
        const NAMES: [&str; NUM_TILES] =
            ["grass", "sand", "water", "tree", "stone", "path", "coal", "iron", "diamond", "table", "void", "player"];
        NAMES[self as usize]
    }

    /// One character per tile, for ASCII maps in tests and debugging.
    pub fn glyph(self) -> char {
        b".,~T#_cid+ @"[self as usize] as char
    }
}

/// A facing / movement direction. Its index + 1 is the matching move action.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum Dir {
    /// −x.
    Left = 0,
    /// +x.
    Right,
    /// −y.
    Up,
    /// +y.
    #[default]
    Down,
}

impl Dir {
    /// All directions, in index order.
    pub const ALL: [Dir; 4] = [Dir::Left, Dir::Right, Dir::Up, Dir::Down];

    /// The (dx, dy) step.
    #[inline]
    pub fn delta(self) -> (i32, i32) {
        [(-1, 0), (1, 0), (0, -1), (0, 1)][self as usize]
    }

    /// The opposite direction.
    pub fn reverse(self) -> Dir {
        [Dir::Right, Dir::Left, Dir::Down, Dir::Up][self as usize]
    }
}

/// World generation settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GenConfig {
    /// World side in tiles.
    pub side: usize,
    /// Probability that a deep-stone tile holds a diamond.
    pub diamond_rate: f32,
}

/// A square lattice of random values, bilinearly interpolated with smoothstep.
/// The cell size is a power of two so tile → lattice mapping is shifts and masks.
struct Lattice {
    shift: u32,
    n: usize,
    vals: Vec<f32>,
    /// Smoothstep weights for each offset inside a cell (same for x and y).
    weights: Vec<f32>,
}

impl Lattice {
    fn new(side: usize, shift: u32) -> Lattice {
        let cell = 1usize << shift;
        let n = side / cell + 2;
        let weights = (0..cell)
            .map(|i| {
                let f = (i as f32 + 0.5) / cell as f32;
                f * f * (3.0 - 2.0 * f)
            })
            .collect();
        Lattice { shift, n, vals: vec![0.0; n * n], weights }
    }

    fn fill(&mut self, rng: &mut Pcg64Mcg) {
        self.vals.iter_mut().for_each(|v| *v = rng.random::<f32>());
    }

    #[inline]
    fn at(&self, x: usize, y: usize) -> f32 {
        let mask = (1 << self.shift) - 1;
        let (cx, cy) = (x >> self.shift, y >> self.shift);
        let (wx, wy) = (self.weights[x & mask], self.weights[y & mask]);
        let i = cy * self.n + cx;
        let top = self.vals[i] + (self.vals[i + 1] - self.vals[i]) * wx;
        let bot = self.vals[i + self.n] + (self.vals[i + self.n + 1] - self.vals[i + self.n]) * wx;
        top + (bot - top) * wy
    }
}

/// The tile grid plus the reusable buffers that generate it.
pub struct World {
    side: usize,
    tiles: Vec<Tile>,
    // Mountains (big + detail), lakes (big + detail), forests, caves.
    mountain: [Lattice; 2],
    water: [Lattice; 2],
    forest: Lattice,
    caves: Lattice,
}

impl World {
    /// An all-grass world of `side × side` tiles (call [`World::generate`] to fill it).
    pub fn new(side: usize) -> World {
        World {
            side,
            tiles: vec![Tile::Grass; side * side],
            mountain: [Lattice::new(side, 4), Lattice::new(side, 2)],
            water: [Lattice::new(side, 4), Lattice::new(side, 2)],
            forest: Lattice::new(side, 3),
            caves: Lattice::new(side, 3),
        }
    }

    /// Side length in tiles.
    #[inline]
    pub fn side(&self) -> usize {
        self.side
    }

    /// The tile at `(x, y)`, or `Void` outside the world.
    #[inline]
    pub fn get(&self, x: i32, y: i32) -> Tile {
        if x < 0 || y < 0 || x as usize >= self.side || y as usize >= self.side {
            return Tile::Void;
        }
        self.tiles[y as usize * self.side + x as usize]
    }

    /// Sets the tile at `(x, y)` (which must be inside the world).
    #[inline]
    pub fn set(&mut self, x: i32, y: i32, t: Tile) {
        self.tiles[y as usize * self.side + x as usize] = t;
    }

    /// All tiles, row-major.
    pub fn tiles(&self) -> &[Tile] {
        &self.tiles
    }

    /// Fills the world from `rng` and returns the spawn position (always grass).
    pub fn generate(&mut self, rng: &mut Pcg64Mcg, cfg: &GenConfig) -> (i32, i32) {
        for l in self.mountain.iter_mut().chain(self.water.iter_mut()) {
            l.fill(rng);
        }
        self.forest.fill(rng);
        self.caves.fill(rng);
        let side = self.side;
        let spawn = (side as i32 / 2, side as i32 / 2);
        // Keeps a grassy clearing around the spawn that fades out over `radius` tiles,
        // so the first view always has room to move, and mountains start a short walk away.
        let radius = (side as f32 / 5.0).max(4.0);
        let diamond_cut = (cfg.diamond_rate.clamp(0.0, 1.0) as f64 * u32::MAX as f64) as u32;
        for y in 0..side {
            let dy = y as f32 - spawn.1 as f32;
            for x in 0..side {
                let dx = x as f32 - spawn.0 as f32;
                let start = (1.0 - (dx * dx + dy * dy).sqrt() / radius).max(0.0);
                // One draw per tile, whatever the tile becomes, keeps the stream aligned
                // with position, so changing one rule does not reshuffle the whole map.
                let u: u32 = rng.random();
                let uf = (u >> 8) as f32 / (1 << 24) as f32;
                let m = 0.75 * self.mountain[0].at(x, y) + 0.25 * self.mountain[1].at(x, y) - 0.9 * start;
                let w = 0.75 * self.water[0].at(x, y) + 0.25 * self.water[1].at(x, y) - 0.6 * start;
                let tile = if start > 0.75 {
                    Tile::Grass
                } else if m > 0.56 {
                    // Caves: a thin ridge of noise, so they come out as winding tunnels.
                    let c = self.caves.at(x, y);
                    if (c - 0.5).abs() < 0.035 && m < 0.72 {
                        Tile::Path
                    } else if m > 0.64 && u < diamond_cut {
                        Tile::Diamond
                    } else if m > 0.6 && uf < 0.06 {
                        Tile::Iron
                    } else if uf > 0.92 {
                        Tile::Coal
                    } else {
                        Tile::Stone
                    }
                } else if w > 0.66 {
                    Tile::Water
                } else if w > 0.61 {
                    Tile::Sand
                } else {
                    let f = self.forest.at(x, y);
                    if (f > 0.62 && uf < 0.45) || uf < 0.015 {
                        Tile::Tree
                    } else {
                        Tile::Grass
                    }
                };
                self.tiles[y * side + x] = tile;
            }
        }
        spawn
    }

    /// An ASCII picture of the world (one glyph per tile), for tests and debugging.
    pub fn ascii(&self) -> String {
        let mut s = String::with_capacity(self.side * (self.side + 1));
        for row in self.tiles.chunks(self.side) {
            s.extend(row.iter().map(|t| t.glyph()));
            s.push('\n');
        }
        s
    }
}
