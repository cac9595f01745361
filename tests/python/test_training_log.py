"""Issue 47: what a training loop sees of its rollout while it runs. The per-fragment stats
written as TensorBoard scalars (``log_dir=``) are read back with TensorBoard's own reader
(which checks every record's CRC), and the progress line (``progress=True``) says what it
should."""

import os
import subprocess
import sys

import numpy as np
import pytest

import rollway
from conftest import chromium

pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402


def test_issue47_fragment_stats_are_tensorboard_scalars_and_a_progress_line(tmp_path, capfd):
    frags = []
    with rollway.Rollout("CartPole-v1", "random", num_envs=4, steps_per_fragment=64, log_dir=tmp_path / "tb", progress=True) as r:
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
        rollway.Rollout("CartPole-v1", "random", num_envs=2, steps_per_fragment=8, log_dir=tmp_path / "file" / "tb")


def test_issue47_the_report_of_a_recorded_rollout_draws_it_by_policy_version(tmp_path):
    out = tmp_path / "replay"
    with rollway.Rollout("CartPole-v1", "random", num_envs=4, steps_per_fragment=64, out=out, commit_every=0.05) as r:
        for _ in range(8):
            r.collect()
            r.publish()
    ds = rollway.Dataset(out)
    newest = sorted({int(ds[k].policy_version.max()) for k in range(len(ds))})
    assert len(newest) >= 4, "episodes ended under several versions"
    html = open(ds.report(tmp_path / "report.html")).read()
    section = html.split('id="training"')[1].split("</section>")[0]
    for title in ("Return by policy version (mean, ± 1 std)", "Episode length by policy version",
                  "Episodes by policy version", "Steps by policy version"):
        assert title in section, title
    assert f"{newest[0]} – {newest[-1]} ({len(newest)} acted in a finished episode)" in section
    # The learning curve has a point per version: three lines (mean, ± 1 std) of len(newest) points.
    curve = section.split("Return by policy version", 1)[1].split("</svg>")[0]
    assert [len(p.split('points="')[1].split('"')[0].split()) for p in curve.split("<polyline")[1:]] == [len(newest)] * 3
    assert "fragments, lag max, dropped steps, env faults" in section, "the rollout's stored summary"
    rendered_in_chromium(tmp_path / "report.html")
    # A dataset no rollout recorded has no training section.
    rollway.run(env="CartPole-v1", agent="random", episodes=5, out=tmp_path / "plain", progress=False)
    plain = open(rollway.Dataset(tmp_path / "plain").report(tmp_path / "plain.html")).read()
    assert 'id="training"' not in plain


def rendered_in_chromium(page):
    """The page loads in headless Chromium (as the Rust report tests load theirs) without a
    script error, its training plots in the DOM."""
    chrome = chromium()
    if chrome is None:
        return
    profile = os.path.join(os.path.dirname(page), "chromium-profile")
    o = subprocess.run([chrome, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                        "--disable-background-networking", "--enable-logging=stderr", "--v=0",
                        "--virtual-time-budget=5000", f"--user-data-dir={profile}", "--dump-dom", f"file://{page}"],
                       capture_output=True, text=True, timeout=120)
    errors = [line for line in o.stderr.splitlines() if "Uncaught" in line or "CONSOLE" in line]
    assert not errors, errors
    assert o.stdout.count('aria-label="Return by policy version') == 1 and "Steps by policy version" in o.stdout


def test_issue47_the_report_draws_a_resumed_run_by_wall_time_with_its_lives_and_clips(tmp_path):
    """Two lives of a pixel learner's replay (the first killed: no summary), drawn by wall time,
    each life in the table, and clips of the earliest and latest versions' episodes."""
    out = tmp_path / "replay"
    params = {"size": 32, "max_steps": 20}
    script = (f"import rollway, os\n"
              f"r = rollway.Rollout('PixelMine-v0', 'random', num_envs=2, steps_per_fragment=30, env_params={params!r}, out={str(out)!r},"
              f" commit_every=0.05)\n"
              f"for _ in range(4):\n    r.collect(); r.publish()\n"
              # Dies without close (no summary) once the early versions' episodes are committed.
              f"import time; t0 = time.monotonic()\n"
              f"def early():\n"
              f"    try:\n        ds = rollway.Dataset({str(out)!r})\n    except rollway.RollwayError:\n        return False\n"
              f"    return any(int(ds[k].policy_version.min()) <= 1 for k in range(len(ds)))\n"
              f"while not early() and time.monotonic() - t0 < 60:\n    time.sleep(0.05)\n"
              f"r._h.collect(); os._exit(0)\n")
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    with rollway.Rollout("PixelMine-v0", "random", num_envs=2, steps_per_fragment=30, env_params=params, out=out, commit_every=0.05,
                         resume=True, version=3) as r:
        for _ in range(4):
            r.collect()
            r.publish()
    ds = rollway.Dataset(out)
    html = open(ds.report(tmp_path / "report.html")).read()
    for run in (0, 1):  # the Runs table says where each life's ids start (both lives' runs share first_episode_id)
        ids = [e["id"] for e in ds.episodes if e["run"] == run]
        assert f"<td>{len(ids)}, ids {min(ids)} – {max(ids)}</td>" in html, run
    assert min(e["id"] for e in ds.episodes if e["run"] == 1) > 0
    section = html.split('id="training-time"')[1].split("</section>")[0]
    assert "killed (or still running): no summary" in section and "closed cleanly" in section
    assert "<td>3 – 6</td>" in section, "the second life's versions"
    for title in ("Return by wall time (mean, ± 1 std)", "Throughput over time (steps recorded)"):
        assert title in section, title
    clips = section.split("earliest policy versions, then the latest")[1]
    captions = [c.split("</figcaption>")[0] for c in clips.split("<figcaption>")[1:]]
    versions = [int(c.split("policy version ")[1].split(" ")[0]) for c in captions]
    assert len(versions) == 4 and versions == sorted(versions) and versions[0] <= 1 and versions[-1] == 6, captions
    assert clips.count("<video") == 4


