//! Both engines against torch's own outputs (golden.json, written by make.py from
//! the same networks), and the binding's refusals, through the public agent.
//!
//! ONNX Runtime comes from `$ROLLWAY_PYTHON`'s onnxruntime package (the test venv
//! has it); where that variable is unset and no runtime is found, only tract runs.
//! tract is tested where it is compiled in (`--features tract`, as CI and the wheel build).

use std::path::PathBuf;

use rollway_core::{ActBatch, Agent, AgentFactory, AgentRng, EnvSpec, Layout, Memory, Params, Rows, Segment, StepColumn};
use rollway_onnx::OnnxAgents;

fn data(name: &str) -> String {
    format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn python() -> PathBuf {
    std::env::var_os("ROLLWAY_PYTHON").map_or_else(|| "python3".into(), PathBuf::from)
}

/// `backend=` values to test: tract where this build has it (the `tract` feature: CI
/// turns it on), ort where a runtime is found (and always when `$ROLLWAY_PYTHON`
/// names the test venv).
fn engines() -> Vec<&'static str> {
    let mut engines = Vec::new();
    if cfg!(feature = "tract") {
        engines.push("tract");
    }
    match rollway_onnx::runtime::find(None, &python()) {
        Ok(_) => engines.push("ort"),
        Err(e) if std::env::var_os("ROLLWAY_PYTHON").is_some() => panic!("$ROLLWAY_PYTHON has no ONNX Runtime: {e}"),
        Err(e) => eprintln!("ONNX Runtime not tested: {e}"),
    }
    assert!(!engines.is_empty(), "no engine to test: set ROLLWAY_PYTHON to a Python with onnxruntime, or build with --features tract");
    engines
}

fn spec(env: &str) -> EnvSpec {
    rollway_envs::make(env, &Params::new()).unwrap().spec().clone()
}

fn agent(model: &str, env: &EnvSpec, params: Params) -> rollway_core::Result<Box<dyn Agent>> {
    OnnxAgents::new(&format!("onnx:{}", data(model)), params, 1, python()).make(env)
}

/// One call on `n` float32 observation rows; returns the action rows and the extras.
fn act(a: &mut dyn Agent, env: &EnvSpec, obs: &[f32], first: &[bool], memory: &mut [Memory]) -> (Rows, Vec<StepColumn>) {
    let (ol, al) = (Layout::of(&env.observation_space), Layout::of(&env.action_space));
    let n = first.len();
    let mut rows = Rows::new(ol.row_bytes(), n);
    let per = obs.len() / n;
    for i in 0..n {
        let row: Vec<u8> = obs[i * per..(i + 1) * per].iter().flat_map(|x| x.to_ne_bytes()).collect();
        rows.row_mut(i)[..row.len()].copy_from_slice(&row);
    }
    let mut actions = Rows::new(al.row_bytes(), n);
    let mut rng: Vec<AgentRng> = (0..n).map(|i| rollway_core::seed::agent_rng(i as u64)).collect();
    let seg = Segment { obs: rows.bytes(), actions: actions.bytes_mut(), first, memory, rng: &mut rng };
    let mut batch = ActBatch { obs_layout: &ol, act_layout: &al, segments: vec![seg] };
    let mut extras = Vec::new();
    a.act_with_extras(&mut batch, &mut extras).unwrap();
    (actions, extras)
}

fn golden() -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(data("golden.json")).unwrap()).unwrap()
}

fn floats(v: &serde_json::Value) -> Vec<f32> {
    let mut out = Vec::new();
    let mut walk = vec![v];
    while let Some(x) = walk.pop() {
        match x {
            serde_json::Value::Array(a) => walk.extend(a.iter().rev()),
            x => out.push(x.as_f64().unwrap() as f32),
        }
    }
    out
}

fn argmax(logits: &[f32], m: usize) -> Vec<i64> {
    logits.chunks(m).map(|r| (0..m).fold(0, |b, k| if r[k] > r[b] { k } else { b }) as i64).collect()
}

fn close(a: &[f32], b: &[f32], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!((x - y).abs() <= 1e-5 * (1.0 + y.abs()), "{what}[{i}]: {x} vs torch's {y}");
    }
}

