"""Issue 48: runs get the rollout's host choice. A run's Python envs step in env
processes or in the caller's process (``host=``); ``"auto"`` measures both on a run
long enough to pay for it and takes the faster. The episodes are the same either way."""

import os
import sys

import pytest

import rollway
from conftest import interrupt_once_committed
from test_hosted import arrays, importable_test_envs, same  # noqa: F401  (autouse: no env process outlives its run)


def test_issue48_inline_and_process_runs_record_the_same_episodes(tmp_path):
    got = {}
    for host in ("inline", "process"):
        out = tmp_path / host
        s = rollway.run(env="gym:CartPole-v1", agent="random", episodes=40, workers=2, envs_per_worker=3, seed=4, out=out,
                        progress=False, host=host)
        h = s.calibration["host"]
        assert (h["host"], h["why"]) == (host, "asked")
        # Inline, one worker thread steps all the run's envs (more would only take turns at the GIL).
        assert s.calibration["envs_per_worker"] == (6 if host == "inline" else 3)
        got[host] = arrays(out)
    same(got["inline"], got["process"])


def test_issue48_auto_measures_both_hosts_on_a_long_run_and_takes_the_faster():
    s = rollway.run(env="gym:CartPole-v1", agent="random", steps=100_000, workers=2, envs_per_worker=4, record=False, progress=False)
    h = s.calibration["host"]
    assert h["why"] == "measured", h
    inline, process = h["inline_steps_per_s"], h["process_steps_per_s"]
    assert inline > 0 and process > 0
    assert h["host"] == ("inline" if inline > process else "process")
    assert s.steps >= 100_000 and s.calibration["seconds"] > 0


def test_issue48_auto_keeps_processes_for_short_runs_and_for_step_timeout():
    s = rollway.run(env="gym:CartPole-v1", agent="random", episodes=20, record=False, progress=False)
    assert s.calibration["host"] == {"host": "process", "why": "a short run: not measured", "inline_steps_per_s": None,
                                     "process_steps_per_s": None}
    s = rollway.run(env="gym:CartPole-v1", agent="random", episodes=2_000, step_timeout=5, record=False, progress=False)
    assert s.calibration["host"]["host"] == "process" and "step_timeout" in s.calibration["host"]["why"]


def test_issue48_built_in_envs_have_no_host_and_a_bad_host_is_an_input_error():
    s = rollway.run(env="CartPole-v1", agent="random", episodes=20, envs_per_worker=4, record=False, progress=False, host="inline")
    assert s.calibration is None
    with pytest.raises(rollway.InputError, match='host must be "auto", "inline" or "process"'):
        rollway.run(env="gym:CartPole-v1", agent="random", episodes=2, record=False, progress=False, host="gpu")


# Interrupted by the test once episodes are committed (conftest.interrupt_once_committed).
INTERRUPT_INLINE = r"""
import sys, time, gymnasium as gym, rollway
class Slow(gym.Wrapper):
    def step(self, action):
        time.sleep(0.002)  # the signal lands here, in the env's code on this thread
        return self.env.step(action)
try:
    rollway.run(env=lambda: Slow(gym.make("CartPole-v1")), agent="random", episodes=10**6, out=sys.argv[1], progress=False,
                host="inline", workers=1, envs_per_worker=4, max_buffer_episodes=4)
except KeyboardInterrupt:
    print("interrupted")
    sys.exit(0)
sys.exit("not interrupted")
"""


def test_issue48_ctrl_c_landing_in_an_inline_env_stops_the_run_and_it_resumes(tmp_path):
    out = tmp_path / "ds"
    p = interrupt_once_committed([sys.executable, "-c", INTERRUPT_INLINE, str(out)], out)
    assert p.returncode == 0 and "interrupted" in p.stdout, p.stderr
    ds = rollway.Dataset(out)
    assert len(ds) > 0 and ds.verify()["problems"] == []


def _fragments(env, host, n, **kw):
    with rollway.Rollout(env, "random", num_envs=n, steps_per_fragment=16, seed=5, host=host, **kw) as r:
        return r.host_choice, [r.collect() for _ in range(3)]


def test_issue67_rollout_auto_weighs_a_step_cheap_envs_stay_inline_costly_ones_go_to_a_process_per_core():
    """A cheap env (Gymnasium's CartPole, ~9 µs a step) stays in the rollout's thread; one whose step
    burns 2 ms goes to env processes, one per core, and gives the fragments it gives inline."""
    cores = len(os.sched_getaffinity(0))
    choice, _ = _fragments("gym:CartPole-v1", "auto", 8)
    assert choice.startswith("inline: a step costs") and "µs" in choice, choice
    choice, auto = _fragments("hosted_envs:Costly", "auto", 4)
    want = "process" if cores > 1 else "inline"
    assert choice.startswith(f"{want}: a step costs") and " ms;" in choice, choice
    _, inline = _fragments("hosted_envs:Costly", "inline", 4)
    for a, b in zip(auto, inline):
        assert (a.obs == b.obs).all() and (a.actions == b.actions).all() and (a.rewards == b.rewards).all()
    # Nothing is weighed where the host or the workers are given.
    assert _fragments("hosted_envs:Costly", "auto", 4, workers=1)[0] is None
    assert _fragments("hosted_envs:Costly", "inline", 4)[0] is None
