"""Issue 12: Gymnasium envs written in Python, hosted in worker processes.

Every run here really starts env processes (``python -m rollway._host``) and
steps real Gymnasium envs through shared memory; faults are real exceptions,
real SIGKILLs and real hangs, and each faulty run is compared with a clean one.
"""

import os
import signal
import subprocess
import sys
import time

import gymnasium as gym
import numpy as np
import pytest

import rollway
from conftest import interrupt_once_committed, owned_pids, rollway_cli

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(autouse=True)
def importable_test_envs(monkeypatch):
    # The env processes import `hosted_envs` from this folder.
    monkeypatch.setenv("PYTHONPATH", HERE + os.pathsep + os.environ.get("PYTHONPATH", ""))
    monkeypatch.setenv("ROLLWAY_PYTHON", sys.executable)
    yield
    assert host_processes() == [], "an env process outlived its run"


def host_processes():
    """Live env processes this test process started (directly, or through a CLI run it started)."""
    return owned_pids(lambda cmd: b"rollway._host" in cmd)


def arrays(path):
    """Every episode of a dataset as plain arrays, by id."""
    ds = rollway.Dataset(path)
    out = {}
    for ep in ds:
        obs = ep.observations
        obs = {k: np.asarray(v) for k, v in obs.items()} if isinstance(obs, dict) else np.asarray(obs)
        out[ep.id] = (ep.seed, obs, np.asarray(ep.actions) if not isinstance(ep.actions, dict) else {k: np.asarray(v) for k, v in ep.actions.items()},
                      ep.rewards, ep.terminations, ep.truncations)
    return out


def same(a, b):
    assert a.keys() == b.keys()
    for i in a:
        for x, y in zip(a[i], b[i]):
            if isinstance(x, dict):
                assert x.keys() == y.keys()
                for k in x:
                    np.testing.assert_array_equal(x[k], y[k], err_msg=f"episode {i}, {k}")
            else:
                np.testing.assert_array_equal(x, y, err_msg=f"episode {i}")


def test_hosted_cartpole_equals_the_built_in_one_for_any_worker_count(tmp_path):
    built_in = tmp_path / "built_in"
    rollway.run(env="CartPole-v1", agent="random", episodes=60, seed=5, workers=2, envs_per_worker=4, out=built_in, progress=False)
    for i, (w, n, mode) in enumerate([(1, 8, "sync"), (2, 3, "async"), (3, 5, "sync")]):
        out = tmp_path / f"hosted{i}"
        s = rollway.run(env="gym:CartPole-v1", agent="random", episodes=60, seed=5, workers=w, envs_per_worker=n, mode=mode, out=out, progress=False)
        assert (s.episodes, s.failed_attempts, s.restarts, s.env) == (60, 0, 0, "CartPole-v1")
        same(arrays(built_in), arrays(out))


def test_every_space_kind_round_trips_through_the_shared_rows(tmp_path):
    out = tmp_path / "spaces"
    s = rollway.run(env="hosted_envs:AllSpaces", env_params={"length": 9}, agent="random", episodes=6, workers=2, envs_per_worker=2,
                    seed=1, out=out, record_infos=True, progress=False)
    assert (s.episodes, s.failed_attempts, s.truncated) == (6, 0, 6)
    from hosted_envs import AllSpaces

    for ep in rollway.Dataset(out):
        env = AllSpaces(length=9)
        first, info = env.reset(seed=ep.seed)
        assert ep.infos[0]["base"] == info["base"] and ep.infos[-1]["k"] == ep.length
        obs = ep.observations
        np.testing.assert_array_equal(obs["pos"][0], first["pos"])
        np.testing.assert_array_equal(obs["img"][0], first["img"])
        for t in range(ep.length):
            action = {"move": ep.actions["move"][t], "push": ep.actions["push"][t], "flag": int(ep.actions["flag"][t])}
            o, r, term, trunc, _ = env.step(action)
            assert ep.rewards[t] == r and ep.truncations[t] == trunc and ep.terminations[t] == term
            np.testing.assert_array_equal(obs["pos"][t + 1], o["pos"])
            np.testing.assert_array_equal(obs["img"][t + 1], o["img"])
            np.testing.assert_array_equal(obs["hist"][t + 1], o["hist"])
            assert obs["t/_index_0"][t + 1] == o["t"][0]
            np.testing.assert_array_equal(obs["t/_index_1"][t + 1], o["t"][1])


