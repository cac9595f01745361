use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use rollway_core::{Env, Info, Layout, Params, RowMut, RowRef, Rows, StepOutcome};

use super::rules::*;
use super::*;

/// One env with its own observation and action rows.
struct Harness {
    env: PixelMine,
    ol: Layout,
    al: Layout,
    obs: Rows,
    act: Rows,
}

impl Harness {
    fn new(params: &str) -> Harness {
        let env = PixelMine::new(&Params::parse(params).unwrap()).unwrap();
        let ol = Layout::of(&env.spec().observation_space);
        let al = Layout::of(&env.spec().action_space);
        let (obs, act) = (Rows::new(ol.row_bytes(), 1), Rows::new(al.row_bytes(), 1));
        Harness { env, ol, al, obs, act }
    }

    fn reset(&mut self, seed: u64) {
        self.env.reset(Some(seed), None, RowMut::new(&self.ol, self.obs.row_mut(0))).unwrap();
    }

    fn step(&mut self, a: i64) -> StepOutcome {
        self.act.row_mut(0).copy_from_slice(&a.to_ne_bytes());
        self.env.step(RowRef::new(&self.al, self.act.row(0)), RowMut::new(&self.ol, self.obs.row_mut(0))).unwrap()
    }

    fn rgb(&self) -> &[u8] {
        RowRef::new(&self.ol, self.obs.row(0)).leaf::<u8>(RGB_LEAF)
    }

    fn inv(&self) -> Vec<i32> {
        RowRef::new(&self.ol, self.obs.row(0)).leaf::<i32>(INVENTORY_LEAF).to_vec()
    }

    fn count(&self, path: &str) -> i64 {
        self.env.info().get_path(path).and_then(|v| v.as_i64()).unwrap()
    }

    /// Puts `tile` in front of the agent (facing right) on an otherwise grass neighbourhood.
    fn face(&mut self, tile: Tile) {
        let (x, y) = self.env.pos;
        for dy in -3..=3 {
            for dx in -3..=3 {
                self.env.world.set(x + dx, y + dy, Tile::Grass);
                self.env.renderer.paint_tile(x + dx, y + dy, Tile::Grass);
            }
        }
        self.env.world.set(x + 1, y, tile);
        self.env.renderer.paint_tile(x + 1, y, tile);
        self.env.facing = Dir::Right;
    }
}

#[test]
fn leaves_are_in_documented_order() {
    let h = Harness::new("size=64");
    assert_eq!(h.ol.leaf_index("inventory"), Some(INVENTORY_LEAF));
    assert_eq!(h.ol.leaf_index("rgb"), Some(RGB_LEAF));
    assert_eq!(h.env.spec().max_episode_steps, Some(1000));
    assert_eq!(h.env.spec().render_fps, Some(20));
}

#[test]
fn same_seed_and_actions_give_identical_episodes() {
    let run = || {
        let mut h = Harness::new("size=32");
        h.reset(7);
        let mut rng = Pcg64Mcg::seed_from_u64(1);
        let mut trace: Vec<(Vec<u8>, f64, String)> = vec![(h.rgb().to_vec(), 0.0, h.env.info().to_json())];
        for _ in 0..400 {
            let out = h.step(rng.random_range(0..ACTIONS.len() as i64));
            trace.push((h.rgb().to_vec(), out.reward, h.env.info().to_json()));
        }
        trace
    };
    assert!(run() == run());
}

#[test]
fn unseeded_reset_continues_the_stream() {
    let mut h = Harness::new("size=16");
    h.reset(3);
    let first = h.env.world().tiles().to_vec();
    h.env.reset(None, None, RowMut::new(&h.ol, h.obs.row_mut(0))).unwrap();
    assert_ne!(first, h.env.world().tiles());
    h.reset(3);
    assert_eq!(first, h.env.world().tiles());
}

