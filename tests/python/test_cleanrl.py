"""Issue 55: CleanRL's own Atari PPO script, as PyPI's ``cleanrl`` package ships it, trained on
rollway's Atari envs by changing the line that makes its envs.

PyPI's newest ``cleanrl`` is 0.4.8; its ``cleanrl/ppo_atari.py`` (CleanRL's Nature-CNN PPO, with
its own copies of the DeepMind wrappers) was written for gym 0.18 and Stable-Baselines3's
``DummyVecEnv``. ``EDITS`` are every change made to it, each checked to apply exactly where
expected: the envs line (now ``rollway.sb3.VecEnv`` of ``atari:`` with the settings its wrappers
had: no-ops, frame skip 4, a life loss ending the episode, FIRE at resets, clipped rewards, a
stack of 4), its import, and what today's Gymnasium requires of a gym script: ``gym`` is
``gymnasium``, and ``Monitor`` (a gym wrapper Gymnasium dropped; only ``--capture-video`` used it)
and ``pybullet_envs`` (PyBullet's envs, which the Atari script never makes) are gone. The
script's loop, update, ``VecPyTorch`` wrapper and logging run as CleanRL wrote them."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ale_py")
pytest.importorskip("stable_baselines3")
pytest.importorskip("torch")
pytest.importorskip("cv2")  # the script imports OpenCV for its own (here unused) wrappers

ENVS_LINE = ("envs = VecPyTorch(DummyVecEnv([make_env(args.gym_id, args.seed+i, i) "
             "for i in range(args.num_envs)]), device)")
EDITS = [
    # (what, the script's text, ours, how many times it occurs)
    ("the envs", ENVS_LINE,
     "import rollway.sb3\n"
     "envs = VecPyTorch(rollway.sb3.VecEnv('atari:' + args.gym_id, args.num_envs, seed=args.seed, "
     "episodic_life=True, fire_reset=True, reward_clip=True), device)", 1),
    ("gym is gymnasium", "import gym\n", "import gymnasium as gym\n", 2),
    ("gym is gymnasium", "from gym import spaces", "from gymnasium import spaces", 1),
    ("gym is gymnasium", "from gym.spaces import", "from gymnasium.spaces import", 1),
    ("Monitor is gone", "from gym.wrappers import TimeLimit, Monitor", "from gymnasium.wrappers import TimeLimit", 1),
    ("PyBullet is not needed", "import pybullet_envs\n", "", 1),
]


def cleanrl_script():
    spec = importlib.util.find_spec("cleanrl")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("cleanrl is not installed (tests/python/requirements-nodeps.txt)")
    return Path(list(spec.submodule_search_locations)[0]) / "ppo_atari.py"


def edited(text):
    for what, theirs, ours, times in EDITS:
        assert text.count(theirs) == times, f"{what}: {theirs!r} occurs {text.count(theirs)} times, not {times}"
        text = text.replace(theirs, ours)
    return text


@pytest.mark.heavy
def test_issue55_cleanrls_own_ppo_atari_script_trains_on_rollway(tmp_path):
    """The script runs twice at once with ``--seed 1`` (its seeds reach each env as ``seed + i``): both
    print the same episodes."""
    text = edited(cleanrl_script().read_text())
    # Two updates of 2 envs × 128 steps on Breakout without sticky actions (CleanRL's default id).
    args = ["--gym-id", "BreakoutNoFrameskip-v4", "--total-timesteps", "512", "--num-envs", "2", "--num-steps", "128",
            "--cuda", "False", "--seed", "1"]
    runs = []
    for twin in ("first", "second"):
        (tmp_path / twin).mkdir()
        (tmp_path / twin / "ppo_atari.py").write_text(text)
        runs.append(subprocess.Popen([sys.executable, "ppo_atari.py", *args], cwd=tmp_path / twin, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=600) for p in runs]
    for p, (_, err) in zip(runs, outs):
        assert p.returncode == 0, err[-3000:]
    # Its own episode printout, from the episode info rollway.sb3 gives as SB3's Monitor does.
    episodes = [[line for line in out.splitlines() if "episode_reward=" in line] for out, _ in outs]
    assert episodes[0], outs[0][0][-2000:]
    assert episodes[0] == episodes[1], "the same seed, the same episodes"
    tmp_path = tmp_path / "first"

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    (run,) = (tmp_path / "runs").iterdir()
    log = EventAccumulator(str(run))
    log.Reload()
    losses = log.Scalars("losses/value_loss")
    assert [e.step for e in losses] == [256, 512], "one update per 2 × 128 steps"
    rewards = [e.value for e in log.Scalars("charts/episode_reward")]
    assert rewards and all(r >= 0 and r == int(r) for r in rewards), "a whole game's raw points (episodic_life)"