def test_render_frames_are_recorded_with_the_observations_and_match_gymnasium(tmp_path):
    # Real CartPole frames (pygame), stored losslessly, replayed in real Gymnasium.
    out = tmp_path / "rendered"
    s = rollway.run(env="gym:CartPole-v1", env_params={"render_mode": "rgb_array"}, agent="random", episodes=3, workers=2,
                    envs_per_worker=1, seed=3, out=out, image_media="lz4", progress=False)
    assert (s.episodes, s.failed_attempts) == (3, 0)
    rollway.run(env="CartPole-v1", agent="random", episodes=3, seed=3, out=tmp_path / "plain", progress=False)
    plain = arrays(tmp_path / "plain")
    for ep in rollway.Dataset(out):
        obs = ep.observations
        assert obs["render"].shape == (ep.length + 1, 400, 600, 3) and obs["render"].dtype == np.uint8
        # The rendering changes nothing else: the episode is the built-in CartPole's.
        np.testing.assert_array_equal(obs["observation"], plain[ep.id][1])
        env = gym.make("CartPole-v1", render_mode="rgb_array")
        env.reset(seed=ep.seed)
        np.testing.assert_array_equal(obs["render"][0], env.render())
        for t in range(ep.length):
            env.step(int(ep.actions[t]))
            np.testing.assert_array_equal(obs["render"][t + 1], env.render(), err_msg=f"episode {ep.id}, step {t}")
        env.close()


def test_render_mode_without_frames_says_what_render_returned():
    with pytest.raises(rollway.RollwayError, match=r"render\(\) returned NoneType"):
        rollway.run(env="hosted_envs:NoFrames", agent="random", episodes=1, record=False, progress=False)


