"""PPO on CartPole-v1 with rollway as the rollout engine.

CleanRL's ``ppo.py`` (same network, initialisation, hyper-parameters and update), with
its collection loop replaced by ``rollway.Rollout``: the policy returns its log-probs
and values beside the actions, and each ``collect()`` hands over T steps × N envs with
the bootstrap observation. ``--lag 0`` is CleanRL's loop (nothing is collected while
the learner trains); ``--lag 1`` collects the next fragment with the previous weights
while the learner trains, and publishes new weights after each update.

**Truncation is not termination.** An episode cut by a time limit did not end: its
last step is bootstrapped with the value of the observation it was cut at (the
fragment's ``final_obs``), as SB3 and Gymnasium's docs prescribe; CleanRL's loop treats
it as an end. On by default; ``--no-bootstrap`` turns it off (bench/RESULTS.md compares
the two on CartPole cut at 100 steps, where most episodes end by truncation).

    python -m rollway.examples.ppo_cartpole                    # 500k steps, stops when solved (mean return ≥ 475)
    python -m rollway.examples.ppo_cartpole --lag 1 --envs 8 --seed 2
    python -m rollway.examples.ppo_cartpole --device cuda              # policy and learner on a GPU

**Evaluation.** ``--eval-every N`` plays ``--eval-episodes`` greedy episodes (the most
likely action, no exploration) every N updates on seeds of their own, recorded apart
from the replay into ``DIR/eval`` with the version evaluated: ``rollway report
DIR/eval`` draws the evaluation return by version and plays the earliest and latest.

**A long run that survives being killed.** ``--run DIR`` records every episode into the
replay ``DIR/replay`` (a rollway dataset: ``rollway report DIR/replay`` draws the
learning curve by policy version), writes TensorBoard scalars to ``DIR/tb`` and
checkpoints the learner (network, optimizer, update, version, RNGs) atomically to
``DIR/checkpoint.pt`` every ``--checkpoint-every`` updates. Run the same command again
after a crash or a preemption: it resumes from the checkpoint into the same replay
(``rollway.Rollout(resume=True, version=…)``), its episode numbering and seeds going on
where the replay's end::

    python -m rollway.examples.ppo_cartpole --run runs/cartpole     # kill it, run it again: it goes on

Prints one line per 10 updates and a JSON summary last (steps/s, time to solved,
time inside the policy's forward and the learner's update).
"""

from __future__ import annotations

# --8<-- [start:imports]
import argparse
import collections
import copy
import functools
import json
import os
import time
from typing import Any, Callable, Dict, Optional, Tuple

import numpy as np
import torch
import torch.nn as nn
from torch.distributions.categorical import Categorical

import rollway
import rollway.torch
# --8<-- [end:imports]


# --8<-- [start:agent]
def layer(i: int, o: int, std: float = float(np.sqrt(2))) -> nn.Linear:
    lin = nn.Linear(i, o)
    nn.init.orthogonal_(lin.weight, std)
    nn.init.constant_(lin.bias, 0.0)
    return lin


class Agent(nn.Module):
    """CleanRL's CartPole actor-critic: two 64-unit tanh MLPs."""

    def __init__(self, obs_dim: int, n_actions: int):
        super().__init__()
        self.critic = nn.Sequential(layer(obs_dim, 64), nn.Tanh(), layer(64, 64), nn.Tanh(), layer(64, 1, 1.0))
        self.actor = nn.Sequential(layer(obs_dim, 64), nn.Tanh(), layer(64, 64), nn.Tanh(), layer(64, n_actions, 0.01))

    def get_value(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic(x)

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        return self.actor(x)

    def get_action_and_value(self, x: torch.Tensor, action: Optional[torch.Tensor] = None):
        dist = Categorical(logits=self.actor(x))
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action), dist.entropy(), self.critic(x)

    def act(self, obs: torch.Tensor, first: np.ndarray, state: Any) -> Dict[str, Any]:
        action, logprob, _, value = self.get_action_and_value(obs)
        return {"actions": action, "logprob": logprob, "value": value.flatten()}
