"""Issue 48: PPO with and without bootstrapping truncated episodes from their final
observation (rollway.examples.ppo_cartpole, ``bootstrap=True`` vs ``False``), on CartPole cut
at ``--time-limit`` steps, where a policy that balances ends every episode by truncation.
Several seeds each, side by side in one run; prints a markdown report: the mean return
of the last 20 episodes at each quarter of the run, the steps until it first reaches
95% of the limit, and the critic's value of the final observations at the end
(the discounted return a time-limited episode was cut from, which a learner that
treats truncation as termination underestimates).

    python bench/ppo_bootstrap.py --seeds 1 2 3 --steps-total 150000 --time-limit 100
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from typing import Any, Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))


def one(bootstrap: bool, seed: int, total: int, limit: int) -> Dict[str, Any]:
    import numpy as np
    import torch

    from rollway.examples import ppo_cartpole
    import rollway

    made = {}

    def make_agent() -> Any:
        made["agent"] = ppo_cartpole.Agent(4, 2)
        return made["agent"]

    r = ppo_cartpole.train(total, 8, 128, 0, seed, log=False, stop_when_solved=False, bootstrap=bootstrap, time_limit=limit,
                           make_agent=make_agent)
    # The trained critic on the observations of episodes cut by the limit.
    with rollway.Rollout("CartPole-v1", ppo_cartpole.Acting(made["agent"]), num_envs=8, steps_per_fragment=256, seed=999,
                         max_episode_steps=limit) as ro:
        f = ro.collect()
    cut = ~f.finished["terminated"]
    with torch.no_grad():
        v = made["agent"].get_value(torch.from_numpy(f.final_obs[cut])).flatten().numpy() if cut.any() else np.zeros(0)
    curve = r["curve"]
    quarters = [curve[max(0, len(curve) * q // 4 - 1)][1] for q in (1, 2, 3, 4)]
    reach = next((s for s, m in curve if m >= 0.95 * limit), None)
    return dict(bootstrap=bootstrap, seed=seed, quarters=quarters, reach=reach, final_value=float(v.mean()) if len(v) else float("nan"),
                cut=int(cut.sum()), ended=len(cut), steps_per_s=r["steps_per_s"])


def report(rows: List[Dict[str, Any]], args: argparse.Namespace) -> str:
    gamma_limit = (1 - 0.99 ** args.time_limit) / (1 - 0.99)
    out = [f"PPO (rollway.examples.ppo_cartpole) on CartPole-v1 cut at {args.time_limit} steps, {args.steps_total} steps, "
           f"8 envs × 128 steps, seeds {args.seeds}, both settings in one run.", "",
           "| bootstrap | seed | mean return at 25% / 50% / 75% / 100% | steps to 95% of the limit | V(final obs) of cut episodes |",
           "|---|---|---|---|---|"]
    for r in rows:
        q = " / ".join(f"{x:.1f}" for x in r["quarters"])
        out.append(f"| {'on' if r['bootstrap'] else 'off'} | {r['seed']} | {q} | {r['reach'] or 'never'} | "
                   f"{r['final_value']:.1f} ({r['cut']} of {r['ended']} ended by the limit) |")
    out.append("")
    for b in (True, False):
        mine = [r for r in rows if r["bootstrap"] == b]
        reach = [r["reach"] for r in mine if r["reach"]]
        out.append(f"- bootstrap {'on' if b else 'off'}: median final mean return "
                   f"{statistics.median(r['quarters'][-1] for r in mine):.1f}; median steps to 95%: "
                   f"{statistics.median(reach) if len(reach) == len(mine) else 'not all seeds'}; median V(final obs) "
                   f"{statistics.median(r['final_value'] for r in mine):.1f}")
    out.append(f"- A state cut by the limit is worth about Σγᵏ = {1 / (1 - 0.99):.0f} (γ = 0.99, the pole kept up); the "
               f"return from an episode's start to the cut is {gamma_limit:.1f}.")
    return "\n".join(out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    p.add_argument("--steps-total", type=int, default=150_000)
    p.add_argument("--time-limit", type=int, default=100)
    a = p.parse_args()
    rows = []
    for seed in a.seeds:
        for b in (True, False):
            rows.append(one(b, seed, a.steps_total, a.time_limit))
            print(rows[-1], file=sys.stderr, flush=True)
    print(report(rows, a))


if __name__ == "__main__":
    main()
