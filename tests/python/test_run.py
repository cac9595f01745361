"""rollway.run, envs, agents and the exceptions: the CLI's semantics from Python."""

import json
import os
import subprocess
import sys
import time

import pytest

import rollway
from conftest import interrupt_once_committed, rollway_cli


def test_envs_and_agents_are_the_registries():
    ids = [e["id"] for e in rollway.envs()]
    assert "CartPole-v1" in ids and "PixelMine-v0" in ids
    cp = next(e for e in rollway.envs() if e["id"] == "CartPole-v1")
    assert json.loads(cp["action_space"].replace("Infinity", "1e999"))["type"] == "Discrete"
    assert cp["max_episode_steps"] == 500
    assert "random" in [a["name"] for a in rollway.agents()]


def test_run_summary_matches_the_cli(tmp_path):
    s = rollway.run(env="CartPole-v1", agent="random", episodes=30, seed=7, workers=2, envs_per_worker=4, progress=False)
    assert s.episodes == 30 and s.given_up == 0 and s.complete
    assert s.return_["mean"] == s.to_dict()["return"]["mean"]
    assert s.out is None  # not the default job: nothing recorded unless out= is given
    summary_json = tmp_path / "s.json"
    cli = rollway_cli()
    subprocess.run([*cli, "run", "--env", "CartPole-v1", "--agent", "random", "--episodes", "30", "--seed", "7",
                    "--workers", "2", "--envs-per-worker", "4", "--quiet", "--summary-json", str(summary_json)],
                   check=True, capture_output=True)
    theirs = json.loads(summary_json.read_text())
    ours = s.to_dict()
    for key in ("episodes", "steps", "terminated", "truncated", "return", "length"):
        assert ours[key] == theirs[key], key


def test_unset_envs_per_worker_are_measured_and_reported():
    s = rollway.run(env="CartPole-v1", agent="random", steps=20_000_000, record=False, progress=False)
    probes = s.calibration["probes"]
    assert probes and probes[0]["envs_per_worker"] == 8 and all(p["steps_per_s"] > 0 for p in probes)
    assert s.envs_per_worker == s.calibration["envs_per_worker"] and s.mode == s.calibration["mode"]
    # Sizes are measured async; sync (tried once, at the chosen size) only when it measured faster.
    sync = [p for p in probes if p["mode"] == "sync"]
    assert len(sync) <= 1 and all(p["envs_per_worker"] == s.envs_per_worker for p in sync)
    assert s.mode == "async" or (sync and sync[0]["score"] > 1.05 * max(p["score"] for p in probes if p["mode"] == "async"))
    given = rollway.run(env="CartPole-v1", agent="random", steps=20_000, envs_per_worker=4, record=False, progress=False)
    assert given.calibration is None and given.envs_per_worker == 4


def test_run_records_and_resumes(tmp_path):
    out = tmp_path / "ds"
    s = rollway.run(env="CartPole-v1", agent="random", episodes=20, out=out, progress=False, max_buffer_episodes=5)
    assert s.written["episodes"] == 20 and s.out == os.fspath(out)
    s2 = rollway.run(resume=out, episodes=35, progress=False)
    assert s2.resumed["next_index"] == 20 and s2.written["episodes"] == 15
    assert len(rollway.Dataset(out)) == 35


def test_run_takes_every_config_key(tmp_path):
    s = rollway.run(env="Pendulum-v1", agent="random", steps=2000, mode="async", batch=(2, 8), max_wait=0.001,
                    max_episode_steps=50, env_params={"g": 9.81}, filters=["kind=length,min=50,label=full"],
                    record_infos=True, out=tmp_path / "p", progress=False)
    assert s.steps >= 2000 and s.labels["full"] == s.episodes
    stored = rollway.Dataset(tmp_path / "p").metadata["runs"][0]["config"]
    assert stored["mode"] == "async" and stored["batch"] == "2:8" and stored["max_wait"] == "1000us"
    assert stored["env_params"] == {"g": "9.81"} and stored["record_infos"] is True


