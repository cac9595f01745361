//! Every integration test of this crate, in one test binary: each file beside this one is a
//! module of it (issue 46: one binary links once, where one per file linked the whole dependency
//! graph 6 times). `cargo test -p rollway-runner --test runner FILE::` runs one file's tests.

mod checks;
mod common;
mod determinism;
mod extras;
mod factories;
mod faults;
mod worker_failures;