# --8<-- [end:agent]


# --8<-- [start:acting]
class Acting(rollway.torch.Policy):
    """The policy the rollout calls: actions, with log-probs and values as extras, the
    agent on ``device`` (``rollway.torch.Policy``: one host-to-device copy of each batch's
    observations from pinned memory on a GPU; none on the CPU)."""

    def __init__(self, agent: nn.Module, device: str = "cpu"):
        super().__init__(agent.act, device)
        self.agent = agent
        # Time inside the network's forward and sampling alone, for the "outside" share.
        self.forward_s = 0.0

    def __call__(self, obs: Any, first: np.ndarray, state: Any) -> Dict[str, Any]:
        t0 = time.perf_counter()
        out = {k: v.cpu().numpy() for k, v in super().__call__(obs, first, state).items()}
        self.forward_s += time.perf_counter() - t0
        return out
# --8<-- [end:acting]


def greedy(agent: nn.Module) -> Callable[..., Any]:
    """The agent without exploration: the most likely action, for evaluation episodes."""
    def act(obs: Any, first: Any, state: Any) -> torch.Tensor:
        return agent.logits(obs).argmax(-1)
    return rollway.torch.Policy(act, next(agent.parameters()).device)


# --8<-- [start:update]
def on_device(frag: Any, agent: nn.Module) -> Any:
    """The fragment's arrays as tensors on the agent's device: ``frag.to`` (one copy per
    array from pinned memory on a GPU, none on the CPU); the benches' other engines'
    fragments, plain objects of arrays, go the same way."""
    device = next(agent.parameters()).device
    return frag.to(device) if hasattr(frag, "to") else rollway.torch.fragment_to(frag, device)


def at(x: Any, index: Any) -> Any:
    """``x[index]``, of each leaf for a dict."""
    return {k: v[index] for k, v in x.items()} if isinstance(x, dict) else x[index]


def flat(x: Any) -> Any:
    """``[T, N, ...]`` as ``[T * N, ...]``, of each leaf for a dict."""
    return {k: flat(v) for k, v in x.items()} if isinstance(x, dict) else x.reshape(-1, *x.shape[2:])


def bootstrapped_rewards(agent: Agent, frag: rollway.Fragment, gamma: float) -> torch.Tensor:
    """The fragment's rewards, each truncated episode's last one plus ``gamma`` times the
    value of its final observation: GAE then treats every end as terminal, and a time
    limit costs the return nothing. A fragment without ``final_obs`` (another engine's,
    in the benches) is left as it is."""
    rewards = frag.rewards.clone()
    fin, final = frag.finished, getattr(frag, "final_obs", None)
    if final is None:
        return rewards
    cut = ~fin["terminated"].bool()
    if cut.any():
        with torch.no_grad():
            v = agent.get_value(at(final, cut)).flatten()
        rewards[fin["step"][cut], fin["env"][cut]] += gamma * v
    return rewards


def advantages(frag: rollway.Fragment, next_value: torch.Tensor, gamma: float, lam: float,
               rewards: Optional[torch.Tensor] = None):
    """GAE over a fragment: an episode that ended at t (``first[t + 1]``) bootstraps nothing
    here (``rewards`` from :func:`bootstrapped_rewards` carry a truncated end's bootstrap)."""
    rewards = frag.rewards if rewards is None else rewards
    values = frag.extras["value"]
    nonterminal = 1.0 - frag.first[1:].float()
    adv = torch.zeros_like(rewards)
    last = torch.zeros(frag.envs, device=rewards.device)
    for t in reversed(range(frag.steps)):
        nxt = next_value if t == frag.steps - 1 else values[t + 1]
        delta = rewards[t] + gamma * nxt * nonterminal[t] - values[t]
        last = delta + gamma * lam * nonterminal[t] * last
        adv[t] = last
    return adv, adv + values