@pytest.mark.parametrize("kwargs, needle", [
    (dict(env="Nope-v0"), "unknown env"),
    (dict(env="CartPole-v1", workers=0), "workers"),
    (dict(env="CartPole-v1", bogus=1), "unknown field `bogus`"),
    (dict(env="CartPole-v1", batch=(4, 2)), "min 4 > max 2"),
    (dict(env="CartPole-v1", filters=["kind=nonsense"]), "nonsense"),
])
def test_bad_input_is_an_input_error(kwargs, needle):
    with pytest.raises(rollway.InputError) as e:
        rollway.run(progress=False, **kwargs)
    assert isinstance(e.value, ValueError) and isinstance(e.value, rollway.RollwayError)
    assert needle in str(e.value)


def test_issue58_a_gymnasium_id_without_its_prefix_is_told_how_to_name_it():
    with pytest.raises(rollway.InputError, match="a Gymnasium env is named `gym:LunarLander-v3`"):
        rollway.run(env="LunarLander-v3", agent="random", episodes=1, progress=False)


def test_issue58_an_env_instance_is_told_to_be_a_factory_or_an_id():
    import gymnasium as gym

    env = gym.make("CartPole-v1")
    for call in (lambda: rollway.run(env=env, agent="random", episodes=1, progress=False),
                 lambda: rollway.Rollout(env, "random", num_envs=2, steps_per_fragment=4)):
        with pytest.raises(rollway.InputError, match=r"env instance \(TimeLimit\).*lambda: gym.make.*gym:ID"):
            call()


def test_out_that_holds_a_dataset_is_refused_and_kept(cartpole):
    before = sorted(os.listdir(cartpole))
    with pytest.raises(rollway.InputError, match="already holds a dataset") as e:
        rollway.run(env="CartPole-v1", agent="random", episodes=2, out=cartpole, progress=False)
    assert sorted(os.listdir(cartpole)) == before
    # Issue 58: in the caller's words, run()'s keywords, not the command line's flags.
    assert "resume=" in str(e.value) and "append=True" in str(e.value) and "--" not in str(e.value), str(e.value)


def test_resume_refuses_changed_settings_naming_them_as_python_does(cartpole):
    with pytest.raises(rollway.InputError, match="these differ from it: seed: stored 3, given 9") as e:
        rollway.run(resume=cartpole, seed=9)
    assert "beside resume=, episodes, steps" in str(e.value) and "--" not in str(e.value), str(e.value)
    with pytest.raises(rollway.InputError, match="episodes=1: the resumed run's target is episodes=40; with resume="):
        rollway.run(resume=cartpole, episodes=1)


def test_issue70_resume_where_a_kill_left_nothing_starts_the_run_afresh(tmp_path):
    # A run killed before it set up its dataset leaves nothing: its own call with resume= added runs it.
    s = rollway.run(env="CartPole-v1", agent="random", episodes=12, seed=2, resume=tmp_path / "gone", progress=False)
    assert s.episodes == 12 and len(rollway.Dataset(tmp_path / "gone")) == 12
    # resume= alone cannot know the run: it says so, in Python's words, and makes nothing.
    with pytest.raises(rollway.InputError, match=r"nothing was recorded there to resume.*own command again") as e:
        rollway.run(resume=tmp_path / "bare", progress=False)
    assert "resume=" in str(e.value) and "--resume" not in str(e.value), str(e.value)
    assert not (tmp_path / "bare").exists()


def test_missing_dataset_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError) as e:
        rollway.Dataset(tmp_path / "nothing")
    assert isinstance(e.value, rollway.DatasetNotFoundError)
    assert "nothing" in str(e.value)


# Ctrl-C from the test once episodes are committed (conftest.interrupt_once_committed), as a terminal
# would send it: far from the run's end on any machine (3000 short episodes).
INTERRUPT = r"""
import sys, rollway
try:
    rollway.run(episodes=3000, env_params={"size": 32, "max_steps": 20}, out=sys.argv[1], max_buffer_episodes=10, progress=False)
except KeyboardInterrupt as e:
    print("interrupted:", e)
    sys.exit(0)
sys.exit("not interrupted")
"""


def test_ctrl_c_stops_keeps_committed_and_resumes(tmp_path):
    out = tmp_path / "ds"
    p = interrupt_once_committed([sys.executable, "-c", INTERRUPT, str(out)], out, at_least=10)
    assert p.returncode == 0, p.stderr
    assert "interrupted" in p.stdout
    ds = rollway.Dataset(out)
    kept = len(ds)
    assert kept > 0
    assert rollway.Dataset(out).verify()["problems"] == []
    assert kept < 3000, "the run ended before the interrupt"
    s = rollway.run(resume=out, progress=False)
    assert s.resumed["next_index"] == kept
    assert [e.id for e in rollway.Dataset(out)] == list(range(3000))


