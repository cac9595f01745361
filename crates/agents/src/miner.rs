//! `miner`: a scripted PixelMine-v0 player that climbs the tech tree to diamonds.
//!
//! It sees what a vision policy would: the frame (decoded into tiles with
//! [`decode_view`]) and the inventory. Each step it picks the tiles it needs next
//! (trees → stone → coal and iron → diamonds), walks to the cheapest visible one
//! (a shortest-path search over the 16×16 view, tunnelling through stone when it
//! holds a pickaxe), crafts when it has the ingredients (placing a table first when
//! none is in reach), and otherwise explores along a remembered heading.
//!
//! Memory per env slot (`Vec<f32>`, reset with each episode):
//! `[heading, steps on this heading, stuck count, view hash lo, view hash hi]`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rand::Rng;
use rollway_core::{ActBatch, Agent, AgentEntry, AgentRng, EnvSpec, Error, Layout, Params, Result};
use rollway_envs::mine::rules::{self, Item, TABLE_REACH};
use rollway_envs::mine::{decode_facing, decode_view, Dir, Tile, VIEW};

/// Registry entry.
pub static ENTRY: AgentEntry = AgentEntry {
    name: "miner",
    summary: "scripted PixelMine player: wood, table, pickaxes, stone, coal, iron, then diamonds (vision only)",
    envs: &["PixelMine-v0"],
    params: &[],
    make,
};

fn make(spec: &EnvSpec, p: &Params) -> Result<Box<dyn Agent>> {
    p.expect_only(&[])?;
    let layout = Layout::of(&spec.observation_space);
    let bad = |m: &str| Error::Agent { agent: ENTRY.name.into(), message: m.into() };
    let rgb = layout.leaf_index("rgb").ok_or_else(|| bad("observation has no `rgb`"))?;
    let inventory = layout.leaf_index("inventory").ok_or_else(|| bad("observation has no `inventory`"))?;
    let size = layout.leaves()[rgb].shape[0];
    Ok(Box::new(Miner { rgb, inventory, size, planner: Planner::new() }))
}

const HEADING: usize = 0;
const HEADING_STEPS: usize = 1;
const STUCK: usize = 2;
const HASH_LO: usize = 3;
const HASH_HI: usize = 4;
const MEMORY_LEN: usize = 5;

/// The agent's own cell in the view.
const CENTER: usize = (VIEW / 2) * VIEW + VIEW / 2;
/// Path cost of a tile that must be mined before walking onto it (`do`, maybe a turn, then move).
const MINE_COST: u16 = 3;
/// Wood to gather before the first table: a table and a pickaxe per craft, with spare.
const START_WOOD: i32 = 7;

struct Miner {
    rgb: usize,
    inventory: usize,
    size: usize,
    planner: Planner,
}

impl Agent for Miner {
    fn act(&mut self, batch: &mut ActBatch<'_>) -> Result<()> {
        let (rgb, inv, size) = (self.rgb, self.inventory, self.size);
        let planner = &mut self.planner;
        batch.for_each_row(|mut row| {
            if row.first || row.memory.len() != MEMORY_LEN {
                row.memory.clear();
                row.memory.resize(MEMORY_LEN, 0.0);
                row.memory[HEADING] = row.rng.random_range(0..4) as f32;
            }
            let frame = row.obs.leaf::<u8>(rgb);
            let mut inventory = [0i32; 8];
            let got = row.obs.leaf::<i32>(inv);
            inventory.iter_mut().zip(got).for_each(|(d, s)| *d = *s);
            let view = decode_view(frame, size);
            let facing = decode_facing(frame, size).unwrap_or_default();
            let action = planner.decide(&view, facing, &inventory, row.memory, row.rng);
            row.action.set_discrete(0, action);
            Ok(())
        })
    }
}

fn has(inv: &[i32; 8], item: Item) -> bool {
    inv[item as usize] > 0
}

