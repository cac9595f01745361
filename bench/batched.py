"""Issue 69: JAX envs stepped as a batch, env steps/s, side by side in one run.

- **own step** (the env's raw rate, as PureJaxRL runs it): the env's own auto-resetting step (gymnax's
  ``step``: ``step_env`` and ``reset_env`` for every env, the reset kept where the episode ended),
  jitted and vmapped over N envs, random actions drawn before the timed loop;
- **step_env only** (the ceiling of any stepping: no reset at all, episodes run on past their end);
- **own step + the fragment's copy**: the own step, each step's observations also copied into a
  ``[T + 1, N]`` buffer (allocated once), as any rollout must keep them for its fragment: the floor
  of what a Rollout adds to the raw rate, for envs whose step costs about a copy of its observations;
- **rollway Rollout**: ``rollway.Rollout("KIND:NAME", "random", num_envs=N, workers=1,
  host="inline")``, fragments of 32 steps (one block of N: one jitted call a round, resets only for
  the envs that start an episode);
- **rollway Rollout, JaxPolicy**: ``rollway.Rollout("KIND:NAME", rollway.JaxPolicy.uniform(), num_envs=N)``:
  random actions drawn in JAX, env and policy stepped T steps of every env in one jitted ``lax.scan``
  (``rollway.batched_scan``), and the same recording every episode;
- **JaxPolicy's scan alone**: that scan (``rollway.batched_scan.JaxScan``) called in a loop with no
  engine, its outputs brought to the host as the rows rollway reads: the ceiling of that design;
- **rollway recording**: the same Rollout recording every episode into a dataset (``out=``); a pixel
  env (a name with ``Pixels``) runs with ``env_params={"pixels": "uint8"}``, its frames recorded as
  H.264 video (``frame_media="h264"``);
- **the dataset writer alone**: rows of the env's size, in episodes of its mean length, committed by
  rollway's writer with no env (``crates/store/examples/writer_ceiling.rs``): what recording can reach
  (Parquet rows: not measured for a pixel env, whose frames go to video);
- **Minari DataCollector**: Minari's own recorder on one env of the same kind (the env's jitted
  ``reset_env`` / ``step_env`` behind a Gymnasium env), the way a Gymnasium user records it today,
  its ``create_dataset`` included.

Each figure in a fresh process after a warm-up long enough for XLA to compile every shape the
system uses (a Craftax world's reset compiles for tens of seconds), the median of the reps.

    bench/run_batched.sh [--envs gymnax:Breakout-MinAtar=256,1024 craftax:Craftax-Classic-Symbolic-v1=64,256] [--reps 2] [--seconds 10] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from typing import Optional

from benchlib import fmt_rate, fresh_process_rate, log, machine_note, md_table, module_versions, write_report, writer_ceiling

T = 32
# Warm-up seconds per env kind: long enough that every reset batch size the run meets is compiled.
WARMUP = {"gymnax": 20.0, "craftax": 60.0, "pixels": 150.0}


def pixels(env: str) -> bool:
    return "Pixels" in env


def warmup(env: str) -> float:
    return WARMUP["pixels"] if pixels(env) else WARMUP[env.split(":")[0]]


def sim(env: str):
    from rollway.batched import make_sim

    kind, _, name = env.partition(":")
    return make_sim(kind, name, {})


def own_rate(env: str, n: int, seconds: float, reset_every_step: bool = True, keep: bool = False) -> float:
    import jax
    import numpy as np

    e, params = sim(env)

    def step(key, state, action):
        k_step, k_reset = jax.random.split(key)
        obs, new, reward, done, _ = e.step_env(k_step, state, action, params)
        if not reset_every_step:
            return obs, new
        obs_re, state_re = e.reset_env(k_reset, params)
        return (jax.lax.select(done, obs_re, obs), jax.tree.map(lambda r, s: jax.lax.select(done, r, s), state_re, new))

    vstep = jax.jit(jax.vmap(step))
    keys = jax.random.split(jax.random.PRNGKey(0), n)
    _, state = jax.jit(jax.vmap(e.reset_env, in_axes=(0, None)))(keys, params)
    rng = np.random.default_rng(0)
    na = int(e.action_space(params).n)
    actions = [jax.numpy.asarray(rng.integers(0, na, n), jax.numpy.int32) for _ in range(8)]
    keysets = [jax.random.split(jax.random.PRNGKey(i), n) for i in range(8)]
    i = [0]
    fragment = None
    if keep:  # the fragment's buffer, shaped as the step's observations (traced, not run)
        obs = jax.eval_shape(lambda: vstep(keysets[0], state, actions[0]))[0]
        fragment = np.empty((T + 1, *obs.shape), obs.dtype)

    def one() -> None:
        nonlocal state
        i[0] += 1
        obs, state = vstep(keysets[i[0] % 8], state, actions[i[0] % 8])
        o = np.asarray(obs)  # as rollway does: the observations reach the host
        if fragment is not None:
            fragment[i[0] % (T + 1)] = o

    return timed(one, n, seconds, warm_seconds=30.0 if pixels(env) else 5.0)


def timed(step, n: int, seconds: float, warm_seconds: float, warm_calls: int = 3) -> float:
    # At least a few calls: XLA compiles the first call, and again the second (its state, now the
    # call's own output, differs in weak types), each for seconds on Craftax.
    t0, calls = time.perf_counter(), 0
    while time.perf_counter() - t0 < warm_seconds or calls < warm_calls:
        step()
        calls += 1
    k, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        step()
        k += 1
    return k * n / (time.perf_counter() - t0)


def rollway_rate(env: str, n: int, seconds: float, record: bool = False, scan: bool = False) -> float:
    import rollway

    out = tempfile.mkdtemp(prefix="rollway-batched-") if record else None
    frames = {"env_params": {"pixels": "uint8"}, "frame_media": "h264" if record else None} if pixels(env) else {}
    try:
        agent, where = (rollway.JaxPolicy.uniform(), {}) if scan else ("random", {"workers": 1, "host": "inline"})
        with rollway.Rollout(env, agent, num_envs=n, steps_per_fragment=T, seed=1, **where,
                             out=None if out is None else os.path.join(out, "ds"), **frames) as r:
            return timed(r.collect, n * T, seconds, warm_seconds=warmup(env))
    finally:
        if out is not None:
            shutil.rmtree(out, ignore_errors=True)


def scan_rate(env: str, n: int, seconds: float) -> float:
    """The JaxPolicy's scan alone (``rollway.batched_scan.JaxScan``: env and random actions in one
    jitted ``lax.scan``, its outputs brought to the host as the rows rollway reads, final
    observations and infos included), with no engine: what a JaxPolicy Rollout can reach."""
    import numpy as np

    from rollway.batched import JaxSim
    from rollway.batched_scan import JaxPolicy, JaxScan

    kind, _, name = env.partition(":")
    scan = JaxScan(JaxSim(kind, name, {}), JaxPolicy.uniform(), n)
    scan.begin(np.arange(n, dtype=np.uint64).tobytes())
    seeds = np.arange(T * n, dtype=np.uint64).tobytes()
    return timed(lambda: scan.steps(T, seeds, True), n * T, seconds, warm_seconds=warmup(env))


def writer_rate(env: str, n: int, seconds: float) -> Optional[float]:
    """The dataset writer alone, for this env's rows and episode length (no env): env steps/s;
    ``None`` for a pixel env (its frames go to video, not to the Parquet rows this measures)."""
    import rollway

    if pixels(env):
        return None
    with rollway.Rollout(env, "random", num_envs=n, steps_per_fragment=T, seed=1, workers=1, host="inline") as r:
        return writer_ceiling(r, seconds)


def minari_rate(env: str, n: int, seconds: float) -> float:
    """Minari's DataCollector on one env (N does not apply): steps/s, its create_dataset included."""
    import gymnasium as gym
    import jax
    import minari
    import numpy as np
    from rollway.batched import gymnasium_space

    e, params = sim(env)
    reset = jax.jit(lambda k: e.reset_env(k, params))
    step = jax.jit(lambda k, s, a: e.step_env(k, s, a, params))

    class OneEnv(gym.Env):  # type: ignore[type-arg]
        observation_space = gymnasium_space(e.observation_space(params))
        action_space = gymnasium_space(e.action_space(params))

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            self.key = jax.random.PRNGKey(0 if seed is None else seed % 2**31)
            self.key, k = jax.random.split(self.key)
            obs, self.state = reset(k)
            return np.asarray(obs), {}

        def step(self, action):
            self.key, k = jax.random.split(self.key)
            obs, self.state, reward, done, _ = step(k, self.state, int(action))
            return np.asarray(obs), float(reward), bool(done), False, {}

    root = tempfile.mkdtemp(prefix="minari-batched-")
    os.environ["MINARI_DATASETS_PATH"] = root
    try:
        col = minari.DataCollector(OneEnv(), record_infos=False)
        col.reset(seed=0)
        col.action_space.seed(0)
        for _ in range(50):  # compiles
            _, _, te, tr, _ = col.step(col.action_space.sample())
            if te or tr:
                col.reset()
        steps, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            _, _, te, tr, _ = col.step(col.action_space.sample())
            steps += 1
            if te or tr:
                col.reset()
        col.create_dataset(dataset_id="bench/batched-v0", algorithm_name="random")
        rate = steps / (time.perf_counter() - t0)
        col.close()
        return rate
    finally:
        shutil.rmtree(root, ignore_errors=True)


