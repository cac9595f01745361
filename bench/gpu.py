"""Issue 56: rollway with its policy and learner on a GPU, measured in one run on the device machine
(one GPU, 16 cores), written as one JSON. ``bench/gpu.sh`` runs it there from carried wheels;
``--cpu`` rehearses every part here on the CPU, smaller, so that device minutes only measure.

Parts (``--parts``, all by default, in this order):

- ``checks``: the GPU path gives what the CPU path gives: ``frag.to(device)`` holds every array of a
  Dict-observation fragment bit for bit, a Loader batch through ``rollway.torch.IterableDataset(device=)``
  too, and a deterministic torch policy acting through ``rollway.torch.Policy(device)`` records the
  same actions as on the CPU (the share of equal actions is reported: a GPU's float rounding may
  flip a near-tie);
- ``inference``: CleanRL's Atari CNN (``rollway.examples.ppo_atari.AtariAgent``) sampling actions, rows/s by
  batch size (32 … 2048), on the CPU and on the device, each batch of uint8 frames sent through
  ``rollway.torch.Staging`` and the actions brought back, as a rollout's policy call does;
- ``batching``: ``rollway.run`` over ``atari:Pong-v5`` with that CNN acting on the device, in sync mode,
  in async mode with the CPU's defaults (``batch=(1, 0)``, no wait) and with the GPU advice of
  ``rollway.torch``'s docs (``batch=(N // 2, 0)``, ``max_wait=0.005``): steps/s and rows a call;
- ``scaling``: rollway's env steps/s with random actions at 1, 2, 4, … cores (``workers``):
  ``atari:Pong-v5`` (standard preprocessing) in a ``Rollout`` of 8 envs a worker, and ``CartPole-v1`` in
  ``rollway.run``; the curve a 2-core machine cannot draw;
- ``ppo``: CleanRL's Atari PPO (``rollway.examples.ppo_atari``) on Pong, policy and learner on the device,
  the envs on every core, fed by ``rollway.Rollout`` and by CleanRL's own collection loop over ale-py's
  ``AtariVectorEnv`` (EnvPool's C++ engine, now inside ale-py: the same preprocessing), and over
  Gymnasium's ``AsyncVectorEnv`` of ``AtariPreprocessing`` when OpenCV is installed (its 50 MB wheel
  does not fit the device's carry beside rollway's): same seed, same agent steps; steps/s, the time
  outside the policy and the update, the mean return of the last fifth;
- ``shared``: two rollouts with CNN policies on the one device, in two processes at once, each on half
  the cores, against one such rollout alone: each one's steps/s (what sharing the device costs);
- ``craftax``: PPO on Craftax-Classic-Symbolic (``rollway.examples.ppo_craftax``, issue 69), policy and
  learner on the device, the envs one JAX batch on JAX's default device: steps/s and the achievements
  unlocked an episode over the first and the last 10 updates (they overlap below 20 updates: the
  rehearsal's 4 compare the same ones). Skipped, saying so, where JAX or Craftax is not installed
  (jaxlib's wheel alone is larger than the device's carry).

    python bench/gpu.py --cpu --out /tmp/gpu.json        # rehearsal here (about 6 minutes on 2 cores)
    bash bench/gpu.sh                                    # on the device machine: writes $OUT/gpu.json
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
# The tests' hosted_envs (AllSpaces) before bench's.
sys.path[:0] = [os.path.join(HERE, "..", "tests", "python"), HERE]

from benchlib import timed_steps  # noqa: E402

GAME = "Pong-v5"
PARTS = ["checks", "inference", "batching", "scaling", "ppo", "shared", "craftax"]


def log(msg: str) -> None:
    print(f"[gpu {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def device_of(args: argparse.Namespace) -> str:
    import torch

    if args.cpu:
        return "cpu"
    if not torch.cuda.is_available():
        raise SystemExit("bench/gpu.py: torch sees no CUDA device; use --cpu to rehearse on the CPU")
    return "cuda"


def checks(args: argparse.Namespace) -> Dict[str, Any]:
    import numpy as np
    import torch

    import rollway
    import rollway.torch as rt
    from hosted_envs import AllSpaces

    dev = device_of(args)
    out: Dict[str, Any] = {}
    with rollway.Rollout(AllSpaces, "random", num_envs=4, steps_per_fragment=64, seed=1, host="inline") as r:
        frags = [r.collect() for _ in range(3)]
    equal = True
    for f in frags:
        t = f.to(dev)
        for k in rt.FRAGMENT_ARRAYS:
            a, b = getattr(f, k), getattr(t, k)
            pairs = [(a[j], b[j]) for j in a] if isinstance(a, dict) else [(a, b)]
            equal &= all(y.device.type == torch.device(dev).type and np.array_equal(y.cpu().numpy(), x) for x, y in pairs)
    out["fragment_to_equal"] = bool(equal)

    with tempfile.TemporaryDirectory() as tmp:
        rollway.run(env="CartPole-v1", agent="random", episodes=40, out=os.path.join(tmp, "d"), progress=False)
        on = rt.IterableDataset(os.path.join(tmp, "d"), clip=8, batch=32, seed=0, epochs=1, device=dev)
        plain = rollway.Loader(os.path.join(tmp, "d"), clip=8, batch=32, seed=0, epochs=1)
        out["loader_to_equal"] = all(np.array_equal(a[k].cpu().numpy(), b[k]) for a, b in zip(on, plain)
                                     for k in ("observations", "actions", "rewards"))

        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(4, 64), torch.nn.Tanh(), torch.nn.Linear(64, 2))
        acts = {}
        for name, where in (("host", "cpu"), ("device", dev)):
            model = net.to(where)
            rollway.run(env="CartPole-v1", agent=rt.Policy(lambda o, f, s, m=model: m(o).argmax(-1), where), episodes=16, workers=2,
                        seed=3, out=os.path.join(tmp, name), progress=False)
            acts[name] = np.concatenate([e.actions for e in rollway.Dataset(os.path.join(tmp, name))])
        n = min(len(acts["host"]), len(acts["device"]))
        out["policy_same_actions_share"] = float((acts["host"][:n] == acts["device"][:n]).mean()) if n else 0.0
    log(f"checks: {out}")
    return out


def call(agent: Any, staging: Any, frames: Any) -> None:
    """One policy call as a rollout makes it: frames in through the staging, actions back on the host."""
    import torch

    with torch.inference_mode():
        a, _, _, _ = agent.get_action_and_value(staging.put(frames))
    a.cpu().numpy()


def inference(args: argparse.Namespace) -> Dict[str, Any]:
    import numpy as np
    import torch

    from rollway.examples import ppo_atari
    import rollway.torch as rt

    rows: List[Dict[str, Any]] = []
    devices = ["cpu"] if args.cpu else ["cpu", "cuda"]
    for where in devices:
        torch.manual_seed(0)
        agent = ppo_atari.AtariAgent(6).to(where)
        staging = rt.Staging(where)
        for b in args.batches:
            frames = np.random.default_rng(b).integers(0, 256, (b, 4, 84, 84), dtype=np.uint8)

            call(agent, staging, frames)
            n, t0 = 0, time.perf_counter()
            while n < 3 or time.perf_counter() - t0 < args.inference_s:
                call(agent, staging, frames)
                n += 1
            rate = n * b / (time.perf_counter() - t0)
            rows.append({"device": where, "batch": b, "rows_per_s": rate, "ms_per_call": 1e3 * (time.perf_counter() - t0) / n})
            log(f"inference {where} batch {b}: {rate:,.0f} rows/s")
    return {"model": "CleanRL's Nature CNN (ppo_atari.AtariAgent), uint8 [B, 4, 84, 84]", "rows": rows}


def batching(args: argparse.Namespace) -> Dict[str, Any]:
    """``rollway.run`` with the CNN policy on the device over ``atari:`` envs, under the batch
    settings ``rollway.torch``'s docs give for a CPU and for a GPU: what the advice is worth."""
    import torch

    from rollway.examples import ppo_atari
    import rollway
    import rollway.torch as rt

    dev = device_of(args)
    workers, per = (2, 4) if args.cpu else (8, 16)
    n = workers * per
    torch.manual_seed(0)
    agent = ppo_atari.AtariAgent(6).to(dev)  # Pong's minimal action set
    rows = []
    for mode, batch, wait in (("sync", None, None), ("async", (1, 0), 0.0), ("async", (n // 2, 0), 0.005)):
        calls = [0, 0]

        def act(obs: Any, first: Any, state: Any, calls: List[int] = calls) -> Any:
            calls[0], calls[1] = calls[0] + 1, calls[1] + len(first)
            return agent.get_action_and_value(obs)[0]

        s = rollway.run(env=f"atari:{GAME}", agent=rt.Policy(act, dev), workers=workers, envs_per_worker=per, seed=0,
                        steps=args.batching_steps, mode=mode, batch=batch, max_wait=wait, record=False, progress=False)
        rows.append({"mode": mode, "batch": batch, "max_wait": wait, "steps_per_s": s.steps / s.seconds,
                     "rows_per_call": calls[1] / max(calls[0], 1)})
        log(f"batching {mode} batch={batch} max_wait={wait}: {rows[-1]['steps_per_s']:,.0f} steps/s, "
            f"{rows[-1]['rows_per_call']:.1f} rows a call")
    return {"env": f"atari:{GAME}", "workers": workers, "envs_per_worker": per, "steps": args.batching_steps, "rows": rows}


def atari_steps_per_s(workers: int, seconds: float) -> float:
    """``Rollout("atari:Pong-v5", "random")``: one env process per worker, 8 envs each."""
    import rollway

    with rollway.Rollout(f"atari:{GAME}", "random", num_envs=8 * workers, workers=workers, steps_per_fragment=128, seed=0) as r:
        # Start-up and the first fragment are not timed.
        return timed_steps(r.collect, r.num_envs * r.steps_per_fragment, seconds, warmup=1)


def cartpole_steps_per_s(workers: int, seconds: float) -> float:
    """``rollway.run("CartPole-v1", "random")``, the generator (a rollout's per-step barrier across
    threads costs more than a CartPole step), 256 envs a worker in async mode at every core count
    (what the run's own calibration picks at one worker; left to it, it picks by core count, and the
    curve would measure its choices): a short run sizes a run of about ``seconds``."""
    import rollway

    def rate(steps: int) -> float:
        s = rollway.run(env="CartPole-v1", agent="random", workers=workers, envs_per_worker=256, mode="async", steps=steps,
                        record=False, progress=False)
        return s.steps / s.seconds

    return rate(max(1, int(rate(200_000 * workers) * seconds)))


def scaling(args: argparse.Namespace) -> Dict[str, Any]:
    rows = []
    for env, measure in ((f"atari:{GAME}", atari_steps_per_s), ("CartPole-v1", cartpole_steps_per_s)):
        for w in args.cores:
            rate = measure(w, args.scaling_s)
            rows.append({"env": env, "workers": w, "steps_per_s": rate})
            log(f"scaling {env} workers {w}: {rate:,.0f} steps/s")
    return {"agent": "random", "atari": "Rollout, 8 envs a worker, 128 steps a fragment", "cartpole": "rollway.run, 256 envs a worker, async, no recording",
            "rows": rows}


def ppo_one(system: str, args: argparse.Namespace) -> Dict[str, Any]:
    from rollway.examples import ppo_atari
    from rollway.examples import ppo_cartpole
    from gym_source import GymSource, atari_preprocessed
    from rollway.examples.ppo_atari import AtariAgent
    from rollway.examples.ppo_pixels import curve_ends

    dev, envs = device_of(args), args.ppo_envs
    if system == "rollway":
        r = ppo_atari.train_atari(args.ppo_steps, GAME, envs, 128, 0, 1, log=False, bootstrap=False, device=dev)
    else:
        def source(acting: Any, e: int, s: int, seed: int, lag: int, **_: Any) -> GymSource:
            if system == "ale-vector":
                return GymSource("ale", acting, e, s, seed, env_id=GAME, ale_kwargs={
                    "reward_clipping": True, "repeat_action_probability": 0.25, "use_fire_reset": False})
            return GymSource("async", acting, e, s, seed, env_id=GAME, make=functools.partial(atari_preprocessed, GAME))

        n = ppo_atari.actions_of(GAME)
        r = ppo_cartpole.train(args.ppo_steps, envs, 128, 0, 1, lr=2.5e-4, target=float("inf"), stop_when_solved=False, log=False,
                               source=source, make_agent=lambda: AtariAgent(n), device=dev, threads=0,
                               update=lambda *a, **k: ppo_cartpole.learn(*a, clip=0.1, bootstrap=False, **k))
    r["first_mean"], r["last_mean"] = curve_ends(r.pop("curve")) if r["curve"] else (None, None)
    r["system"], r["device"] = system, dev
    return r


def ppo(args: argparse.Namespace) -> Dict[str, Any]:
    systems = ["rollway", "ale-vector"]
    try:
        import cv2  # noqa: F401

        systems.append("gym-async")
    except ImportError:
        log("ppo: no OpenCV here, so no Gymnasium AtariPreprocessing loop")
    rows = [in_process(["--ppo-one", s], args) for s in systems]
    for r in rows:
        log(f"ppo {r['system']}: {r['steps_per_s']:,.0f} steps/s, {1 - r['outside_share']:.0%} of the time in the policy and the update")
    return {"game": GAME, "envs": args.ppo_envs, "steps_per_fragment": 128, "agent_steps": args.ppo_steps, "seed": 1, "rows": rows}


def shared_one(args: argparse.Namespace) -> Dict[str, Any]:
    """One rollout with the CNN policy on the device, for ``--shared-s`` seconds, on half the
    machine's cores (env processes and torch's threads): two of them fill it."""
    import torch

    from rollway.examples import ppo_atari
    from rollway.examples import ppo_cartpole

    dev, half = device_of(args), max(1, (os.cpu_count() or 2) // 2)
    torch.manual_seed(0)
    torch.set_num_threads(half)
    acting = ppo_cartpole.Acting(ppo_atari.AtariAgent(ppo_atari.actions_of(GAME)), dev)
    with ppo_atari.atari_source(GAME, False, None)(acting, args.ppo_envs // 2, 128, 1, 0, rollout_args={"workers": half}) as r:
        rate = timed_steps(r.collect, r.num_envs * r.steps_per_fragment, args.shared_s, warmup=1)
    return {"steps_per_s": rate, "pid": os.getpid()}


def shared(args: argparse.Namespace) -> Dict[str, Any]:
    alone = in_process(["--shared-one"], args)
    procs = [spawn(["--shared-one"], args) for _ in range(2)]
    both = [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in procs]
    out = {"envs_each": args.ppo_envs // 2, "alone": alone["steps_per_s"], "together": [b["steps_per_s"] for b in both]}
    out["together_sum"] = sum(out["together"])
    log(f"shared: alone {out['alone']:,.0f}, together {out['together']} steps/s")
    return out


def craftax(args: argparse.Namespace) -> Dict[str, Any]:
    try:
        import craftax as _  # noqa: F401
        import jax
    except ImportError as e:
        log(f"craftax: skipped, {e.name or e} is not installed here")
        return {"skipped": f"{e.name or e} is not installed"}
    from rollway.examples import ppo_craftax

    dev = device_of(args)
    r = ppo_craftax.train(args.craftax_steps, args.craftax_envs, 64, args.craftax_width, device=dev, log=False)
    r.update(device=dev, jax_device=str(jax.devices()[0]), envs=args.craftax_envs, width=args.craftax_width)
    log(f"craftax: {r['steps_per_s']:,.0f} env steps/s, achievements an episode {r['first_achievements']:.2f} -> "
        f"{r['last_achievements']:.2f}")
    return r


def spawn(extra: List[str], args: argparse.Namespace) -> "subprocess.Popen[str]":
    return subprocess.Popen([sys.executable, os.path.abspath(__file__), *passed(args), *extra], stdout=subprocess.PIPE, text=True)


def in_process(extra: List[str], args: argparse.Namespace) -> Dict[str, Any]:
    """A part in a fresh process of its own (its threads, envs and device memory its own)."""
    p = spawn(extra, args)
    out, _ = p.communicate()
    if p.returncode != 0:
        raise SystemExit(f"bench/gpu.py {' '.join(extra)} failed with exit code {p.returncode}")
    return json.loads(out.strip().splitlines()[-1])


def passed(args: argparse.Namespace) -> List[str]:
    keep = ["--ppo-steps", str(args.ppo_steps), "--ppo-envs", str(args.ppo_envs), "--shared-s", str(args.shared_s)]
    return keep + (["--cpu"] if args.cpu else [])


def machine() -> Dict[str, Any]:
    import torch

    import rollway

    out = {"cores": os.cpu_count(), "torch": torch.__version__, "rollway": rollway.__version__, "python": sys.version.split()[0]}
    if torch.cuda.is_available():
        out["gpu"] = torch.cuda.get_device_name(0)
        out["cuda"] = torch.version.cuda
    return out


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cpu", action="store_true", help="rehearse on the CPU, smaller (2-core machine)")
    p.add_argument("--out", default="gpu.json", help="the JSON written (default gpu.json)")
    p.add_argument("--parts", default=",".join(PARTS), help=f"which parts, in order (default {','.join(PARTS)})")
    p.add_argument("--ppo-steps", type=int, help="agent steps per PPO run (default 200,000; --cpu 4,096)")
    p.add_argument("--ppo-envs", type=int, help="envs of the PPO runs (default 64; --cpu 8)")
    p.add_argument("--shared-s", type=float, help="seconds each shared-device rollout runs (default 20; --cpu 5)")
    p.add_argument("--craftax-steps", type=int, help="env steps of the Craftax PPO run (default 1,048,576; --cpu 16,384)")
    p.add_argument("--craftax-envs", type=int, help="its envs, one JAX batch (default 1024, as PureJaxRL; --cpu 64)")
    p.add_argument("--craftax-width", type=int, help="its layers' units (default 512, as PureJaxRL; --cpu 64)")
    p.add_argument("--ppo-one", help=argparse.SUPPRESS)
    p.add_argument("--shared-one", action="store_true", help=argparse.SUPPRESS)
    return p


def main() -> None:
    args = parser().parse_args()
    small = args.cpu
    args.ppo_steps = args.ppo_steps or (4_096 if small else 200_000)
    args.ppo_envs = args.ppo_envs or (8 if small else 64)
    args.shared_s = args.shared_s or (5.0 if small else 20.0)
    args.craftax_steps = args.craftax_steps or (16_384 if small else 1_048_576)
    args.craftax_envs = args.craftax_envs or (64 if small else 1024)
    args.craftax_width = args.craftax_width or (64 if small else 512)
    args.batches = [32, 128, 512] if small else [32, 64, 128, 256, 512, 1024, 2048]
    args.cores = [1, 2] if small else [1, 2, 4, 8, 16]
    args.inference_s, args.scaling_s = (1.0, 3.0) if small else (1.5, 5.0)
    args.batching_steps = 2_000 if small else 40_000
    if args.ppo_one:
        print(json.dumps(ppo_one(args.ppo_one, args)))
        return
    if args.shared_one:
        print(json.dumps(shared_one(args)))
        return
    parts: Dict[str, Callable[[argparse.Namespace], Dict[str, Any]]] = {
        "checks": checks, "inference": inference, "batching": batching, "scaling": scaling, "ppo": ppo, "shared": shared,
        "craftax": craftax}
    report: Dict[str, Any] = {"machine": machine(), "rehearsal_on_cpu": bool(args.cpu), "seconds": {}}
    start = time.perf_counter()
    for name in args.parts.split(","):
        t0 = time.perf_counter()
        report[name] = parts[name](args)
        report["seconds"][name] = round(time.perf_counter() - t0, 1)
        with open(args.out, "w") as f:  # after every part: a run cut short keeps what it measured
            json.dump(report, f, indent=1)
    report["seconds"]["total"] = round(time.perf_counter() - start, 1)
    with open(args.out, "w") as f:
        json.dump(report, f, indent=1)
    log(f"wrote {args.out} in {report['seconds']['total']:.0f} s")


if __name__ == "__main__":
    main()