/// Reusable search buffers (the agent acts for many slots, one after another).
struct Planner {
    dist: [u16; VIEW * VIEW],
    prev: [u16; VIEW * VIEW],
    heap: BinaryHeap<Reverse<(u16, u16)>>,
}

fn neighbor(node: usize, d: Dir) -> Option<usize> {
    let (r, c) = ((node / VIEW) as i32, (node % VIEW) as i32);
    let (dx, dy) = d.delta();
    let (r, c) = (r + dy, c + dx);
    ((0..VIEW as i32).contains(&r) && (0..VIEW as i32).contains(&c)).then(|| r as usize * VIEW + c as usize)
}

fn tile(view: &[[Tile; VIEW]; VIEW], node: usize) -> Tile {
    view[node / VIEW][node % VIEW]
}

fn mov(d: Dir) -> i64 {
    rules::MOVE + d as i64
}

/// Hash of the tiles in view, to notice when moves stop changing anything.
fn view_hash(view: &[[Tile; VIEW]; VIEW]) -> u32 {
    view.iter().flatten().fold(0x811C_9DC5u32, |h, &t| (h ^ t as u32).wrapping_mul(0x0100_0193))
}

impl Planner {
    fn new() -> Planner {
        Planner { dist: [u16::MAX; VIEW * VIEW], prev: [0; VIEW * VIEW], heap: BinaryHeap::with_capacity(VIEW * VIEW * 4) }
    }

    /// Cheapest-first search from the agent over tiles with a `cost`; returns the first
    /// node accepted by `goal` (its predecessors are left in `prev`).
    fn search(&mut self, view: &[[Tile; VIEW]; VIEW], cost: impl Fn(Tile) -> Option<u16>, goal: impl Fn(usize) -> bool) -> Option<usize> {
        self.dist.fill(u16::MAX);
        self.heap.clear();
        self.dist[CENTER] = 0;
        self.heap.push(Reverse((0, CENTER as u16)));
        while let Some(Reverse((d, u))) = self.heap.pop() {
            let u = u as usize;
            if d > self.dist[u] {
                continue;
            }
            if goal(u) {
                return Some(u);
            }
            for dir in Dir::ALL {
                let Some(v) = neighbor(u, dir) else { continue };
                let Some(c) = cost(tile(view, v)) else { continue };
                if d + c < self.dist[v] {
                    self.dist[v] = d + c;
                    self.prev[v] = u as u16;
                    self.heap.push(Reverse((d + c, v as u16)));
                }
            }
        }
        None
    }

    /// The direction of the first step on the path found to `goal`.
    fn first_step(&self, goal: usize) -> Option<Dir> {
        if goal == CENTER {
            return None;
        }
        let mut n = goal;
        while self.prev[n] as usize != CENTER {
            n = self.prev[n] as usize;
        }
        Dir::ALL.into_iter().find(|&d| neighbor(CENTER, d) == Some(n))
    }

    /// The action that walks (or tunnels) one step along the path to `goal`.
    fn step_towards(&self, view: &[[Tile; VIEW]; VIEW], facing: Dir, goal: usize) -> Option<i64> {
        let d = self.first_step(goal)?;
        let next = tile(view, neighbor(CENTER, d)?);
        Some(if !next.walkable() && facing == d { rules::DO } else { mov(d) })
    }