# --8<-- [end:update]


def rollway_source(acting: Acting, envs: int, steps: int, seed: int, lag: int, max_episode_steps: Optional[int] = None,
                   rollout_args: Optional[Dict[str, Any]] = None, **env_params: Any) -> rollway.Rollout:
    """Where fragments come from: a rollway rollout (the bench swaps in other engines);
    ``rollout_args``: the run's recording, logging and resuming (``out``, ``log_dir``, ``resume``, ``version``)."""
    return rollway.Rollout("CartPole-v1", acting, num_envs=envs, steps_per_fragment=steps, seed=seed, max_policy_lag=lag, env_params=env_params,
                           max_episode_steps=max_episode_steps, **(rollout_args or {}))


class Checkpoint:
    """The learner's state at ``DIR/checkpoint.pt``: network, optimizer, update, version,
    recent returns and every RNG, written whole or not at all (a temporary file renamed
    over the last one, fsynced), so a kill at any moment leaves the last complete one."""

    def __init__(self, run_dir: str):
        self.path = os.path.join(run_dir, "checkpoint.pt")

    def save(self, agent: nn.Module, opt: torch.optim.Optimizer, update: int, version: int, recent: Any) -> None:
        state = {"agent": agent.state_dict(), "opt": opt.state_dict(), "update": update, "version": version,
                 "recent": list(recent), "torch_rng": torch.get_rng_state(), "numpy_rng": np.random.get_state()}
        tmp = self.path + ".tmp"
        with open(tmp, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)

    def load(self, agent: nn.Module, opt: torch.optim.Optimizer, recent: Any) -> Tuple[int, int]:
        """Restores the learner; returns (update, version), (0, 0) when there is no checkpoint yet."""
        if not os.path.exists(self.path):
            return 0, 0
        # Tensors land on the CPU whatever device saved them; load_state_dict puts them on the agent's.
        state = torch.load(self.path, weights_only=False, map_location="cpu")
        agent.load_state_dict(state["agent"])
        opt.load_state_dict(state["opt"])
        recent.extend(state["recent"])
        torch.set_rng_state(state["torch_rng"])
        np.random.set_state(state["numpy_rng"])
        return int(state["update"]), int(state["version"])