#[test]
fn seeds_give_different_worlds_with_all_resources() {
    let mut h = Harness::new("size=16");
    let mut worlds = std::collections::HashSet::new();
    let mut with_diamonds = 0;
    for seed in 0..20 {
        h.reset(seed);
        let tiles = h.env.world().tiles();
        let n = |t: Tile| tiles.iter().filter(|&&x| x == t).count();
        assert!(n(Tile::Tree) > 20 && n(Tile::Stone) > 100 && n(Tile::Coal) > 5, "seed {seed}:\n{}", h.env.world().ascii());
        with_diamonds += (n(Tile::Diamond) > 0) as usize;
        let (x, y) = h.env.pos;
        assert_eq!(h.env.world().get(x, y), Tile::Grass);
        worlds.insert(tiles.to_vec());
    }
    assert_eq!(worlds.len(), 20);
    assert!(with_diamonds >= 15, "only {with_diamonds}/20 worlds have diamonds");
}

#[test]
fn decode_view_round_trips_at_every_size() {
    for size in [16, 32, 64, 128] {
        let mut h = Harness::new(&format!("size={size}"));
        let mut rng = Pcg64Mcg::seed_from_u64(size as u64);
        h.reset(11);
        for step in 0..300 {
            // Walk towards the world's corner now and then so views include the border.
            let a = if step < 60 { MOVE + Dir::Up as i64 } else { rng.random_range(0..ACTIONS.len() as i64) };
            h.step(a);
            let view = decode_view(h.rgb(), size);
            let ((x, y), facing) = h.env.agent();
            for (r, row) in view.iter().enumerate() {
                for (c, &tile) in row.iter().enumerate() {
                    let want =
                        if (r, c) == (VIEW / 2, VIEW / 2) { Tile::Player } else { h.env.world().get(x + c as i32 - 8, y + r as i32 - 8) };
                    assert_eq!(tile, want, "size {size} step {step} cell ({r}, {c})");
                }
            }
            assert_eq!(decode_facing(h.rgb(), size), Some(facing));
        }
    }
}

#[test]
fn decoding_bad_input_does_not_panic() {
    assert_eq!(decode_view(&[1, 2, 3], 64)[0][0], Tile::Void);
    assert_eq!(decode_view(&[0; 100], 17)[3][3], Tile::Void);
    assert_eq!(decode_facing(&[], 0), None);
}

#[test]
fn stone_needs_a_pickaxe_and_the_tech_tree_pays_once_per_achievement() {
    let mut h = Harness::new("size=64");
    h.reset(5);
    h.face(Tile::Stone);
    assert_eq!(h.step(DO).reward, 0.0);
    assert_eq!(h.env.world().get(h.env.pos.0 + 1, h.env.pos.1), Tile::Stone);
    // Crafting without a table does nothing either.
    h.env.inventory[Item::Wood as usize] = 5;
    assert_eq!(h.step(MAKE_WOODEN_PICKAXE).reward, 0.0);

    h.face(Tile::Tree);
    assert_eq!(h.step(DO).reward, 1.0);
    assert_eq!(h.step(DO).reward, 0.0, "achievements pay once");
    assert_eq!(h.env.inventory[Item::Wood as usize], 7);
    h.face(Tile::Grass);
    assert_eq!(h.step(PLACE_TABLE).reward, 1.0);
    assert_eq!(h.step(MAKE_WOODEN_PICKAXE).reward, 1.0);
    assert_eq!(h.step(MAKE_STONE_PICKAXE).reward, 0.0, "no stone yet");

    let (x, y) = h.env.pos;
    h.env.world.set(x, y + 1, Tile::Stone);
    h.step(MOVE + Dir::Down as i64);
    assert_eq!(h.env.pos, (x, y), "stone blocks movement");
    assert_eq!(h.step(DO).reward, 1.0);
    assert_eq!(h.env.world().get(x, y + 1), Tile::Path);
    assert_eq!(h.step(MAKE_STONE_PICKAXE).reward, 1.0);

    h.env.world.set(x, y + 1, Tile::Iron);
    h.step(DO);
    h.env.world.set(x, y + 1, Tile::Coal);
    assert_eq!(h.step(DO).reward, 1.0);
    h.env.world.set(x, y + 1, Tile::Diamond);
    assert_eq!(h.step(DO).reward, 0.0, "diamond needs an iron pickaxe");
    assert_eq!(h.step(MAKE_IRON_PICKAXE).reward, 1.0);
    assert_eq!(h.step(DO).reward, 1.0);
    h.step(MOVE + Dir::Down as i64);
    assert_eq!(h.env.pos, (x, y + 1), "mined tiles become walkable");
    h.step(MOVE + Dir::Up as i64);
    assert_eq!(h.step(PLACE_STONE).reward, 0.0, "the only stone went into the pickaxe");
    h.env.inventory[Item::Stone as usize] = 1;
    assert_eq!(h.step(PLACE_STONE).reward, 1.0);

    assert_eq!(h.env.achieved.iter().filter(|&&a| a).count(), ACHIEVEMENTS.len());
    assert_eq!(h.count("mine_block/log"), 2);
    assert_eq!(h.count("mine_block/stone"), 1);
    assert_eq!(h.count("mine_block/iron_ore"), 1);
    assert_eq!(h.count("mine_block/coal_ore"), 1);
    assert_eq!(h.count("mine_block/diamond_ore"), 1);
    assert_eq!(h.count("pickup/diamond"), 1);
    assert_eq!(h.count("craft_item/wooden_pickaxe"), 1);
    assert_eq!(h.count("craft_item/iron_pickaxe"), 1);
    assert_eq!(h.count("place_block/crafting_table"), 1);
    assert_eq!(h.count("place_block/stone"), 1);
    // 7 wood - table - 3 pickaxes; stone spent on the pickaxe, coal and iron on the iron one.
    assert_eq!(h.inv(), vec![3, 0, 0, 0, 1, 1, 1, 1]);

    h.reset(5);
    assert_eq!(h.inv(), vec![0; 8]);
    assert_eq!(h.count("mine_block/diamond_ore"), 0);
    assert_eq!(h.env.info().get("achievements").unwrap().as_array().unwrap().len(), 0);
}

