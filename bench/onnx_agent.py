#!/usr/bin/env python3
"""The ``onnx:`` agent (issue 35) against the same networks in Python, side by side in one run.

CartPole-v1, the README's MLP (4-64-2, argmax), ``--envs`` envs (one worker, sync: one
model call per step of all envs), ``--steps`` steps each:

* ``onnx:`` with ONNX Runtime (the default engine; default threads, and ``threads=1``), and with tract;
* the ``constant`` agent: the same run with an agent that costs nothing, i.e. what the
  envs and the engine cost without any model (the floor of the time outside it);
* the same network as a torch Python policy inside rollway (``rollway.run(agent=policy)``);
* the torch policy in a plain Gymnasium loop (``gym.make_vec(..., "sync")``, batched forward).

PixelMine-v0 at 128×128, a VPT-style recurrent pixel policy (IMPALA ResNet 16-32-32 + LSTM
256, random weights; ``rollway.examples.onnx_policies``), ``--pixel-envs`` envs, one worker:

* ``onnx:`` (ONNX Runtime) with its default threads (every core: sync mode) and with ``threads=1``;
* the floor: the model alone, the same ONNX Runtime session options, on batches of the
  same size, timed from Python (``onnxruntime.InferenceSession``).

Reported: medians of ``--reps`` taken in turn; for the ``onnx:`` runs, the model's own time
(``Summary.inference``: time inside ONNX Runtime's ``Run``, tensors in and out included)
and the share of wall time outside it.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import tempfile
import time
from typing import Dict, List

import numpy as np

import benchlib as B



def model_time(summary) -> tuple:
    """Model calls and seconds inside the model, from the summary's ``inference`` line."""
    m = re.search(r"(\d+) calls: the model [0-9.]+ µs each, ([0-9.]+) s", summary.inference or "")
    return (int(m.group(1)), float(m.group(2))) if m else (0, float("nan"))


def rollway_run(agent, steps: int, envs: int, **kw) -> Dict[str, float]:
    import rollway

    s = rollway.run(env=kw.pop("env", "CartPole-v1"), agent=agent, steps=steps, workers=1, envs_per_worker=envs,
                    mode="sync", record=False, progress=False, **kw)
    wall = s.seconds
    calls, inside = model_time(s) if isinstance(agent, str) and agent.startswith("onnx:") else (0, float("nan"))
    # Steps acted on: every call takes all envs (one worker, sync). The summary's `steps` counts
    # finished episodes only, short of the steps of the episodes a step target cuts off.
    acted = calls * envs if calls else s.steps
    return {"sps": acted / wall, "outside": 1 - inside / wall, "per_call_us": inside / max(1, calls) * 1e6}


def gym_loop(policy, steps: int, envs: int) -> Dict[str, float]:
    import gymnasium as gym
    import torch

    vec = gym.make_vec("CartPole-v1", num_envs=envs, vectorization_mode="sync")
    obs, _ = vec.reset(seed=0)
    inside, t0, done = 0.0, time.perf_counter(), 0
    with torch.no_grad():
        while done < steps:
            t = time.perf_counter()
            act = policy(torch.from_numpy(obs)).argmax(-1).numpy()
            inside += time.perf_counter() - t
            obs, *_ = vec.step(act)
            done += envs
    wall = time.perf_counter() - t0
    vec.close()
    return {"sps": done / wall, "outside": 1 - inside / wall, "per_call_us": inside / (done / envs) * 1e6}


