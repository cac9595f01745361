//! Every integration test of this crate, in one test binary: each file beside this one is a
//! module of it (issue 46: one binary links once, where one per file linked the whole dependency
//! graph 2 times). `cargo test -p rollway-loader --test loader FILE::` runs one file's tests.

mod follow;
mod loader;
mod next_obs;