def test_a_lambda_env_and_module_callable_with_params(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    s = rollway.run(env=lambda: gym.make("CartPole-v1", max_episode_steps=15), agent="random", episodes=20, out=a, progress=False)
    assert s.env == "CartPole-v1" and s.length["max"] <= 15
    assert rollway.Dataset(a).metadata["runs"][0]["config"]["env"] == "python:test_a_lambda_env_and_module_callable_with_params.<locals>.<lambda>"
    rollway.run(env="hosted_envs:make_cartpole", env_params={"max_episode_steps": 15}, agent="random", episodes=20, out=b, progress=False)
    same(arrays(a), arrays(b))
    # A callable takes env_params as keyword arguments too, and keeps them when resumed.
    c = tmp_path / "c"
    rollway.run(env=lambda **kw: gym.make("CartPole-v1", **kw), env_params={"max_episode_steps": 15}, agent="random", episodes=10,
                out=c, progress=False)
    rollway.run(resume=c, episodes=20, env=lambda **kw: gym.make("CartPole-v1", **kw), progress=False)
    same(arrays(a), arrays(c))
    # A callable cannot be stored: resuming says to pass it again, and works when it is.
    with pytest.raises(rollway.RollwayError, match="passing it again"):
        rollway.run(resume=a, episodes=30, progress=False)
    s = rollway.run(resume=a, episodes=30, env=lambda: gym.make("CartPole-v1", max_episode_steps=15), progress=False)
    assert s.resumed["next_index"] == 20 and len(rollway.Dataset(a)) == 30


@pytest.mark.parametrize("workers", [1, 2])
def test_the_process_that_read_the_spec_serves_the_first_block(tmp_path, workers):
    """A run reads its env's spec in a process before any block starts, and that process then serves
    the first block: one env process a block, not one more (importing a JAX env's modules alone
    takes seconds). Each process makes its first env once, so the pids that made envs are the run's
    processes."""
    made = tmp_path / "pids"

    def make():
        with open(made, "a") as f:
            f.write(f"{os.getpid()}\n")
        return gym.make("CartPole-v1", max_episode_steps=20)

    s = rollway.run(env=make, agent="random", episodes=8, workers=workers, envs_per_worker=2, mode="sync", host="process",
                    out=tmp_path / "ds", progress=False)
    assert s.episodes == 8
    assert len(set(made.read_text().split())) == workers


def test_issue15_text_spaces_are_hosted_and_recorded(tmp_path):
    """Text observations come back as the strings the env returned; random Text actions
    reach the env as strings of the action space."""
    out = tmp_path / "text"
    s = rollway.run(env="hosted_envs:TextObs", agent="random", episodes=4, seed=2, out=out, progress=False)
    assert (s.episodes, s.failed_attempts) == (4, 0)
    from hosted_envs import TextObs

    for ep in rollway.Dataset(out):
        env = TextObs()
        assert ep.observations[0] == env.reset(seed=ep.seed)[0] == ""
        for t in range(ep.length):
            assert env.observation_space.contains(ep.observations[t + 1])
            assert env.action_space.contains(ep.actions[t])
            assert env.step(ep.actions[t])[0] == ep.observations[t + 1]


def test_unsupported_spaces_and_bad_targets_say_what_is_wrong(tmp_path):
    with pytest.raises(rollway.RollwayError, match="Sequence"):
        rollway.run(env="hosted_envs:SequenceObs", agent="random", episodes=2, progress=False, record=False)
    with pytest.raises(rollway.RollwayError, match="NoSuchEnv"):
        rollway.run(env="gym:NoSuchEnv-v0", agent="random", episodes=2, progress=False, record=False)
    with pytest.raises(rollway.RollwayError, match="no_such_module"):
        rollway.run(env="no_such_module:make", agent="random", episodes=2, progress=False, record=False)


def faulty_run(tmp_path, name, how, every=7, **kw):
    marks = tmp_path / f"marks-{name}"
    marks.mkdir()
    out = tmp_path / name
    s = rollway.run(env="hosted_envs:Faulty", env_params={"marks": str(marks), "how": how, "every": every}, agent="random", episodes=50,
                    workers=2, envs_per_worker=4, seed=9, max_restarts=100, max_attempts=20, out=out, progress=False, **kw)
    return s, out, len(os.listdir(marks))


@pytest.fixture
def clean(tmp_path):
    out = tmp_path / "clean"
    rollway.run(env="hosted_envs:Faulty", agent="random", episodes=50, workers=2, envs_per_worker=4, seed=9, out=out, progress=False)
    return arrays(out)


@pytest.mark.parametrize("how", ["raise", "kill", "exit"])
def test_env_faults_cost_attempts_and_lose_nothing(tmp_path, clean, how):
    s, out, faults = faulty_run(tmp_path, how, how)
    # One fault per episode whose seed is divisible by 7 (each reaches step 3).
    expected = sum(1 for seed, *_ in clean.values() if seed % 7 == 0)
    assert faults == expected > 0
    assert (s.episodes, s.given_up, s.restarts) == (50, 0, expected)
    if how == "raise":
        assert s.failed_attempts == expected
        assert all("simulator fault" in f["error"] for f in s.faults)
    else:
        # A dead process fails every op of its round: the faulty episode and its block's others.
        assert s.failed_attempts >= expected
        assert any("died" in f["error"] for f in s.faults)
    same(clean, arrays(out))


def test_a_hung_env_is_killed_after_step_timeout(tmp_path, clean):
    start = time.perf_counter()
    s, out, faults = faulty_run(tmp_path, "hang", "hang", every=11, step_timeout=1.0)
    assert faults >= 1 and s.restarts == faults and s.given_up == 0
    assert any("step_timeout" in f["error"] for f in s.faults)
    # Not the hang's 60 s a fault: each is cut at the 1 s step_timeout (plus a fresh env process,
    # seconds on a loaded machine).
    assert time.perf_counter() - start < 60 * faults
    same(clean, arrays(out))


# Interrupted by the test once episodes are committed (conftest.interrupt_once_committed).
INTERRUPT = r"""
import sys, rollway
try:
    rollway.run(env="gym:CartPole-v1", agent="random", episodes=10**7, out=sys.argv[1], progress=False,
                max_buffer_episodes=64)
except KeyboardInterrupt:
    print("interrupted")
    sys.exit(0)
sys.exit("not interrupted")
"""


def test_ctrl_c_stops_hosted_envs_and_leaves_no_process(tmp_path):
    p = interrupt_once_committed([sys.executable, "-c", INTERRUPT, str(tmp_path / "ds")], tmp_path / "ds")
    assert p.returncode == 0 and "interrupted" in p.stdout, p.stderr
    assert len(rollway.Dataset(tmp_path / "ds")) > 0


HUNG = r"""
import os, signal, sys, threading, time, rollway
threading.Timer(4.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
start = time.time()
try:
    # Every episode hangs at its third step, and there is no step_timeout.
    rollway.run(env="hosted_envs:Faulty", env_params={"marks": sys.argv[1], "how": "hang", "every": 1}, agent="random", episodes=100,
                progress=False, record=False)
except KeyboardInterrupt:
    print("interrupted after", round(time.time() - start))
    sys.exit(0)
sys.exit("not interrupted")
"""


def test_ctrl_c_during_a_hung_env_still_ends_the_run(tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    p = subprocess.run([sys.executable, "-c", HUNG, str(marks)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "interrupted" in p.stdout, p.stderr
    # The hang is 60 s; the run's processes were killed about 3 s after Ctrl-C instead (well under the
    # hang on a loaded machine too).
    assert int(p.stdout.split()[-1]) < 40


def test_a_killed_run_takes_its_env_processes_with_it(tmp_path):
    cmd = rollway_cli() + ["run", "--env", "gym:CartPole-v1", "--agent", "random", "--episodes", "100000000", "--quiet", "--out", str(tmp_path / "ds")]
    run = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while len(host_processes()) < 2 and time.time() < deadline:
        time.sleep(0.1)
    assert len(host_processes()) >= 2, "the env processes never started"
    run.send_signal(signal.SIGKILL)
    run.wait()
    deadline = time.time() + 10
    while host_processes() and time.time() < deadline:
        time.sleep(0.05)
    # Whatever was committed before the kill is intact.
    assert rollway.Dataset(tmp_path / "ds").verify()["problems"] == []


def test_cli_hosts_module_callables(tmp_path):
    cmd = rollway_cli() + ["run", "--env", "hosted_envs:make_cartpole", "--env-opt", "max_episode_steps=12", "--agent", "random",
                           "--episodes", "10", "--quiet", "--summary-json", str(tmp_path / "s.json")]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    import json

    s = json.load(open(tmp_path / "s.json"))
    assert s["episodes"] == 10 and s["length"]["max"] <= 12


REGISTERED_HERE = r"""
import sys, gymnasium as gym, rollway
# Registered at module level of the learner's script, as `gym.register_envs(ale_py)` does: the env
# processes are fresh interpreters that never ran this line.
gym.register(id="RollwayTest/Counted-v0", entry_point="hosted_envs:make_cartpole", max_episode_steps=50)
with rollway.Rollout(lambda: gym.make("RollwayTest/Counted-v0"), "random", num_envs=2, steps_per_fragment=60, host=sys.argv[1]) as r:
    f = r.collect()
    print("lengths", sorted(set(f.finished["length"].tolist())))
s = rollway.run(env=lambda: gym.make("RollwayTest/Counted-v0"), agent="random", episodes=4, record=False, progress=False,
                host=sys.argv[1])
print("episodes", s.episodes)
"""


@pytest.mark.parametrize("host", ["process", "inline"])
def test_issue55_an_env_registered_in_the_learners_process_is_made_in_env_processes(host):
    p = subprocess.run([sys.executable, "-c", REGISTERED_HERE, host], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "episodes 4" in p.stdout, p.stdout
    lengths = eval(p.stdout.split("lengths ")[1].splitlines()[0])
    assert lengths and max(lengths) <= 50, "the registration's own TimeLimit, as registered in the learner"


def test_issue67_a_discrete_action_reaches_the_env_as_gymnasiums_vector_envs_give_it():
    # The golden: what SyncVectorEnv hands each env (it iterates an int64 array).
    from hosted_envs import ActionTypes

    vec = gym.vector.SyncVectorEnv([ActionTypes] * 2)
    vec.reset(seed=0)
    golden = vec.step(np.array([1, 2]))[0]
    assert list(golden) == [ActionTypes.TYPES.index("int64")] * 2, golden
    for host in ("inline", "process"):
        with rollway.Rollout("hosted_envs:ActionTypes", "random", num_envs=2, steps_per_fragment=8, host=host, seed=0) as r:
            f = r.collect()
        assert (f.obs[1:] == golden[0]).all(), (host, f.obs)
    env = rollway.make_vec("hosted_envs:ActionTypes", 2)
    env.reset(seed=0)
    assert list(env.step(np.array([1, 2]))[0]) == list(golden)
    env.close()
