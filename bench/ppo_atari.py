"""Issue 55: CleanRL's Atari PPO (rollway.examples.ppo_atari: its network, settings and update) on Pong,
fed by rollway's rollout engine and by CleanRL's collection loop over EnvPool and over Gymnasium's
vector envs, side by side in one run. Every source does the same preprocessing (no-ops, frame skip 4
with max-pool, 84×84 gray, a stack of 4, sticky actions 0.25) and clips rewards to their sign.

Systems:
- ``rollway``: ``rollway.Rollout("atari:Pong-v5", ...)`` at lag 0 (CleanRL's order), as the example runs it.
- ``envpool``: CleanRL's loop (policy forward, ``envs.step``, buffers) on EnvPool's ``Pong-v5``
  (``reward_clip=True``, ``repeat_action_probability=0.25``, ``use_fire_reset=False``), as CleanRL's
  ``ppo_atari_envpool.py`` makes it but for those two.
- ``gym-sync`` / ``gym-async``: the same loop on Gymnasium's ``SyncVectorEnv`` / ``AsyncVectorEnv`` of
  ``FrameStackObservation(AtariPreprocessing(gym.make("ALE/Pong-v5", frameskip=1)), 4)`` with
  ``TransformReward(np.sign)``.

Each (system, seed) runs in a process of its own, in turn. On 2 CPU cores the update's convolutions take
most of the time and a few tens of thousands of steps teach Pong nothing: the figures are the training
steps/s and the share of wall time outside the policy and the update (what the rollout engine costs);
the learning curve is a GPU's run. Usage:

    bench/run_ppo_atari.sh [--seeds 1] [--systems rollway,envpool] [--steps-total 16384] [--out FILE.md]
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))

from gym_source import GymSource, atari_preprocessed  # noqa: E402
from benchlib import machine_note, module_versions, train_each, training_parser, training_row, training_table, write_report  # noqa: E402

SYSTEMS = ["rollway", "envpool", "gym-sync", "gym-async"]
GAME = "Pong-v5"


def make_gym_env() -> Any:
    return atari_preprocessed(GAME)


def one(system: str, seed: int, total: int, envs: int, steps: int) -> Dict[str, Any]:
    from rollway.examples import ppo_atari
    from rollway.examples import ppo_cartpole
    from rollway.examples.ppo_pixels import curve_ends

    if system == "rollway":
        r = ppo_atari.train_atari(total, GAME, envs, steps, 0, seed, log=False)
    else:
        kind = system.split("-")[-1]

        def source(acting: Any, e: int, s: int, sd: int, lag: int, **_: Any) -> GymSource:
            return GymSource(kind, acting, e, s, sd, env_id=GAME, make=make_gym_env,
                             envpool_kwargs={"reward_clip": True, "repeat_action_probability": 0.25, "use_fire_reset": False})

        n_actions = ppo_atari.actions_of(GAME)
        r = ppo_cartpole.train(total, envs, steps, 0, seed, lr=2.5e-4, target=float("inf"), stop_when_solved=False, log=False,
                               source=source, make_agent=lambda: ppo_atari.AtariAgent(n_actions),
                               update=lambda *a, **k: ppo_cartpole.learn(*a, clip=0.1, bootstrap=False, **k), threads=0)
    return training_row(r, system, curve_ends)


def report(rows: List[Dict[str, Any]], args: Any, note: List[str]) -> str:
    out = [f"CleanRL's Atari PPO on {GAME}, {args.envs} envs × {args.steps} steps, {args.steps_total} agent steps a run; "
           f"seeds {args.seeds}.", "", *note, ""]
    out += training_table(rows, args.systems, "envpool", "EnvPool")
    return "\n".join(out) + "\n"


def main() -> None:
    args = training_parser(__doc__, SYSTEMS, seeds="1", steps_total=16_384).parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    if args.one:
        print(json.dumps(one(args.one, seeds[0], args.steps_total, args.envs, args.steps)))
        return
    args.systems = args.systems.split(",")
    load_start = os.getloadavg()

    def line(seed: int, r: Dict[str, Any], secs: float) -> str:
        return f"seed {seed} {r['system']:10} {r['steps_per_s']:6.0f} steps/s  outside {r['outside_share']:.1%}  ({secs:.0f} s)"

    rows = train_each(__file__, args, seeds, line)
    versions = ", ".join(f"{k} {v}" for k, v in module_versions(["torch", "envpool", "ale_py", "gymnasium", "rollway"]).items())
    write_report(report(rows, args, machine_note(None, load_start, os.getloadavg(), packages=versions)), args.out)


if __name__ == "__main__":
    main()
