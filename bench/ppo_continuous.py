"""Issue 55: CleanRL's continuous-action PPO (rollway.examples.ppo_continuous: its network, settings and
update, its env wrappers' normalisation done in the agent and the update) fed by rollway's rollout
engine and by CleanRL's own collection loop over Gymnasium's vector envs, side by side in one run.

Systems:
- ``rollway``: ``rollway.Rollout(ENV, ...)``, as the example runs it: rollway's own Pendulum-v1, or
  ``gym:HalfCheetah-v5`` (MuJoCo stepped by rollway, equal to Gymnasium's values);
- ``gym-sync`` / ``gym-async``: CleanRL's loop (policy forward, ``envs.step``, buffers) on Gymnasium's
  ``SyncVectorEnv`` (what ``ppo_continuous_action.py`` uses) / ``AsyncVectorEnv`` of ``gym.make(ID)``.

Every system runs the same agent and update, with bootstrapping off (CleanRL's loop treats a
truncation as an end, and its fragments carry no final observations), CleanRL's settings (2048 steps
per update, 10 epochs of 32 minibatches) and one torch thread. Each (system, seed) runs in a process of
its own, in turn. The figures: training steps/s, the share of wall time outside the policy and the
update (what the rollout engine costs), and the mean return of the last fifth of the run. Usage:

    bench/run_ppo_continuous.sh [--env Pendulum-v1] [--seeds 1,2] [--steps-total 20480] [--envs 1] [--out FILE.md]
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))

from benchlib import machine_note, module_versions, train_each, training_parser, training_row, training_table, write_report  # noqa: E402
from gym_source import GymSource  # noqa: E402

SYSTEMS = ["rollway", "gym-sync", "gym-async"]


def gym_id(env: str) -> str:
    return env.split(":", 1)[1] if ":" in env else env


def one(system: str, env: str, seed: int, total: int, envs: int, steps: int) -> Dict[str, Any]:
    import functools

    from rollway.examples import ppo_continuous
    from rollway.examples import ppo_cartpole
    from rollway.examples.ppo_pixels import curve_ends

    if system == "rollway":
        r = ppo_continuous.train_continuous(total, env, envs, steps, seed, threads=1, log=False, bootstrap=False)
    else:
        def source(acting: Any, e: int, s: int, sd: int, lag: int, **_: Any) -> GymSource:
            return GymSource(system.split("-")[-1], acting, e, s, sd, env_id=gym_id(env))

        update = functools.partial(ppo_continuous.learn_continuous, scale=ppo_continuous.RewardScale(0.99), bootstrap=False)
        r = ppo_cartpole.train(total, envs, steps, 0, seed, lr=3e-4, epochs=10, minibatches=32, target=float("inf"),
                               stop_when_solved=False, log=False, source=source,
                               make_agent=lambda: ppo_continuous.make_agent(env, {}), update=update, threads=1)
    return training_row(r, system, curve_ends)


def report(rows: List[Dict[str, Any]], args: Any, note: List[str]) -> str:
    out = [f"CleanRL's continuous PPO on {args.env}, {args.envs} env(s) × {args.steps} steps, {args.steps_total} steps a run; "
           f"seeds {args.seeds}.", "", *note, ""]
    out += training_table(rows, args.systems, "gym-sync", "CleanRL's SyncVectorEnv loop")
    return "\n".join(out) + "\n"


def main() -> None:
    p = training_parser(__doc__, SYSTEMS, seeds="1,2", steps_total=20_480)
    p.add_argument("--env", default="Pendulum-v1", help="rollway's Pendulum-v1 (default) or gym:HalfCheetah-v5, …")
    p.set_defaults(envs=1, steps=2048)
    args = p.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    if args.one:
        print(json.dumps(one(args.one, args.env, seeds[0], args.steps_total, args.envs, args.steps)))
        return
    args.systems = args.systems.split(",")
    load_start = os.getloadavg()

    def line(seed: int, r: Dict[str, Any], secs: float) -> str:
        return f"seed {seed} {r['system']:10} {r['steps_per_s']:6.0f} steps/s  outside {r['outside_share']:.1%}  ({secs:.0f} s)"

    rows = train_each(__file__, args, seeds, line, extra=["--env", args.env])
    versions = ", ".join(f"{k} {v}" for k, v in module_versions(["torch", "mujoco", "gymnasium", "rollway"]).items())
    write_report(report(rows, args, machine_note(None, load_start, os.getloadavg(), packages=versions)), args.out)


if __name__ == "__main__":
    main()
