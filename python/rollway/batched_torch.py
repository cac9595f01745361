"""Torch-vectorized simulators as batched env sources: VMAS, whose one ``Environment`` steps a batch
of multi-agent envs in one call of torch ops (on the CPU or a GPU).

**Naming one.** ``env="vmas:SCENARIO"`` is ``vmas.make_env(SCENARIO, num_envs=<the block's envs>,
**env_params)``; ``env_params`` are ``make_env``'s (``continuous_actions``, ``max_steps``,
``device``) and the scenario's own (``n_agents``). A callable taking ``num_envs`` and returning a
VMAS ``Environment`` works too, e.g. ``functools.partial(vmas.make_env, "balance", max_steps=100)``.
rollway sets ``terminated_truncated`` on the envs made (ends kept apart: a ``max_steps`` end is a
truncation) and takes the agents as a list (``dict_spaces=False``, the default).

**Agents are rows**, laid out as a PettingZoo env's (:mod:`rollway.multiagent`): the observation is
``{"obs": [K, ...], "agents": {"active", "reward", "terminated", "truncated"}}`` and the action
``[K, ...]``, so fragments, datasets, ``Dataset``'s per-agent arrays and ``agent_steps`` read a VMAS
env as they read a PettingZoo one. VMAS's agents all live for the whole episode (``active`` is
always 1); the env's reward is the sum of the agents', and its end every agent's end. Agents must
share their spaces (VMAS's ``balance``, ``navigation``, ``transport``, …); a scenario whose agents
differ is refused, naming the agent.

**Episodes, seeds and VMAS's own loop.** VMAS does not reset an env by itself (an ended env goes on
stepping until it is reset), and its randomness is one stream per process that VMAS keeps apart
from the process's own (``torch``, ``numpy`` and ``random`` are restored around each VMAS call). So:

- a reset with seed ``s`` of slot ``i`` is VMAS's ``seed(s)`` then ``reset_at(i)`` (a seed of 2³² or
  more folded to 32 bits first, :func:`vmas_seed`: VMAS seeds numpy too); an unseeded
  one is ``reset_at(i)``, which goes on in VMAS's stream: an episode that rollway seeds is
  reproducible from its seed, as with ``env.seed(s); env.reset_at(i)`` in VMAS's own loop;
- a step is ``step([actions of agent k for every env])``; the observations an ending step returns
  are the episode's final ones;
- the episodes equal VMAS's own loop run with as many envs as the block has, bit for bit: torch
  computes a batch's envs in vector groups (4 or 8 wide, by the op) and the rest one by one, which
  differ in the last bit; measured, an episode of a block of 2 equals VMAS's loop at 1–3 envs, not
  always at 4 or more (``tests/python/test_batched_torch.py``);
- VMAS steps every env of a batch in each call, so an env that is not stepping in a round (its
  episode ended and it waits for its reset) is stepped too, with zero actions, and its rows of that
  call are not used. A scenario whose steps draw random numbers (noise) therefore draws for those
  envs too, as VMAS's own loop would if it did not reset them at once; and blocks of one process
  share VMAS's one stream (and take turns: one VMAS call at a time a process), so unseeded resets of
  several blocks in one process (inline, ``workers > 1``) interleave in it.

**Copies.** Each agent's observations go from the tensor (through DLPack, no copy on the CPU;
``.cpu()`` first on a GPU) into rollway's rows: one copy a step. Actions are numpy views of
rollway's action rows, turned into tensors without a copy on the CPU (``torch.from_numpy``), one
per agent.
"""

from __future__ import annotations

import functools
import json
import sys
import threading
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from rollway.batched import RESET, RESET_UNSEEDED, STEP, SlotInfos, gymnasium_space
from rollway.batched_vec import make_batch
from rollway.multiagent import AGENTS_KEY, OBS_KEY, agent_row_spaces, shared_agent_spaces

# VMAS keeps one random state for all its envs of a process, swapped in and out of torch's, numpy's
# and random's around each call: two envs stepped at once in two threads (blocks of an inline
# rollout) draw from each other's seeds. Measured: a seeded episode then no longer equals VMAS's own
# loop. So a process runs one VMAS call at a time; each call is itself parallel (torch's threads).
_ONE_AT_A_TIME = threading.Lock()

