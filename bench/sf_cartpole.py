"""Issue 32's Sample Factory peer: Sample Factory 2.1.1's PPO on Gymnasium CartPole-v1, set as
close to CleanRL's ppo.py (and so to rollway.examples.ppo_cartpole) as its options allow. Run in
Sample Factory's own venv (bench/sf_venv.sh: it pins gymnasium 0.29 and numpy 1.26), by
bench/ppo_cartpole.py's ``sf-serial`` / ``sf-async`` systems, or alone::

    $(bash bench/sf_venv.sh) bench/sf_cartpole.py --mode serial --seed 1

Prints one JSON line (Sample Factory logs to stderr). What differs from CleanRL's PPO, as
far as the options reach: the value loss is SF's ``coeff × mean(max(clipped, unclipped))``,
so 0.25 here equals CleanRL's 0.5 × 0.5; SF clips the ratio to [1/1.2, 1.2] (CleanRL
[0.8, 1.2]); observation and return normalisation are off; the learning rate decays
linearly to 0 (SF 2.1.1 has the scheduler but its flag's choices omit it, so it is set after
parsing); layers are initialised as CleanRL's (orthogonal, √2 hidden, 0.01 actor head, 1
critic head). ``async`` runs SF's APPO with its worker processes (its samplers run up to a few
updates ahead, which CleanRL never does); ``serial`` is synchronous. Steps/s is the median
over 2-s windows; the time to 475 counts from building the runner (startup included), as
the other systems' counts from their first line; peak RSS sums SF's process tree.
"""
import argparse
import json
import math
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections import deque

import gymnasium as gym
import psutil
import torch
import torch.nn as nn

from sample_factory.algo.runners.runner import AlgoObserver
from sample_factory.algo.utils.context import global_model_factory
from sample_factory.algo.utils.misc import EPISODIC, ExperimentStatus
from sample_factory.cfg.arguments import parse_full_cfg, parse_sf_args
from sample_factory.envs.env_utils import register_env
from sample_factory.model.actor_critic import default_make_actor_critic_func
from sample_factory.train import make_runner

ENV = "CartPole-v1"


class SeedOffset(gym.Wrapper):
    """SF seeds each env with its global env index; shift that by 1000*seed so different --seed values differ."""

    def __init__(self, env, offset):
        super().__init__(env)
        self.offset = offset

    def reset(self, *, seed=None, options=None):
        if seed is not None:
            seed = seed + self.offset
        return self.env.reset(seed=seed, options=options)


def make_cartpole(full_env_name, cfg=None, env_config=None, render_mode=None):
    env = gym.make(full_env_name, render_mode=render_mode)
    return SeedOffset(env, 1000 * int(cfg.seed or 0))


def make_actor_critic_cleanrl_init(cfg, obs_space, action_space):
    """SF applies one orthogonal gain to every layer; re-init like CleanRL: sqrt(2) hidden, 0.01 actor head, 1 critic head."""
    model = default_make_actor_critic_func(cfg, obs_space, action_space)
    # SF's MLP encoders are TorchScript modules (not nn.Linear instances), so go through the parameters
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("weight") and p.dim() == 2:
                nn.init.orthogonal_(p, math.sqrt(2))
            elif name.endswith("bias"):
                nn.init.zeros_(p)
    nn.init.orthogonal_(model.critic_linear.weight, 1.0)
    nn.init.orthogonal_(model.action_parameterization.distribution_linear.weight, 0.01)
    return model


def register_components():
    register_env(ENV, make_cartpole)
    global_model_factory().register_actor_critic_factory(make_actor_critic_cleanrl_init)


# module level so that spawned SF worker processes (they re-import __main__) see the registrations too
register_components()


class Probe(AlgoObserver):
    def __init__(self, t0, window, threshold):
        self.t0 = t0
        self.rets = deque(maxlen=window)
        self.threshold = threshold
        self.episodes = 0
        self.solved_t = None
        self.solved_steps = None
        self.samples = []  # (time, learner env steps)
        self.first_train_t = None

    def on_training_step(self, runner, it):
        now = time.perf_counter()
        if self.first_train_t is None:
            self.first_train_t = now - self.t0
        self.samples.append((now, sum(runner.env_steps.values())))

    def episodic(self, runner, msg, policy_id):
        r = msg[EPISODIC]["reward"]
        vals = list(r) if hasattr(r, "__len__") else [r]
        for v in vals:
            self.rets.append(float(v))
            self.episodes += 1
        if (
            self.solved_t is None
            and len(self.rets) == self.rets.maxlen
            and sum(self.rets) / len(self.rets) >= self.threshold
        ):
            self.solved_t = time.perf_counter() - self.t0
            self.solved_steps = sum(runner.env_steps.values())

    def median_sps(self, min_dt=2.0):
        rates, (ta, sa) = [], (self.samples[0] if self.samples else (0, 0))
        for t, s in self.samples[1:]:
            if t - ta >= min_dt:
                rates.append((s - sa) / (t - ta))
                ta, sa = t, s
        return statistics.median(rates) if rates else float("nan")


