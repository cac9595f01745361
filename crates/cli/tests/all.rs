//! Every integration test of this crate, in one test binary: each file beside this one is a
//! module of it (issue 46: one binary links once, where one per file linked the whole dependency
//! graph 16 times). `cargo test -p rollway-cli --test cli FILE::` runs one file's tests.

mod cli;
mod common;
mod crash;
mod dataset;
mod export_safety;
mod glob;
mod import_paths;
mod lerobot;
mod members;
mod minari;
mod pyarrow;
mod readme;
mod report;
mod run_refusals;
mod s3;
mod safety;
mod secrets;
mod structure;
mod urls;
mod user_code;
mod video;