def train(total_steps: int = 500_000, envs: int = 8, steps: int = 128, lag: int = 0, seed: int = 1,
          lr: float = 2.5e-4, epochs: int = 4, minibatches: int = 4, target: float = 475.0,
          stop_when_solved: bool = True, log: bool = True, source: Callable[..., Any] = rollway_source,
          make_agent: Callable[[], nn.Module] = lambda: Agent(4, 2), update: Optional[Callable[..., None]] = None,
          env_params: Optional[Dict[str, Any]] = None, threads: int = 1, bootstrap: bool = True,
          time_limit: Optional[int] = None, run_dir: Optional[str] = None, checkpoint_every: int = 10,
          eval_every: int = 0, eval_episodes: int = 8, device: str = "cpu") -> Dict[str, Any]:
    """Trains until ``total_steps`` (or solved); returns steps/s, time to solved and where the time went.
    ``threads`` sets torch's threads (0 leaves torch's choice); ``bootstrap``: truncated episodes
    bootstrapped from their final observation's value (see the module docs); ``time_limit``:
    episodes cut at this many steps (the env's own limit otherwise). ``run_dir``: the replay,
    TensorBoard scalars and checkpoints of a run that resumes where it was when started again
    (see the module docs), checkpointed every ``checkpoint_every`` updates; every ``eval_every``
    updates (0: never), ``eval_episodes`` greedy evaluation episodes, recorded into ``run_dir/eval``.
    ``device``: where the policy acts and the learner trains (``"cuda"`` for a GPU)."""
    torch.manual_seed(seed)
    np.random.seed(seed)
    if threads:
        torch.set_num_threads(threads)
    agent = make_agent().to(device)
    update_fn = update or functools.partial(learn, bootstrap=bootstrap)
    acting = Acting(agent if lag == 0 else copy.deepcopy(agent), device)
    opt = torch.optim.Adam(agent.parameters(), lr=lr, eps=1e-5)
    batch = envs * steps
    updates = total_steps // batch
    recent: collections.deque = collections.deque(maxlen=20)
    curve, solved_s, learn_s = [], None, 0.0
    limit: Dict[str, Any] = {} if time_limit is None else {"max_episode_steps": time_limit}
    ckpt, done = None, 0
    if run_dir is not None:
        os.makedirs(run_dir, exist_ok=True)
        ckpt = Checkpoint(run_dir)
        done, version = ckpt.load(agent, opt, recent)
        acting.agent.load_state_dict(agent.state_dict())
        limit["rollout_args"] = dict(out=os.path.join(run_dir, "replay"), log_dir=os.path.join(run_dir, "tb"), resume=True,
                                     version=version)
    start = time.perf_counter()
    rollout = source(acting, envs, steps, seed, lag, **limit, **(env_params or {}))
    try:
        for update in range(done + 1, updates + 1):
            frag = rollout.collect()
            recent.extend(frag.finished["return"].tolist())
            t0 = time.perf_counter()
            for g in opt.param_groups:
                g["lr"] = lr * (1.0 - (update - 1.0) / updates)
            update_fn(agent, opt, frag, epochs, minibatches)
            rollout.publish(None if lag == 0 else {k: v.detach().clone() for k, v in agent.state_dict().items()})
            learn_s += time.perf_counter() - t0
            mean = float(np.mean(recent)) if recent else 0.0
            curve.append((update * batch, mean))
            if ckpt is not None and (update % checkpoint_every == 0 or update == updates):
                ckpt.save(agent, opt, update, rollout.version, recent)
            if eval_every and update % eval_every == 0:
                out = None if run_dir is None else os.path.join(run_dir, "eval")
                ev = rollout.evaluate(greedy(agent), episodes=eval_episodes, out=out)
                if log:
                    print(f"eval   version {ev['version']:>5}  mean return {ev['return']['mean']:6.1f} over {ev['episodes']} episodes", flush=True)
            if log and update % 10 == 0:
                print(f"steps {update * batch:>7}  mean return {mean:6.1f}  {(update - done) * batch / (time.perf_counter() - start):6.0f} steps/s", flush=True)
            if solved_s is None and len(recent) == recent.maxlen and mean >= target:
                solved_s = time.perf_counter() - start
                if stop_when_solved:
                    break
    finally:
        rollout.close()
    wall = time.perf_counter() - start
    total = curve[-1][0] if curve else done * batch
    ran = total - done * batch
    return {"steps": total, "wall_s": wall, "steps_per_s": ran / wall, "solved_s": solved_s,
            "mean_return": curve[-1][1] if curve else float(np.mean(recent)) if recent else 0.0,
            "forward_s": acting.forward_s, "learn_s": learn_s,
            "outside_share": 1.0 - (acting.forward_s + learn_s) / wall, "lag": lag, "envs": envs, "seed": seed, "curve": curve}


# --8<-- [start:learn]
def learn(agent: Agent, opt: torch.optim.Optimizer, frag: rollway.Fragment, epochs: int, minibatches: int,
          gamma: float = 0.99, lam: float = 0.95, clip: float = 0.2, ent_coef: float = 0.01,
          vf_coef: float = 0.5, max_grad_norm: float = 0.5, bootstrap: bool = True) -> None:
    """CleanRL's PPO update (clipped objective, clipped value loss, normalised advantages), for
    an observation of one array or a dict of them (a Dict space's leaves); with ``bootstrap``,
    truncated episodes bootstrapped from their final observations."""
    frag = on_device(frag, agent)
    obs = frag.obs
    with torch.no_grad():
        next_value = agent.get_value(at(obs, -1)).flatten()
    rewards = bootstrapped_rewards(agent, frag, gamma) if bootstrap else None
    adv, ret = advantages(frag, next_value, gamma, lam, rewards)
    b_obs = flat(at(obs, slice(None, -1)))
    b_act = frag.actions.reshape(-1)
    b_logp = frag.extras["logprob"].reshape(-1)
    b_val = frag.extras["value"].reshape(-1)
    b_adv, b_ret = adv.reshape(-1), ret.reshape(-1)
    minibatch_epochs(agent, opt, (b_obs, b_act, b_logp, b_val, b_adv, b_ret), epochs, minibatches, clip, ent_coef, vf_coef,
                     max_grad_norm)


