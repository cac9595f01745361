"""Many agents (issue 68): PettingZoo Parallel envs as rollway envs whose rows are their agents.

The golden data is PettingZoo's own loop: each recorded episode is played again in the env itself,
from its recorded seed with its recorded actions, and every agent's observation, reward and flags, the
live agents and the env's own outcome must equal what rollway recorded, step by step.
"""

from __future__ import annotations

import importlib
import signal
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest

import rollway
from conftest import committed, peer
from rollway.multiagent import AgentRows

peer("pettingzoo")
peer("mpe2")
peer("magent2")

# Each env small enough for a test: its own time limit short, pistonball with 4 pistons (each piston's
# observation is a 457×120 RGB crop).
ENVS = {
    "simple_spread": ("mpe2.simple_spread_v3", {"max_cycles": 25}),
    "pistonball": ("pettingzoo.butterfly.pistonball_v6", {"n_pistons": 4, "max_cycles": 20}),
    "knights_archers_zombies": ("pettingzoo.butterfly.knights_archers_zombies_v11", {"max_cycles": 120, "spawn_delay": 5}),
    # Two armies of 12 on a 20×20 map: agents die as they fight.
    "magent2_battle": ("magent2.environments.battle_v4", {"map_size": 20, "max_cycles": 30}),
    # The default 45×45 map: hundreds of agents (162) in one env, short episodes.
    "magent2_battle_162": ("magent2.environments.battle_v4", {"max_cycles": 8}),
}


