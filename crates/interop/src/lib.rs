//! Moving rollway datasets to and from other tools' formats.
//!
//! [`minari`] exports a dataset as a Minari 0.5 HDF5 dataset that
//! `minari.load_dataset` reads (same values, dtypes and episode layout), and
//! imports one that Minari's `DataCollector` wrote. Both sides use Gymnasium's
//! convention of T+1 observations per T steps, so rows map one to one. Outputs
//! are built aside and renamed into place: a failed or interrupted run leaves
//! no half dataset.
//!
//! [`lerobot`] exports a dataset in LeRobot's v3.0 layout (Parquet frames, H.264
//! videos, `meta/` tables) that `LeRobotDataset` loads, and imports v3.0 datasets;
//! it keeps each episode's final observation as an extra flagged frame, so its
//! round trip is exact too (videos within the codec's loss).
//!
//! ```
//! use rollway_core::Params;
//! use rollway_interop::minari::{self, ExportOptions};
//! use rollway_store::{Collector, Dataset, DatasetWriter, WriterConfig};
//!
//! let tmp = tempfile::tempdir().unwrap();
//! let (src, out, back) = (tmp.path().join("src"), tmp.path().join("cartpole/demo-v0"), tmp.path().join("back"));
//! let env = rollway_envs::make("CartPole-v1", &Params::new()).unwrap();
//! let writer = DatasetWriter::create(&src, env.spec(), "alternate", 0, serde_json::json!({}), WriterConfig::default()).unwrap();
//! let mut c = Collector::new(env, writer);
//! c.reset(Some(3)).unwrap();
//! for i in 0..12 {
//!     c.step_discrete(i % 2).unwrap();
//! }
//! c.close().unwrap();
//!
//! // `out` is the Minari dataset's own directory; its id defaults to the last two components.
//! let report = minari::export(&src, &out, &ExportOptions::default(), &mut |_, _| {}).unwrap();
//! assert_eq!((report.dataset_id.as_str(), report.episodes, report.steps), ("cartpole/demo-v0", 1, 12));
//! assert!(out.join("data/main_data.hdf5").is_file());
//!
//! minari::import(&out, &back, &mut |_, _| {}).unwrap();
//! let (a, b) = (Dataset::open(&src).unwrap(), Dataset::open(&back).unwrap());
//! assert_eq!(a.read_episode(0).unwrap().observations, b.read_episode(0).unwrap().observations);
//! ```

mod columns;
mod error;
pub mod lerobot;
mod limits;
pub mod minari;
mod staging;

pub use error::{Error, Result};