    fn decide(&mut self, view: &[[Tile; VIEW]; VIEW], facing: Dir, inv: &[i32; 8], memory: &mut [f32], rng: &mut AgentRng) -> i64 {
        if let Some(a) = unstick(view, memory, rng) {
            return a;
        }
        let plan = Plan::new(view, inv);
        if plan.ready {
            if let Some(a) = plan.make(view, facing, rng) {
                return a;
            }
        }
        let wanted = plan.wanted(inv);
        let (wp, sp, ip) = plan.picks;
        let cost = |t: Tile| -> Option<u16> {
            match t {
                _ if t.walkable() => Some(1),
                Tile::Stone | Tile::Coal if wp => Some(MINE_COST),
                Tile::Iron if sp => Some(MINE_COST),
                Tile::Diamond if ip => Some(MINE_COST),
                _ => None,
            }
        };
        let is_wanted = |t: Tile| wanted.contains(&Some(t));
        if wanted.iter().any(Option::is_some) {
            let goal = self.search(view, cost, |u| Dir::ALL.into_iter().any(|d| neighbor(u, d).is_some_and(|n| is_wanted(tile(view, n)))));
            if let Some(g) = goal {
                if g == CENTER {
                    let d = Dir::ALL.into_iter().find(|&d| neighbor(CENTER, d).is_some_and(|n| is_wanted(tile(view, n))));
                    if let Some(d) = d {
                        return if facing == d { rules::DO } else { mov(d) };
                    }
                }
                if let Some(a) = self.step_towards(view, facing, g) {
                    memory[HEADING_STEPS] = 0.0;
                    return a;
                }
            }
        }
        self.explore(view, facing, wp, memory, rng, cost)
    }

    /// Heads for the edge of the view in the remembered direction, turning now and then
    /// (towards stone once stone is what we need) and when that edge cannot be reached.
    fn explore(
        &mut self,
        view: &[[Tile; VIEW]; VIEW],
        facing: Dir,
        wp: bool,
        memory: &mut [f32],
        rng: &mut AgentRng,
        cost: impl Fn(Tile) -> Option<u16> + Copy,
    ) -> i64 {
        memory[HEADING_STEPS] += 1.0;
        if memory[HEADING_STEPS] > 40.0 + rng.random_range(0..40) as f32 {
            memory[HEADING_STEPS] = 0.0;
            memory[HEADING] = self.pick_heading(view, Dir::ALL[memory[HEADING] as usize % 4], wp, rng) as u8 as f32;
        }
        for _ in 0..4 {
            let heading = Dir::ALL[memory[HEADING] as usize % 4];
            let at_edge = |u: usize| match heading {
                Dir::Left => u.is_multiple_of(VIEW),
                Dir::Right => u % VIEW == VIEW - 1,
                Dir::Up => u / VIEW == 0,
                Dir::Down => u / VIEW == VIEW - 1,
            };
            if let Some(a) = self.search(view, cost, at_edge).and_then(|g| self.step_towards(view, facing, g)) {
                return a;
            }
            memory[HEADING] = self.pick_heading(view, heading, wp, rng) as u8 as f32;
            memory[HEADING_STEPS] = 0.0;
        }
        mov(Dir::ALL[rng.random_range(0..4)])
    }

    /// A new heading other than `current`: towards the most stone in view once we can
    /// mine it (ores hide in stone), otherwise at random.
    fn pick_heading(&self, view: &[[Tile; VIEW]; VIEW], current: Dir, wp: bool, rng: &mut AgentRng) -> Dir {
        let others = Dir::ALL.map(|d| if d == current { current.reverse() } else { d });
        // `others` lists current's reverse twice, so turning back is twice as likely as
        // either side; that helps leave dead ends.
        if !wp {
            return others[rng.random_range(0..4)];
        }
        let rocky = |t: Tile| matches!(t, Tile::Stone | Tile::Coal | Tile::Iron | Tile::Diamond);
        let score = |d: Dir| -> f32 {
            let n = view.iter().enumerate().flat_map(|(r, row)| row.iter().enumerate().map(move |(c, &t)| (r, c, t)));
            let half = VIEW / 2;
            let count = n
                .filter(|&(r, c, t)| {
                    rocky(t)
                        && match d {
                            Dir::Left => c < half,
                            Dir::Right => c > half,
                            Dir::Up => r < half,
                            Dir::Down => r > half,
                        }
                })
                .count();
            count as f32 + rng_free_jitter(d)
        };
        let best = others.iter().copied().max_by(|&a, &b| score(a).total_cmp(&score(b))).unwrap_or(current);
        if score(best) < 8.0 {
            return others[rng.random_range(0..4)];
        }
        best
    }
}