def pz_env(module: str, params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PettingZoo 1.27 asks for its registry over module imports
        return importlib.import_module(module).parallel_env(**params)


def replay_in_pettingzoo(module: str, params, episode):
    """Plays ``episode`` again in PettingZoo's own loop: its seed, its actions for the live agents.
    Returns what that loop saw, laid out as rollway records it."""
    env = pz_env(module, params)
    agents = env.possible_agents
    obs, info = env.reset(seed=episode.seed)
    zero = np.zeros(env.observation_space(agents[0]).shape, env.observation_space(agents[0]).dtype)

    def row(obs, rewards, terms, truncs):
        return {"obs": np.stack([obs.get(a, zero) for a in agents]),
                "agents/active": np.array([a in env.agents for a in agents], np.int8),
                "agents/reward": np.array([rewards.get(a, 0.0) for a in agents], np.float64),
                "agents/terminated": np.array([terms.get(a, False) for a in agents], np.int8),
                "agents/truncated": np.array([truncs.get(a, False) for a in agents], np.int8)}

    rows, env_rewards, ended, infos = [row(obs, {}, {}, {})], [], [], [AgentRows._info(info)]
    for action in episode.actions:
        live = list(env.agents)
        obs, rewards, terms, truncs, info = env.step({a: action[i] for i, a in enumerate(agents) if a in live})
        rows.append(row(obs, rewards, terms, truncs))
        infos.append(AgentRows._info(info))
        env_rewards.append(sum(float(r) for r in rewards.values()))
        ended.append((not env.agents and not any(truncs.values()), not env.agents and any(truncs.values())))
    env.close()
    return rows, np.array(env_rewards), ended, infos


@pytest.mark.parametrize("host", ["process", "inline"])
@pytest.mark.parametrize("name", sorted(ENVS))
def test_issue68_recorded_episodes_equal_pettingzoos_own_loop_step_by_step(tmp_path, name, host):
    module, params = ENVS[name]
    out = tmp_path / "ds"
    s = rollway.run(env=f"pz:{module}", agent="random", env_params=params, episodes=3, seed=68, out=out, host=host,
                    record_infos=True, progress=False)
    assert s.episodes == 3
    ds = rollway.Dataset(out)
    agents = pz_env(module, params).possible_agents
    k = len(agents)
    assert ds.agents == agents and ds.observation_space["obs"].shape[0] == k and ds.action_space.shape[0] == k
    for e in ds:
        rows, env_rewards, ended, infos = replay_in_pettingzoo(module, params, e)
        assert len(rows) == e.length + 1 and e.infos == infos
        for key in rows[0]:
            np.testing.assert_array_equal(e.observations[key], np.stack([r[key] for r in rows]), err_msg=f"{name} {key}")
        np.testing.assert_array_equal(e.rewards, env_rewards)
        assert list(zip(e.terminations, e.truncations)) == ended
        assert ended[-1] != (False, False) and e.return_ == pytest.approx(env_rewards.sum())


def test_issue68_agents_that_die_leave_their_rows_inactive_and_zero():
    """Knights-Archers-Zombies: an agent killed mid-episode stays a row, inactive, its observation zeros
    once the step that ended it has passed; the env's episode runs on with the others."""
    module, params = ENVS["knights_archers_zombies"]
    # Archers and knights die when a zombie reaches them; spawn many, fast, and a long limit.
    params = dict(params, max_cycles=400, spawn_delay=2, max_zombies=20)
    env = AgentRows(pz_env(module, params))
    obs, _ = env.reset(seed=5)
    rng = np.random.default_rng(5)
    died = None
    for _ in range(400):
        obs, _, terminated, truncated, _ = env.step(rng.integers(0, 6, env.k))
        status = obs["agents"]
        gone = np.flatnonzero(status["terminated"])
        if died is None and len(gone) and not (terminated or truncated):
            died = int(gone[0])
            assert status["active"][died] == 0
        elif died is not None and not (terminated or truncated):
            assert status["active"][died] == 0 and not obs["obs"][died].any()
            break
        if terminated or truncated:
            break
    assert died is not None, "no agent died mid-episode in 400 steps"


def test_issue68_an_env_process_gets_the_agents_rows_in_parts_read_in_place():
    """The packer an env process uses hands a row back as its parts: joined, the same bytes as the
    packer's row; the stacked observations (pistonball's megabytes) a view of the array, not a copy."""
    from rollway.spaces import env_spec, packer, part_packer

    module, params = ENVS["pistonball"]
    env = AgentRows(pz_env(module, params))
    obs, _ = env.reset(seed=3)
    obs, *_ = env.step(np.zeros(env.k, np.float32).reshape(env.action_space.shape))
    space = env_spec(env)["observation_space"]
    parts = part_packer(space)(obs)
    assert b"".join(parts) == packer(space)(obs)
    assert all(isinstance(p, bytes) or (p.dtype == np.uint8 and p.ndim == 1 and p.flags.c_contiguous) for p in parts)
    stacked = [p for p in parts if not isinstance(p, bytes) and p.nbytes == obs["obs"].nbytes]
    assert len(stacked) == 1 and np.shares_memory(stacked[0], obs["obs"])


def test_issue68_an_agent_that_joins_mid_episode_takes_its_row_when_it_appears(tmp_path):
    """An agent that appears mid-episode (and one that leaves) keeps its row: inactive and zeros before
    it joins, active with its own observations, rewards and infos while live, inactive after it leaves."""
    # Defined here, not at module level: cloudpickle then sends it by value to the env processes.
    class Joining:
        """A ParallelEnv where agent "late" joins at step 3 and "early" leaves at step 5; the episode ends at 8.
        Each agent observes [its age in steps, the env's step]; rewards are 1 for "early", 2 for "late";
        "late" has an info, its age, while live."""

        possible_agents = ["early", "late"]
        metadata = {"name": "joining_v0"}

        def __init__(self):
            from gymnasium import spaces

            self._obs_space, self._act_space = spaces.Box(0, 100, (2,), np.float32), spaces.Discrete(2)
            self.agents, self.t, self.born = [], 0, {}

        def observation_space(self, agent):
            return self._obs_space

        def action_space(self, agent):
            return self._act_space

        def _obs(self):
            return {a: np.array([self.t - self.born[a], self.t], np.float32) for a in self.agents}

        def reset(self, seed=None, options=None):
            self.t, self.agents, self.born = 0, ["early"], {"early": 0}
            return self._obs(), {a: {} for a in self.agents}

        def step(self, actions):
            assert set(actions) == set(self.agents), (actions, self.agents)
            self.t += 1
            rewards = {a: (1.0 if a == "early" else 2.0) for a in self.agents}
            terms = {a: (a == "early" and self.t == 5) or self.t == 8 for a in self.agents}
            truncs = {a: False for a in self.agents}
            obs = self._obs()
            self.agents = [a for a in self.agents if not terms[a]]
            if self.t == 3:
                self.agents.append("late")
                self.born["late"] = 3
                obs["late"] = np.array([0, 3], np.float32)
            return obs, rewards, terms, truncs, {a: ({"age": self.t - self.born[a]} if a == "late" else {}) for a in self.agents}

        def close(self):
            pass

    rollway.run(env=Joining, agent="random", episodes=2, seed=1, out=tmp_path / "ds", record_infos=True, progress=False)
    ds = rollway.Dataset(tmp_path / "ds")
    assert ds.agents == ["early", "late"]
    for e in ds:
        active, reward, obs = e.observations["agents/active"], e.observations["agents/reward"], e.observations["obs"]
        assert e.length == 8
        np.testing.assert_array_equal(active[:, 0], [1, 1, 1, 1, 1, 0, 0, 0, 0])
        np.testing.assert_array_equal(active[:, 1], [0, 0, 0, 1, 1, 1, 1, 1, 0])
        assert not obs[:3, 1].any(), "no observation before the agent joins"
        np.testing.assert_array_equal(obs[3:, 1, 0], [0, 1, 2, 3, 4, 5])
        np.testing.assert_array_equal(reward[1:, 0], [1, 1, 1, 1, 1, 0, 0, 0])
        np.testing.assert_array_equal(reward[1:, 1], [0, 0, 0, 2, 2, 2, 2, 2])
        np.testing.assert_allclose(e.rewards, reward[1:].sum(1))
        # Each step's infos by agent, the agents whose info is not empty: "late" from its join to the end.
        assert e.infos == [{}] * 3 + [{"agents": {"late": {"age": age}}} for age in range(5)] + [{}]


def test_issue68_agents_with_different_spaces_are_refused_naming_them(tmp_path):
    from gymnasium import spaces

    class Mixed:
        possible_agents = ["a", "b"]
        agents = ["a", "b"]
        metadata = {"name": "mixed"}

        def observation_space(self, agent):
            return spaces.Box(0, 1, (2,) if agent == "a" else (3,))

        def action_space(self, agent):
            return spaces.Discrete(2)

    with pytest.raises(ValueError, match=r"agent 'b' has observation space Box\(0.0, 1.0, \(3,\), float32\), agent 'a'.*"
                                         r"SuperSuit's pad_observations_v0 and pad_action_space_v0"):
        AgentRows(Mixed())
    # Through a run: an input error before any env steps, the same words, nothing recorded.
    with pytest.raises(rollway.InputError, match=r"agent 'b' has observation space .*pad_observations_v0"):
        rollway.run(env=Mixed, agent="random", episodes=1, out=tmp_path / "ds", host="inline", progress=False)
    assert not (tmp_path / "ds" / "steps").exists() or not list((tmp_path / "ds" / "steps").iterdir())


def test_issue68_a_turn_based_game_is_refused_with_why():
    peer("pettingzoo.classic")
    with pytest.raises(rollway.RollwayError, match="turn-based"):
        rollway.run(env="pz:pettingzoo.classic.tictactoe_v3", agent="random", episodes=1, record=False, progress=False)


KILLED = r"""
import sys, rollway
rollway.run(env="pz:mpe2.simple_spread_v3", agent="random", episodes=int(sys.argv[2]), seed=9, out=sys.argv[1],
            max_buffer_episodes=4, progress=False, **({"resume": sys.argv[1]} if len(sys.argv) > 3 else {}))
"""


def test_issue68_a_multi_agent_run_killed_mid_recording_resumes_to_the_same_episodes(tmp_path):
    """kill -9 once episodes are committed (a moment placed by progress), then the same call with resume=:
    the dataset verifies and holds what an unkilled run records, every agent's rows included."""
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    n = 400
    subprocess.run([sys.executable, "-c", KILLED, str(whole), str(n)], check=True, timeout=300)
    p = subprocess.Popen([sys.executable, "-c", KILLED, str(killed), str(n)], stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while committed(killed) < 8 and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert p.poll() is None, "the run ended before it could be killed"
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=60)
    assert 8 <= committed(killed) < n
    subprocess.run([sys.executable, "-c", KILLED, str(killed), str(n), "resume"], check=True, timeout=300)
    a, b = rollway.Dataset(whole), rollway.Dataset(killed)
    assert b.verify()["problems"] == [] and len(a) == len(b) == n and b.agents == a.agents
    by_index = {e["run_index"]: i for i, e in enumerate(b.episodes)}
    for i, e in enumerate(a.episodes):
        x, y = a[i], b[by_index[e["run_index"]]]
        assert (x.seed, x.length) == (y.seed, y.length)
        for key in x.observations:
            np.testing.assert_array_equal(x.observations[key], y.observations[key])
        np.testing.assert_array_equal(x.actions, y.actions)


def test_issue68_a_rollouts_fragments_by_agent_keep_each_steps_rewards_across_episode_ends():
    """agent_steps(frag): every agent's reward for step t, also where the env's episode ended at t and
    obs[t + 1] is already the next reset (the step's rewards then sit in final_obs): summed over the
    agents they are the env's reward at every step; every agent is done where the episode ended."""
    from rollway.multiagent import agent_steps

    with rollway.Rollout("pz:mpe2.simple_spread_v3", "random", num_envs=2, steps_per_fragment=60, seed=3) as r:
        frag = r.collect()
    by_agent = agent_steps(frag)
    assert len(frag.finished["env"]) == 4  # episodes of 25 steps: two ends per env in 60 steps
    assert by_agent.rewards.shape == (60, 2, 3) and by_agent.obs.shape == (61, 2, 3, 18)
    np.testing.assert_allclose(by_agent.rewards.sum(-1), frag.rewards, rtol=1e-6)
    ended = frag.terminated | frag.truncated
    assert (by_agent.dones.all(-1) == ended).all() and (by_agent.truncated.all(-1) == ended).all()
    assert by_agent.active[:-1][~ended].all()
    # What each step produced: the next row, or the final observation where the episode ended there.
    nxt = by_agent.next_obs()
    t, i = frag.finished["step"], frag.finished["env"]
    np.testing.assert_array_equal(nxt[t, i], frag.final_obs["obs"])
    np.testing.assert_array_equal(nxt[~ended], frag.obs["obs"][1:][~ended])


def test_issue68_the_multi_agent_ppo_example_learns_on_simple_spread():
    """rollway.examples.ppo_multiagent (independent PPO, one network shared by the agents): over 40 updates
    the mean return per agent and episode rises from the first 10 updates' to the last 10's (about
    -26.3 to -23.9 at seed 1; a random policy stays near -26)."""
    from rollway.examples.ppo_multiagent import train

    r = train(total_steps=40 * 8 * 128, envs=8, steps=128, seed=1, log=False)
    assert r["agents"] == 3 and r["steps"] == 40 * 8 * 128
    assert r["last_return"] > r["first_return"] + 1.0, r


def test_issue68_an_agent_outside_possible_agents_fails_the_step_naming_it(tmp_path):
    """An env that returns an observation for an agent it never listed in possible_agents has no row for
    it: the step fails naming the agent and the fix (the run gives that episode up; nothing half-recorded)."""
    from gymnasium import spaces

    class Stray:
        possible_agents = ["a", "b"]
        metadata = {"name": "stray"}

        def __init__(self):
            self.agents = list(self.possible_agents)

        def observation_space(self, agent):
            return spaces.Box(0, 1, (2,))

        def action_space(self, agent):
            return spaces.Discrete(2)

        def reset(self, seed=None, options=None):
            return {"a": np.zeros(2, np.float32), "b": np.zeros(2, np.float32)}, {}

        def step(self, actions):
            obs = {"a": np.zeros(2, np.float32), "c": np.zeros(2, np.float32)}
            return obs, {"a": 0.0, "c": 1.0}, {"a": False, "c": False}, {"a": False, "c": False}, {}

    env = AgentRows(Stray())
    env.reset(seed=1)
    with pytest.raises(ValueError, match=r"agent 'c', which is not among its possible_agents \['a', 'b'\].*possible_agents"):
        env.step(np.zeros(2, np.int64))
    # Through a run that records: the run ends short naming the agent and the fix, and the dataset holds
    # no episode at all (each failed attempt was dropped whole), and verifies.
    out = tmp_path / "ds"
    with pytest.raises(rollway.IncompleteRunError, match=r"retired after \d+ restarts in a row; the last: env stray: .*"
                                                         r"agent 'c', which is not among its possible_agents"):
        rollway.run(env=Stray, agent="random", episodes=3, seed=1, out=out, host="inline", progress=False)
    ds = rollway.Dataset(out)
    assert len(ds) == 0 and ds.verify()["problems"] == []


def test_issue68_a_policy_with_too_few_agent_rows_is_an_input_error_naming_the_agents():
    def two_of_three(obs, first, state):
        return np.zeros((obs["obs"].shape[0], 2), np.int64)

    with pytest.raises(rollway.InputError, match=r"the policy returned actions of shape \(2, 2\); the batch needs \(2, 3\) \(n envs × 3 agents: 'agent_0', 'agent_1', 'agent_2'\): return an action for every possible agent"):
        with rollway.Rollout("pz:mpe2.simple_spread_v3", two_of_three, num_envs=2, steps_per_fragment=4, seed=3) as r:
            r.collect()


def test_issue68_inspect_and_the_report_show_each_agents_returns(tmp_path):
    """The index keeps each agent's return per episode (summed by the writer from agents/reward), so
    `rollway inspect` and the report show them per agent; they equal the sums over the steps."""
    import json

    from conftest import rollway_cli

    import os

    out = tmp_path / "ds"
    # Recorded by the command line, as `rollway run --env pz:MODULE` (its env processes run this Python).
    p = subprocess.run(rollway_cli() + ["run", "--env", "pz:mpe2.simple_spread_v3", "--agent", "random", "--episodes", "6",
                                        "--seed", "4", "--out", str(out), "-q"],
                       env=dict(os.environ, ROLLWAY_PYTHON=sys.executable), capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    ds = rollway.Dataset(out)
    sums = np.stack([e.observations["agents/reward"].sum(0) for e in ds])  # [episodes, K]
    p = subprocess.run(rollway_cli() + ["inspect", str(out), "--json"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    inspected = json.loads(p.stdout)
    assert inspected["agents"] == ds.agents
    np.testing.assert_allclose(inspected["agent_mean_returns"], sums.mean(0), rtol=1e-12)
    p = subprocess.run(rollway_cli() + ["inspect", str(out)], capture_output=True, text=True, timeout=120)
    assert f"agents         3, mean return per episode: agent_0 {sums.mean(0)[0]:.2f}" in p.stdout, p.stdout
    page = open(rollway.Dataset(out).report(tmp_path / "r.html")).read()
    assert "Agents: returns per agent" in page and "agent_2" in page


def test_issue68_the_loaders_windows_hold_every_agents_rows_of_one_episode(tmp_path):
    """A window is clip steps of one episode with every agent's row in it ([batch, clip, K, ...]): it
    never mixes episodes, and each agent's rows are that agent's, as the dataset holds them."""
    out = tmp_path / "ds"
    rollway.run(env="pz:mpe2.simple_spread_v3", agent="random", episodes=4, seed=2, out=out, progress=False)
    ds = rollway.Dataset(out)
    by_id = {e.id: e for e in ds}
    batch = next(iter(rollway.Loader(out, clip=8, batch=16, seed=1, epochs=1)))
    obs = batch["observations"]
    assert obs["obs"].shape == (16, 8, 3, 18) and obs["agents/reward"].shape == (16, 8, 3)
    for w in range(16):
        e, start = by_id[int(batch["episode_id"][w])], int(batch["step"][w])
        n = int(batch["mask"][w].sum())
        np.testing.assert_array_equal(obs["obs"][w, :n], e.observations["obs"][start:start + n])
        np.testing.assert_array_equal(obs["agents/reward"][w, :n], e.observations["agents/reward"][start:start + n])
        np.testing.assert_array_equal(batch["actions"][w, :n], e.actions[start:start + n])


def test_issue68_pyarrow_polars_and_duckdb_read_each_agents_columns(tmp_path):
    """The steps are plain Parquet: pyarrow reads each agent's rewards as a fixed-size list of K, and DuckDB
    and polars sum them per agent to the returns the index keeps."""
    pa_parquet = peer("pyarrow.parquet")
    duckdb = peer("duckdb")
    pl = peer("polars")
    out = tmp_path / "ds"
    rollway.run(env="pz:mpe2.simple_spread_v3", agent="random", episodes=3, seed=6, out=out, progress=False)
    table = pa_parquet.read_table(str(out / "steps"))
    rewards = table.column("observations/agents/reward")
    assert rewards.type.list_size == 3 and str(rewards.type.value_type) == "double"
    glob = str(out / "steps" / "*.parquet")
    rows = duckdb.sql(f'SELECT episode_id, sum("observations/agents/reward"[1]) AS a0 FROM read_parquet(\'{glob}\') '
                      "GROUP BY episode_id ORDER BY episode_id").fetchall()
    ds = rollway.Dataset(out)
    expected = {e.id: float(e.observations["agents/reward"][:, 0].sum()) for e in ds}
    assert [(i, pytest.approx(expected[i])) for i, _ in rows] == rows
    sums = (pl.scan_parquet(glob).group_by("episode_id").agg(pl.col("observations/agents/reward").arr.get(0).sum())
            .sort("episode_id").collect().rows())
    assert [(i, pytest.approx(v)) for i, v in rows] == sums


def test_issue68_datacollector_records_agent_rows_and_minari_loads_their_export(tmp_path):
    """DataCollector(AgentRows(env)) records a PettingZoo env as the engine does (agents named, every
    agent's rows as the env gave them); a bare ParallelEnv is refused with that fix. Its Minari export
    is one env whose observation holds every agent's rows, and the real minari loads it."""
    import json
    import os

    from conftest import rollway_cli
    from mpe2 import simple_spread_v3

    with pytest.raises(TypeError, match=r"PettingZoo ParallelEnv.*DataCollector\(rollway\.multiagent\.AgentRows\(env\), path\)"):
        rollway.DataCollector(simple_spread_v3.parallel_env(), tmp_path / "refused")
    assert not (tmp_path / "refused").exists()
    env = rollway.DataCollector(AgentRows(simple_spread_v3.parallel_env(max_cycles=10)), tmp_path / "ds")
    seen = []
    for seed in range(3):
        obs, _ = env.reset(seed=seed)
        rewards, done = [], False
        while not done:
            obs, _, term, trunc, _ = env.step(env.action_space.sample())
            rewards.append(obs["agents"]["reward"])
            done = term or trunc
        seen.append((obs["obs"], np.array(rewards)))
    env.close()
    ds = rollway.Dataset(tmp_path / "ds")
    assert ds.agents == ["agent_0", "agent_1", "agent_2"] and len(ds) == 3
    for e, (last, rewards) in zip(ds, seen):
        np.testing.assert_array_equal(e.observations["obs"][-1], last)
        np.testing.assert_array_equal(e.observations["agents/reward"][1:], rewards)
    out = tmp_path / "minari" / "pz" / "spread-v0"
    p = subprocess.run(rollway_cli() + ["export", str(tmp_path / "ds"), "--to", "minari", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    code = ("import json, minari; d = minari.load_dataset('pz/spread-v0'); "
            "print(json.dumps([e.observations['agents']['reward'].sum(0).tolist() for e in d.iterate_episodes()]))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, MINARI_DATASETS_PATH=str(tmp_path / "minari")))
    assert p.returncode == 0, p.stderr
    np.testing.assert_allclose(json.loads(p.stdout.splitlines()[-1]), [r.sum(0) for _, r in seen])


@pytest.mark.parametrize("name", ["simple_spread", "pistonball", "knights_archers_zombies", "magent2_battle"])
def test_issue68_agent_rows_pass_gymnasiums_own_env_checker(name):
    """AgentRows is the adapter rollway offers users (to step, or to record with DataCollector): a
    Gymnasium env by Gymnasium's own check_env (spaces, seeding determinism, step and reset types)."""
    from gymnasium.utils.env_checker import check_env

    from rollway.multiagent import make_pz

    module, params = ENVS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its advice on unbounded Box spaces (rewards are unbounded)
        check_env(AgentRows(make_pz(module, params)), skip_render_check=True)


def test_issue68_agent_rows_take_pettingzoos_action_dicts_and_name_a_missing_agent():
    """AgentRows (what DataCollector(AgentRows(env)) records) takes a row per possible agent or, as
    PettingZoo's own step does, a dict of the live agents' actions: both give the same episode. A dict
    missing a live agent, one naming an agent the env does not have, or the wrong number of rows, is
    refused naming the agent (or the count) and the fix; the env is not stepped."""
    module, params = ENVS["simple_spread"]
    by_rows, by_dict = AgentRows(pz_env(module, params)), AgentRows(pz_env(module, params))
    a, _ = by_rows.reset(seed=7)
    b, _ = by_dict.reset(seed=7)
    rng = np.random.default_rng(7)
    for _ in range(5):
        act = rng.integers(0, 5, by_rows.k)
        a, ra, *_ = by_rows.step(act)
        b, rb, *_ = by_dict.step({agent: act[i] for i, agent in enumerate(by_dict.possible_agents)})
        np.testing.assert_array_equal(a["obs"], b["obs"])
        assert ra == rb
    with pytest.raises(ValueError, match=r"no action for live agent 'agent_2' \(live now: 'agent_0', 'agent_1', 'agent_2'\): "
                                         r"give every agent in env.agents an action"):
        by_dict.step({"agent_0": 1, "agent_1": 1})
    with pytest.raises(ValueError, match=r"an action for 'agent_9', which is not among its possible_agents"):
        by_dict.step({"agent_0": 1, "agent_1": 1, "agent_2": 1, "agent_9": 1})
    with pytest.raises(ValueError, match=r"an action of 2 rows; it needs one row per possible agent, 3 \('agent_0', 'agent_1', 'agent_2'\)"):
        by_rows.step(np.zeros(2, np.int64))
    # Refused before stepping: the env's step count is where the last good step left it.
    assert by_dict.env.unwrapped.steps == by_rows.env.unwrapped.steps == 5


def test_issue68_an_aec_only_module_runs_through_pettingzoos_conversion_as_its_parallel_twin(tmp_path, monkeypatch):
    """``pz:MODULE`` for a module with an AEC ``env()`` only: rollway steps PettingZoo's own
    ``aec_to_parallel`` of it, which passes PettingZoo's ``parallel_api_test``, and the episodes it
    records equal those of the module's parallel twin (simple_spread's own AEC env, stepped agent by
    agent, against its own parallel env)."""
    import types

    from mpe2 import simple_spread_v3
    from pettingzoo.test import parallel_api_test
    from pettingzoo.utils.conversions import aec_to_parallel_wrapper

    from rollway.multiagent import make_pz

    module, params = ENVS["simple_spread"]
    aec_only = types.ModuleType("aec_only_spread")
    aec_only.env = simple_spread_v3.env  # MPE's own AEC env, not a parallel one seen turn by turn
    monkeypatch.setitem(sys.modules, "aec_only_spread", aec_only)
    assert isinstance(make_pz("aec_only_spread", params), aec_to_parallel_wrapper)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the API test warns of what simple_spread itself does
        parallel_api_test(make_pz("aec_only_spread", params), num_cycles=30)
    data = []
    for env in ("pz:aec_only_spread", f"pz:{module}"):
        out = tmp_path / env.replace(":", "_")
        rollway.run(env=env, agent="random", env_params=params, episodes=3, seed=5, out=out, host="inline", progress=False)
        data.append(sorted(rollway.Dataset(out), key=lambda e: e.seed))
    for x, y in zip(*data):
        assert x.seed == y.seed
        np.testing.assert_array_equal(x.actions, y.actions)
        np.testing.assert_array_equal(x.rewards, y.rewards)
        for key in x.observations:
            np.testing.assert_array_equal(x.observations[key], y.observations[key])


def test_issue68_a_callable_returning_a_parallel_env_rolls_out_as_its_pz_id():
    """A Rollout of ``lambda: MODULE.parallel_env(**params)`` gives the fragments of ``pz:MODULE`` with
    those params: rollway wraps what the callable returns the same way."""
    from mpe2 import simple_spread_v3

    frags = []
    for env, params in ((lambda: simple_spread_v3.parallel_env(max_cycles=10), {}),
                        ("pz:mpe2.simple_spread_v3", {"max_cycles": 10})):
        with rollway.Rollout(env, "random", num_envs=2, steps_per_fragment=24, seed=8, host="inline", env_params=params) as r:
            frags.append(r.collect())
    a, b = frags
    assert a.dones.sum() == 4
    for key in a.obs:
        np.testing.assert_array_equal(a.obs[key], b.obs[key])
    np.testing.assert_array_equal(a.actions, b.actions)
    np.testing.assert_array_equal(a.rewards, b.rewards)


def test_issue68_agents_with_dict_actions_take_the_batched_dict_not_an_agent_dict():
    """Agents whose own action is a Dict get a Dict of rows ({key: [K, ...]}); that dict is the agents'
    rows, not PettingZoo's {agent: action}, and each agent gets its own row of every key."""
    from gymnasium import spaces

    class DictActs:
        possible_agents = ["a", "b"]
        metadata = {"name": "dict_acts"}

        def __init__(self):
            self.agents, self.seen = list(self.possible_agents), []

        def observation_space(self, agent):
            return spaces.Box(0, 1, (2,))

        def action_space(self, agent):
            return spaces.Dict({"move": spaces.Discrete(3), "speed": spaces.Box(0, 1, (1,))})

        def reset(self, seed=None, options=None):
            return {a: np.zeros(2, np.float32) for a in self.agents}, {}

        def step(self, actions):
            self.seen.append(actions)
            zeros = {a: np.zeros(2, np.float32) for a in self.agents}
            return zeros, {a: 0.0 for a in self.agents}, {a: False for a in self.agents}, {a: False for a in self.agents}, {}

    env = AgentRows(DictActs())
    env.reset(seed=1)
    env.step({"move": np.array([2, 1]), "speed": np.array([[0.25], [0.5]], np.float32)})
    got = env.env.seen[-1]
    assert sorted(got) == ["a", "b"] and (int(got["a"]["move"]), int(got["b"]["move"])) == (2, 1)
    assert float(got["b"]["speed"][0]) == 0.5


def test_issue68_env_processes_that_run_ahead_make_the_same_fragments_and_dataset_as_lockstep(tmp_path):
    """mode="async": each env process's envs run ahead, acted on as soon as they are back. With
    KAZ (agents die, episodes of every length) over two processes of uneven size, the fragments and
    the recorded dataset equal lockstep's, byte for byte and episode for episode, in the same order."""
    module, params = ENVS["knights_archers_zombies"]

    def made(mode):
        out = tmp_path / mode
        with rollway.Rollout(f"pz:{module}", "random", num_envs=5, workers=2, steps_per_fragment=48, seed=4,
                             env_params=params, host="process", mode=mode, out=out) as r:
            frags = [r.collect() for _ in range(4)]
        return frags, rollway.Dataset(out)

    (sync, a), (ahead, b) = made("sync"), made("async")
    assert [f.stats["batches"] for f in sync] == [48] * 4
    assert [f.stats["batches"] for f in ahead] == [96] * 4, "a policy call per env process a step"
    for x, y in zip(sync, ahead):
        for key in x.obs:
            np.testing.assert_array_equal(x.obs[key], y.obs[key])
        for name in ("actions", "rewards", "terminated", "truncated", "first", "episode"):
            np.testing.assert_array_equal(getattr(x, name), getattr(y, name))
        for key in x.finished:
            np.testing.assert_array_equal(x.finished[key], y.finished[key])
    assert sum(len(f.finished["env"]) for f in sync) >= 3, "episodes ended"
    assert [e["run_index"] for e in a.episodes] == [e["run_index"] for e in b.episodes]
    assert b.verify()["problems"] == []
    for i in range(len(a)):
        np.testing.assert_array_equal(a[i].actions, b[i].actions)
        for key in a[i].observations:
            np.testing.assert_array_equal(a[i].observations[key], b[i].observations[key])
