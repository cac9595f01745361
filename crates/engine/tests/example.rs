//! The workspace's Rust rollout example (`examples/rollout.rs`, issue 48) runs as it is.

#[path = "../examples/rollout.rs"]
mod example;

#[test]
fn issue48_the_rust_rollout_example_collects_fragments() {
    example::main().unwrap();
}