def is_vmas_env(env: Any) -> bool:
    """Whether ``env`` is a VMAS ``Environment`` (VMAS already imported: the env's maker imported it)."""
    if "vmas" not in sys.modules:
        return False
    from vmas.simulator.environment import Environment

    return isinstance(env, Environment)


def make_vmas_of(scenario: str, kwargs: Dict[str, Any]) -> Callable[..., Any]:
    """The factory ``vmas:SCENARIO`` names: ``vmas.make_env(SCENARIO, num_envs=…, **kwargs)``."""
    try:
        import vmas
    except ImportError as e:
        raise ImportError(f"vmas:{scenario} needs VMAS ({e}): pip install vmas") from None
    if "wrapper" in kwargs:
        raise ValueError(f"vmas:{scenario}: env_params name a wrapper; rollway steps VMAS's own Environment "
                         "(leave wrapper out)")
    return functools.partial(vmas.make_env, scenario, **{**kwargs, "terminated_truncated": True})


class TorchSim:
    """A VMAS env factory (``make(num_envs=n)``) with the spec of the env it made first: what
    ``rollway._host.prepare`` hands the hosts (``stepper = "batch"``, as for JAX and vector envs)."""

    stepper = "batch"

    def __init__(self, make: Callable[..., Any], made: Any, name: str) -> None:
        """``made``: what ``make`` made when the host first called it (a VMAS env of any size)."""
        from rollway.spaces import to_json

        del made
        self.make, self.name = make, name
        # The spec comes from an env of one, made as the blocks will be: a factory that ignores
        # num_envs is an input error here, before any env slot starts.
        first = self._sized(1)
        self.agents: List[str] = [a.name for a in first.agents]
        agent_obs, agent_act = shared_agent_spaces(name, self.agents, [gymnasium_space(s) for s in first.observation_space],
                                                   [gymnasium_space(s) for s in first.action_space])
        self.observation_space, self.action_space = agent_row_spaces(agent_obs, agent_act, len(self.agents))
        self.obs_json, self.act_json = to_json(self.observation_space), to_json(self.action_space)
        scenario = type(first.scenario).__module__.rsplit(".", 1)[-1]
        self.spec = {
            "id": name if name.startswith("vmas:") else f"vmas:{scenario}",
            "observation_space": self.obs_json, "action_space": self.act_json,
            "max_episode_steps": first.max_steps, "render_fps": None, "reward_threshold": None, "gymnasium": None,
            "agents": self.agents,
        }

    def _sized(self, n: int) -> Any:
        env = make_batch(self.make, n, self.name, "a VMAS env", "as vmas.make_env does")
        _adopt(env, self.name)
        return env

    def block(self, n: int) -> "TorchBlock":
        return TorchBlock(self, self._sized(n), n)

    def close(self) -> None:
        pass


def _adopt(env: Any, name: str) -> None:
    """Makes ``env`` report its ends apart (terminated, truncated): VMAS reads
    ``terminated_truncated`` at each step, so a factory's env made without it is set here. One
    made with ``dict_spaces=True`` (agents by name) is refused: its spaces were made so."""
    if getattr(env, "dict_spaces", False):
        raise ValueError(f"{name} made a VMAS env with dict_spaces=True; rollway takes its agents as a list "
                         "(rows in the env's agent order): make it with dict_spaces=False")
    env.terminated_truncated = True