SYSTEMS = {
    "own step (auto-reset, jit + vmap): the raw rate": own_rate,
    "step_env only (no resets: the ceiling)": lambda env, n, s: own_rate(env, n, s, reset_every_step=False),
    "own step + the fragment's copy of its observations": lambda env, n, s: own_rate(env, n, s, keep=True),
    "rollway Rollout": rollway_rate,
    "rollway Rollout, recording every episode": lambda env, n, s: rollway_rate(env, n, s, record=True),
    "JaxPolicy's scan alone (env + random actions in one jitted lax.scan, rows to the host; no engine)": scan_rate,
    "rollway Rollout, JaxPolicy (one jitted scan a fragment)": lambda env, n, s: rollway_rate(env, n, s, scan=True),
    "rollway Rollout, JaxPolicy, recording every episode": lambda env, n, s: rollway_rate(env, n, s, record=True, scan=True),
    "dataset writer alone (this env's rows, no env: recording's cap)": writer_rate,
    "Minari DataCollector (one env)": minari_rate,
}
BASE = "rollway Rollout"
RAW = "own step (auto-reset, jit + vmap): the raw rate"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--envs", nargs="+", default=["gymnax:Breakout-MinAtar=256,1024",
                                                  "craftax:Craftax-Classic-Symbolic-v1=64,256"])
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--out")
    p.add_argument("--systems", nargs="+", help="only the systems whose names start with these (the raw rate and "
                   "the Rollout are always run: the notes are ratios of them)")
    p.add_argument("--one", help=argparse.SUPPRESS)
    p.add_argument("--n", type=int, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.one:
        env, system = a.one.split("|", 1)
        print(json.dumps(SYSTEMS[system](env, a.n, a.seconds)))
        return
    keep = a.systems or list(SYSTEMS)
    systems = [s for s in SYSTEMS if s in (RAW, BASE) or any(s.startswith(k) for k in keep)]
    load_start = os.getloadavg()
    sections = []
    for spec in a.envs:
        env, _, counts = spec.partition("=")
        ns = [int(x) for x in counts.split(",")]
        med = {}
        for n in ns:
            rates: dict = {s: [] for s in systems}
            for rep in range(a.reps):
                for s in systems:
                    if s.startswith("Minari") and n != ns[0]:
                        continue  # one env: measured once per env kind
                    rates[s].append(fresh_process_rate(__file__, f"{env}|{s}", n, a.seconds))
                    log(f"{env} N={n} rep {rep + 1}: {s} {fmt_rate(rates[s][-1])} steps/s")
            med[n] = {s: (statistics.median(v) if None not in v else None) for s, v in rates.items() if v}
        minari = "Minari DataCollector (one env)"
        for n in ns[1:]:
            if minari in med[ns[0]]:
                med[n][minari] = med[ns[0]][minari]
        rows = [[s, *(f"{fmt_rate(med[n][s])} ({med[n][s] / med[n][RAW]:.2f}×)" if med[n].get(s) else "–" for n in ns)]
                for s in systems]
        sections += [f"**{env}**: env steps/s, median of {a.reps}; in brackets that system / the raw rate.", "",
                     *md_table(["", *(f"N = {n}" for n in ns)], rows, "l" + "r" * len(ns)), ""]
    packages = ", ".join(f"{m} {v}" for m, v in module_versions(
        ["rollway", "jax", "jaxlib", "gymnax", "craftax", "minari", "numpy"]).items())
    text = "\n".join([f"JAX envs, random actions: env steps/s ({a.seconds:.0f} s each, after a warm-up).", "",
                      *machine_note(None, load_start, os.getloadavg(), packages=packages), "", *sections])
    write_report(text, a.out)


if __name__ == "__main__":
    main()
