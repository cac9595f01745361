"""Issue 47: what a training loop sees of its rollout while it runs. The per-fragment stats
written as TensorBoard scalars (``log_dir=``) are read back with TensorBoard's own reader
(which checks every record's CRC), and the progress line (``progress=True``) says what it
should."""

import numpy as np
import pytest

import rollway

pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402


def test_issue47_fragment_stats_are_tensorboard_scalars_and_a_progress_line(tmp_path, capfd):
    frags = []
    with rollway.Rollout("CartPole-v1", "random", num_envs=4, steps=64, log_dir=tmp_path / "tb", progress=True) as r:
        for _ in range(6):
            frags.append(r.collect())
            r.publish()
    acc = EventAccumulator(str(tmp_path / "tb"))
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    assert {"charts/episodic_return", "charts/episodic_length", "rollout/steps_per_s", "rollout/lag_mean",
            "rollout/dropped_steps", "rollout/env_faults", "rollout/policy_version", "rollout/episodes"} <= tags
    sps = acc.Scalars("rollout/steps_per_s")
    assert [e.step for e in sps] == [256 * (i + 1) for i in range(6)], "x axis: env steps delivered"
    np.testing.assert_allclose([e.value for e in sps], [f.stats["steps_per_s"] for f in frags], rtol=1e-6)
    assert [e.value for e in acc.Scalars("rollout/policy_version")] == [0, 1, 2, 3, 4, 5]
    ended = [(256 * (i + 1), f.finished["return"].mean()) for i, f in enumerate(frags) if len(f.finished["return"])]
    got = [(e.step, e.value) for e in acc.Scalars("charts/episodic_return")]
    assert [s for s, _ in got] == [s for s, _ in ended]
    np.testing.assert_allclose([v for _, v in got], [v for _, v in ended], rtol=1e-6)
    episodes = sum(len(f.finished["return"]) for f in frags)
    assert acc.Scalars("rollout/episodes")[-1].value == episodes
    err = capfd.readouterr().err
    assert "rollway: 256 steps" in err and "episodes, return" in err and "version 0" in err, err


def test_issue47_an_unwritable_log_dir_is_an_input_error(tmp_path):
    (tmp_path / "file").write_text("not a directory")
    with pytest.raises(rollway.InputError, match="log_dir="):
        rollway.Rollout("CartPole-v1", "random", num_envs=2, steps=8, log_dir=tmp_path / "file" / "tb")
