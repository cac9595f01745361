"""Issue 35: networks exported to ONNX run natively (`onnx:PATH`) from the CLI,
`rollway.run`, `rollway.Rollout` and Ray, with the torch policy's actions."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import rollway
from conftest import rollway_cli

from rollway.examples import onnx_policies as P

# tract, the pure-Rust engine, is in builds with the `tract` feature (the wheel; CI's test run, which
# sets ROLLWAY_FEATURES=tract): its runs are tested there, and in a build without it the refusal is.
TRACT = "tract" in rollway._rollway.ONNX_ENGINES
if "tract" in os.environ.get("ROLLWAY_FEATURES", ""):
    assert TRACT, "ROLLWAY_FEATURES has tract, but the installed extension was built without it"


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("onnx")
    return {
        "mlp": P.export_mlp(P.mlp(), os.fspath(d / "mlp.onnx")),
        "lstm": P.export_recurrent(P.LSTMPolicy(), torch.zeros(2, 4), os.fspath(d / "lstm.onnx")),
    }


def actions(path):
    ds = rollway.Dataset(path)
    return [ds[i].actions for i in range(len(ds))]


def same_actions(a, b):
    x, y = actions(a), actions(b)
    return len(x) == len(y) > 0 and all(np.array_equal(p, q) for p, q in zip(x, y))


def test_the_readme_mlp_from_the_cli_acts_as_the_torch_policy(models, tmp_path):
    native, hosted = tmp_path / "onnx", tmp_path / "torch"
    # A path relative to the working directory; the dataset stores it absolute, to be found from anywhere.
    cmd = rollway_cli() + ["run", "--env", "CartPole-v1", "--agent", "onnx:mlp.onnx", "--episodes", "24",
                           "--out", os.fspath(native), "--quiet"]
    subprocess.run(cmd, check=True, env=dict(os.environ, ROLLWAY_PYTHON=sys.executable), cwd=os.path.dirname(models["mlp"]))
    stored = rollway.Dataset(native).metadata["runs"][0]["config"]["agent"]
    assert stored.startswith("onnx:/") and os.path.realpath(stored[5:]) == os.path.realpath(models["mlp"])
    rollway.run(env="CartPole-v1", agent=P.torch_policy(P.mlp()), episodes=24, out=hosted, progress=False)
    assert same_actions(native, hosted)
    # A different network acts differently: the comparison can fail.
    other = tmp_path / "other"
    rollway.run(env="CartPole-v1", agent=P.torch_policy(P.mlp(seed=1)), episodes=24, out=other, progress=False)
    assert not same_actions(native, other)


def test_the_example_exports_both_policies_and_checks_them_from_the_cli(tmp_path):
    r = subprocess.run([sys.executable, os.path.join(os.path.dirname(P.__file__), "onnx_policies.py"), os.fspath(tmp_path)],
                       capture_output=True, text=True, env=dict(os.environ, ROLLWAY_PYTHON=sys.executable))
    assert r.returncode == 0, r.stderr[-2000:]
    assert "mlp: 32 episodes, actions equal to the torch policy's: True" in r.stdout
    assert "lstm: 32 episodes, actions equal to the torch policy's: True" in r.stdout


def test_the_lstm_policy_acts_and_keeps_state_as_the_torch_policy(models, tmp_path):
    native, hosted = tmp_path / "onnx", tmp_path / "torch"
    s = rollway.run(env="CartPole-v1", agent="onnx:" + models["lstm"], agent_params={"extras": "value"},
                    episodes=16, workers=2, envs_per_worker=4, mode="sync", batch=(8, 0), out=native, progress=False)
    assert "ONNX Runtime" in s.inference and "state_out" in s.inference
    rollway.run(env="CartPole-v1", agent=P.torch_policy(P.LSTMPolicy(), recurrent=True), episodes=16, out=hosted,
                progress=False)
    assert same_actions(native, hosted)
    a, b = rollway.Dataset(native), rollway.Dataset(hosted)
    for i in range(len(a)):
        np.testing.assert_allclose(a[i].agent_state, b[i].agent_state, rtol=1e-5, atol=1e-6)
        assert a[i].extras["value"].shape == (len(a[i]),) and a[i].extras["value"].dtype == np.float32
    # Each recorded value is the network's value of the observation and state it acted on
    # (episodes from both workers, batched together: rows land in their own episodes).
    net = P.LSTMPolicy()
    for ep in (a[i] for i in range(len(a))):
        first = torch.zeros(len(ep), dtype=torch.bool)
        first[0] = True
        state = torch.from_numpy(np.concatenate([np.zeros((1, 64), np.float32), ep.agent_state[:-1]]))
        _, _, value = net(torch.from_numpy(ep.observations[:-1]), first, state)
        np.testing.assert_allclose(ep.extras["value"], value.detach().numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("net", ["mlp", "lstm"])
def test_same_seed_same_dataset_whatever_engine_batch_and_workers(models, tmp_path, net):
    base = dict(env="CartPole-v1", agent="onnx:" + models[net], episodes=24, seed=5, progress=False)
    runs = {
        "ort 1 worker": dict(workers=1, envs_per_worker=8),
        **({"tract": dict(workers=1, envs_per_worker=8, agent_params={"backend": "tract"})} if TRACT else {}),
        "batches of 3": dict(workers=2, envs_per_worker=6, mode="async", batch=(3, 3)),
        "one batch": dict(workers=2, envs_per_worker=4, mode="sync", batch=(8, 0)),
    }
    paths = {}
    for name, kw in runs.items():
        paths[name] = tmp_path / name.replace(" ", "-")
        rollway.run(**base, **kw, out=paths[name])
    for name in runs:
        assert same_actions(paths["ort 1 worker"], paths[name]), name
    if net == "lstm":
        # States (and so logits, values) may differ in their last bits between engines and batch
        # sizes, where an engine picks another kernel: equal to float32 rounding, not bit for bit.
        ref = rollway.Dataset(paths["ort 1 worker"])
        for name in runs:
            other = rollway.Dataset(paths[name])
            for i in range(len(ref)):
                np.testing.assert_allclose(other[i].agent_state, ref[i].agent_state, rtol=1e-5, atol=1e-6, err_msg=name)


def test_sampled_actions_follow_the_episode_seed_not_the_batch(models, tmp_path):
    base = dict(env="CartPole-v1", agent="onnx:" + models["mlp"], episodes=16, progress=False)
    sample = {"sample": True}
    rollway.run(**base, seed=1, agent_params=sample, workers=1, envs_per_worker=4, out=tmp_path / "a")
    rollway.run(**base, seed=1, agent_params={**sample, "backend": "tract" if TRACT else "ort"}, workers=2,
                envs_per_worker=3, batch=(2, 2), mode="async", out=tmp_path / "b")
    rollway.run(**base, seed=2, agent_params=sample, workers=1, envs_per_worker=4, out=tmp_path / "c")
    rollway.run(**base, seed=1, workers=1, envs_per_worker=4, out=tmp_path / "argmax")
    assert same_actions(tmp_path / "a", tmp_path / "b")
    assert not same_actions(tmp_path / "a", tmp_path / "c")
    assert not same_actions(tmp_path / "a", tmp_path / "argmax")


def test_a_model_that_does_not_fit_is_refused_before_the_run(models, tmp_path):
    out = tmp_path / "never"
    cmd = rollway_cli() + ["run", "--env", "MountainCar-v0", "--agent", "onnx:" + models["mlp"], "--episodes", "4",
                           "--out", os.fspath(out)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, ROLLWAY_PYTHON=sys.executable))
    assert r.returncode == 2, r.stderr
    assert "`obs` float32[?,4]" in r.stderr and "Box(float32, [2])" in r.stderr and "[n,2]" in r.stderr
    assert not out.exists()
    with pytest.raises(rollway.InputError, match=r"float32\[\?,4\].*\[n,3\]"):
        rollway.run(env="Pendulum-v1", agent="onnx:" + models["mlp"], episodes=2, progress=False)
    # The CPU build of ONNX Runtime has no CUDA: device=cuda is an error, never a quiet CPU run.
    with pytest.raises(rollway.InputError, match="device=cuda.*CUDA"):
        rollway.run(env="CartPole-v1", agent="onnx:" + models["mlp"], agent_params={"device": "cuda"}, episodes=2,
                    progress=False)
    with pytest.raises(rollway.InputError, match="no ONNX Runtime|backend=ort"):
        rollway.run(env="CartPole-v1", agent="onnx:" + models["mlp"], agent_params={"backend": "ort", "runtime": tmp_path},
                    episodes=2, progress=False)


def test_without_onnxruntime_tract_runs_and_the_summary_says_so(models, tmp_path):
    # A Python with no onnxruntime package: the CLI falls back to tract, where the build has it.
    bare = tmp_path / "python"
    bare.write_text("#!/bin/sh\nexec %s -S -c 'print(\"\")' \"$@\"\n" % sys.executable)
    bare.chmod(0o755)
    cmd = rollway_cli() + ["run", "--env", "CartPole-v1", "--agent", "onnx:" + models["mlp"], "--episodes", "8",
                           "--no-record", "--summary-json", os.fspath(tmp_path / "s.json"), "--quiet"]
    env = {k: v for k, v in os.environ.items() if k != "ORT_DYLIB_PATH"}
    r = subprocess.run(cmd, capture_output=True, text=True, env=dict(env, ROLLWAY_PYTHON=os.fspath(bare)))
    if TRACT:
        assert r.returncode == 0, r.stderr
        assert json.loads((tmp_path / "s.json").read_text())["inference"].startswith("tract")
    else:
        # Issue 46: without tract there is no engine to run it: refused before the run, saying both ways out.
        assert r.returncode == 2, r.stderr
        assert "built without tract" in r.stderr and "pip install onnxruntime" in r.stderr and "--features tract" in r.stderr


def test_rollout_fragments_carry_the_networks_extras(models):
    r = rollway.Rollout("CartPole-v1", "onnx:" + models["lstm"], num_envs=4, steps_per_fragment=16,
                        agent_params={"extras": "all"})
    try:
        f = r.collect()
        assert sorted(f.extras) == ["value"] and f.extras["value"].shape == (16, 4)
        # The first fragment starts every episode (no state yet); the next starts where it left off.
        assert r.collect().state.shape == (4, 64)
        # The exported network is fixed: a learner's weights cannot be loaded into it.
        with pytest.raises(rollway.InputError, match="onnx"):
            r.publish({"w": 1.0})
    finally:
        r.close()
    with pytest.raises(rollway.InputError, match="agent_params"):
        rollway.Rollout("CartPole-v1", P.torch_policy(P.mlp()), agent_params={"extras": "all"})


def test_ray_actors_run_the_onnx_agent_as_the_local_run_does(models, cluster, tmp_path):
    import rollway.ray

    job = dict(env="CartPole-v1", agent="onnx:" + models["mlp"], episodes=16, seed=2)
    rollway.run(**job, out=tmp_path / "local", progress=False)
    rollway.ray.run(**job, out=tmp_path / "ray", num_actors=2, progress=False)
    assert same_actions(tmp_path / "local", tmp_path / "ray")
