//! rollway's episode dataset: Parquet step shards that pyarrow, pandas, polars and
//! DuckDB read directly, image frames in sidecar files, and a per-shard index whose
//! atomic rename is the commit point — so a crash at any instant leaves every
//! committed episode readable, and the dataset can be read while it is written.
//! The format is described in FORMAT.md.
//!
//! ```
//! use rollway_core::{Params, EpisodeResult};
//! use rollway_store::{Dataset, DatasetWriter, WriterConfig};
//! # let dir = tempfile::tempdir().unwrap();
//! let env = rollway_envs::make("CartPole-v1", &Params::new()).unwrap();
//! let writer = DatasetWriter::create(dir.path(), env.spec(), "random", 0, serde_json::json!({}), WriterConfig::default()).unwrap();
//! let mut collector = rollway_store::Collector::new(env, writer);
//! collector.reset(Some(1)).unwrap();
//! for i in 0..10 {
//!     collector.step_discrete(i % 2).unwrap(); // alternate so the pole stays up
//! }
//! collector.close().unwrap(); // the unfinished episode is truncated and committed
//! let ds = Dataset::open(dir.path()).unwrap();
//! let ep = ds.read_episode(0).unwrap();
//! assert_eq!(ep.rewards.len(), 10);
//! assert!(ep.truncations[9]);
//! ```

pub mod agents;
mod check;
mod collector;
mod columns;
mod config;
mod episodes;
mod error;
mod faults;
pub mod format;
pub mod frames;
pub mod lives;
mod location;
mod lock;
mod maintenance;
mod reader;
mod recorder;
pub(crate) mod recover;
mod shards;
mod shared;
mod verify;
mod writer;

pub use collector::{Collector, StepCallback};
pub use columns::{arrow_type, flat_values, AGENT_STATE};
pub use config::{WriteStats, WriterConfig, MAX_SHARD_EPISODES};
pub use episodes::EpisodeReader;
pub use error::{Error, Result};
pub use format::{FileSum, IndexEntry, Metadata, RunInfo, ShardIndex, FORMAT_VERSION};
pub use location::{has_credentials, local_dir, redacted, CREDENTIALS_REFUSED, OBJECT_STORES, SCHEMES};
pub use maintenance::{close_run, repair, rewrite_index, RepairReport};
pub use reader::{Damaged, Dataset, EpisodeData, OpenOptions, ShardColumns};
pub use recorder::{EpisodeCallback, Recorder};
pub use verify::{verify, Problem, VerifyReport};
pub use writer::{nothing_recorded, DatasetWriter, ResumePoint};
