"""Type stubs of the extension module (``crates/python``). Use the package's classes
(``rollway.Dataset``, ``rollway.Loader``, ``rollway.DataCollector``, ``rollway.run``);
these are the handles they wrap."""

import pathlib
from typing import Any, Callable, Dict, List, Optional, Tuple, Union, final

from typing_extensions import Self

# What the module exports (pyo3 lists every class and function): stubtest holds this to it.
__all__ = [
    "DatasetHandle",
    "DatasetLockedError",
    "DatasetNotFoundError",
    "EventWriter",
    "FORMAT_VERSION",
    "HeldDataset",
    "IncompleteRunError",
    "InputError",
    "Keeper",
    "LagGate",
    "LoaderHandle",
    "MUJOCO_TASKS",
    "ONNX_ENGINES",
    "RENAMED_ROLLOUT_SETTINGS",
    "RENAMED_SETTINGS",
    "ROLLOUT_SETTINGS",
    "RUN_SETTINGS",
    "RecorderHandle",
    "RolloutHandle",
    "RollwayError",
    "RollwayWarning",
    "VecEnvHandle",
    "__version__",
    "agents",
    "cli",
    "close_run",
    "envs",
    "export_lerobot",
    "export_minari",
    "host_serve",
    "import_lerobot",
    "import_minari",
    "layout",
    "prepare_rollout",
    "relabel",
    "renamed_warning",
    "repair",
    "report",
    "resume_starts_afresh",
    "run",
    "run_summary",
    "take_policy_error",
    "verify",
]


__version__: str
FORMAT_VERSION: int
# The engines this build's ``onnx:`` agent can use: ``["ort"]``, plus ``"tract"`` where it
# was built with the ``tract`` feature (the wheel is).
ONNX_ENGINES: List[str]
# Every run setting's name, as the engine's RunOptions declares them (the config file's keys).
RUN_SETTINGS: List[str]
# Settings renamed for one vocabulary, ``(old, new)``: the old name is taken with a deprecation
# warning until 0.2 (the engine's ``settings::RENAMED``).
RENAMED_SETTINGS: List[Tuple[str, str]]
# The same for a rollout's settings (``rollway.Rollout``, ``rollway.ray.Rollout``): the engine's
# ``rollout::RENAMED``.
RENAMED_ROLLOUT_SETTINGS: List[Tuple[str, str]]
# A rollout's settings with their defaults, as JSON text of a mapping: the engine's
# ``RolloutRequest``, which declares them (``rollway.Rollout``'s keywords are checked against it).
ROLLOUT_SETTINGS: str
def renamed_warning(old: str, new: str) -> str: ...
# The Gymnasium MuJoCo ids rollway steps itself (``rollway._mujoco``), each with the Gymnasium
# class (module, name) its env must be made as.
MUJOCO_TASKS: Dict[str, Tuple[str, str]]

class RollwayError(Exception): ...
class InputError(RollwayError, ValueError): ...
class DatasetNotFoundError(RollwayError, FileNotFoundError): ...
class DatasetLockedError(InputError): ...
class IncompleteRunError(RollwayError):
    summary: Any
class RollwayWarning(UserWarning): ...

@final
class Keeper:
    """The base object of numpy arrays over Rust-owned memory: keeps that memory alive."""

def envs() -> List[Dict[str, Any]]: ...
def agents() -> List[Dict[str, Any]]: ...
def cli(argv: List[str]) -> int:
    """The ``rollway`` command line over ``argv`` (``argv[0]`` names the program); the exit code."""
