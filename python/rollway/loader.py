"""``rollway.Loader``: shuffled, resumable, rank-sharded training windows, zero-copy into numpy."""

from __future__ import annotations

import os
import time
from typing import Any, Dict, Iterator, Optional, Sequence, Union

from rollway import _rollway

PathLike = Union[str, "os.PathLike[str]"]


# The keys `select` takes besides label/labels, in the order errors list them.
SELECT_KEYS = ("min_return", "max_return", "min_length", "max_length", "min_policy_version")


class Loader:
    """Batches of fixed-length windows from a dataset, assembled by rollway's threads.

    Each batch is a dict of numpy arrays ``[batch, clip, ...]``:

    - ``observations``, ``actions``: arrays (dicts of arrays by leaf path for Dict spaces)
    - ``rewards``: float64; ``terminated``, ``truncated``: bool
    - ``first``: true at an episode's first step; ``mask``: false on padding
    - ``state``: the agent's recurrent state going into each window, ``[batch, d]``
    - ``episode_id``, ``step``: per window, its episode and the step it starts at, ``[batch]``
    - ``index``: the batch's position in its epoch (an int)
    - ``extras``: from a training rollout's dataset (``rollway.Rollout(out=...)``), a dict of
      the policy's per-step outputs, float32 ``[batch, clip, ...]``; ``policy_version``:
      from such a dataset too, the version that chose each step's action (uint64)
    - ``next_observations``: with ``next_observations=True`` (below)

    The arrays **view rollway's batch buffers without a copy**; a buffer is reused only
    after every array viewing it is gone, so keeping a batch (or a ``torch.from_numpy``
    tensor of it) is always safe.

    ``next_observations=True`` adds ``next_observations`` (same layout as
    ``observations``): the observation after each step, and at an episode's last step
    its final observation, the one the episode ended on, so a TD learner forms
    ``(s, a, r, s')`` for every step of every window and bootstraps a truncated end
    (D4RL's and Minari's ``next_observations``); zeros on padding. It costs the
    observations' copy (and a pixel dataset's decode) twice, so it is off by default.

    Iterating yields ``epochs`` epochs (None: one epoch per ``for`` loop, continuing
    with the next epoch the next time). ``clip=0`` loads whole episodes (padded).
    ``select`` keeps episodes by ``label``/``labels``, ``min_return``, ``max_return``,
    ``min_length``, ``max_length``, and, in a training rollout's dataset,
    ``min_policy_version`` (episodes every action of which a policy at least that new
    chose; ``rollway load --min-policy-version``). ``fields`` limits the batch to those keys.
    ``state_dict()``/``load_state_dict()`` resume mid-epoch with exactly the windows not
    yet delivered. ``torch=True`` gives ``torch.from_numpy`` tensors of the same memory.

    **Windows and batches.** A window is ``clip`` consecutive steps of one episode; window
    starts are ``stride`` steps apart. ``pad=True`` also takes windows that run past an
    episode's end (padded with zeros, ``mask`` false there). ``batch`` windows make a batch;
    ``drop_last=True`` drops an epoch's last batch when it is short. ``shuffle`` (the
    default) orders each epoch's windows by ``seed`` (``False``: dataset order);
    ``replacement=True`` samples windows with replacement instead. ``rank`` and ``world``
    shard the windows for data-parallel training: rank ``r`` of ``world`` ranks gets its own
    disjoint share of each epoch. ``threads`` background threads (default: a core less
    than the machine has, at least one) assemble batches, ``prefetch`` of them ahead; the
    consuming thread helps whenever the next batch is not ready.

    **Follow mode** (``follow=True``): a replay buffer over a dataset that is still being
    written, e.g. by ``rollway.Rollout(out=...)`` in this process or another. Batches come
    in *rounds*: each round reads the dataset's commits again and shuffles the windows
    of the episodes it keeps: the newest ``last_episodes`` episodes (or ``last_steps``
    steps; the buffer's capacity), without those a policy older than the learner's
    version − ``max_version_lag`` acted in (tell it the version with :meth:`set_version`),
    and without windows already delivered in ``max_reuse`` rounds; ``round_windows`` caps
    a round: each round draws that many windows uniformly from every eligible one, so that new
    commits are sampled sooner. Iterating never
    ends (it waits while no window is eligible, looking again every ``poll`` seconds);
    :meth:`next_batch` returns None instead of waiting.

    ``path`` may be an ``s3://bucket/prefix`` URL (see :class:`rollway.Dataset`): the
    committed shards are pulled into a local replica first, and a following loader pulls
    the new ones before each round (at most every 250 ms).
    """

    def __init__(
        self,
        path: PathLike,
        clip: int = 16,
        stride: int = 1,
        batch: int = 256,
        shuffle: bool = True,
        seed: int = 0,
        epochs: Optional[int] = None,
        rank: int = 0,
        world: int = 1,
        fields: Optional[Sequence[str]] = None,
        pad: bool = False,
        drop_last: bool = False,
        select: Optional[Dict[str, Any]] = None,
        *,
        replacement: bool = False,
        prefetch: int = 4,
        threads: Optional[int] = None,
        torch: bool = False,
        follow: bool = False,
        last_episodes: Optional[int] = None,
        last_steps: Optional[int] = None,
        max_version_lag: Optional[int] = None,
        max_reuse: Optional[int] = None,
        round_windows: Optional[int] = None,
        next_observations: bool = False,
        poll: float = 0.05,
    ):
        sel = dict(select or {})
        labels = sel.pop("labels", None) or []
        if "label" in sel:
            labels = [sel.pop("label")] + list(labels)
        unknown = set(sel) - set(SELECT_KEYS)
        if unknown:
            raise _rollway.InputError(f"select: unknown key(s) {', '.join(sorted(unknown))}; expected label(s), {', '.join(SELECT_KEYS)}")
        if epochs is not None and epochs < 1:
            raise _rollway.InputError(f"epochs={epochs}: must be at least 1 (or None)")
        self.path = os.fspath(path)
        self.epochs = epochs
        self._config = dict(clip=clip, stride=stride, batch=batch, shuffle=shuffle, seed=seed, rank=rank, world=world,
                            pad=pad, drop_last=drop_last, replacement=replacement)
        self._h = _rollway.LoaderHandle(
            self.path, clip, stride, batch, shuffle, seed, rank, world, pad, drop_last, replacement, prefetch, threads,
            [str(x) for x in labels], sel.get("min_return"), sel.get("max_return"), sel.get("min_length"),
            sel.get("max_length"), list(fields) if fields is not None else None, torch,
            bool(follow), last_episodes, last_steps, max_version_lag, max_reuse, round_windows, bool(next_observations),
            min_policy_version=sel.get("min_policy_version"),
        )
        self.follow, self._poll = bool(follow), float(poll)

    @property
    def num_windows(self) -> int:
        """Windows per epoch, over all ranks."""
        return self._h.num_windows

    def __len__(self) -> int:
        """Batches per epoch for this rank."""
        return self._h.batches_per_epoch

    @property
    def clip_len(self) -> int:
        return self._h.clip_len

    @property
    def epoch(self) -> int:
        """The current epoch."""
        return self._h.state()[0]

    def __iter__(self) -> Iterator[Dict[str, Any]]:
        if self.follow:
            return self._follow()
        # The Rust handle is the iterator: no Python frame per batch. It holds no batch
        # between calls, so each buffer returns to the pool as soon as Python drops it.
        return iter(self._h.start(1 if self.epochs is None else self.epochs))

    def _follow(self) -> Iterator[Dict[str, Any]]:
        while True:
            b = self._h.next_batch()
            if b is None:
                # Nothing eligible yet: sleeping in Python lets Ctrl-C through.
                time.sleep(self._poll)
                continue
            yield b

    def set_version(self, version: int) -> None:
        """The learner's policy version: a following loader skips episodes older than
        ``version - max_version_lag`` from its next round on."""
        self._h.set_version(int(version))

    def next_batch(self) -> Optional[Dict[str, Any]]:
        """The next batch of the current epoch, or None at its end (the next call starts
        the following epoch). Following: None when no window is eligible now."""
        return self._h.next_batch()

    def refresh(self) -> int:
        """Takes in episodes committed since (a dataset still being written); they join at
        the next epoch. Returns how many more episodes the loader will see."""
        return self._h.refresh()

    def state_dict(self) -> Dict[str, Any]:
        """Where the loader is, to resume exactly (with the same dataset and settings)."""
        epoch, batches = self._h.state()
        return {"epoch": epoch, "batches": batches, "num_windows": self.num_windows, **self._config}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Continues from ``state_dict()``: the next batch is the first one not delivered."""
        for k, v in self._config.items():
            if k in state and state[k] != v:
                raise _rollway.InputError(f"load_state_dict: the state was saved with {k}={state[k]!r}, this loader has {k}={v!r}")
        if state.get("num_windows", self.num_windows) != self.num_windows:
            raise _rollway.InputError(
                f"load_state_dict: the state was saved over {state['num_windows']} windows, this loader sees {self.num_windows}"
            )
        self._h.restore(int(state["epoch"]), int(state["batches"]))
