"""Many agents in one env: a PettingZoo ``ParallelEnv`` as one rollway env whose rows are its agents.

rollway's engine runs envs: it seeds, steps, restarts, records and resumes each env's episodes. A
multi-agent env stays one env there, so all of that holds for it unchanged, and its K possible agents
(``possible_agents``, fixed for the env's life) are K rows of each observation and action:

- **observation**: a Dict of two keys. ``"obs"`` holds every agent's observation, stacked in
  ``possible_agents`` order (Gymnasium's ``batch_space`` of the agents' shared space: ``[K, ...]``); an
  agent the step returned nothing for (dead, not yet spawned) has zeros. ``"agents"`` holds what the
  reset or step that produced it said of each agent: ``active`` (the agent is live, in ``env.agents``:
  its action in the next step is used), and the step's ``reward``, ``terminated`` and ``truncated``
  (zeros at a reset). So each per-agent outcome travels with the observation it came with, as
  Gymnasium's ``step`` returns them together.
- **action**: ``[K, ...]``, the agents' shared action space batched the same way (a Discrete agent
  action makes a MultiDiscrete of K). Rows of agents that are not live are ignored, as PettingZoo's
  ``step`` takes actions of live agents only.
- **the env's own outcome**, what summaries, returns and filters read: the reward is the sum of the
  agents' rewards; the episode ends when no agent is left (``env.agents`` empty, PettingZoo's end of an
  episode), truncated if any agent's last step was a truncation, else terminated.
- **infos**: ``{"agents": {agent: info}}`` for the agents whose info is not empty, else ``{}``.

Agents must share one observation space and one action space (pistonball's pistons, MPE's
``simple_spread``, Knights-Archers-Zombies, MAgent2's battles); an env whose agents differ is refused,
naming the agents that differ.

``pz:MODULE`` names a PettingZoo env by its module (``pz:pettingzoo.butterfly.pistonball_v6``,
``pz:mpe2.simple_spread_v3``): its ``parallel_env(**params)``, or, for a module with an AEC ``env``
only, PettingZoo's own ``aec_to_parallel``, which refuses turn-based games. A callable that returns a
``ParallelEnv`` works too: rollway wraps what it returns.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Dict, List, Optional, Tuple

import gymnasium as gym
import numpy as np

# The observation's keys: the agents' stacked observations, and what the step said of each agent.
OBS_KEY, AGENTS_KEY = "obs", "agents"


def is_parallel_env(env: Any) -> bool:
    """Whether ``env`` is a PettingZoo ``ParallelEnv`` (by its API: per-agent space methods)."""
    return hasattr(env, "possible_agents") and callable(getattr(env, "observation_space", None)) \
        and callable(getattr(env, "action_space", None))


def make_pz(module_name: str, kwargs: Dict[str, Any]) -> Any:
    """``pz:MODULE``: the module's ``parallel_env(**kwargs)``, or its AEC ``env(**kwargs)`` through
    PettingZoo's ``aec_to_parallel``, which refuses games whose turns cannot run in parallel."""
    module = importlib.import_module(module_name)
    if hasattr(module, "parallel_env"):
        return module.parallel_env(**kwargs)
    if not hasattr(module, "env"):
        raise TypeError(f"pz:{module_name}: the module has neither parallel_env() nor env(): not a PettingZoo env module")
    from pettingzoo.utils.conversions import aec_to_parallel

    try:
        return aec_to_parallel(module.env(**kwargs))
    except AssertionError as e:
        raise ValueError(f"pz:{module_name} is a turn-based (AEC) env that PettingZoo does not convert to a parallel one "
                         f"({e}); rollway runs parallel envs, where every live agent acts each step") from None


def shared_agent_spaces(name: str, agents: List[str], obs: List[Any], act: List[Any]) -> Tuple[Any, Any]:
    """The observation and action space every agent has (``obs[i]``, ``act[i]``: agent ``agents[i]``'s),
    or a ``ValueError`` naming an agent that differs from the first."""
    for kind, of in (("observation", obs), ("action", act)):
        differ = [i for i, space in enumerate(of) if space != of[0]]
        if differ:
            i = differ[0]
            raise ValueError(f"{name}: agent {agents[i]!r} has {kind} space {of[i]}, agent {agents[0]!r} {of[0]}: "
                             "rollway runs agents that share their spaces (rows of one batch): make them one, e.g. "
                             "with SuperSuit's pad_observations_v0 and pad_action_space_v0 around the env")
    return obs[0], act[0]


