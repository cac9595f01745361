"""Issue 34: rollway.ray.Rollout, rollout actors on Ray feeding one learner. A local
multi-node Ray cluster (loopback, started and torn down here) runs the actors; every
fragment must carry the version whose weights acted, the lag bound must hold, an actor
SIGKILLed mid-fragment must cost that fragment only, fractional GPUs must reach Ray, and
a killed driver must leave no actor behind."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from typing import Any

import numpy as np
import pytest

ray = pytest.importorskip("ray")
# A Ray cluster of three nodes starts and stops: a long test whose workers mostly wait (issue 66).
pytestmark = pytest.mark.heavy
import rollway.ray  # noqa: E402
from conftest import titled_pids  # noqa: E402

# The policy classes below reach the actors by value (rollway.ray.Rollout ships a module that is not an
# installed package, as this one is not importable on the cluster's workers).


class Weighted:
    """Acts 0 and reports, per step, the weight it acts with (what ``load`` was given last)."""

    def __init__(self, sleep=0.0):
        self.w, self.sleep = 0.0, sleep

    def __call__(self, obs, first, state):
        if self.sleep:
            time.sleep(self.sleep)
        n = len(first)
        return {"actions": np.zeros(n, np.int64), "w": np.full(n, self.w, np.float32)}

    def load(self, w):
        self.w = float(w)


class OutOfBounds:
    """A Box(-1, 1, (3,)) env whose observations after the first step are out of bounds
    (Gymnasium would warn), ending every 5 steps."""

    def __init__(self):
        import gymnasium as gym

        self.observation_space = gym.spaces.Box(-1, 1, (3,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.metadata, self.render_mode, self.spec = {}, None, None

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return np.zeros(3, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.full(3, 7.0, np.float32), 1.0, False, self.t >= 5, {}

    def close(self):
        pass


def delivered_versions(frags):
    """Per episode, the versions of its steps as the learner was given them, and how many."""
    seen = {}
    for f in frags:
        for t in range(f.steps):
            for i in range(f.envs):
                seen.setdefault(int(f.episode[t, i]), []).append(int(f.version[t, i]))
    return seen


def check_recorded_versions(out, frags):
    """Issue 48: the recorded policy_version of every step is the delivered fragment's
    version of that step (the learner's count), for every episode delivered whole."""
    seen, compared = delivered_versions(frags), []
    for e in rollway.Dataset(out):
        got = seen.get(e.run_index)
        if got is not None and len(got) == e.length:
            np.testing.assert_array_equal(e.policy_version, np.array(got, dtype=np.uint64), err_msg=f"episode {e.run_index}")
            compared.append(e.run_index)
    return compared


def actor_pids():
    return titled_pids(b"ray::_RolloutActor")


def gone_within(seconds):
    deadline = time.monotonic() + seconds
    while actor_pids() and time.monotonic() < deadline:
        time.sleep(0.2)
    return actor_pids() == []


def check_exact_versions(f, lag_bound, version):
    assert (f.extras["w"] == f.version.astype(np.float32)).all(), "every step acted with its version's weights"
    assert version - f.version.min() <= lag_bound
    assert f.obs.shape == (f.steps + 1, f.envs, 4) and f.actions.shape == (f.steps, f.envs)
    # Actor a of 2 numbers slot i's j-th episode (base + j) × 2N + a·N + i: apart from the other's.
    assert (f.episode % (2 * f.envs) // f.envs == f.actor).all(), "episode ids are unique across actors"


def test_issue34_fragments_from_every_actor_carry_the_version_that_acted(cluster):
    with rollway.ray.Rollout("CartPole-v1", Weighted(0.001), num_actors=2, num_envs=4, steps_per_fragment=16,
                             max_policy_lag=1, stale="drop") as r:
        # 16 fragments at least, and on until both actors have delivered (actor 1 may start well after
        # actor 0 on a loaded machine).
        seen, n, deadline = set(), 0, time.monotonic() + 120
        while (n < 16 or len(seen) < 2) and time.monotonic() < deadline:
            f = r.collect()
            check_exact_versions(f, 1, r.version)
            seen.add(f.actor)
            r.publish(r.version + 1.0)
            n += 1
        s = r.summary()
    assert seen == {0, 1}, "both actors delivered"
    assert s["fragments"] == n and set(s["lag_histogram"]) <= {0, 1} and sum(s["lag_histogram"].values()) == n
    assert s["dropped_steps"] == s["dropped_fragments"] * 16 * 4
    assert gone_within(30), "close ends the actors"


def test_issue34_a_weight_update_reaches_every_actor_within_one_fragment(cluster):
    # Lag 0: collect(2) is a synchronous round over both actors, nothing runs while the learner trains.
    with rollway.ray.Rollout("CartPole-v1", Weighted(), num_actors=2, num_envs=3, steps_per_fragment=8, max_policy_lag=0) as r:
        for v in range(4):
            frags = r.collect(2)
            assert sorted(f.actor for f in frags) == [0, 1]
            for f in frags:
                assert (f.version == v).all() and (f.extras["w"] == v).all()
            r.publish(float(v + 1))
        assert r.summary()["dropped_fragments"] == 0


def test_issue34_stale_fragments_are_dropped_and_counted_never_delivered(cluster):
    # Lag 0 with every actor kept busy: what was started before a publish arrives stale.
    with rollway.ray.Rollout("CartPole-v1", Weighted(0.002), num_actors=2, num_envs=2, steps_per_fragment=8, max_policy_lag=0,
                             stale="drop") as r:
        for _ in range(6):
            f = r.collect()
            check_exact_versions(f, 0, r.version)
            assert (f.version == r.version).all()
            r.publish(r.version + 1.0)
        s = r.summary()
    assert s["dropped_fragments"] > 0 and s["dropped_steps"] == s["dropped_fragments"] * 16
    assert s["lag_histogram"] == {0: 6}


def is_restarted(f: Any, actors: int = 2) -> bool:
    """Whether fragment ``f`` comes from a restarted actor: an actor's episode ids are
    ``(base + j) × actors·N + a·N + i`` (rollway.ray's _RolloutActor), base 1 << 32 once restarted."""
    return bool(f.episode.min() >= (1 << 32) * actors * f.envs)


@pytest.mark.parametrize("how", ["sigkill", "ray.kill"])
def test_issue34_an_actor_killed_mid_fragment_is_replaced_and_the_learner_goes_on(cluster, tmp_path, how):
    out = tmp_path / "replay"
    with rollway.ray.Rollout("CartPole-v1", Weighted(0.01), num_actors=2, num_envs=2, steps_per_fragment=40, max_policy_lag=2,
                             stale="drop", max_restarts=2, out=out, commit_every=0.05) as r:
        r.collect()
        deadline = time.monotonic() + 60  # both actors' processes titled (actor 1 may start later)
        while len(actor_pids()) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        victims = actor_pids()
        assert len(victims) == 2
        if how == "sigkill":
            os.kill(victims[0], signal.SIGKILL)
        else:
            ray.kill(r._actors[0], no_restart=False)  # as an operator would, Ray may restart it
        after = []
        # At least 10 fragments, and on until the restarted actor has delivered: a restart on a slow machine
        # (a new Python importing Ray) can take longer than its peer's 10 fragments (issue 46). Its episode ids
        # tell it (base 1 << 32 after a restart): ray.kill is asynchronous, so actor 0's old self may still
        # deliver a fragment it had under way, which its index alone would count.
        deadline = time.monotonic() + 120
        while len(after) < 10 or (not any(map(is_restarted, after)) and time.monotonic() < deadline):
            f = r.collect()
            check_exact_versions(f, 2, r.version)
            after.append(f)
            r.publish(r.version + 1.0)
        s = r.summary()
    assert s["actor_failures"] == 1 and s["lost_fragments"] == 1
    assert {f.actor for f in after} == {0, 1}, "the restarted actor delivers again"
    assert any(map(is_restarted, after)), "a restarted actor's episodes get new ids"
    ids = [e["run_index"] for e in rollway.Dataset(out).episodes]
    assert len(ids) == len(set(ids)) and any(i >= (1 << 32) * 4 for i in ids), "recorded once each, the restart's too"
    compared = check_recorded_versions(out, after)
    assert any(i >= (1 << 32) * 4 for i in compared), "a restarted actor records the learner's versions"
    assert gone_within(30)


def test_issue34_fractional_gpus_are_asked_of_ray(cluster):
    gpu_node = [n["NodeID"] for n in ray.nodes() if n["Alive"] and n["Resources"].get("GPU")]
    with rollway.ray.Rollout("CartPole-v1", "random", num_actors=2, num_envs=2, steps_per_fragment=4, max_policy_lag=0,
                             num_cpus_per_actor=0.5, num_gpus_per_actor=0.5) as r:
        r.collect(2)
        actors = r.summary()["actors"]
        with pytest.raises(rollway.InputError, match="load"):
            r.publish({"w": 1.0})  # a built-in agent has no weights to load
    for a in actors.values():
        assert a["resources"].get("GPU") == 0.5 and a["node"] in gpu_node, a


def test_issue34_a_killed_driver_leaves_no_actor_running(cluster, tmp_path):
    script = textwrap.dedent(f"""
        import os, signal, ray, rollway.ray
        ray.init(address={cluster.address!r}, logging_level="ERROR", log_to_driver=False)
        r = rollway.ray.Rollout("CartPole-v1", "random", num_actors=2, num_envs=2, steps_per_fragment=4, max_policy_lag=1)
        r.collect()
        print("collecting", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert p.returncode == -signal.SIGKILL and "collecting" in p.stdout, p.stderr[-2000:]
    assert gone_within(60), "the actors of a dead driver end with it"


def test_issue34_every_actor_records_into_one_dataset_that_a_following_loader_reads(cluster, tmp_path):
    out = tmp_path / "replay"
    with rollway.ray.Rollout("CartPole-v1", Weighted(), num_actors=2, num_envs=3, steps_per_fragment=50, max_policy_lag=1,
                             out=out, commit_every=0.05) as r:
        replay = rollway.Loader(out, clip=4, batch=8, follow=True)
        batch, frags = None, []
        # Commits land on their own clock: collect until the loader has seen one (a fast machine
        # runs many fragments first), up to a deadline a slow one meets.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            frags.append(r.collect())
            r.publish(r.version + 1.0)
            batch = batch if batch is not None else replay.next_batch()
            if batch is not None and len(frags) >= 6:
                break
        assert batch is not None, "the learner's loader saw the actors' commits while they ran"
    finished = {int(e) for f in frags for e in f.finished["episode"]}
    eps = rollway.Dataset(out).episodes
    ids = [e["run_index"] for e in eps]
    assert len(ids) == len(set(ids)), "no episode recorded twice"
    assert finished <= set(ids), "every episode the learner saw end was recorded (the actors commit at close)"
    assert {i % 6 // 3 for i in ids} == {0, 1}, "both actors recorded (actor a's slots are a*3 .. a*3+2 of 6)"
    ds = rollway.Dataset(out)
    versions = {int(v) for k in range(len(ds)) for v in ds[k].policy_version}
    assert len(versions) > 1, "the acting versions are recorded"
    assert len(check_recorded_versions(out, frags)) >= 4, "the recorded versions are the learner's"
    for f in frags:
        assert len(f.final_info) == len(f.finished["env"]), "final infos travel with the fragment"
        for k in range(len(f.finished["env"])):
            t, i = int(f.finished["step"][k]), int(f.finished["env"][k])
            assert f.final_obs.shape == (len(f.finished["env"]), 4) and f.episode[t, i] == f.finished["episode"][k]
    stored = ds.metadata["runs"][0]["summary"]
    assert stored["config"]["num_actors"] == 2 and stored["config"]["max_policy_lag"] == 1, "the run says how it was made"
    assert set(stored["actors"]) == {"0", "1"} and stored["fragments"] >= len(frags)


def test_issue34_bad_settings_are_input_errors(cluster):
    for kwargs, match in ((dict(num_actors=0), "num_actors"), (dict(stale="never"), "stale"),
                          (dict(max_policy_lag=-1), "max_policy_lag"), (dict(num_workers=2), "num_actors"),
                          (dict(episode_ids=(0, 0, 8)), "episode_ids"),
                          (dict(out="gs://bucket/replay"), r"`gs://` are not supported by this build")):
        with pytest.raises(rollway.InputError, match=match):
            rollway.ray.Rollout("CartPole-v1", "random", **kwargs)


def test_issue48_warnings_from_an_actors_envs_reach_the_learner_once(cluster):
    import warnings

    with rollway.ray.Rollout(OutOfBounds, "random", num_actors=2, num_envs=2, steps_per_fragment=6, max_policy_lag=0) as r:
        with pytest.warns(rollway.RollwayWarning, match="is above its bound 1"):
            r.collect(2)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            r.collect(2)


class Shipment:
    """Weights that note each time a process unpickles them, a line in ``log``."""

    def __init__(self, value, log):
        self.value, self.log = value, str(log)

    def __setstate__(self, state):
        self.__dict__.update(state)
        with open(self.log, "a") as f:
            f.write(f"{self.value}\n")


class Loads(Weighted):
    def load(self, w):
        self.w = float(w.value)


def test_issue48_weights_go_to_each_actor_once_per_version(cluster, tmp_path):
    log = tmp_path / "arrivals"
    with rollway.ray.Rollout("CartPole-v1", Loads(), num_actors=2, num_envs=2, steps_per_fragment=4, max_policy_lag=0) as r:
        for v in range(1, 4):
            r.publish(Shipment(float(v), log))
            for _ in range(3):  # the same version asked of each actor three times
                for f in r.collect(2):
                    assert (f.version == v).all() and (f.extras["w"] == v).all()
    arrivals = log.read_text().split()
    assert sorted(arrivals) == ["1.0", "1.0", "2.0", "2.0", "3.0", "3.0"], "each actor gets each version's weights once"


def test_issue56_a_torch_policy_acts_in_every_actor_and_takes_the_published_state_dict(cluster):
    torch = pytest.importorskip("torch")
    import rollway.torch as rt

    class Biased(torch.nn.Module):
        """Acts 0 and reports its bias, so each step says which weights acted."""

        def __init__(self):
            super().__init__()
            self.bias = torch.nn.Parameter(torch.zeros(1))

        def act(self, obs, first, state):
            return {"actions": torch.zeros(len(first), dtype=torch.int64), "w": self.bias.expand(len(first))}

    learner = Biased()
    with rollway.ray.Rollout("CartPole-v1", rt.Policy(Biased().act, "cpu"), num_actors=2, num_envs=2, steps_per_fragment=4,
                             max_policy_lag=0) as r:
        for v in range(1, 3):
            with torch.no_grad():
                learner.bias.fill_(float(v))
            r.publish(learner.state_dict())
            for f in r.collect(2):
                assert (f.version == v).all() and (f.extras["w"] == v).all()
                t = f.to("cpu")  # an actor's arrays are read-only views of Ray's store: copied, not shared
                assert isinstance(t.obs, torch.Tensor) and torch.equal(t.extras["w"], torch.full((4, 2), float(v)))
                assert (t.actor, t.node) == (f.actor, f.node)


@pytest.mark.parametrize("env,params,needs", [("gymnax:CartPole-v1", {"max_steps_in_episode": 20}, "gymnax"),
                                              ("pz:mpe2.simple_spread_v3", {"max_cycles": 10}, "mpe2")])
def test_issue68_69_a_batched_or_multi_agent_env_rolls_out_on_ray_actors_with_versions(cluster, env, params, needs):
    """A JAX env (each actor's envs one batch) and a PettingZoo env (agents as rows) on Ray rollout actors:
    fragments from both actors, episodes ending inside them, and the version whose weights acted."""
    pytest.importorskip(needs)
    with rollway.ray.Rollout(env, "random", num_actors=2, num_envs=4, steps_per_fragment=24, env_params=params) as r:
        seen, ended, deadline = set(), 0, time.monotonic() + 180
        while len(seen) < 2 and time.monotonic() < deadline:
            f = r.collect()
            seen.add(f.actor)
            ended += int(f.dones.sum())
            assert f.dones.shape == (24, 4) and (f.version <= r.version).all()
            r.publish()
    assert seen == {0, 1} and ended > 0
    # Gone in 0.2 s on an idle machine; past 30 s once with the suite's four processes on two cores.
    assert gone_within(60), "close ends the actors"
