//! The workspace's Rust rollout example (`examples/rollout.rs`, issue 48) runs as it is.

mod example {
    include!("../examples/rollout.rs");

    pub fn run() -> Result<(), Box<dyn std::error::Error>> {
        main()
    }
}

#[test]
fn issue48_the_rust_rollout_example_collects_fragments() {
    example::run().unwrap();
}
