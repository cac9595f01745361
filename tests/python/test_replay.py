"""The replay buffer of a training loop as a rollway dataset: ``Rollout(out=...)`` records
every finished episode as the learner saw it (extras and policy versions as columns, read
by the real pyarrow), and a ``Loader(follow=True)`` samples it while it grows, in this
process or another — a rollout process killed with SIGKILL keeps what it committed."""

import glob
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections import defaultdict

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import rollway
from conftest import committed
from test_rollout import example, left


def policy(obs, first, state):
    """Acts on the pole's angle and returns a scalar and a shaped extra."""
    return {"actions": (obs[:, 2] > 0).astype(np.int64), "logprob": -obs[:, 0] ** 2,
            "logits": np.stack([obs[:, 1], -obs[:, 1]], axis=1)}


def steps_by_episode(frags):
    """Each episode's steps as the fragments gave them: obs, action, reward, extras, version."""
    eps = defaultdict(lambda: defaultdict(list))
    for f in frags:
        for t in range(f.steps):
            for i in range(f.envs):
                e = eps[int(f.episode[t, i])]
                for k, v in (("obs", f.obs[t, i]), ("actions", f.actions[t, i]), ("rewards", f.rewards[t, i]),
                             ("version", f.version[t, i]), ("logprob", f.extras["logprob"][t, i]),
                             ("logits", f.extras["logits"][t, i]), ("terminated", f.terminated[t, i])):
                    e[k].append(v)
    return eps


def test_every_finished_episode_is_recorded_as_the_learner_saw_it(tmp_path):
    out = tmp_path / "replay"
    frags, finished = [], set()
    with rollway.Rollout("CartPole-v1", policy, num_envs=3, steps_per_fragment=40, seed=1, out=out) as r:
        for _ in range(6):
            f = r.collect()
            frags.append(f)
            finished |= set(f.finished["episode"].tolist())
            r.publish()
    want = steps_by_episode(frags)
    ds = rollway.Dataset(out)
    assert len(ds) == len(finished) > 3
    versions = set()
    for e in ds:
        assert e.run_index in finished
        w = want[e.run_index]
        assert e.length == len(w["actions"]), "an episode is recorded whole, across fragments"
        np.testing.assert_array_equal(e.observations[:-1], np.array(w["obs"]))
        np.testing.assert_array_equal(e.actions, np.array(w["actions"]))
        np.testing.assert_array_equal(e.rewards, np.array(w["rewards"], dtype=np.float64))
        np.testing.assert_array_equal(e.terminations, np.array(w["terminated"]))
        np.testing.assert_array_equal(e.extras["logprob"], np.array(w["logprob"]))
        np.testing.assert_array_equal(e.extras["logits"], np.array(w["logits"]))
        assert e.extras["logits"].shape == (e.length, 2) and e.extras["logprob"].dtype == np.float32
        assert e.policy_version.dtype == np.uint64
        np.testing.assert_array_equal(e.policy_version, np.array(w["version"]))
        versions |= set(e.policy_version.tolist())
    assert len(versions) > 1, "episodes span published versions"
    assert ds.verify()["problems"] == []


def test_issue32_commits_land_every_commit_every_while_episodes_keep_ending(tmp_path):
    # Pushing left ends an episode every ~10 steps: the writer's queue never goes
    # quiet, and commits used to wait for a full shard (a DQN learner saw nothing).
    out = tmp_path / "replay"
    with rollway.Rollout("CartPole-v1", left, num_envs=4, steps_per_fragment=32, out=out, commit_every=0.05) as r:
        # Collect until a commit lands (while the rollout runs, before close commits the rest): the
        # deadline only bounds a failure, the slowest machine commits within it.
        deadline = time.monotonic() + 30
        while not committed(out) and time.monotonic() < deadline:
            r.collect()
        assert committed(out) > 0, "nothing committed while the rollout ran"


def test_the_replay_columns_are_plain_parquet(tmp_path):
    out = tmp_path / "replay"
    with rollway.Rollout("CartPole-v1", policy, num_envs=2, steps_per_fragment=200, seed=3, out=out) as r:
        r.collect()
    files = sorted(glob.glob(str(out / "steps" / "*.parquet")))
    table = pq.read_table(files[0])
    assert {"extras.logprob", "extras.logits", "policy_version"} <= set(table.column_names)
    assert str(table.schema.field("policy_version").type) == "uint64"
    first = rollway.Dataset(out)[0]
    rows = table.filter(pc.equal(table.column("episode_id"), first.id))
    logits = rows.column("extras.logits").to_pylist()
    # Row-aligned with the observations: T action rows then the final observation's row, empty.
    assert len(logits) == first.length + 1 and logits[-1] is None
    np.testing.assert_array_equal(np.array(logits[:-1], dtype=np.float32), first.extras["logits"])
    np.testing.assert_array_equal(np.array(rows.column("policy_version").to_pylist()[:-1], dtype=np.uint64), first.policy_version)


