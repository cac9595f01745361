"""``rollway.Dataset``: read a rollway dataset as numpy arrays; convert it to other formats."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

from rollway import _rollway
from rollway.spaces import text_paths, text_string

PathLike = Union[str, "os.PathLike[str]"]


@dataclass
class Episode:
    """One episode in Gymnasium's convention: T steps, T+1 observations (reset first).

    ``observations`` / ``actions`` are numpy arrays, or dicts of arrays keyed by the
    leaf's path for Dict/Tuple spaces (image leaves decoded to ``uint8 [T+1, H, W, C]``;
    Text leaves as lists of ``str``).
    ``infos`` is the T+1 info dicts when the dataset records them, else None;
    ``agent_state`` the agent's recurrent state after each step (``float32 [T, S]``) when
    stored. For an episode a training rollout recorded (``rollway.Rollout(out=...)``):
    ``extras``, the policy's per-step outputs by name (``float32 [T, ...]``), and
    ``policy_version``, the version that chose each action (``uint64 [T]``). Index fields: ``id``, ``seed``, ``length``, ``return_``, ``status``
    (``terminated``/``truncated``), ``labels``, ``run``, ``run_index``, ``info`` (final info).
    ``terminations``/``truncations`` are Minari's names for the flags; ``terminated``/``truncated``
    give the same arrays by a fragment's and the Loader's names.
    """

    id: int
    seed: int
    length: int
    return_: float
    status: str
    labels: List[str]
    observations: Any
    actions: Any
    rewards: np.ndarray
    terminations: np.ndarray
    truncations: np.ndarray
    infos: Optional[List[Dict[str, Any]]] = None
    agent_state: Optional[np.ndarray] = None
    extras: Dict[str, np.ndarray] = field(default_factory=dict)
    policy_version: Optional[np.ndarray] = None
    run: int = 0
    run_index: int = 0
    info: Dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        # Arrays as dtype[shape]: a repr that prints a thousand frames helps no one.
        arrays = ", ".join(f"{k}={_brief(getattr(self, k))}" for k in ("observations", "actions", "rewards", "agent_state"))
        infos = "None" if self.infos is None else f"[{len(self.infos)} dicts]"
        return (f"Episode(id={self.id}, seed={self.seed}, length={self.length}, return_={self.return_}, "
                f"status={self.status!r}, labels={self.labels}, {arrays}, infos={infos})")

    def __len__(self) -> int:
        return self.length

    @property
    def terminated(self) -> np.ndarray:
        """``terminations`` (Minari's name) by the name a fragment and the Loader use: bool ``[T]``."""
        return self.terminations

    @property
    def truncated(self) -> np.ndarray:
        """``truncations`` (Minari's name) by the name a fragment and the Loader use: bool ``[T]``."""
        return self.truncations


def _texts(value: Any, paths: List[str]) -> Any:
    """Text leaves (code points) as lists of ``str``, one a row."""
    if not paths:
        return value
    if not isinstance(value, dict):
        return [text_string(r) for r in value]
    return {k: [text_string(r) for r in v] if k in paths else v for k, v in value.items()}


def _episode(raw: Dict[str, Any], texts: Tuple[List[str], List[str]] = ([], [])) -> Episode:
    e = json.loads(raw["entry"])
    return Episode(
        id=e["episode_id"],
        seed=e["seed"],
        length=e["length"],
        return_=e["return"],
        status=e["status"],
        labels=[lab["label"] for lab in e.get("labels", [])],
        observations=_texts(raw["observations"], texts[0]),
        actions=_texts(raw["actions"], texts[1]),
        rewards=raw["rewards"],
        terminations=raw["terminations"],
        truncations=raw["truncations"],
        infos=json.loads(raw["infos"]) if raw["infos"] is not None else None,
        agent_state=raw["agent_state"],
        extras=raw["extras"],
        policy_version=raw["policy_version"],
        run=e["run"],
        run_index=e["run_index"],
        info=e.get("info", {}),
    )


def _brief(x: Any) -> str:
    if isinstance(x, dict):
        return "{" + ", ".join(f"{k!r}: {_brief(v)}" for k, v in x.items()) + "}"
    if isinstance(x, np.ndarray):
        return f"{x.dtype}{list(x.shape)}"
    return repr(x)


class Dataset:
    """A rollway dataset, opened for reading (never changed by reading).

    ``len(ds)``, ``ds[i]`` and iteration give the committed episodes that have data,
    in episode-id order, as :class:`Episode`. ``ds.episodes`` is the index: one dict per
    committed episode (given-up ones included) with ``id``, ``seed``, ``return``,
    ``length``, ``status``, ``labels``, ``run``, ``run_index``. A dataset that is still
    being written shows what was committed when it was opened (``refresh()`` for more).

    ``skip_damaged=True`` reads around damaged shards (listed in ``ds.damaged``)
    instead of raising.

    ``path`` may be an ``s3://bucket/prefix`` URL (S3 or an S3-compatible store named
    by ``AWS_ENDPOINT_URL``, credentials from the usual ``AWS_*`` variables): its
    committed shards are pulled into a local replica under ``$ROLLWAY_CACHE_DIR``
    (default ``~/.cache/rollway``) and read from there; ``refresh()`` pulls again.
    ``verify``, ``report`` and ``export`` read the replica; ``repair`` and ``relabel``
    need a local dataset.
    """

    def __init__(self, path: PathLike, *, skip_damaged: bool = False):
        self._h = _rollway.DatasetHandle(os.fspath(path), skip_damaged)
        self.path = os.fspath(path)
        env = self.metadata["env"]
        self._texts = (text_paths(env["observation_space"]), text_paths(env["action_space"]))

    def __len__(self) -> int:
        return len(self._h)

    def __getitem__(self, i: int) -> Episode:
        return _episode(self._h.episode(int(i)), self._texts)

    def __iter__(self) -> Iterator[Episode]:
        for i in range(len(self)):
            yield self[i]

    def __repr__(self) -> str:
        return f"rollway.Dataset({self.path!r}, episodes={len(self)})"

    def refresh(self) -> None:
        """Takes in the episodes committed since the dataset was opened."""
        self._h.refresh()

    @property
    def metadata(self) -> Dict[str, Any]:
        """``metadata.json``: env, spaces, runs (with their stored configs), counts."""
        return json.loads(self._h.metadata_json())

    @property
    def agents(self) -> Optional[List[str]]:
        """A multi-agent env's possible agents (PettingZoo's ``possible_agents``), in the order each
        observation's ``obs`` and each action stack their rows; ``None`` for a single-agent env. Each
        observation's ``agents/*`` leaves say what its step gave each agent (``rollway.multiagent``)."""
        return self.metadata["env"].get("agents")

    @property
    def observation_space(self) -> Any:
        """The observation space as a ``gymnasium.spaces.Space`` (needs gymnasium)."""
        from rollway.spaces import from_json

        return from_json(self._h.spaces_json()[0])

    @property
    def action_space(self) -> Any:
        """The action space as a ``gymnasium.spaces.Space`` (needs gymnasium)."""
        from rollway.spaces import from_json

        return from_json(self._h.spaces_json()[1])

    @property
    def damaged(self) -> List[Dict[str, Any]]:
        """Shards skipped as damaged (with ``skip_damaged=True``): shard and why."""
        return [{"shard": s, "message": m} for s, m in self._h.damaged()]

    @property
    def episodes(self) -> List[Dict[str, Any]]:
        """The index: one dict per committed episode, given-up ones included."""
        out = []
        for e in json.loads(self._h.entries_json()):
            out.append({
                "id": e["episode_id"], "seed": e["seed"], "return": e["return"], "length": e["length"],
                "status": e["status"], "labels": [lab["label"] for lab in e.get("labels", [])],
                "run": e["run"], "run_index": e["run_index"], "info": e.get("info", {}),
            })
        return out

    def episodes_table(self) -> Any:
        """The index as a ``pyarrow.Table`` (needs pyarrow)."""
        import pyarrow as pa

        rows = self.episodes
        cols = ["id", "seed", "return", "length", "status", "labels", "run", "run_index"]
        return pa.table({c: [r[c] for r in rows] for c in cols})

    def select(
        self,
        label: Union[str, Sequence[str], None] = None,
        *,
        min_return: Optional[float] = None,
        max_return: Optional[float] = None,
        min_length: Optional[int] = None,
        max_length: Optional[int] = None,
        where: Optional[Callable[[Dict[str, Any]], bool]] = None,
    ) -> List[int]:
        """Positions (for ``ds[i]``) of the episodes with data that match every condition.

        ``label``: any of these labels; ``where``: a predicate on the index dict.
        """
        labels = [label] if isinstance(label, str) else list(label or [])
        data = [e for e in self.episodes if e["status"] != "given_up"]
        out = []
        for i, e in enumerate(data):
            if labels and not set(labels) & set(e["labels"]):
                continue
            if min_return is not None and e["return"] < min_return:
                continue
            if max_return is not None and e["return"] > max_return:
                continue
            if min_length is not None and e["length"] < min_length:
                continue
            if max_length is not None and e["length"] > max_length:
                continue
            if where is not None and not where(e):
                continue
            out.append(i)
        return out

    def to_arrow(self) -> Any:
        """The committed steps as a ``pyarrow.dataset.Dataset`` (one row per step).

        Built from the shard files the index lists, wherever each is right now, so it
        never sees a half-written shard (FORMAT.md). Frames are in frame files, not here.
        """
        import pyarrow.dataset as pads

        return pads.dataset([os.fspath(p) for p in self._h.parquet_files()], format="parquet")

    def verify(self) -> Dict[str, Any]:
        """``rollway verify``: checks every committed episode and file hash; changes nothing.

        Returns the report (``problems`` is empty when the dataset is sound).
        """
        return json.loads(_rollway.verify(self.path))

    def report(self, out: Optional[PathLike] = None) -> str:
        """``rollway report``: writes one self-contained HTML page about the dataset (config,
        counts, labels, histograms, throughput, faults, thumbnails and clips) to ``out``,
        by default ``<path>.report.html`` beside it; returns its path. Changes nothing in
        the dataset."""
        return os.fspath(_rollway.report(self.path, None if out is None else os.fspath(out)))

    def repair(self) -> Dict[str, Any]:
        """``rollway verify --repair``: publishes committed files, moves strays to ``.quarantine``.
        On an ``s3://`` dataset: under its lease, publishes the staged files of committed shards
        and deletes those of uncommitted ones (what killed writers left)."""
        return json.loads(_rollway.repair(self.path))

    def relabel(self, filters: Sequence[str]) -> int:
        """``rollway relabel``: runs filters (``key=…,val=…,label=…`` specs) over the committed
        episodes and rewrites the index only; returns how many episodes changed labels."""
        n = _rollway.relabel(self.path, list(filters))
        self.refresh()
        return n

    def export(self, format: str, out: PathLike, *, progress: bool = True, **options: Any) -> Dict[str, Any]:
        """``rollway export --to FORMAT``: ``"minari"`` (options: ``dataset_id``, ``force``,
        ``author``, ``description``, ``data_format`` — ``"hdf5"``, Minari's default, ``"arrow"``
        or ``"parquet"``) or ``"lerobot"`` (``fps``, ``task``, ``robot_type``,
        ``force``, ``video_codec`` — ``"av1"``, LeRobot's default, or ``"h264"``, several times
        faster to encode —, ``crf``, ``keyint``). Returns the export's report."""
        exporters: Dict[str, Callable[..., str]] = {"minari": _rollway.export_minari, "lerobot": _rollway.export_lerobot}
        if format not in exporters:
            raise _rollway.InputError(f"export format {format!r}: expected one of {', '.join(exporters)}")
        try:
            report = exporters[format](self.path, os.fspath(out), progress=progress, **options)
        except TypeError as e:
            raise _rollway.InputError(f"export to {format}: {e}") from None
        return json.loads(report)


def import_minari(src: PathLike, out: PathLike, *, progress: bool = True) -> Dataset:
    """``rollway import minari``: a Minari dataset directory into a new rollway dataset
    (a directory, or an ``s3://bucket/prefix`` URL)."""
    _rollway.import_minari(os.fspath(src), os.fspath(out), progress=progress)
    return Dataset(out)


def import_lerobot(src: PathLike, out: PathLike, *, progress: bool = True) -> Dataset:
    """``rollway import lerobot``: a LeRobot v3.0 dataset into a new rollway dataset
    (a directory, or an ``s3://bucket/prefix`` URL)."""
    _rollway.import_lerobot(os.fspath(src), os.fspath(out), progress=progress)
    return Dataset(out)
