//! Core types of rollway: Gymnasium-semantic spaces, values and infos, flat row
//! layouts for batches, the `Env` and `Agent` traits, and the factories a run
//! builds them with ([`EnvFactory`], [`AgentFactory`]). No IO lives here.
//!
//! Envs write observations into rows of a [`Layout`]; agents read a batch of such
//! rows and write actions. Spaces serialize to the JSON Minari writes.
//!
//! ```
//! use rollway_core::{DType, Layout, Rows, Space, seed};
//!
//! let space = Space::boxed(DType::F32, &[4], -1.0, 1.0).unwrap();
//! assert_eq!(Space::from_json(&space.to_json()).unwrap(), space);
//!
//! let layout = Layout::of(&space);
//! let mut rows = Rows::new(layout.row_bytes(), 8);
//! let mut rng = seed::agent_rng(seed::episode_seed(42, 0));
//! layout.sample_row(&mut rng, rows.row_mut(3));
//! assert!(layout.contains_row(rows.row(3)));
//! ```
#![forbid(unsafe_code)]

/// The `f16` type of [`DType::F16`] values (for `with_dtype!` in other crates).
pub use half;

pub mod agent;
pub mod block;
pub mod check;
pub mod dtype;
pub mod env;
pub mod episode;
mod error;
pub mod factory;
pub mod info;
pub mod layout;
pub mod params;
pub mod recycle;
pub mod registry;
pub mod seed;
pub mod space;
mod space_json;
pub mod value;

pub use agent::{uniforms, ActBatch, Agent, AgentRng, AgentRow, Memory, Segment};
pub use block::{BlockOptions, EnvBlock, Failure, InfoNeed, Op, SlotResult};
pub use check::{Problem, Role, RowCheck};
pub use dtype::DType;
pub use env::{Env, EnvSpec, StepOutcome, TimeLimit};
pub use episode::{EpisodeResult, Fault, Label, Status, StepColumn, Trajectory};
pub use error::{Error, Result};
pub use factory::{AgentFactory, EnvFactory};
pub use info::Info;
pub use layout::{Layout, Leaf, LeafKind, RowMut, RowRef, Rows};
pub use params::Params;
pub use recycle::Recycler;
pub use registry::{AgentEntry, EnvEntry};
pub use space::{text_codes, text_string, BoxSpace, Space};
pub use value::{Array, Value};