def test_issue69_a_replay_records_frames_as_video_with_frame_media(tmp_path):
    """frame_media="h264": the replay's image leaves go to video files, read back within the codec's
    loss of the frames the learner got; a frame media that does not exist is refused before any env
    starts, naming the known ones, and leaves nothing behind."""
    out = tmp_path / "replay"
    with rollway.Rollout("PixelMine-v0", "random", num_envs=2, steps_per_fragment=64, seed=2, out=out,
                         frame_media="h264", env_params={"max_steps": 20, "size": 64}) as r:
        frags = [r.collect() for _ in range(2)]
    assert any(p.endswith(".mp4") for p in glob.glob(str(out / "**"), recursive=True)), "frames went to video files"
    first = rollway.Dataset(out)[0]
    t, i = np.argwhere(frags[0].episode == first.id)[0]
    n = first.length  # the steps' observations (the final one is in final_obs)
    got, seen = first.observations["rgb"][:n].astype(float), frags[0].obs["rgb"][t:t + n, i].astype(float)
    mse = ((got - seen) ** 2).mean()
    assert 0 < mse and 10 * np.log10(255.0 ** 2 / mse) > 28, mse
    with pytest.raises(rollway.InputError, match="frame_media.*not a frame media"):
        rollway.Rollout("PixelMine-v0", "random", num_envs=2, out=tmp_path / "bad", frame_media="gif")
    assert not (tmp_path / "bad").exists()


def test_recording_into_an_existing_dataset_is_refused_and_changes_nothing(tmp_path):
    out = tmp_path / "replay"
    with rollway.Rollout("CartPole-v1", policy, num_envs=2, steps_per_fragment=100, out=out) as r:
        r.collect()

    def files():
        return sorted((p, os.path.getsize(p)) for p in glob.glob(str(out / "**"), recursive=True) if os.path.isfile(p))

    before = files()
    with pytest.raises(rollway.InputError, match="replay"):
        rollway.Rollout("CartPole-v1", policy, num_envs=2, steps_per_fragment=100, out=out)
    assert files() == before


def test_a_following_loader_keeps_its_capacity_staleness_and_reuse_bounds(tmp_path):
    out = tmp_path / "replay"
    with rollway.Rollout("CartPole-v1", "random", num_envs=4, steps_per_fragment=50, seed=2, out=out) as r:
        for _ in range(4):
            r.collect()
            r.publish()
    ds = rollway.Dataset(out)
    ids = sorted(e.id for e in ds)
    newest = {e.id: int(e.policy_version.min()) for e in ds}

    last = rollway.Loader(out, clip=4, stride=4, batch=8, follow=True, last_episodes=3)
    seen = set(last.next_batch()["episode_id"].tolist())
    assert seen <= set(ids[-3:])

    stale = rollway.Loader(out, clip=4, stride=4, batch=8, follow=True, max_version_lag=1)
    stale.set_version(3)
    for _ in range(5):
        b = stale.next_batch()
        assert all(newest[i] >= 2 for i in b["episode_id"].tolist())
    too_new = rollway.Loader(out, clip=4, stride=4, batch=8, follow=True, max_version_lag=1)
    too_new.set_version(100)
    assert too_new.next_batch() is None, "every episode is older than 100 - 1"

    once = rollway.Loader(out, clip=4, stride=4, batch=8, follow=True, max_reuse=1)
    windows = []
    while (b := once.next_batch()) is not None:
        windows += list(zip(b["episode_id"].tolist(), b["step"].tolist()))
    every = rollway.Loader(out, clip=4, stride=4, batch=8).num_windows
    assert len(windows) == len(set(windows)) == every > 0, "each window once, then nothing"

    with pytest.raises(rollway.InputError, match="max_reuse"):
        rollway.Loader(out, follow=True, replacement=True)