#[test]
fn mlp_gives_torchs_logits_and_their_argmax_on_both_engines() {
    let (g, env) = (golden(), spec("CartPole-v1"));
    let (obs, logits) = (floats(&g["mlp"]["obs"]), floats(&g["mlp"]["logits"]));
    for engine in engines() {
        let mut a = agent("mlp.onnx", &env, Params::new().with("backend", engine).with("extras", "logits")).unwrap();
        let mut memory = vec![Memory::new(); 5];
        let (actions, extras) = act(a.as_mut(), &env, &obs, &[true; 5], &mut memory);
        close(&extras[0].values, &logits, &format!("{engine} logits"));
        let chosen: Vec<i64> = (0..5).map(|i| i64::from_ne_bytes(actions.row(i)[..8].try_into().unwrap())).collect();
        assert_eq!(chosen, argmax(&logits, 2), "{engine}: actions are the argmax of torch's logits");
    }
}

#[test]
fn lstm_carries_its_state_between_calls_and_resets_it_at_first() {
    let (g, env) = (golden(), spec("CartPole-v1"));
    for engine in engines() {
        let mut a = agent("lstm.onnx", &env, Params::new().with("backend", engine).with("extras", "[value,logits]")).unwrap();
        let mut memory = vec![Memory::new(); 5];
        for (t, step) in g["lstm"].as_array().unwrap().iter().enumerate() {
            let first: Vec<bool> = step["first"].as_array().unwrap().iter().map(|b| b.as_bool().unwrap()).collect();
            // A slot that starts an episode has its memory emptied by the runner.
            memory.iter_mut().zip(&first).filter(|(_, f)| **f).for_each(|(m, _)| m.clear());
            let (_, extras) = act(a.as_mut(), &env, &floats(&step["obs"]), &first, &mut memory);
            let names: Vec<&str> = extras.iter().map(|e| e.name.as_str()).collect();
            assert_eq!(names, ["value", "logits"], "extras in the order asked");
            assert_eq!(extras[0].shape, Vec::<usize>::new(), "value is a scalar per step");
            close(&extras[0].values, &floats(&step["value"]), &format!("{engine} value, step {t}"));
            close(&extras[1].values, &floats(&step["logits"]), &format!("{engine} logits, step {t}"));
            assert!(memory.iter().all(|m| m.len() == 64), "h and c of 32 each are kept per slot");
        }
    }
}

#[test]
fn continuous_actions_are_taken_as_given() {
    let env = spec("Pendulum-v1");
    for engine in engines() {
        let mut a = agent("pendulum.onnx", &env, Params::new().with("backend", engine)).unwrap();
        let obs = [1.0f32, 0.0, 0.5, -1.0, 0.0, -0.5];
        let (actions, _) = act(a.as_mut(), &env, &obs, &[true; 2], &mut [Memory::new(), Memory::new()]);
        let x: Vec<f32> = (0..2).map(|i| f32::from_ne_bytes(actions.row(i)[..4].try_into().unwrap())).collect();
        assert!(x.iter().all(|v| v.abs() <= 2.0) && x[0] != x[1], "{engine}: {x:?}");
    }
}

#[test]
fn a_model_that_does_not_fit_the_env_is_refused_with_both_shapes_named() {
    for engine in engines() {
        let params = || Params::new().with("backend", engine);
        let msg = agent("mlp.onnx", &spec("MountainCar-v0"), params()).err().unwrap().to_string();
        assert!(msg.contains("`obs` float32[?,4]") && msg.contains("[n,2]") && msg.contains("Box("), "{engine}: {msg}");
        let msg = agent("lstm.onnx", &spec("Acrobot-v1"), params()).err().unwrap().to_string();
        assert!(msg.contains("[?,4]") && msg.contains("[n,6]"), "{engine}: {msg}");
        // Pendulum's policy gives one float; CartPole takes Discrete(2) actions by logits or integers.
        let msg = agent("pixel16.onnx", &spec("CartPole-v1"), params()).err().unwrap().to_string();
        assert!(msg.contains("`rgb`") && msg.contains("`obs`"), "{engine}: {msg}");
        let msg = agent("mlp.onnx", &spec("CartPole-v1"), params().with("extras", "nope")).err().unwrap().to_string();
        assert!(msg.contains("no output `nope`") && msg.contains("`logits`"), "{engine}: {msg}");
    }
}

