//! `PixelMine-v0`: a cheap, seeded, procedurally generated top-down mining world
//! (a tiny Crafter), rendered to pixels, with MineStudio-shaped infos.
//!
//! Each reset draws a new `world × world` map from the seed: grass, sand, lakes,
//! forests, and stone mountains with caves, coal, iron and rare diamonds deep inside.
//! The agent walks, mines the faced tile (`do`), places tables and stone and
//! crafts pickaxes along Crafter's tech tree (see [`rules`]); each achievement pays
//! +1 the first time in an episode. Episodes never terminate; the time limit
//! (`max_steps`) truncates them.
//!
//! Observation: `{"inventory": int32[8], "rgb": uint8[size, size, 3]}` — a 16×16-tile
//! window centred on the agent. Tiles can be read back exactly with
//! [`render::decode_view`], which is how the scripted `miner` agent sees.
//!
//! Info (cumulative for the episode):
//! `{"mine_block": {"log", "stone", "coal_ore", "iron_ore", "diamond_ore"},
//!   "pickup": {"log", "cobblestone", "coal", "iron_ore", "diamond"},
//!   "craft_item": {"wooden_pickaxe", "stone_pickaxe", "iron_pickaxe"},
//!   "place_block": {"crafting_table", "stone"},
//!   "achievements": [names unlocked], "player_pos": {"x", "y"}}`.

use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;
use rollway_core::{DType, Env, EnvEntry, EnvSpec, Error, Info, Params, Result, RowMut, RowRef, Space, StepOutcome};
use serde_json::{json, Map, Value as Json};

pub mod render;
pub mod rules;
pub mod world;

#[cfg(test)]
mod tests;

pub use render::{decode_facing, decode_view, VIEW};
pub use rules::Item;
pub use world::{Dir, Tile};

use render::Renderer;
use rules::{ACHIEVEMENTS, COLLECT, CRAFT, INVENTORY, MAX_COUNT, PLACE, TABLE_REACH};
use world::{GenConfig, World};

/// Leaf index of `inventory` in observation rows (Dict leaves are in sorted key order).
pub const INVENTORY_LEAF: usize = 0;
/// Leaf index of `rgb` in observation rows.
pub const RGB_LEAF: usize = 1;

/// Registry entry.
pub static ENTRY: EnvEntry = EnvEntry {
    id: "PixelMine-v0",
    summary: "seeded 2-D pixel mining world (tiny Crafter): wood → table → pickaxes → stone, coal, iron → diamond",
    params: &[
        ("size", "frame side in pixels, a multiple of 16 from 16 to 1024 (default 128)"),
        ("max_steps", "time limit in steps (default 1000)"),
        ("world", "world side in tiles, 16 to 1024 (default 64)"),
        ("diamond_rate", "chance that a deep-stone tile holds a diamond, 0 to 1 (default 0.01)"),
    ],
    make,
};

fn make(p: &Params) -> Result<Box<dyn Env>> {
    Ok(Box::new(PixelMine::new(p)?))
}

fn param_err(name: &str, message: impl Into<String>) -> Error {
    Error::Param { name: name.into(), message: message.into() }
}

/// The PixelMine env (without its time limit; [`crate::make`] adds it).
pub struct PixelMine {
    spec: EnvSpec,
    cfg: GenConfig,
    rng: Pcg64Mcg,
    world: World,
    renderer: Renderer,
    pos: (i32, i32),
    facing: Dir,
    inventory: [i32; INVENTORY.len()],
    achieved: [bool; ACHIEVEMENTS.len()],
    mined: [u32; COLLECT.len()],
    placed: [u32; PLACE.len()],
    crafted: [u32; CRAFT.len()],
}

