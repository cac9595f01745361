//! rollway datasets on object storage (`s3://bucket/prefix`, and S3-compatible
//! stores through `AWS_ENDPOINT_URL`).
//!
//! **Design: a verified local replica.** Every local reader and writer of
//! `rollway-store` keeps working unchanged on a local directory; this crate moves
//! committed shards between such a directory and the store, keeping FORMAT.md's
//! guarantees on a store that has no rename, flock or fsync ("On an object store"
//! there holds the protocol and what each fault costs):
//!
//! - readers ([`Replica`]) pull the dataset's committed shards into a replica in the
//!   cache ([`cache`]) and read it locally: a second read fetches only new shards;
//! - a writer ([`Writing`]) records into a fresh local work directory and pushes each
//!   shard to the store as soon as it is committed locally: stage the data files
//!   under `.tmp/publish/`, create the index object (the commit), publish the data.
//!
//! The cost: a reader downloads whole shards before its first sample (at the
//! store's bandwidth; shards are tens of MB) and keeps them on local disk, and a
//! writer's shards reach the store a poll (50 ms) plus an upload after their local
//! commit, so a writer killed in that window loses those shards on the store; its
//! run resumes them (`--resume` reads what is committed from the store).
#![forbid(unsafe_code)]

mod bound;
pub mod cache;
mod error;
mod failpoint;
mod health;
mod host;
mod lease;
mod members;
mod push;
mod reader;
mod replica;
mod store;
mod sync;

pub use bound::{max_bytes, CACHE_MAX};
pub use error::{Error, Result};
pub use health::{StoreHealth, STALLED};
pub use lease::{LEASE_TTL, RENEW};
pub use push::{Pusher, Settled};
pub use replica::{index_paths, pull, Moved};
pub use store::{is_remote, schemes, Remote, REMOTE_SCHEMES};
pub use sync::{repair, Writing};

pub use reader::{Choose, Replica, PULL_EVERY};