def layout(space_json: str) -> Tuple[List[Tuple[str, str, List[int], int]], int]: ...
def run(
    config: Optional[str],
    out: Optional[str] = None,
    resume: Optional[str] = None,
    append: bool = False,
    record: bool = True,
    progress: bool = True,
    episodes: Optional[int] = None,
    steps: Optional[int] = None,
    python: Optional[str] = None,
    env_pickle: Optional[bytes] = None,
    agent_factory: Optional[Tuple[str, Callable[..., Any]]] = None,
    prepare: bool = False,
    join: Optional[Tuple[str, str]] = None,
    host: str = "auto",
) -> str: ...
def take_policy_error() -> Optional[BaseException]: ...
def close_run(out: str, run: int, summary: Optional[str] = None) -> str: ...
def prepare_rollout(env: str, settings: str, env_pickle: Optional[bytes] = None, python: Optional[str] = None) -> Tuple[int, Optional[Tuple[List[int], int, int]]]: ...
def run_summary(out: str, run: int, parts: str, untried: int, seconds: float) -> str: ...
def resume_starts_afresh(path: str, config: Optional[str] = None, progress: bool = True) -> bool: ...
def host_serve(reply_fd: int, prepare: Callable[[str, bytes], Tuple[Any, ...]]) -> None: ...
def verify(path: str) -> str: ...
def report(path: str, out: Optional[str] = None) -> str: ...
def repair(path: str) -> str: ...
def relabel(path: str, filters: List[str]) -> int: ...
def export_minari(
    path: str,
    out: str,
    dataset_id: Optional[str] = None,
    force: bool = False,
    author: Optional[str] = None,
    description: Optional[str] = None,
    data_format: Optional[str] = None,
    progress: bool = True,
) -> str: ...
def export_lerobot(
    path: str,
    out: str,
    fps: Optional[int] = None,
    task: Optional[str] = None,
    robot_type: Optional[str] = None,
    force: bool = False,
    video_codec: Optional[str] = None,
    crf: Optional[float] = None,
    keyint: Optional[int] = None,
    progress: bool = True,
) -> str: ...
def import_minari(src: str, out: str, progress: bool = True) -> str: ...
def import_lerobot(src: str, out: str, progress: bool = True) -> str: ...

@final
class DatasetHandle:
    def __new__(cls, path: str, skip_damaged: bool = False) -> Self: ...
    def refresh(self) -> None: ...
    def __len__(self) -> int: ...
    @property
    def root(self) -> str: ...
    def metadata_json(self) -> str: ...
    def entries_json(self) -> str: ...
    def spaces_json(self) -> Tuple[str, str]: ...
    def parquet_files(self) -> List[str]: ...
    def damaged(self) -> List[Tuple[int, str]]: ...
    def episode(self, i: int) -> Dict[str, Any]: ...

@final
class LoaderHandle:
    def __new__(
        cls,
        path: str,
        clip: int = 16,
        stride: int = 1,
        batch: int = 256,
        shuffle: bool = True,
        seed: int = 0,
        rank: int = 0,
        world: int = 1,
        pad: bool = False,
        drop_last: bool = False,
        replacement: bool = False,
        prefetch: int = 4,
        threads: Optional[int] = None,
        labels: List[str] = ...,
        min_return: Optional[float] = None,
        max_return: Optional[float] = None,
        min_length: Optional[int] = None,
        max_length: Optional[int] = None,
        fields: Optional[List[str]] = None,
        torch: bool = False,
        follow: bool = False,
        last_episodes: Optional[int] = None,
        last_steps: Optional[int] = None,
        max_version_lag: Optional[int] = None,
        max_reuse: Optional[int] = None,
        round_windows: Optional[int] = None,
        next_observations: bool = False,
        min_policy_version: Optional[int] = None,
    ) -> Self: ...
    def start(self, epochs: int) -> "LoaderHandle": ...
    def __iter__(self) -> "LoaderHandle": ...
    def __next__(self) -> Dict[str, Any]: ...
    @property
    def num_windows(self) -> int: ...
    @property
    def batches_per_epoch(self) -> int: ...
    @property
    def clip_len(self) -> int: ...
    @property
    def num_episodes(self) -> int: ...
    def state(self) -> Tuple[int, int]: ...
    def restore(self, epoch: int, batches: int) -> None: ...
    def refresh(self) -> int: ...
    def set_version(self, version: int) -> None: ...
    def next_batch(self) -> Optional[Dict[str, Any]]: ...