def agent_row_spaces(agent_obs: Any, agent_act: Any, k: int) -> Tuple[Any, Any]:
    """The observation and action spaces of an env whose ``k`` agents share ``agent_obs`` and
    ``agent_act``, as rows (the module docs): what PettingZoo envs and VMAS's
    (``rollway.batched_torch``) are recorded as, so that both are read the same way."""
    from gymnasium import spaces
    from gymnasium.vector.utils import batch_space

    flag = spaces.MultiBinary(k)
    status = spaces.Dict({"active": flag, "reward": spaces.Box(-np.inf, np.inf, (k,), np.float64),
                          "terminated": flag, "truncated": flag})
    return spaces.Dict({OBS_KEY: batch_space(agent_obs, k), AGENTS_KEY: status}), batch_space(agent_act, k)


class AgentRows(gym.Env):  # type: ignore[type-arg]
    """A PettingZoo ``ParallelEnv`` as one Gymnasium env whose rows are its agents (see the module
    docs). ``possible_agents`` names the rows. Being a Gymnasium env, it can be recorded by
    :class:`rollway.DataCollector` too: ``DataCollector(AgentRows(env), path)``."""

    def __init__(self, env: Any) -> None:
        self.env = env
        self.possible_agents: List[str] = list(env.possible_agents)
        if not self.possible_agents:
            raise ValueError(f"{type(env).__name__} has no possible_agents: nothing to run")
        self.agent_observation_space, self.agent_action_space = shared_agent_spaces(
            type(env).__name__, self.possible_agents, [env.observation_space(a) for a in self.possible_agents],
            [env.action_space(a) for a in self.possible_agents])
        k = len(self.possible_agents)
        self.k = k
        self._rows = {a: i for i, a in enumerate(self.possible_agents)}
        self.observation_space, self.action_space = agent_row_spaces(self.agent_observation_space,
                                                                     self.agent_action_space, k)
        self.stacked_observation_space = self.observation_space[OBS_KEY]  # type: ignore[index]
        self.metadata = dict(getattr(env, "metadata", {}) or {})
        self.render_mode = getattr(env, "render_mode", None)
        # The id rollway records (rollway.spaces.env_spec): PettingZoo's name for the env
        # (metadata["name"], e.g. pistonball_v6). No Gymnasium spec: gym.make cannot rebuild it.
        self.name: str = self.metadata.get("name") or type(env).__name__
        self.spec = None
        self._zeros = self._empty()
        # Spaces whose batch is one array (Box, Discrete, …) take the fast path of a step: one
        # np.stack, and actions iterated as the array's rows (what Gymnasium's iterate does for them).
        self._flat_obs = isinstance(self.agent_observation_space, _FLAT)
        self._flat_act = isinstance(self.action_space, _FLAT) and not isinstance(self.action_space, gym.spaces.Discrete)

    def _empty(self) -> Any:
        from gymnasium.vector.utils import create_empty_array

        return create_empty_array(self.agent_observation_space, self.k, fn=np.zeros)

    def _observe(self, obs: Dict[str, Any], rewards: Optional[Dict[str, Any]], terms: Optional[Dict[str, Any]],
                 truncs: Optional[Dict[str, Any]], live: Any) -> Dict[str, Any]:
        rows = self._rows
        unknown = [a for a in obs if a not in rows]
        if unknown:
            raise ValueError(f"{self.name}: the env returned an observation for agent {unknown[0]!r}, which is not "
                             f"among its possible_agents {self.possible_agents}: rollway gives each possible agent a "
                             "row, so an env must list every agent it may ever have in possible_agents")
        items = [obs[a] if a in obs else _zeros_of(self._zeros, i) for i, a in enumerate(self.possible_agents)]
        stacked: Any
        if self._flat_obs:
            space = self.agent_observation_space
            stacked = np.stack(items, out=np.empty((self.k, *space.shape), space.dtype))
        else:
            from gymnasium.vector.utils import concatenate

            stacked = concatenate(self.agent_observation_space, items, self._empty())
        return {OBS_KEY: stacked, AGENTS_KEY: self._status(rewards, terms, truncs, live)}

    def _status(self, rewards: Optional[Dict[str, Any]], terms: Optional[Dict[str, Any]], truncs: Optional[Dict[str, Any]],
                live: Any) -> Dict[str, np.ndarray]:
        """What the step said of each possible agent, a row each: one pass over the agents."""
        k, rows = self.k, self._rows
        active, terminated, truncated = np.zeros(k, np.int8), np.zeros(k, np.int8), np.zeros(k, np.int8)
        reward = np.zeros(k, np.float64)
        for a in live:
            if a in rows:
                active[rows[a]] = 1
        for got, into in ((terms, terminated), (truncs, truncated)):
            for a, v in (got or {}).items():
                if v and a in rows:
                    into[rows[a]] = 1
        for a, r in (rewards or {}).items():
            if a in rows:
                reward[rows[a]] = float(r)
        return {"active": active, "reward": reward, "terminated": terminated, "truncated": truncated}

    @staticmethod
    def _info(infos: Dict[str, Any]) -> Dict[str, Any]:
        kept = {a: i for a, i in infos.items() if i}
        return {"agents": kept} if kept else {}

    def reset(self, *, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None) -> Tuple[Any, Dict[str, Any]]:
        super().reset(seed=seed)  # Gymnasium's contract (np_random seeded); the env's own seeding is its reset's
        obs, infos = self.env.reset(seed=seed, options=options)
        return self._observe(obs, None, None, None, self.env.agents), self._info(infos)

    def step(self, action: Any) -> Tuple[Any, float, bool, bool, Dict[str, Any]]:
        """One step: ``action`` is ``[K, ...]`` (a row per possible agent, those of agents not live
        ignored) or, as PettingZoo's ``step`` takes it, a dict with an action for every live agent."""
        # The env's agents, read once before and once after the step (wrappers make each read cost).
        live = self.env.agents
        # A dict is by agent unless the agents' own actions are dicts (a Dict space's batch is one too).
        by_agent = isinstance(action, dict) and not isinstance(self.action_space, gym.spaces.Dict)
        actions = self._by_dict(action, live) if by_agent else self._by_row(action, set(live))
        obs, rewards, terms, truncs, infos = self.env.step(actions)
        after = self.env.agents
        ended = not after
        truncated = ended and any(bool(t) for t in truncs.values())
        reward = float(sum(float(r) for r in rewards.values()))
        return self._observe(obs, rewards, terms, truncs, after), reward, ended and not truncated, truncated, self._info(infos)

    def _by_row(self, action: Any, live: Any) -> Dict[str, Any]:
        if self._flat_act:
            each = list(action) if hasattr(action, "__len__") else [action]
        else:
            from gymnasium.vector.utils import iterate

            each = list(iterate(self.action_space, action))
        if len(each) != self.k:
            raise ValueError(f"{self.name}: an action of {len(each)} rows; it needs one row per possible agent, {self.k} "
                             f"({', '.join(map(repr, self.possible_agents))}), in that order (rows of agents that are "
                             "not live are ignored)")
        return {a: act for a, act in zip(self.possible_agents, each) if a in live}

    def _by_dict(self, action: Dict[str, Any], live: List[str]) -> Dict[str, Any]:
        missing = [a for a in live if a not in action]
        if missing:
            raise ValueError(f"{self.name}: the action dict has no action for live agent {missing[0]!r} (live now: "
                             f"{', '.join(map(repr, live))}): give every agent in env.agents an action, or pass a row "
                             "per possible agent")
        stray = [a for a in action if a not in self._rows]
        if stray:
            raise ValueError(f"{self.name}: the action dict has an action for {stray[0]!r}, which is not among its "
                             f"possible_agents {self.possible_agents}")
        return {a: action[a] for a in live}

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()


