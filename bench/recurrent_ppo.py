#!/usr/bin/env python3
"""Recurrent PPO on CartPole-v1 with the velocities hidden (issue 32), against the same
PPO without memory on the same observations.

``rollway.examples.rppo_cartpole`` (a GRU; RL Zoo's RecurrentPPO settings for CartPoleNoVel)
is trained to a mean return of 475 over the last 20 episodes, or ``--steps`` steps, for
each seed; then ``rollway.examples.ppo_cartpole``'s MLP agent, CleanRL's settings, on the
same two observations (x, θ) for as many steps: what a policy without memory reaches.
Reported: steps and wall time to 475, the best mean return, steps/s, and the share of
wall time outside the policy's forward and the learner's update.

Progress goes to stderr; the markdown report to stdout (and to --out).
"""

from __future__ import annotations

import os
import statistics

from benchlib import common_parser, log, machine_note, md_table, parse_list, resolve_binary, write_report



def row(name: str, r: dict) -> list:
    """One run's cells for the report's table."""
    best = max(m for _, m in r["curve"])
    solved = f"{r['steps']:,} steps, {r['solved_s']:.0f} s" if r["solved_s"] is not None else "not solved"
    return [name, r["seed"], solved, f"{best:.0f}", f"{r['steps_per_s']:,.0f}", f"{100 * r['outside_share']:.1f}%"]


def main() -> None:
    p = common_parser(__doc__, quick_help="30k steps", reps_help="unused (one run per seed)")
    p.add_argument("--seeds", default="1,2", help="comma list of seeds")
    p.add_argument("--steps", type=int, default=500_000, help="env steps at most per run")
    a = p.parse_args()
    from rollway.examples import ppo_cartpole
    from rollway.examples import rppo_cartpole

    steps = 30_000 if a.quick else a.steps
    load0 = os.getloadavg()
    rows, solved = [], []
    for seed in parse_list(a.seeds):
        log(f"recurrent PPO, seed {seed}")
        r = rppo_cartpole.train_recurrent(total_steps=steps, seed=seed, log=False)
        rows.append(row("GRU PPO (`rollway.examples.rppo_cartpole`)", r))
        if r["solved_s"] is not None:
            solved.append(r["solved_s"])
        log(f"MLP PPO without velocities, seed {seed}, {r['steps']} steps")
        m = ppo_cartpole.train(total_steps=max(r["steps"], 8 * 128), seed=seed, log=False, env_params={"velocities": False},
                               make_agent=lambda: ppo_cartpole.Agent(2, 2))
        rows.append(row("MLP PPO, same observations (`rollway.examples.ppo_cartpole`)", m))
    lines = [
        f"### Recurrent PPO, CartPole-v1 without velocities: `bench/recurrent_ppo.py --seeds {a.seeds} --steps {steps}`",
        "",
        *machine_note(resolve_binary(a.rollway), load0, os.getloadavg(), packages="torch (CPU, 1 thread); the rollway package from this checkout"),
        "",
        *md_table(["agent", "seed", "to mean return 475", "best mean return (20 episodes)", "steps/s",
                   "outside forward + update"], rows),
        "",
        f"GRU PPO solved {len(solved)} of {len(parse_list(a.seeds))} seeds"
        + (f", median {statistics.median(solved):.0f} s." if solved else "."),
        "",
    ]
    write_report("\n".join(lines), a.out)


if __name__ == "__main__":
    main()
