//! What the worker side does when the env process cannot be had, without any
//! Python: a spec probe reports it, and a block turns it into failed ops (one
//! restart for the whole round), never a panic or a hang.

use rollway_core::{BlockOptions, EnvFactory, Op, Params, Rows};
use rollway_host::{is_hosted, PythonEnvs};

#[test]
fn only_names_with_a_colon_are_hosted() {
    assert!(is_hosted("gym:CartPole-v1") && is_hosted("my_envs:make"));
    assert!(!is_hosted("CartPole-v1"));
}

#[test]
fn an_interpreter_that_exits_is_reported_not_waited_for() {
    let envs = PythonEnvs::new("gym:CartPole-v1", &Params::new(), Some("false".into()));
    let err = envs.spec().unwrap_err().to_string();
    assert!(err.contains("did not start") && err.contains("exited with status 1"), "{err}");
    let missing = PythonEnvs::new("gym:CartPole-v1", &Params::new(), Some("/no/such/python".into()));
    assert!(missing.spec().unwrap_err().to_string().contains("/no/such/python"));
}

#[test]
fn a_block_whose_process_never_starts_fails_its_ops_once() {
    let envs = PythonEnvs::new("gym:CartPole-v1", &Params::new(), Some("false".into()));
    let mut block = envs.block(3, BlockOptions::default()).expect("hosted envs come in blocks");
    let (act, mut obs) = (Rows::new(8, 3), Rows::new(16, 3));
    let mut out = Vec::new();
    let ops = [(0, Op::Reset(Some(1))), (2, Op::Reset(Some(2)))];
    block.run(&ops, &act, &mut obs, &mut out);
    assert_eq!(out.len(), 2);
    let (a, b) = (out[0].as_ref().unwrap_err(), out[1].as_ref().unwrap_err());
    assert!(a.error.contains("did not start"), "{}", a.error);
    assert_eq!((a.restarted, b.restarted, &a.error), (true, false, &b.error));
}
