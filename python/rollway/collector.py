"""``rollway.DataCollector``: Minari's ``DataCollector`` on rollway's crash-safe writer."""

from __future__ import annotations

import json
import os
import secrets
from typing import Any, Dict, Optional, SupportsFloat, Tuple, Union

import gymnasium as gym

from rollway import _rollway
from rollway.spaces import dump_info, env_spec, packer

PathLike = Union[str, "os.PathLike[str]"]


class DataCollector(gym.Wrapper):
    """Records every episode of a Gymnasium env into a new rollway dataset at ``path``: a
    directory, or an ``s3://bucket/prefix`` URL (shards are pushed as they commit, the rest
    at ``close()``).

    The semantics are Minari's ``DataCollector``: ``reset``/``step`` pass through
    unchanged; a ``reset`` before the episode ended records it as truncated; a reset
    without a seed draws one (and passes it to the env) so every episode is
    reproducible; spaces are taken from the env; ``close()`` records the unfinished
    episode, commits and closes the dataset. Unlike Minari's, each finished episode
    goes to rollway's crash-safe writer, which commits shards in the background: if
    the Python process is killed, the dataset holds every committed episode intact
    (``max_buffer_steps``/``max_buffer_episodes`` bound what is not yet committed).

    ``env``: the Gymnasium env to wrap (its spec id and spaces are the dataset's). A PettingZoo
    ``ParallelEnv`` is recorded as one env whose rows are its agents:
    ``DataCollector(rollway.multiagent.AgentRows(env), path)`` (see :mod:`rollway.multiagent`).
    ``record_infos=True`` also keeps every step's info dict (JSON-serializable values
    and numpy arrays). ``frame_media``: how image observations are stored (``lz4``,
    ``raw``, ``jpeg``, ``h264``; default ``lz4``); ``algorithm_name``: the agent's name the
    dataset records for this run (shown by ``rollway inspect``, and as Minari's
    ``algorithm_name`` on export). ``append``: a ``path`` that already holds a dataset is
    refused (nothing is written) unless ``append=True``, which records a new run into it
    (local datasets; one on a store is always refused). ``to_minari(dataset_id)`` exports a
    dataset ``minari`` loads.
    """

    def __init__(
        self,
        env: gym.Env,
        path: PathLike,
        *,
        record_infos: bool = False,
        max_buffer_steps: Optional[int] = None,
        max_buffer_episodes: Optional[int] = None,
        frame_media: Optional[str] = None,
        algorithm_name: str = "python",
        append: bool = False,
    ):
        from rollway.multiagent import is_parallel_env

        if is_parallel_env(env):
            raise TypeError(f"DataCollector wraps a Gymnasium env; {type(env).__name__} is a PettingZoo ParallelEnv: "
                            "record it as one env whose rows are its agents, DataCollector(rollway.multiagent."
                            "AgentRows(env), path), stepping it with an action per possible agent")
        super().__init__(env)
        self.path = os.fspath(path)
        spec = env_spec(env)
        obs_json, act_json = spec["observation_space"], spec["action_space"]
        self._pack_obs, self._pack_act = packer(obs_json), packer(act_json)
        self._infos = record_infos
        self._rec = _rollway.RecorderHandle(
            self.path, spec["id"], obs_json, act_json, spec["max_episode_steps"], algorithm_name, record_infos,
            max_buffer_steps, max_buffer_episodes, frame_media, append, spec["gymnasium"], spec["agents"],
        )
        # `step` is the Rust handle's: one call per env step that steps, packs and records.
        self._rec.bind(env.step, self._pack_act, self._pack_obs, dump_info)
        self.step = self._rec.wrapped_step  # type: ignore[method-assign]

    def _info(self, info: Dict[str, Any]) -> Optional[str]:
        return dump_info(info) if self._infos else None

    def reset(self, *, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None) -> Tuple[Any, Dict[str, Any]]:
        if seed is None:
            seed = secrets.randbits(63)
        obs, info = self.env.reset(seed=seed, options=options)
        self._rec.begin(seed, self._pack_obs(obs), self._info(info))
        return obs, info

    def step(self, action: Any) -> Tuple[Any, SupportsFloat, bool, bool, Dict[str, Any]]:
        """``env.step``, recorded (replaced per instance by the Rust handle's ``wrapped_step``)."""
        return self._rec.wrapped_step(action)

    @property
    def episodes(self) -> int:
        """Episodes recorded so far (committed or on their way)."""
        return self._rec.episodes

    def save(self) -> None:
        """Commits every finished episode now (the writer also commits on its own)."""
        self._rec.save()

    def close(self) -> None:
        """Records the unfinished episode (truncated), commits, and closes the dataset and env."""
        self._rec.close()
        super().close()

    def to_minari(self, dataset_id: str, path: Optional[PathLike] = None, *, force: bool = False,
                  author: Optional[str] = None, description: Optional[str] = None) -> Any:
        """Exports the committed episodes as Minari dataset ``dataset_id``; returns it loaded
        with ``minari`` (needs minari). ``path`` defaults to Minari's own place for the id
        (``$MINARI_DATASETS_PATH`` or ``~/.minari/datasets``), so ``minari.load_dataset(id)``
        finds it too."""
        import minari

        self._rec.save()
        if path is None:
            root = os.environ.get("MINARI_DATASETS_PATH") or os.path.join(os.path.expanduser("~"), ".minari", "datasets")
            path = os.path.join(root, *dataset_id.split("/"))
        report = json.loads(_rollway.export_minari(self.path, os.fspath(path), dataset_id=dataset_id, force=force,
                                                   author=author, description=description, progress=False))
        return minari.MinariDataset(report["path"])