/// Breaks ties between equally rocky directions without consuming randomness.
fn rng_free_jitter(d: Dir) -> f32 {
    d as u8 as f32 * 0.01
}

/// Moves that change nothing in view mean the miner is pushing against something:
/// after six, a random move and a new heading shake it loose.
fn unstick(view: &[[Tile; VIEW]; VIEW], memory: &mut [f32], rng: &mut AgentRng) -> Option<i64> {
    let h = view_hash(view);
    let (lo, hi) = ((h & 0xFFFF) as f32, (h >> 16) as f32);
    if memory[HASH_LO] == lo && memory[HASH_HI] == hi {
        memory[STUCK] += 1.0;
    } else {
        memory[STUCK] = 0.0;
    }
    memory[HASH_LO] = lo;
    memory[HASH_HI] = hi;
    if memory[STUCK] < 6.0 {
        return None;
    }
    memory[STUCK] = 0.0;
    memory[HEADING] = rng.random_range(0..4) as f32;
    memory[HEADING_STEPS] = 0.0;
    Some(mov(Dir::ALL[rng.random_range(0..4)]))
}

/// Where the miner is on the way to a diamond: which pickaxe it makes next, and
/// whether it has what that takes.
struct Plan {
    /// Wooden, stone and iron pickaxes in hand.
    picks: (bool, bool, bool),
    table_near: bool,
    wood: i32,
    /// Wood for the next craft, plus a table unless one is in reach.
    wood_needed: i32,
    craft: i64,
    ready: bool,
}

impl Plan {
    fn new(view: &[[Tile; VIEW]; VIEW], inv: &[i32; 8]) -> Plan {
        let (wp, sp, ip) = (has(inv, Item::WoodenPickaxe), has(inv, Item::StonePickaxe), has(inv, Item::IronPickaxe));
        let reach = VIEW / 2 - TABLE_REACH as usize..=VIEW / 2 + TABLE_REACH as usize;
        let table_near = reach.clone().any(|r| reach.clone().any(|c| view[r][c] == Tile::Table));
        let wood = inv[Item::Wood as usize];
        let crafts_left = [wp, sp, ip].iter().filter(|&&x| !x).count() as i32;
        let wood_needed = if table_near { 1 } else { 2 };
        let (craft, ready) = if !wp {
            (rules::MAKE_WOODEN_PICKAXE, wood >= START_WOOD.min(2 * crafts_left + 1))
        } else if !sp {
            (rules::MAKE_STONE_PICKAXE, wood >= wood_needed && has(inv, Item::Stone))
        } else if !ip {
            (rules::MAKE_IRON_PICKAXE, wood >= wood_needed && has(inv, Item::Coal) && has(inv, Item::Iron))
        } else {
            (rules::NOOP, false)
        };
        Plan { picks: (wp, sp, ip), table_near, wood, wood_needed, craft, ready }
    }

    /// With the ingredients in hand: craft at a table in reach, else place one
    /// ahead, else walk onto open ground to face some (the tile beyond is usually
    /// open too). `None` when boxed in.
    fn make(&self, view: &[[Tile; VIEW]; VIEW], facing: Dir, rng: &mut AgentRng) -> Option<i64> {
        if self.table_near {
            return Some(self.craft);
        }
        let ahead = neighbor(CENTER, facing).map(|n| tile(view, n));
        if ahead.is_some_and(|t| rules::PLACE[0].onto.contains(&t)) {
            return Some(rules::PLACE_TABLE);
        }
        let open = Dir::ALL.map(|d| neighbor(CENTER, d).is_some_and(|n| tile(view, n).walkable()));
        let n_open = open.iter().filter(|&&o| o).count();
        if n_open == 0 {
            return None;
        }
        let pick = rng.random_range(0..n_open);
        Some(mov(Dir::ALL.into_iter().filter(|&d| open[d as usize]).nth(pick).unwrap_or_default()))
    }

