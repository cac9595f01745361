"""Batched simulators (issue 69): VMAS, torch-vectorized multi-agent envs stepped a batch a call.

The golden data is VMAS's own loop: each recorded episode is played again in a VMAS env of as many
envs as rollway's block had, every env started as VMAS starts an env from a seed (``seed(s)``,
``reset_at(i)``) and stepped with the recorded actions (one tensor per agent); every agent's
observation and reward, and each end, must equal what rollway recorded, bit for bit, and the agents'
rows must read as a PettingZoo env's do. The batch size matters: torch computes a batch's first
multiple-of-8 envs with vector kernels and the rest one by one, which differ in the last bit (a
block of 8 against an env of one: 4.7e-10 apart by step 3).
"""

from __future__ import annotations

import functools
from typing import Any, Dict

import numpy as np
import pytest
import torch

import rollway
from conftest import peer
from rollway.batched_torch import vmas_seed

vmas = peer("vmas")

LIMIT = 12  # balance cut at 12 steps: random episodes are cut (truncated) or drop the package (terminated)


def replay(scenario: str, e: Any, params: Dict[str, Any], batch: int) -> None:
    """Episode ``e`` again in VMAS's own loop, in every env of a batch of ``batch``, compared step by step."""
    env = vmas.make_env(scenario, num_envs=batch, terminated_truncated=True, **params)
    for i in range(batch):
        env.seed(vmas_seed(int(e.seed)))
        obs = env.reset_at(i)
    rows = e.observations
    k = len(env.agents)
    for t in range(len(e.actions) + 1):
        if t > 0:
            act = [torch.from_numpy(np.repeat(e.actions[t - 1][None, j], batch, 0)) for j in range(k)]
            obs, rewards, term, trunc, _ = env.step(act)
            np.testing.assert_array_equal(rows["agents/reward"][t], [float(r[0]) for r in rewards])
            ended = t == len(e.actions)
            assert (bool(e.terminated[t - 1]), bool(e.truncated[t - 1])) == \
                (ended and bool(term[0]) and not bool(trunc[0]), ended and bool(trunc[0])), f"seed {e.seed} step {t}"
            assert e.rewards[t - 1] == pytest.approx(sum(float(r[0]) for r in rewards), abs=1e-12)
        np.testing.assert_array_equal(rows["obs"][t], np.stack([o[0].numpy() for o in obs]), err_msg=f"step {t}")
    assert rows["agents/active"].all()


@pytest.mark.parametrize("continuous,host", [(True, "process"), (False, "inline")])
def test_issue69_recorded_vmas_episodes_equal_vmas_own_loop(tmp_path, continuous, host):
    """rollway.run seeds every episode: each one, started from its seed in VMAS's own loop and
    stepped with the recorded actions (continuous or discrete), is the same for every agent."""
    out = tmp_path / "ds"
    params = {"max_steps": LIMIT, "continuous_actions": continuous}
    s = rollway.run(env="vmas:balance", env_params=params, agent="random", episodes=10, seed=4, out=out,
                    envs_per_worker=4, workers=2, mode="async", host=host, progress=False)
    assert s.episodes == 10
    ds = rollway.Dataset(out)
    assert ds.verify()["problems"] == []
    assert ds.agents == ["agent_0", "agent_1", "agent_2"]
    # Inline, the two workers' envs are one block (8 envs). In processes, async mode splits each
    # worker's 4 envs into two blocks of 2 (one stepping while the agent acts on the other), a
    # process each: VMAS batches of 2, whose last bits differ from a batch of 4's.
    for e in ds:
        replay("balance", e, params, batch=8 if host == "inline" else 2)
    assert any(bool(e.truncated[-1]) for e in ds)


def test_issue69_a_vmas_rollout_gives_agent_rows_as_pettingzoo_envs_do():
    """A callable taking num_envs works as vmas:ID does; its fragments are agent rows that
    rollway.multiagent.agent_steps reads ([T, N, K]), every agent live, the env's reward their sum."""
    make = functools.partial(vmas.make_env, "balance", max_steps=LIMIT)
    with rollway.Rollout(make, "random", num_envs=6, steps_per_fragment=16, seed=2, host="inline") as r:
        frags = [r.collect() for _ in range(2)]
    for f in frags:
        a = rollway.multiagent.agent_steps(f)
        assert a.rewards.shape == (16, 6, 3) and a.active.all()
        np.testing.assert_allclose(a.rewards.sum(-1), f.rewards)
        assert (a.dones == (f.terminated | f.truncated)[:, :, None]).all()
    assert sum(int(f.dones.sum()) for f in frags) >= 6


@pytest.mark.parametrize("factory,message", [
    (functools.partial(vmas.make_env, "simple_adversary"), r"agent 'agent_0' has observation space .*share their spaces"),
    (functools.partial(vmas.make_env, "balance", dict_spaces=True), r"dict_spaces=True.*dict_spaces=False"),
    (lambda num_envs: vmas.make_env("balance", num_envs=2), r"was asked for \d+ envs and made 2"),
], ids=["spaces", "dict_spaces", "batch_size"])
def test_issue69_vmas_envs_rollway_cannot_step_are_input_errors_naming_the_fix(factory, message):
    with pytest.raises(rollway.InputError, match=message):
        with rollway.Rollout(factory, "random", num_envs=4, host="inline") as r:
            r.collect()


def test_issue69_vmas_observations_reach_the_rows_in_one_copy():
    """An agent's observation tensor is read in place (DLPack: numpy shares its memory), so a step's
    one copy is the write into rollway's rows."""
    from rollway.batched_torch import _host

    env = vmas.make_env("balance", num_envs=4)
    obs = env.reset()
    seen = _host(obs[0])
    assert np.shares_memory(seen, obs[0].numpy()) and seen.shape == (4, 16)
