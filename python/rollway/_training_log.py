"""What a training loop sees of its rollout while it runs (issue 47): a progress line
(``progress=True``) and the per-fragment stats as TensorBoard scalars (``log_dir=``), the
convention of CleanRL, SB3 and Sample Factory (``tensorboard --logdir DIR``).

The x axis is env steps delivered so far (a resumed rollout's goes on from the steps its
replay holds: what the killed life logged past its last commit is cut out of rollway's earlier
event files, and the new file starts with TensorBoard's purge marker at that step, as
``SummaryWriter(purge_step=)`` writes it, for a viewer already running; so the curves never step
back, in either of TensorBoard's loaders). Tags: ``charts/episodic_return`` and
``charts/episodic_length`` (the mean over the episodes that ended in the fragment, when
any did), and ``rollout/…``: ``steps_per_s``, ``policy_s``, ``env_s``, ``waited_s``,
``lag_mean``, ``lag_max``, ``dropped_steps``, ``env_faults``, ``episodes`` (so far) and
``policy_version``. The event file is written by the engine (``rollway_engine::tensorboard``:
one record per fragment, flushed, so TensorBoard shows it at once; ~14 µs a fragment in all,
bench/RESULTS.md, "Training logs")."""

from __future__ import annotations

import collections
import os
import sys
import time
from typing import Any, Deque, List, Optional, Tuple, Union

from rollway import _rollway

# Fragment stats written as `rollout/<key>`.
_TAGS = [(k, f"rollout/{k}") for k in ("steps_per_s", "policy_s", "env_s", "waited_s", "lag_mean", "lag_max",
                                        "dropped_steps", "env_faults")]


class TrainingLog:
    """A rollout's progress line and TensorBoard scalars, fed one fragment at a time."""

    def __init__(self, log_dir: Optional[Union[str, "os.PathLike[str]"]], progress: bool, steps: int = 0,
                 resumed: bool = False):
        purge = int(steps) if resumed else None
        self.writer = None if log_dir is None else _rollway.EventWriter(os.fspath(log_dir), time.time(), purge)
        self.progress = bool(progress)
        self.steps, self.episodes, self.start = int(steps), 0, int(steps)
        self.recent: Deque[float] = collections.deque(maxlen=100)
        self.t0, self.shown = time.monotonic(), float("-inf")  # the first fragment shows a line at once

    @property
    def path(self) -> Optional[str]:
        """The event file, when ``log_dir`` was given."""
        return None if self.writer is None else os.fspath(self.writer.path)

    def fragment(self, frag: Any, version: int) -> None:
        self.steps += frag.steps * frag.envs
        returns, lengths = frag.finished["return"].tolist(), frag.finished["length"].tolist()
        self.episodes += len(returns)
        self.recent.extend(returns)
        if self.writer is not None:
            stats = frag.stats
            scalars: List[Tuple[str, float]] = [(tag, float(stats.get(k) or 0.0)) for k, tag in _TAGS]
            scalars += [("rollout/episodes", float(self.episodes)), ("rollout/policy_version", float(version))]
            if returns:
                scalars += [("charts/episodic_return", sum(returns) / len(returns)),
                            ("charts/episodic_length", sum(lengths) / len(lengths))]
            self.writer.scalars(self.steps, time.time(), scalars)
        if self.progress and time.monotonic() - self.shown >= 1.0:
            self.shown = time.monotonic()
            self._show(frag, version)

    def _show(self, frag: Any, version: int) -> None:
        rate = (self.steps - self.start) / max(time.monotonic() - self.t0, 1e-9)
        ret = f"{sum(self.recent) / len(self.recent):.2f}" if self.recent else "-"
        st = frag.stats
        print(f"\rrollway: {self.steps:,} steps ({rate:,.0f}/s), {self.episodes:,} episodes, return {ret} (last "
              f"{len(self.recent)}), version {version}, lag {float(st.get('lag_mean') or 0):.2f}, dropped "
              f"{int(st.get('dropped_steps') or 0):,} steps", end="", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.progress and self.steps:
            print(file=sys.stderr)