impl PixelMine {
    /// Builds the env from parameters (`size`, `max_steps`, `world`, `diamond_rate`).
    pub fn new(p: &Params) -> Result<PixelMine> {
        p.expect_only(&["size", "max_steps", "world", "diamond_rate"])?;
        let size: usize = p.get("size", 128)?;
        if size == 0 || !size.is_multiple_of(VIEW) || size > 1024 {
            return Err(param_err("size", format!("{size} is not a multiple of 16 between 16 and 1024")));
        }
        let max_steps: u64 = p.get("max_steps", 1000)?;
        if max_steps == 0 {
            return Err(param_err("max_steps", "must be positive"));
        }
        let side: usize = p.get("world", 64)?;
        if !(16..=1024).contains(&side) {
            return Err(param_err("world", format!("{side} is outside 16..=1024")));
        }
        let diamond_rate: f32 = p.get("diamond_rate", 0.01)?;
        if !(0.0..=1.0).contains(&diamond_rate) {
            return Err(param_err("diamond_rate", format!("{diamond_rate} is outside [0, 1]")));
        }
        let observation_space = Space::dict(vec![
            ("inventory".into(), Space::boxed(DType::I32, &[INVENTORY.len()], 0.0, MAX_COUNT as f64)?),
            ("rgb".into(), Space::boxed(DType::U8, &[size, size, 3], 0.0, 255.0)?),
        ])?;
        let mut env = PixelMine {
            spec: EnvSpec {
                id: ENTRY.id.into(),
                observation_space,
                action_space: Space::discrete(rules::ACTIONS.len() as u64, 0)?,
                max_episode_steps: Some(max_steps),
                render_fps: Some(20),
                reward_threshold: None,
                gymnasium_spec: None,
                agents: None,
            },
            cfg: GenConfig { side, diamond_rate },
            rng: Pcg64Mcg::seed_from_u64(0),
            world: World::new(side),
            renderer: Renderer::new(size, side),
            pos: (0, 0),
            facing: Dir::Down,
            inventory: [0; INVENTORY.len()],
            achieved: [false; ACHIEVEMENTS.len()],
            mined: [0; COLLECT.len()],
            placed: [0; PLACE.len()],
            crafted: [0; CRAFT.len()],
        };
        // A valid world from the start, so `world()` and `info()` make sense before any reset.
        env.new_episode();
        Ok(env)
    }

    /// The current world (for tests, tools and debugging).
    pub fn world(&self) -> &World {
        &self.world
    }

    /// The agent's position in tiles and its facing.
    pub fn agent(&self) -> ((i32, i32), Dir) {
        (self.pos, self.facing)
    }

    /// The inventory, indexed by [`Item`].
    pub fn inventory(&self) -> &[i32; INVENTORY.len()] {
        &self.inventory
    }

    fn new_episode(&mut self) {
        self.pos = self.world.generate(&mut self.rng, &self.cfg);
        self.renderer.paint_world(&self.world);
        self.facing = Dir::Down;
        self.inventory = [0; INVENTORY.len()];
        self.achieved = [false; ACHIEVEMENTS.len()];
        self.mined = [0; COLLECT.len()];
        self.placed = [0; PLACE.len()];
        self.crafted = [0; CRAFT.len()];
    }

    fn write_obs(&self, mut obs: RowMut<'_>) {
        obs.leaf_mut::<i32>(INVENTORY_LEAF).copy_from_slice(&self.inventory);
        self.renderer.draw(self.pos, self.facing, obs.leaf_mut::<u8>(RGB_LEAF));
    }

    /// Unlocks achievement `a`, returning its reward.
    fn achieve(&mut self, a: usize) -> f64 {
        if std::mem::replace(&mut self.achieved[a], true) {
            0.0
        } else {
            1.0
        }
    }

    fn add(&mut self, item: Item, n: i32) {
        let slot = &mut self.inventory[item as usize];
        *slot = (*slot + n).clamp(0, MAX_COUNT);
    }

    fn has(&self, item: Item, n: i32) -> bool {
        self.inventory[item as usize] >= n
    }

    fn table_nearby(&self) -> bool {
        let (x, y) = self.pos;
        (-TABLE_REACH..=TABLE_REACH).any(|dy| (-TABLE_REACH..=TABLE_REACH).any(|dx| self.world.get(x + dx, y + dy) == Tile::Table))
    }