class RssSampler(threading.Thread):
    """Peak of the summed RSS of this process and all its descendants (SF async spawns several processes)."""

    def __init__(self, interval=0.25):
        super().__init__(daemon=True)
        self.interval, self.peak, self.stop_flag = interval, 0, False

    def run(self):
        me = psutil.Process()
        while not self.stop_flag:
            total = 0
            for p in [me] + me.children(recursive=True):
                try:
                    total += p.memory_info().rss
                except psutil.Error:
                    pass
            self.peak = max(self.peak, total)
            time.sleep(self.interval)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["serial", "async"], default="serial")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=1, help="rollout worker processes (async mode)")
    ap.add_argument("--envs", type=int, default=8, help="total envs, split over workers")
    ap.add_argument("--splits", type=int, default=None, help="worker_num_splits (default 1 serial, 2 async)")
    ap.add_argument("--steps", type=int, default=128, help="steps per env per rollout (CleanRL's num_steps)")
    ap.add_argument("--steps-total", type=int, default=500_000)
    ap.add_argument("--window", type=int, default=20)
    ap.add_argument("--threshold", type=float, default=475.0)
    ap.add_argument("--train_dir", default=None, help="SF's output folder (default: a temporary one, removed)")
    args, extra = ap.parse_known_args()

    torch.set_num_threads(1)  # SF's serial runner does not limit threads; its worker processes use 1
    serial = args.mode == "serial"
    splits = args.splits or (1 if serial else 2)
    workers = 1 if serial else args.workers
    assert args.envs % workers == 0
    train_dir = args.train_dir or tempfile.mkdtemp(prefix="rollway-sf-")
    exp = f"cartpole_{args.mode}_w{workers}_s{args.seed}"
    sf_argv = [
        f"--env={ENV}", f"--experiment={exp}", f"--train_dir={train_dir}", "--restart_behavior=overwrite",
        "--algo=APPO", "--device=cpu", f"--seed={args.seed}",
        f"--serial_mode={serial}", f"--async_rl={not serial}",
        f"--num_workers={workers}", f"--num_envs_per_worker={args.envs // workers}",
        f"--worker_num_splits={splits}", "--policy_workers_per_policy=1",
        # CleanRL: 8 envs x 128 steps = 1024 per update, 4 epochs x 4 minibatches of 256
        f"--rollout={args.steps}", f"--batch_size={args.envs * args.steps // 4}", "--num_batches_per_epoch=4", "--num_epochs=4",
        "--shuffle_minibatches=True", "--recurrence=1", "--use_rnn=False",
        "--learning_rate=2.5e-4", "--lr_schedule=constant", "--adam_eps=1e-5",
        "--gamma=0.99", "--gae_lambda=0.95", "--ppo_clip_ratio=0.2", "--ppo_clip_value=0.2",
        "--exploration_loss=entropy", "--exploration_loss_coeff=0.01",
        # CleanRL: loss = ... + 0.5 * (0.5 * mean(max(v_unclipped, v_clipped))) -> effective 0.25 on the squared error
        "--value_loss_coeff=0.25", "--max_grad_norm=0.5",
        "--with_vtrace=False", "--value_bootstrap=False",
        "--normalize_input=False", "--normalize_returns=False", "--reward_scale=1.0",
        "--encoder_mlp_layers", "64", "64", "--nonlinearity=tanh", "--actor_critic_share_weights=False",
        "--policy_initialization=orthogonal",
        f"--train_for_env_steps={args.steps_total}", f"--stats_avg={args.window}",
        "--save_every_sec=100000", "--save_best_after=100000000", "--save_best_every_sec=100000",
        "--keep_checkpoints=1", "--set_workers_cpu_affinity=False", "--decorrelate_envs_on_one_worker=False",
        "--log_to_file=False", "--experiment_summaries_interval=20",
    ] + extra
    parser, _ = parse_sf_args(argv=sf_argv)
    cfg = parse_full_cfg(parser, sf_argv)
    # SF 2.1.1 implements LinearDecayScheduler (lr -> 0 over train_for_env_steps, like CleanRL's anneal_lr) but the
    # argparse choices omit it, so set it after parsing unless the user asked for a schedule explicitly
    if not any(a.startswith("--lr_schedule") for a in extra):
        cfg.lr_schedule = "linear_decay"

    rss = RssSampler()
    rss.start()
    t0 = time.perf_counter()
    cfg, runner = make_runner(cfg)
    probe = Probe(t0, args.window, args.threshold)
    runner.register_observer(probe)
    runner.register_episodic_stats_handler(probe.episodic)
    status = runner.init()
    if status == ExperimentStatus.SUCCESS:
        status = runner.run()
    wall = time.perf_counter() - t0
    rss.stop_flag = True
    rss.join()
    steps = sum(runner.env_steps.values())
    if args.train_dir is None:
        shutil.rmtree(train_dir, ignore_errors=True)
    name = "sf-serial" if serial else "sf-async"
    out = dict(
        system=name, seed=args.seed, steps_per_s=round(probe.median_sps(), 1),
        mean_steps_per_s=round(steps / wall, 1), solved_s=None if probe.solved_t is None else round(probe.solved_t, 2),
        outside_share=None,  # its forward and update are inside SF's processes, not timed here
        steps_to_475=probe.solved_steps, solved=probe.solved_t is not None, steps=steps, wall_s=round(wall, 2),
        startup_s=None if probe.first_train_t is None else round(probe.first_train_t, 2),
        episodes=probe.episodes, final_mean_return=round(sum(probe.rets) / max(1, len(probe.rets)), 1),
        peak_rss_mb=round(rss.peak / 2**20, 1), status=int(status),
    )
    print(json.dumps(out), flush=True)
    return 0 if status == ExperimentStatus.SUCCESS else 1


if __name__ == "__main__":
    sys.exit(main())