    /// Tiles worth walking to now.
    fn wanted(&self, inv: &[i32; 8]) -> [Option<Tile>; 3] {
        let (wp, sp, ip) = self.picks;
        let mut wanted = [None; 3];
        if !self.ready && self.craft != rules::NOOP && self.wood < self.wood_needed.max(if wp { 0 } else { START_WOOD }) {
            wanted[0] = Some(Tile::Tree);
        }
        if wp && !sp && !has(inv, Item::Stone) {
            wanted[1] = Some(Tile::Stone);
        }
        if sp && !ip {
            if !has(inv, Item::Coal) {
                wanted[1] = Some(Tile::Coal);
            }
            if !has(inv, Item::Iron) {
                wanted[2] = Some(Tile::Iron);
            }
        }
        if ip {
            wanted[1] = Some(Tile::Diamond);
        }
        // Coal is worth a detour before iron even matters: it is common and needs only wood.
        if wp && !sp && !has(inv, Item::Coal) {
            wanted[2] = Some(Tile::Coal);
        }
        wanted
    }
}

#[cfg(test)]
mod tests {
    use rollway_core::seed::{agent_rng, episode_seed};
    use rollway_core::{ActBatch, Layout, Params, RowMut, RowRef, Rows, Segment};

    /// Plays one episode of PixelMine-v0 with agent `name`; returns (diamonds mined, achievements).
    fn episode(name: &str, seed: u64) -> (i64, usize) {
        let mut env = rollway_envs::make("PixelMine-v0", &Params::new()).unwrap();
        let spec = env.spec().clone();
        let mut agent = crate::make(name, &spec, &Params::new()).unwrap();
        let (ol, al) = (Layout::of(&spec.observation_space), Layout::of(&spec.action_space));
        let (mut obs, mut act) = (Rows::new(ol.row_bytes(), 1), Rows::new(al.row_bytes(), 1));
        let (mut memory, mut rng) = (vec![Vec::new()], vec![agent_rng(seed)]);
        env.reset(Some(seed), None, RowMut::new(&ol, obs.row_mut(0))).unwrap();
        let mut first = true;
        loop {
            let flags = [first];
            let segments = vec![Segment { obs: obs.row(0), actions: act.row_mut(0), first: &flags, memory: &mut memory, rng: &mut rng }];
            agent.act(&mut ActBatch { obs_layout: &ol, act_layout: &al, segments }).unwrap();
            first = false;
            let out = env.step(RowRef::new(&al, act.row(0)), RowMut::new(&ol, obs.row_mut(0))).unwrap();
            if out.terminated || out.truncated {
                break;
            }
        }
        let info = env.info();
        let diamonds = info.get_path("mine_block/diamond_ore").and_then(|v| v.as_i64()).unwrap();
        (diamonds, info.get("achievements").and_then(|a| a.as_array()).map_or(0, Vec::len))
    }

    fn diamond_rate(name: &str, episodes: u64) -> f64 {
        let mut hits = 0;
        let mut achievements = 0;
        for i in 0..episodes {
            let (d, a) = episode(name, episode_seed(2024, i));
            hits += (d > 0) as u64;
            achievements += a;
        }
        let rate = hits as f64 / episodes as f64;
        eprintln!(
            "{name}: diamond in {hits}/{episodes} episodes ({rate:.2}), {:.2} achievements/episode",
            achievements as f64 / episodes as f64
        );
        rate
    }

    #[test]
    fn miner_finds_diamonds_and_random_does_not() {
        assert!(diamond_rate("miner", 50) >= 0.3);
        assert!(diamond_rate("random", 50) <= 0.02);
    }

    #[test]
    fn miner_is_deterministic_per_seed() {
        assert_eq!(episode("miner", 5), episode("miner", 5));
    }
}