@final
class RecorderHandle:
    def __new__(
        cls,
        path: str,
        env_id: str,
        observation_space: str,
        action_space: str,
        max_episode_steps: Optional[int] = None,
        algorithm: str = "python",
        record_infos: bool = False,
        max_buffer_steps: Optional[int] = None,
        max_buffer_episodes: Optional[int] = None,
        frame_media: Optional[str] = None,
        append: bool = False,
        gymnasium_spec: Optional[str] = None,
        agents: Optional[List[str]] = None,
    ) -> Self: ...
    def begin(self, seed: int, obs: bytes, info: Optional[str] = None) -> None: ...
    def bind(self, env_step: Any, pack_act: Any, pack_obs: Any, dump_info: Any) -> None: ...
    def wrapped_step(self, action: Any) -> Tuple[Any, float, bool, bool, Dict[str, Any]]: ...
    def save(self) -> None: ...
    @property
    def episodes(self) -> int: ...
    def close(self) -> Optional[Tuple[int, int, int, int]]: ...


@final
class RolloutHandle:
    def __new__(
        cls,
        env: str,
        policy: Any,
        settings: str,
        env_pickle: Optional[bytes] = None,
        python: Optional[str] = None,
    ) -> Self: ...
    def spec(self) -> Tuple[str, str, Optional[int]]: ...
    def store_trouble(self) -> Optional[str]: ...
    def collect(self) -> Dict[str, Any]: ...
    def publish(self, weights: Any = None, version: Optional[int] = None) -> int: ...
    @property
    def version(self) -> int: ...
    @property
    def resumed(self) -> Optional[Tuple[List[int], int, int]]: ...
    @property
    def host_choice(self) -> Optional[str]: ...
    def close(self) -> None: ...

@final
class LagGate:
    """The engine's lag rule: permits to start fragments, and which arrivals are stale."""

    def __new__(cls, max_policy_lag: int) -> Self: ...
    def ask(self, n: int) -> None: ...
    def take(self) -> bool: ...
    def admit(self, oldest: int, steps: int, current: int) -> Optional[int]: ...
    @property
    def permits(self) -> int: ...
    @property
    def dropped_steps(self) -> int: ...
    @property
    def dropped_fragments(self) -> int: ...

@final
class EventWriter:
    """A TensorBoard event file: one record of scalars per call."""

    def __new__(cls, log_dir: str, now: float, purge_step: Optional[int] = None) -> Self: ...
    @property
    def path(self) -> pathlib.Path: ...
    def scalars(self, step: int, now: float, scalars: List[Tuple[str, float]]) -> None: ...

@final
class HeldDataset:
    """A distributed run's driver holding its dataset on an object store: the lease, and a
    local work directory it prepares and closes the run in."""

    def __new__(cls, url: str, want: str, refusal: str = ...) -> Self: ...
    @staticmethod
    def is_remote(path: str) -> bool: ...
    @property
    def work_dir(self) -> pathlib.Path: ...
    def flush(self) -> None: ...
    def pull_index(self) -> int: ...
    def finish(self) -> None: ...

@final
class VecEnvHandle:
    def __new__(cls, env_id: str, num_envs: int, params: List[Tuple[str, str]] = ..., threads: int = 1) -> Self: ...
    @staticmethod
    def hosted(env_id: str, num_envs: int, params: List[Tuple[str, str]], workers: Optional[int], host: str,
               python: Optional[str]) -> "VecEnvHandle": ...
    def spec(self) -> Tuple[str, str, Optional[int]]: ...
    def reset(self, seeds: List[Optional[int]], options: Optional[str] = None) -> Tuple[Any, Optional[str]]: ...
    def step(self, actions: bytes, same_step: bool = False,
             columns: bool = False) -> Tuple[Any, Any, Any, Any, Union[str, Dict[str, Any], None], Optional[Tuple[Any, Any]]]: ...