#[test]
fn observations_stay_in_the_space() {
    let mut h = Harness::new("size=32,world=24");
    let mut rng = Pcg64Mcg::seed_from_u64(9);
    for seed in 0..3 {
        h.reset(seed);
        assert!(h.ol.contains_row(h.obs.row(0)));
        for _ in 0..500 {
            h.step(rng.random_range(0..ACTIONS.len() as i64));
            assert!(h.ol.contains_row(h.obs.row(0)));
            assert!(h.env.spec().observation_space.contains(&RowRef::new(&h.ol, h.obs.row(0)).to_value()));
        }
    }
}

#[test]
fn invalid_actions_and_params_are_errors() {
    let mut h = Harness::new("size=16");
    h.reset(0);
    for a in [-1i64, ACTIONS.len() as i64, i64::MAX] {
        h.act.row_mut(0).copy_from_slice(&a.to_ne_bytes());
        let r = h.env.step(RowRef::new(&h.al, h.act.row(0)), RowMut::new(&h.ol, h.obs.row_mut(0)));
        assert!(matches!(r, Err(rollway_core::Error::Env { .. })));
    }
    for bad in ["size=60", "size=0", "size=2048", "world=8", "diamond_rate=2", "max_steps=0", "colour=1", "size=x"] {
        assert!(PixelMine::new(&Params::parse(bad).unwrap()).is_err(), "{bad} accepted");
    }
    let env = crate::make("PixelMine-v0", &Params::parse("size=64,max_steps=50").unwrap()).unwrap();
    assert_eq!(env.spec().max_episode_steps, Some(50));
}

#[test]
fn info_has_minestudio_shape() {
    let mut h = Harness::new("size=16");
    h.reset(0);
    let info: Info = h.env.info();
    for key in ["mine_block", "pickup", "craft_item", "place_block"] {
        assert!(info.get(key).unwrap().is_object(), "{key}");
    }
    assert_eq!(info.get_path("mine_block/diamond_ore").unwrap(), 0);
}

#[test]
#[ignore = "prints ASCII maps for tuning world generation"]
fn print_worlds() {
    let mut h = Harness::new("size=16");
    for seed in 0..3 {
        h.reset(seed);
        println!("seed {seed}\n{}", h.env.world().ascii());
    }
}