    /// Applies a valid action and returns its reward.
    fn apply(&mut self, action: i64) -> f64 {
        let (dx, dy) = self.facing.delta();
        let target = (self.pos.0 + dx, self.pos.1 + dy);
        let faced = self.world.get(target.0, target.1);
        match action {
            rules::NOOP => 0.0,
            a if (rules::MOVE..rules::MOVE + 4).contains(&a) => {
                self.facing = Dir::ALL[(a - rules::MOVE) as usize];
                let (dx, dy) = self.facing.delta();
                let to = (self.pos.0 + dx, self.pos.1 + dy);
                if self.world.get(to.0, to.1).walkable() {
                    self.pos = to;
                }
                0.0
            }
            rules::DO => {
                let Some((i, rule)) = rules::collect_rule(faced) else { return 0.0 };
                if rule.needs.is_some_and(|tool| !self.has(tool, 1)) {
                    return 0.0;
                }
                self.add(rule.gives, 1);
                self.mined[i] += 1;
                if rule.leaves != faced {
                    self.world.set(target.0, target.1, rule.leaves);
                    self.renderer.paint_tile(target.0, target.1, rule.leaves);
                }
                self.achieve(rule.achievement)
            }
            a => {
                if let Some((i, rule)) = PLACE.iter().enumerate().find(|(_, r)| r.action == a) {
                    if !self.has(rule.uses, 1) || !rule.onto.contains(&faced) {
                        return 0.0;
                    }
                    self.add(rule.uses, -1);
                    self.placed[i] += 1;
                    self.world.set(target.0, target.1, rule.tile);
                    self.renderer.paint_tile(target.0, target.1, rule.tile);
                    return self.achieve(rule.achievement);
                }
                let Some((i, rule)) = CRAFT.iter().enumerate().find(|(_, r)| r.action == a) else { return 0.0 };
                if !self.table_nearby() || !rule.uses.iter().all(|&(item, n)| self.has(item, n)) {
                    return 0.0;
                }
                rule.uses.iter().for_each(|&(item, n)| self.add(item, -n));
                self.add(rule.gives, 1);
                self.crafted[i] += 1;
                self.achieve(rule.achievement)
            }
        }
    }
}

fn counters(names: impl Iterator<Item = &'static str>, counts: &[u32]) -> Json {
    Json::Object(names.zip(counts).map(|(k, &v)| (k.to_string(), Json::from(v))).collect::<Map<_, _>>())
}

impl Env for PixelMine {
    fn spec(&self) -> &EnvSpec {
        &self.spec
    }

    fn reset(&mut self, seed: Option<u64>, _options: Option<&Info>, obs: RowMut<'_>) -> Result<()> {
        if let Some(s) = seed {
            self.rng = Pcg64Mcg::seed_from_u64(s);
        }
        self.new_episode();
        self.write_obs(obs);
        Ok(())
    }

    #[inline]
    fn step(&mut self, action: RowRef<'_>, obs: RowMut<'_>) -> Result<StepOutcome> {
        let a = action.discrete(0);
        if !(0..rules::ACTIONS.len() as i64).contains(&a) {
            return Err(Error::Env { env: self.spec.id.clone(), message: format!("action {a} is outside 0..{}", rules::ACTIONS.len()) });
        }
        let reward = self.apply(a);
        self.write_obs(obs);
        Ok(StepOutcome { reward, terminated: false, truncated: false })
    }

    fn info(&self) -> Info {
        let mut info = Info::new();
        info.insert("mine_block", counters(COLLECT.iter().map(|c| c.block), &self.mined));
        info.insert("pickup", counters(COLLECT.iter().map(|c| c.pickup), &self.mined));
        info.insert("craft_item", counters(CRAFT.iter().map(|c| c.item), &self.crafted));
        info.insert("place_block", counters(PLACE.iter().map(|c| c.block), &self.placed));
        let unlocked: Vec<&str> = ACHIEVEMENTS.iter().zip(&self.achieved).filter(|(_, &a)| a).map(|(n, _)| *n).collect();
        info.insert("achievements", unlocked);
        info.insert("player_pos", json!({"x": self.pos.0, "y": self.pos.1}));
        info
    }
}