class TorchBlock(SlotInfos):
    """n slots of a :class:`TorchSim`: one VMAS env, a round a call (see the module docs)."""

    def __init__(self, sim: TorchSim, env: Any, n: int) -> None:
        from rollway.spaces import RowViews, leaves

        self.env, self.n, self.name, self.k = env, n, sim.name, len(sim.agents)
        self.agents = sim.agents
        self._acts = RowViews(sim.act_json)
        self._obs = RowViews(sim.obs_json)
        self._row = leaves(sim.obs_json)[1]
        self._infos: Optional[List[Dict[str, Any]]] = None  # the latest step's, by agent
        self._info_np: Optional[List[Dict[str, np.ndarray]]] = None

    def round(self, ops: bytes, seeds: bytes, actions: bytes) -> Tuple[np.ndarray, Optional[np.ndarray], np.ndarray, np.ndarray]:
        """One round, as :meth:`rollway.batched.JaxBlock.round` answers it. A round that steps some
        envs and starts others steps the batch first, then resets the starting envs (module docs)."""
        with _ONE_AT_A_TIME:
            return self._round(np.frombuffer(ops, np.uint8), np.frombuffer(seeds, np.uint64), actions)

    def _round(self, op: np.ndarray, seed_of: np.ndarray, actions: bytes) -> Tuple[Any, ...]:
        stepping = op == STEP
        starting = np.flatnonzero((op == RESET) | (op == RESET_UNSEEDED))
        self._info_np = None
        if not stepping.any():
            self._infos = None
            out = self._reset(starting, op, seed_of)
            zeros = np.zeros(self.n)
            return out[starting], starting, zeros, zeros.astype(np.uint8)
        out, reward, flags = self._step(stepping, actions)
        if len(starting):
            out[starting] = self._reset(starting, op, seed_of)[starting]
        return out, None, reward, flags

    def _reset(self, starting: np.ndarray, op: np.ndarray, seed_of: np.ndarray) -> np.ndarray:
        rows = np.zeros((self.n, self._row), np.uint8)
        obs: Any = None
        for i in starting:  # in slot order, as VMAS's own loop resets the envs that ended
            if op[i] == RESET:
                self.env.seed(vmas_seed(int(seed_of[i])))
            obs = self.env.reset_at(int(i))
        if obs is not None:
            self._write(rows, obs, np.zeros((self.k, self.n)), np.zeros(self.n, bool), np.zeros(self.n, bool))
        return rows

    def _step(self, stepping: np.ndarray, actions: bytes) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        import torch

        act = self._acts.view(actions, self.n)
        device = self.env.device
        per_agent = [torch.from_numpy(np.ascontiguousarray(act[:, k])).to(device) for k in range(self.k)]
        obs, rewards, term, trunc, self._infos = self.env.step(per_agent)
        r = np.stack([_host(x) for x in rewards]).astype(np.float64)  # [K, n]
        term_np, trunc_np = _host(term).astype(bool) & stepping, _host(trunc).astype(bool) & stepping
        term_np &= ~trunc_np  # a time-limit end is a truncation, whatever else VMAS reports of it
        rows = np.zeros((self.n, self._row), np.uint8)
        self._write(rows, obs, r, term_np, trunc_np)
        reward = np.where(stepping, r.sum(0), 0.0)
        return rows, reward, (term_np.astype(np.uint8) | (trunc_np.astype(np.uint8) << 1))

    def _write(self, rows: np.ndarray, obs: List[Any], rewards: np.ndarray, term: np.ndarray, trunc: np.ndarray) -> None:
        """Every env's row: each agent's observation straight from its tensor, and the agents' status."""
        view = self._obs.view(rows, self.n)
        stacked = view[OBS_KEY] if OBS_KEY in view else None
        if stacked is None:
            raise ValueError(f"{self.name}: VMAS agents with observations of more than one array are not taken yet")
        for k, o in enumerate(obs):
            stacked[:, k] = _host(o)
        view[f"{AGENTS_KEY}/active"][:] = 1
        view[f"{AGENTS_KEY}/reward"][:] = rewards.T
        view[f"{AGENTS_KEY}/terminated"][:] = term[:, None]
        view[f"{AGENTS_KEY}/truncated"][:] = trunc[:, None]

    def info(self, slot: int) -> str:
        """The latest step's info of ``slot`` as JSON: ``{"agents": {agent: {key: value}}}``."""
        if self._infos is None:
            return "{}"
        if self._info_np is None:  # once a round, however many slots ended in it
            self._info_np = [{k: _host(v) for k, v in agent.items()} for agent in self._infos]
        agents = {a: {k: v[slot].tolist() for k, v in info.items()} for a, info in zip(self.agents, self._info_np)}
        kept = {a: i for a, i in agents.items() if i}
        return json.dumps({"agents": kept} if kept else {})

    def close(self) -> None:
        self.env = None


def vmas_seed(seed: int) -> int:
    """The seed VMAS is given for a reset with rollway's ``seed``: the seed itself below 2³², else its
    two halves xor-ed (VMAS seeds numpy too, which takes 32 bits)."""
    return seed if seed < 1 << 32 else (seed ^ (seed >> 32)) & 0xFFFFFFFF


def _host(t: Any) -> np.ndarray:
    """A tensor's values as numpy: the tensor's own memory on the CPU (DLPack), a copy from a GPU."""
    if getattr(t, "device", None) is not None and t.device.type != "cpu":
        t = t.cpu()
    return np.from_dlpack(t.detach())