def test_long_calls_release_the_gil(tmp_path):
    import threading
    import time

    ticks = []
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.01)

    t = threading.Thread(target=tick)
    t.start()
    # A run long enough to tell on any machine: 4× the episodes until it lasts half a second.
    episodes = 8
    while True:
        start = time.perf_counter()
        rollway.run(env="PixelMine-v0", agent="miner", episodes=episodes, env_params={"size": 32}, progress=False,
                    record=False)
        took = time.perf_counter() - start
        if took >= 0.5 or episodes >= 8 * 4**5:
            break
        episodes *= 4
    stop.set()
    t.join()
    during = [x for x in ticks if start < x < start + took]
    assert took >= 0.5, "the run is too short to tell"
    # A thread that cannot get the GIL does not tick at all during the run.
    assert len(during) >= took / 0.01 / 4


GATED_RUN = """
import sys, rollway
rollway.run(env="hosted_envs:Gated", env_params={"gate": sys.argv[2], "free": 8}, agent="random", episodes=24,
            out=sys.argv[1], workers=1, envs_per_worker=1, mode="sync", host="inline", progress=False)
"""


def test_issue58_a_run_commits_what_finished_within_seconds_by_default_while_its_envs_are_busy(tmp_path):
    """Eight episodes finish, then the env holds its next reset until the test opens a gate: the
    writer has nothing more coming, and commits what it holds by the default commit_every (no
    buffer fills). Without that the run would keep them in memory until it ends: the test's
    deadline is only a bound on a broken writer."""
    from conftest import committed

    here = os.path.dirname(os.path.abspath(__file__))
    out, gate = tmp_path / "ds", tmp_path / "gate"
    p = subprocess.Popen([sys.executable, "-c", GATED_RUN, str(out), str(gate)], cwd=here,
                         env=dict(os.environ, PYTHONPATH=here), stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while committed(out) < 7 and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        # The eighth episode ends at the reset the gate holds: seven are finished.
        assert committed(out) == 7 and p.poll() is None, "the finished episodes are committed while the run is held"
    finally:
        gate.touch()
    _, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert committed(out) == 24
    with pytest.raises(rollway.InputError, match="commit_every.*positive number of seconds, got 0"):
        rollway.run(env="CartPole-v1", agent="random", episodes=2, commit_every=0, out=tmp_path / "never", progress=False)


def test_issue58_max_steps_is_max_episode_steps_now_and_warns_by_its_old_name(tmp_path):
    def lengths(path):
        ds = rollway.Dataset(path)
        return [e["length"] for e in sorted(ds.episodes, key=lambda e: e["run_index"])]

    kw = dict(env="CartPole-v1", agent="random", episodes=6, progress=False)
    rollway.run(**kw, max_episode_steps=7, out=tmp_path / "new")
    with pytest.warns(DeprecationWarning, match="max_steps is deprecated: it is max_episode_steps now"):
        rollway.run(**kw, max_steps=7, out=tmp_path / "old")
    assert lengths(tmp_path / "old") == lengths(tmp_path / "new") and max(lengths(tmp_path / "new")) == 7
    with pytest.raises(rollway.InputError, match="max_steps=7 and max_episode_steps=9"):
        rollway.run(**kw, max_steps=7, max_episode_steps=9, record=False)
    config = tmp_path / "run.toml"
    config.write_text("max_steps = 7\n")
    with pytest.warns(DeprecationWarning, match="run.toml: max_steps is deprecated"):
        rollway.run(**kw, config=config, out=tmp_path / "file")
    assert lengths(tmp_path / "file") == lengths(tmp_path / "new")


def test_record_false_with_an_out_directory_is_refused_and_writes_nothing(tmp_path):
    """``record=False`` records nothing and ``out=`` names where to record: the pair contradicts itself,
    as ``--no-record --out`` does on the command line, and is refused before anything is written."""
    with pytest.raises(rollway.InputError, match="record=False"):
        rollway.run(env="CartPole-v1", agent="random", episodes=2, out=tmp_path / "ds", record=False, progress=False)
    assert not (tmp_path / "ds").exists()