#[test]
fn dict_observations_bind_by_leaf_name() {
    let env = rollway_envs::make("PixelMine-v0", &Params::new().with("size", 16)).unwrap().spec().clone();
    for engine in engines() {
        let a = agent("pixel16.onnx", &env, Params::new().with("backend", engine));
        assert!(a.is_ok(), "{engine}: {:?}", a.err());
    }
}

#[test]
fn bad_parameters_and_paths_are_input_errors() {
    let env = spec("CartPole-v1");
    let msg = agent("missing.onnx", &env, Params::new()).err().unwrap().to_string();
    assert!(msg.contains("missing.onnx") && msg.contains("no such model file"), "{msg}");
    let msg = agent("mlp.onnx", &env, Params::new().with("backend", "tract").with("device", "cuda")).err().unwrap().to_string();
    assert!(msg.contains("CPU only"), "{msg}");
    let msg = agent("mlp.onnx", &env, Params::new().with("backend", "ort").with("runtime", "/nonexistent")).err().unwrap().to_string();
    assert!(msg.contains("/nonexistent"), "{msg}");
    let msg = agent("mlp.onnx", &env, Params::new().with("colour", "red")).err().unwrap().to_string();
    assert!(msg.contains("colour"), "{msg}");
}

#[cfg(not(feature = "tract"))]
#[test]
fn issue46_without_the_tract_feature_backend_tract_is_refused_saying_how_to_get_an_engine() {
    assert_eq!(rollway_onnx::ENGINES, ["ort"]);
    let env = spec("CartPole-v1");
    let msg = agent("mlp.onnx", &env, Params::new().with("backend", "tract")).err().unwrap().to_string();
    assert!(msg.contains("built without tract") && msg.contains("--features tract") && msg.contains("pip install onnxruntime"), "{msg}");
    // No runtime where `runtime=` points: auto has nothing to fall back to, and says both ways out.
    let msg = agent("mlp.onnx", &env, Params::new().with("runtime", "/nonexistent")).err().unwrap().to_string();
    assert!(msg.contains("/nonexistent") && msg.contains("built without tract"), "{msg}");
}

#[cfg(feature = "tract")]
#[test]
fn issue46_with_the_tract_feature_both_engines_are_listed() {
    assert_eq!(rollway_onnx::ENGINES, ["ort", "tract"]);
}

/// Issue 56: `device=auto` (the default) takes ONNX Runtime's CUDA provider only where the loaded
/// runtime offers it. The test venv's onnxruntime is the CPU build: auto runs on the CPU and says so,
/// and `device=cuda` is refused naming what it needs, never run quietly on the CPU. (A CUDA runtime on
/// a GPU machine is bench/gpu.py's to measure.)
#[test]
fn issue56_device_auto_takes_cuda_only_where_the_runtime_offers_it() {
    if !engines().contains(&"ort") {
        return; // no runtime here (engines() fails instead where $ROLLWAY_PYTHON promises one)
    }
    let env = spec("CartPole-v1");
    for params in [Params::new().with("backend", "ort"), Params::new().with("backend", "ort").with("device", "auto")] {
        let about = agent("mlp.onnx", &env, params).unwrap().about().unwrap_or_default();
        assert!(about.contains("ONNX Runtime") && about.contains("CPU") && !about.contains("CUDA"), "{about}");
    }
    let about = agent("mlp.onnx", &env, Params::new().with("backend", "ort").with("device", "cpu")).unwrap().about().unwrap_or_default();
    assert!(about.contains("CPU"), "{about}");
    let msg = agent("mlp.onnx", &env, Params::new().with("backend", "ort").with("device", "cuda")).err().unwrap().to_string();
    assert!(msg.contains("device=cuda") && msg.contains("onnxruntime-gpu"), "{msg}");
}
