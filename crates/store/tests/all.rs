//! Every integration test of this crate, in one test binary: each file beside this one is a
//! module of it (issue 46: one binary links once, where one per file linked the whole dependency
//! graph 6 times). `cargo test -p rollway-store --test store FILE::` runs one file's tests.

mod common;
mod damage;
mod fixture;
mod media;
mod shared;
mod store;
mod training_columns;