def model_alone(path: str, envs: int, side: int, threads: int, calls: int) -> Dict[str, float]:
    import onnxruntime as ort

    o = ort.SessionOptions()
    o.intra_op_num_threads, o.inter_op_num_threads = threads, 1
    o.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(path, o, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feed = {"rgb": rng.integers(0, 256, (envs, side, side, 3), dtype=np.uint8),
            "first": np.zeros(envs, dtype=bool), "state": np.zeros((envs, 512), np.float32)}
    sess.run(None, feed)
    t = time.perf_counter()
    for _ in range(calls):
        sess.run(None, feed)
    per = (time.perf_counter() - t) / calls
    return {"sps": envs / per, "outside": 0.0, "per_call_us": per * 1e6}


def median(rows: List[Dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--envs", type=int, default=256)
    p.add_argument("--steps", type=int, default=2_000_000, help="steps per rollway CartPole run")
    p.add_argument("--python-steps", type=int, default=400_000, help="steps per Python-policy CartPole run")
    p.add_argument("--pixel-envs", type=int, default=16)
    p.add_argument("--pixel-steps", type=int, default=3_200)
    p.add_argument("--out", help="also write the report here")
    a = p.parse_args()

    import torch

    from rollway.examples import onnx_policies as P
    import rollway

    torch.set_num_threads(1)  # one worker steps the envs; the policy gets the other core's share, as onnx: does
    tmp = tempfile.mkdtemp(prefix="onnx-bench-")
    mlp_path = P.export_mlp(P.mlp(), os.path.join(tmp, "mlp.onnx"))
    pixel_net = P.PixelPolicy(actions=11, side=128)
    pixel_path = P.export_recurrent(pixel_net, torch.zeros(2, 128, 128, 3, dtype=torch.uint8),
                                    os.path.join(tmp, "pixel.onnx"), obs_name="rgb")
    net = P.mlp()
    cart = {
        "rollway `onnx:` (ONNX Runtime)": lambda: rollway_run("onnx:" + mlp_path, a.steps, a.envs),
        "rollway `onnx:` (ONNX Runtime, threads=1)": lambda: rollway_run("onnx:" + mlp_path, a.steps, a.envs,
                                                                         agent_params={"threads": 1}),
        # tract where the package has it (the wheel; a source build with the `tract` feature).
        **({"rollway `onnx:` (tract)": lambda: rollway_run("onnx:" + mlp_path, a.steps, a.envs,
                                                           agent_params={"backend": "tract"})}
           if "tract" in rollway._rollway.ONNX_ENGINES else {}),
        "rollway `constant` agent (no model: envs + engine)": lambda: rollway_run("constant", a.steps, a.envs),
        "rollway, torch Python policy": lambda: rollway_run(P.torch_policy(net), a.python_steps, a.envs),
        "plain Gymnasium loop, torch policy": lambda: gym_loop(net, a.python_steps, a.envs),
    }
    pix_kw = dict(env="PixelMine-v0", env_params={"size": 128, "max_steps": 100})
    cores = os.cpu_count() or 1
    pixel = {
        f"rollway `onnx:` (ONNX Runtime, default threads: {cores}, sync mode)": lambda: rollway_run(
            "onnx:" + pixel_path, a.pixel_steps, a.pixel_envs, **pix_kw),
        f"the model alone, {cores} threads": lambda: model_alone(pixel_path, a.pixel_envs, 128, cores, 40),
        "rollway `onnx:` (ONNX Runtime, 1 thread)": lambda: rollway_run("onnx:" + pixel_path, a.pixel_steps,
                                                                         a.pixel_envs, agent_params={"threads": 1},
                                                                         **pix_kw),
        "the model alone, 1 thread": lambda: model_alone(pixel_path, a.pixel_envs, 128, 1, 40),
    }
    assert not set(cart) & set(pixel), "one name per measurement"
    results: Dict[str, List[Dict[str, float]]] = {k: [] for k in [*cart, *pixel]}
    load0 = os.getloadavg()
    for rep in range(a.reps):
        for name, f in [*cart.items(), *pixel.items()]:
            B.log(f"rep {rep + 1}/{a.reps}: {name}")
            results[name].append(f())

    import onnxruntime

    load = os.getloadavg()
    import rollway

    lines = B.machine_note(None, load0, load, packages=f"torch {torch.__version__}, onnxruntime {onnxruntime.__version__}")
    lines[-1] = f"- rollway: {rollway.__version__} (the Python package, in this process)"
    lines.append("")
    base = median(results["rollway, torch Python policy"], "sps")
    rows = []
    for name in cart:
        r = results[name]
        outside = median(r, "outside")
        rows.append([name, B.fmt_rate(median(r, "sps")), B.fmt_ratio(median(r, "sps"), base),
                     "n/a" if np.isnan(outside) else f"{100 * outside:.0f}%",
                     "n/a" if np.isnan(median(r, "per_call_us")) else f"{median(r, 'per_call_us'):.1f}"])
    lines.append(f"CartPole-v1, README MLP, {a.envs} envs, 1 worker, sync; medians of {a.reps}")
    lines.append("")
    lines += B.md_table(["", "steps/s", "vs torch policy in rollway", "wall time outside the model",
                         "model µs per call"], rows)
    rows = []
    names = list(pixel)
    for run, floor in [(names[0], names[1]), (names[2], names[3])]:
        sps, fl = median(results[run], "sps"), median(results[floor], "sps")
        rows.append([run, B.fmt_rate(sps), f"{median(results[run], 'per_call_us') / 1e3:.1f}", B.fmt_rate(fl),
                     f"{median(results[floor], 'per_call_us') / 1e3:.1f}", f"{100 * sps / fl:.0f}%"])
    lines += ["", f"PixelMine-v0 128×128, recurrent ResNet+LSTM, {a.pixel_envs} envs, 1 worker, sync; medians of {a.reps}",
              "", *B.md_table(["", "steps/s", "model ms per call (in the run)", "floor steps/s (model alone)",
                               "floor ms per call", "of the floor"], rows)]
    B.write_report("\n".join(lines) + "\n", a.out)


if __name__ == "__main__":
    main()