def test_batches_carry_the_extras_and_policy_versions(tmp_path):
    out = tmp_path / "replay"
    with rollway.Rollout("CartPole-v1", policy, num_envs=2, steps_per_fragment=64, seed=5, out=out) as r:
        for _ in range(3):
            r.collect()
            r.publish()
    eps = {e.id: e for e in rollway.Dataset(out)}
    b = rollway.Loader(out, clip=4, stride=2, batch=16, follow=True).next_batch()
    assert b["extras"]["logits"].shape == (16, 4, 2) and b["extras"]["logprob"].dtype == np.float32
    assert b["policy_version"].shape == (16, 4) and b["policy_version"].dtype == np.uint64
    for i, (eid, s) in enumerate(zip(b["episode_id"].tolist(), b["step"].tolist())):
        e = eps[eid]
        np.testing.assert_array_equal(b["extras"]["logprob"][i], e.extras["logprob"][s:s + 4])
        np.testing.assert_array_equal(b["extras"]["logits"][i], e.extras["logits"][s:s + 4])
        np.testing.assert_array_equal(b["policy_version"][i], e.policy_version[s:s + 4])
    only = rollway.Loader(out, clip=4, batch=4, fields=["policy_version"]).next_batch()
    assert set(only) == {"policy_version", "index"}
    # select={"min_policy_version": v}: episodes every action of which a policy at least v chose (as the CLI's flag).
    newer = [e.id for e in eps.values() if int(e.policy_version.min()) >= 1]
    assert 0 < len(newer) < len(eps), "the replay holds episodes of version 0 and later ones"
    seen = set()
    for b in rollway.Loader(out, clip=0, batch=2, epochs=1, select={"min_policy_version": 1}, pad=True):
        seen.update(b["episode_id"].tolist())
    assert seen == set(newer)
    with pytest.raises(rollway.InputError, match="expected label.*min_policy_version"):
        rollway.Loader(out, select={"min_policy_verison": 1})


ROLLOUT_PROCESS = textwrap.dedent("""
    import sys, numpy as np, rollway
    def policy(obs, first, state):
        return {"actions": (obs[:, 2] > 0).astype(np.int64), "value": obs[:, 0]}
    with rollway.Rollout("CartPole-v1", policy, num_envs=4, steps_per_fragment=32, out=sys.argv[1], commit_every=0.05) as r:
        while True:
            r.collect()
            r.publish()
""")


def test_a_learner_follows_a_rollout_process_that_is_then_killed(tmp_path):
    out = tmp_path / "replay"
    child = subprocess.Popen([sys.executable, "-c", ROLLOUT_PROCESS, str(out)])
    try:
        deadline = time.monotonic() + 60
        while not (out / "rollway.json").exists():
            assert child.poll() is None and time.monotonic() < deadline, "the rollout process did not start its dataset"
            time.sleep(0.05)
        time.sleep(0.2)
        loader = rollway.Loader(out, clip=8, stride=8, batch=16, follow=True, max_reuse=1, round_windows=64)
        rounds_max = []
        while not (len(rounds_max) > 3 and rounds_max[-1] > rounds_max[0]):
            assert time.monotonic() < deadline, "the learner never saw the buffer grow"
            b = loader.next_batch()
            if b is None:
                time.sleep(0.02)
                continue
            rounds_max.append(int(b["episode_id"].max()))
        assert max(rounds_max) > rounds_max[0], "episodes committed while the learner trained were sampled"
        seen = max(rounds_max)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert child.returncode == -signal.SIGKILL
    # Every committed episode survives the kill, readable, including all the learner saw.
    ds = rollway.Dataset(out)
    assert seen in {e.id for e in ds}
    for e in ds:
        assert e.length == len(e.policy_version) == len(e.extras["value"])


def test_dqn_learns_cartpole_sampling_the_follow_mode_replay(tmp_path):
    r = example("dqn_cartpole").train(str(tmp_path / "replay"), total_steps=50_000, seed=1, log=False)
    # A random policy averages ~22; DQN on the recorded replay climbs well past it.
    assert r["best_mean_return"] > 100, r
    assert r["updates"] > 3_000 and r["recorded_episodes"] == len(rollway.Dataset(tmp_path / "replay"))


INTERRUPTED_RECORDING = textwrap.dedent("""
    import sys, time, rollway
    finished = 0
    try:
        with rollway.Rollout("CartPole-v1", "random", num_envs=4, steps_per_fragment=64, out=sys.argv[1], commit_every=600) as r:
            while True:
                finished += len(r.collect().finished["episode"])
                print(finished, flush=True)
                time.sleep(0.01)
    except KeyboardInterrupt:
        print("interrupted", finished, flush=True)
""")


def test_ctrl_c_keeps_every_finished_episode(tmp_path):
    # Nothing is old enough to commit by age (600 s): leaving the `with` on Ctrl-C commits them.
    out = tmp_path / "replay"
    child = subprocess.Popen([sys.executable, "-c", INTERRUPTED_RECORDING, str(out)], stdout=subprocess.PIPE, text=True)
    for line in child.stdout:
        if int(line) > 20:
            break
    child.send_signal(signal.SIGINT)
    rest, _ = child.communicate(timeout=60)
    assert child.returncode == 0 and "interrupted" in rest, rest
    finished = int(rest.strip().splitlines()[-1].split()[1])
    ds = rollway.Dataset(out)
    assert len(ds) >= finished > 20
    assert ds.verify()["problems"] == []