_FLAT = (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)


def _zeros_of(batch: Any, i: int) -> Any:
    """Row ``i`` of an empty batch (for a Dict or Tuple space, a dict or tuple of rows)."""
    if isinstance(batch, dict):
        return {k: _zeros_of(v, i) for k, v in batch.items()}
    if isinstance(batch, tuple):
        return tuple(_zeros_of(v, i) for v in batch)
    return batch[i]


def rows_of(make: Callable[[], Any], env: Any) -> Tuple[Callable[[], Any], Any]:
    """``(make, env)`` with a ``ParallelEnv`` wrapped as :class:`AgentRows` (anything else as it is)."""
    if not is_parallel_env(env):
        return make, env
    return (lambda: AgentRows(make())), AgentRows(env)


class AgentSteps:
    """A multi-agent :class:`rollway.Fragment` by agent: ``[T, N, K]`` where the fragment has ``[T, N]``.

    - ``obs``: ``[T + 1, N, K, ...]``, every agent's observation (a dict by leaf for a Dict agent
      space), ``obs[t]`` what agent ``k`` chose ``actions[t, i, k]`` on;
    - ``active``: bool ``[T + 1, N, K]``, the agent was live at ``obs[t]``: its action was used (mask a
      loss with ``active[:-1]``);
    - ``rewards``: float64 ``[T, N, K]``, ``terminated``, ``truncated``: bool ``[T, N, K]``: what step
      ``t`` gave each agent. Where an env's episode ended at ``t``, ``obs[t + 1]`` is already the next
      episode's reset, so these come from the fragment's ``final_obs`` there, where the step put them;
    - ``dones``: ``terminated | truncated``, and where the env's episode ended, every agent's row
      (its trajectory ends with the episode);
    - ``next_obs()``: ``[T, N, K, ...]``, the observation each agent's step produced (what a truncated
      agent is bootstrapped from), with ``final_obs`` where an episode ended.
    """

    __slots__ = ("obs", "active", "rewards", "terminated", "truncated", "dones", "_finished", "_final")

    def __init__(self, frag: Any) -> None:
        o = frag.obs
        if not isinstance(o, dict) or f"{AGENTS_KEY}/active" not in o:
            raise ValueError("agent_steps: the fragment is not of a multi-agent env (its observations have no "
                             f"'{AGENTS_KEY}/active'; rollway.multiagent runs PettingZoo envs)")
        prefix = OBS_KEY + "/"
        self.obs = o[OBS_KEY] if OBS_KEY in o else {k[len(prefix):]: v for k, v in o.items() if k.startswith(prefix)}
        self.active = o[f"{AGENTS_KEY}/active"].astype(bool)
        after = {name: o[f"{AGENTS_KEY}/{name}"][1:].copy() for name in ("reward", "terminated", "truncated")}
        self._finished, self._final = (frag.finished["step"], frag.finished["env"]), frag.final_obs
        for name, values in after.items():
            values[self._finished] = frag.final_obs[f"{AGENTS_KEY}/{name}"]
        self.rewards = after["reward"]
        self.terminated = after["terminated"].astype(bool)
        self.truncated = after["truncated"].astype(bool)
        self.dones = self.terminated | self.truncated | (frag.terminated | frag.truncated)[:, :, None]


    def next_obs(self) -> Any:
        """``[T, N, K, ...]``: the observation each agent's step ``t`` produced (``obs[t + 1]``, or the
        fragment's ``final_obs`` where the env's episode ended at ``t``), what a truncated agent is
        bootstrapped from. Made on each call (a copy of the observations)."""
        prefix = OBS_KEY + "/"

        def after(x: np.ndarray, final: np.ndarray) -> np.ndarray:
            y = x[1:].copy()
            y[self._finished] = final
            return y

        if isinstance(self.obs, dict):
            return {k: after(v, self._final[prefix + k]) for k, v in self.obs.items()}
        return after(self.obs, self._final[OBS_KEY])


def agent_steps(frag: Any) -> AgentSteps:
    """``frag`` (a multi-agent env's :class:`rollway.Fragment`) by agent: see :class:`AgentSteps`."""
    return AgentSteps(frag)