def minibatch_epochs(agent: nn.Module, opt: torch.optim.Optimizer, batch: Tuple[Any, ...], epochs: int, minibatches: int,
                     clip: float, ent_coef: float, vf_coef: float, max_grad_norm: float) -> None:
    """CleanRL's epochs of shuffled minibatches over ``batch``: (observations, actions, log-probs,
    values, advantages, returns), each flat over the fragment's steps and envs."""
    b_obs, b_act, b_logp, b_val, b_adv, b_ret = batch
    n = b_act.shape[0]
    size = n // minibatches
    for _ in range(epochs):
        order = np.random.permutation(n)
        for s in range(0, n, size):
            mb = torch.from_numpy(order[s:s + size]).to(b_act.device)
            _, logp, entropy, value = agent.get_action_and_value(at(b_obs, mb), b_act[mb])
            ratio = (logp - b_logp[mb]).exp()
            a = b_adv[mb]
            a = (a - a.mean()) / (a.std() + 1e-8)
            pg = torch.max(-a * ratio, -a * ratio.clamp(1 - clip, 1 + clip)).mean()
            value = value.view(-1)
            v_clipped = b_val[mb] + (value - b_val[mb]).clamp(-clip, clip)
            v_loss = 0.5 * torch.max((value - b_ret[mb]) ** 2, (v_clipped - b_ret[mb]) ** 2).mean()
            loss = pg - ent_coef * entropy.mean() + vf_coef * v_loss
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(agent.parameters(), max_grad_norm)
            opt.step()
# --8<-- [end:learn]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps-total", type=int, default=500_000, help="env steps at most (default 500000)")
    p.add_argument("--envs", type=int, default=8, help="envs (default 8)")
    p.add_argument("--steps", type=int, default=128, help="steps per fragment (default 128)")
    p.add_argument("--lag", type=int, default=0, help="max policy lag: 0 on-policy, 1 overlaps collection and training")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--no-stop", action="store_true", help="train for all the steps even once solved")
    p.add_argument("--no-bootstrap", action="store_true", help="treat a truncated episode as terminated (CleanRL's loop)")
    p.add_argument("--time-limit", type=int, help="cut episodes at this many steps (default: CartPole's 500)")
    p.add_argument("--run", metavar="DIR", help="record the replay, TensorBoard scalars and checkpoints here; run again to resume")
    p.add_argument("--checkpoint-every", type=int, default=10, metavar="N", help="updates between checkpoints (default 10)")
    p.add_argument("--eval-every", type=int, default=0, metavar="N", help="updates between greedy evaluations (default 0: none)")
    p.add_argument("--eval-episodes", type=int, default=8, metavar="K", help="episodes per evaluation (default 8)")
    p.add_argument("--device", default="cpu", help="where the policy acts and the learner trains: cpu (default), cuda, cuda:1")
    a = p.parse_args()
    r = train(a.steps_total, a.envs, a.steps, a.lag, a.seed, stop_when_solved=not a.no_stop, bootstrap=not a.no_bootstrap,
              time_limit=a.time_limit, run_dir=a.run, checkpoint_every=a.checkpoint_every, eval_every=a.eval_every,
              eval_episodes=a.eval_episodes, device=a.device)
    r.pop("curve")
    print(json.dumps(r))


if __name__ == "__main__":
    main()