def _killed_then_resumed(tmp_path):
    """A rollout logging to ``tb`` killed after 6 fragments of 256 steps, once some of their episodes are
    committed (a moment placed by progress: on a loaded machine a fixed pause had let none commit), then
    resumed for 3 more; the log directory and the step the resume started at."""
    out, tb = tmp_path / "replay", tmp_path / "tb"
    script = (f"import rollway, os, time\n"
              f"r = rollway.Rollout('CartPole-v1', 'random', num_envs=4, steps_per_fragment=64, out={str(out)!r}, log_dir={str(tb)!r},"
              f" commit_every=0.05)\n"
              f"for _ in range(6):\n    r.collect(); r.publish(); time.sleep(0.1)\n"
              f"deadline = time.monotonic() + 60\n"
              f"while time.monotonic() < deadline:\n"
              f"    try:\n        if len(rollway.Dataset({str(out)!r})) > 0:\n            break\n"
              f"    except rollway.RollwayError:\n        pass\n"
              f"    time.sleep(0.02)\n"
              f"os._exit(0)\n")  # dies without close
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    with rollway.Rollout("CartPole-v1", "random", num_envs=4, steps_per_fragment=64, out=out, log_dir=tb, commit_every=0.05,
                         resume=True, version=6) as r:
        start = r.resumed["steps"]
        for _ in range(3):
            r.collect()
            r.publish()
    return tb, start


def test_issue54_a_resumed_runs_log_never_steps_back(tmp_path):
    """A killed life logged steps past its last commit; the resumed life starts at the committed
    steps, and its event file's purge marker makes TensorBoard's loader drop the killed tail."""
    tb, start = _killed_then_resumed(tmp_path)
    assert start < 6 * 256, "the killed life logged past its commits (episodes in flight are not committed)"
    acc = EventAccumulator(str(tb))
    acc.Reload()
    steps = [e.step for e in acc.Scalars("rollout/policy_version")]
    assert steps == sorted(steps) and len(set(steps)) == len(steps), f"never back: {steps}"
    kept = [s for s in steps if s < start]
    assert kept == [256 * (i + 1) for i in range(len(kept))], "the killed life's committed part stays"
    assert steps[len(kept):] == [start + 256 * (i + 1) for i in range(3)], "then the resumed life"


def _tensorboard_steps(logdir, tag, last):
    """The steps of ``tag`` as plain ``tensorboard --logdir`` serves them (its Rust fast loader,
    tensorboard-data-server), over its HTTP API, once it has loaded the point at step ``last``
    (the files are read in order, so that one comes last)."""
    import json
    import re
    import time
    import urllib.request

    tb = subprocess.Popen([sys.executable, "-m", "tensorboard.main", "--logdir", str(logdir), "--host", "127.0.0.1", "--port", "0",
                           "--load_fast", "true", "--reload_interval", "1"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)
    try:
        seen = ""
        while (m := re.search(r"http://127\.0\.0\.1:(\d+)/", seen)) is None:
            line = tb.stdout.readline()
            assert line, f"tensorboard ended: {seen}"
            seen += line
        url = f"http://127.0.0.1:{m.group(1)}/data/plugin/scalars/scalars?run=.&tag={tag}"
        deadline = time.monotonic() + 60
        while True:
            try:
                steps = [int(step) for _, step, _ in json.load(urllib.request.urlopen(url, timeout=10))]
                if last in steps:
                    return steps
            except OSError:  # not loaded yet (400) or not listening yet
                steps = None
            assert time.monotonic() < deadline, f"tensorboard served {tag} as {steps}, never up to step {last}"
            time.sleep(0.5)
    finally:
        tb.kill()
        tb.wait()


def test_issue72_plain_tensorboard_shows_no_point_of_the_killed_tail_either(tmp_path):
    """TensorBoard's fast loader ignores the purge marker (it drops a series' points only from the
    step of a new point of that series on): rollway cuts the killed life's tail from its own event
    files at resume, so every loader shows the same curve."""
    tb, start = _killed_then_resumed(tmp_path)
    # The killed life logged a point at each 256 steps up to 1536; with some committed, one lies in
    # [start, start + 256), before the resumed life's first point: the fast loader kept it.
    assert 0 < start <= 6 * 256, start
    acc = EventAccumulator(str(tb))
    acc.Reload()
    python = [e.step for e in acc.Scalars("rollout/policy_version")]
    assert [s for s in python if s >= start] == [start + 256 * (i + 1) for i in range(3)], python
    assert _tensorboard_steps(tb, "rollout/policy_version", python[-1]) == python
