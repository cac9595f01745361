//! The game's rules as data: actions, inventory items, what `do` collects, what can
//! be placed and crafted, achievements, and the info counter names.
//!
//! Keeping the tech tree in tables (not in `match` arms spread over `step`) makes it
//! easy to read the whole game at once and to check it in tests.

use super::world::Tile;

/// Action names, indexed by the Discrete action value.
pub const ACTIONS: [&str; 11] = [
    "noop",
    "move_left",
    "move_right",
    "move_up",
    "move_down",
    "do",
    "place_table",
    "place_stone",
    "make_wooden_pickaxe",
    "make_stone_pickaxe",
    "make_iron_pickaxe",
];

/// Action index: do nothing.
pub const NOOP: i64 = 0;
/// Action index of the first move (`move_left`); `MOVE + Dir as i64` moves in `Dir`.
pub const MOVE: i64 = 1;
/// Action index: mine / collect the faced tile.
pub const DO: i64 = 5;
/// Action index: place a crafting table on the faced tile.
pub const PLACE_TABLE: i64 = 6;
/// Action index: place a stone on the faced tile.
pub const PLACE_STONE: i64 = 7;
/// Action index: craft a wooden pickaxe.
pub const MAKE_WOODEN_PICKAXE: i64 = 8;
/// Action index: craft a stone pickaxe.
pub const MAKE_STONE_PICKAXE: i64 = 9;
/// Action index: craft an iron pickaxe.
pub const MAKE_IRON_PICKAXE: i64 = 10;

/// Inventory slots, in observation order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
#[allow(missing_docs)]
pub enum Item {
    Wood = 0,
    Stone,
    Coal,
    Iron,
    Diamond,
    WoodenPickaxe,
    StonePickaxe,
    IronPickaxe,
}

/// Inventory slot names, in observation order.
pub const INVENTORY: [&str; 8] = ["wood", "stone", "coal", "iron", "diamond", "wooden_pickaxe", "stone_pickaxe", "iron_pickaxe"];

/// Largest count of any inventory slot (Crafter caps at 9; we allow more so
/// counters stay meaningful in long episodes).
pub const MAX_COUNT: i32 = 99;

/// Crafting needs a table within this Chebyshev distance of the agent.
pub const TABLE_REACH: i32 = 2;

/// Achievements, each worth +1 reward the first time in an episode.
pub const ACHIEVEMENTS: [&str; 10] = [
    "collect_wood",
    "place_table",
    "make_wooden_pickaxe",
    "collect_stone",
    "place_stone",
    "collect_coal",
    "make_stone_pickaxe",
    "collect_iron",
    "make_iron_pickaxe",
    "collect_diamond",
];

/// What `do` does to a tile.
pub struct Collect {
    /// The faced tile.
    pub tile: Tile,
    /// Tool the agent must hold.
    pub needs: Option<Item>,
    /// Item added to the inventory.
    pub gives: Item,
    /// What the tile becomes (trees stay trees, like in Crafter).
    pub leaves: Tile,
    /// Index into [`ACHIEVEMENTS`].
    pub achievement: usize,
    /// `mine_block` counter name (Minecraft block id).
    pub block: &'static str,
    /// `pickup` counter name (Minecraft item id).
    pub pickup: &'static str,
}

/// Collectable tiles; the row index is the `mine_block`/`pickup` counter index.
pub const COLLECT: [Collect; 5] = [
    Collect { tile: Tile::Tree, needs: None, gives: Item::Wood, leaves: Tile::Tree, achievement: 0, block: "log", pickup: "log" },
    Collect {
        tile: Tile::Stone,
        needs: Some(Item::WoodenPickaxe),
        gives: Item::Stone,
        leaves: Tile::Path,
        achievement: 3,
        block: "stone",
        pickup: "cobblestone",
    },
    Collect {
        tile: Tile::Coal,
        needs: Some(Item::WoodenPickaxe),
        gives: Item::Coal,
        leaves: Tile::Path,
        achievement: 5,
        block: "coal_ore",
        pickup: "coal",
    },
    Collect {
        tile: Tile::Iron,
        needs: Some(Item::StonePickaxe),
        gives: Item::Iron,
        leaves: Tile::Path,
        achievement: 7,
        block: "iron_ore",
        pickup: "iron_ore",
    },
    Collect {
        tile: Tile::Diamond,
        needs: Some(Item::IronPickaxe),
        gives: Item::Diamond,
        leaves: Tile::Path,
        achievement: 9,
        block: "diamond_ore",
        pickup: "diamond",
    },
];

/// A placing action.
pub struct Place {
    /// The action index.
    pub action: i64,
    /// Item spent (one).
    pub uses: Item,
    /// Tile put on the faced cell.
    pub tile: Tile,
    /// Tiles it may replace.
    pub onto: &'static [Tile],
    /// Index into [`ACHIEVEMENTS`].
    pub achievement: usize,
    /// `place_block` counter name.
    pub block: &'static str,
}

/// Placing actions; the row index is the `place_block` counter index.
pub const PLACE: [Place; 2] = [
    Place {
        action: PLACE_TABLE,
        uses: Item::Wood,
        tile: Tile::Table,
        onto: &[Tile::Grass, Tile::Sand, Tile::Path],
        achievement: 1,
        block: "crafting_table",
    },
    Place {
        action: PLACE_STONE,
        uses: Item::Stone,
        tile: Tile::Stone,
        onto: &[Tile::Grass, Tile::Sand, Tile::Path, Tile::Water],
        achievement: 4,
        block: "stone",
    },
];

/// A crafting action (always needs a table within [`TABLE_REACH`]).
pub struct Craft {
    /// The action index.
    pub action: i64,
    /// Items spent.
    pub uses: &'static [(Item, i32)],
    /// Item made (one).
    pub gives: Item,
    /// Index into [`ACHIEVEMENTS`].
    pub achievement: usize,
    /// `craft_item` counter name.
    pub item: &'static str,
}

/// Crafting recipes (Crafter's, without the furnace); the row index is the `craft_item` counter index.
pub const CRAFT: [Craft; 3] = [
    Craft { action: MAKE_WOODEN_PICKAXE, uses: &[(Item::Wood, 1)], gives: Item::WoodenPickaxe, achievement: 2, item: "wooden_pickaxe" },
    Craft {
        action: MAKE_STONE_PICKAXE,
        uses: &[(Item::Wood, 1), (Item::Stone, 1)],
        gives: Item::StonePickaxe,
        achievement: 6,
        item: "stone_pickaxe",
    },
    Craft {
        action: MAKE_IRON_PICKAXE,
        uses: &[(Item::Wood, 1), (Item::Coal, 1), (Item::Iron, 1)],
        gives: Item::IronPickaxe,
        achievement: 8,
        item: "iron_pickaxe",
    },
];

/// The collect rule for a tile, if `do` does anything to it.
#[inline]
pub fn collect_rule(tile: Tile) -> Option<(usize, &'static Collect)> {
    COLLECT.iter().enumerate().find(|(_, c)| c.tile == tile)
}
