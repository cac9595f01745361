//! Every integration test of this crate, in one test binary: each file beside this one is a
//! module of it (issue 46: one binary links once, where one per file linked the whole dependency
//! graph 4 times). `cargo test -p rollway-interop --test interop FILE::` runs one file's tests.

mod common;
mod hostile_sizes;
mod lerobot;
mod minari;
mod round_trip_prop;
