"""rollway: fast, crash-safe RL and embodied-agent data, from Python.

Generate episodes with rollway's parallel runner, record them into a dataset that
survives ``kill -9``, read them back as numpy arrays, and feed training with a
zero-copy loader::

    import rollway

    summary = rollway.run(env="CartPole-v1", agent="random", episodes=100, out="data/cp")
    ds = rollway.Dataset("data/cp")
    ep = ds[0]                      # numpy arrays: ep.observations, ep.actions, ep.rewards, ...
    for batch in rollway.Loader("data/cp", clip=16, batch=256):
        batch["rewards"]            # [256, 16] float64, a view of rollway's buffer

Train with it: :class:`Rollout` keeps envs and a batched policy running for a
learner and hands over fragments of T steps × N envs (policy versions, bounded lag,
recurrent state, extras such as log-probs and values); see :mod:`rollway.rollout`.

Your own Gymnasium env and Python/torch policy run inside the same runner:
``rollway.run(env=lambda: gym.make("MyEnv-v0"), agent=policy)``, the env in worker
processes, the policy on the central batch (see :mod:`rollway.policy`).

Every call maps one-to-one onto the ``rollway`` command line (``rollway run --help``).
Errors are :class:`RollwayError` (bad input: :class:`InputError`, also a
``ValueError``; missing datasets: :class:`DatasetNotFoundError`, also a
``FileNotFoundError``; a run that ended with episodes given up or untried:
:class:`IncompleteRunError`, its summary attached). Long calls release the GIL, show a progress bar on a
terminal (``progress=False`` turns it off) and stop on Ctrl-C, keeping every
committed episode.
"""

from rollway._rollway import (
    FORMAT_VERSION,
    DatasetLockedError,
    DatasetNotFoundError,
    IncompleteRunError,
    InputError,
    RollwayError,
    RollwayWarning,
    __version__,
)
from rollway._run import Summary, agents, envs, run
from rollway.dataset import Dataset, Episode, import_lerobot, import_minari
from rollway.loader import Loader
from rollway.rollout import Fragment, Rollout
from rollway.batched_scan import JaxPolicy
from rollway import policy  # noqa: E402  (the module documents how policies are called)

__all__ = [
    "FORMAT_VERSION",
    "VectorEnv",
    "DataCollector",
    "Dataset",
    "DatasetLockedError",
    "DatasetNotFoundError",
    "Episode",
    "Fragment",
    "IncompleteRunError",
    "InputError",
    "JaxPolicy",
    "Loader",
    "RollwayError",
    "RollwayWarning",
    "Rollout",
    "Summary",
    "__version__",
    "agents",
    "envs",
    "import_lerobot",
    "import_minari",
    "make_vec",
    "policy",
    "run",
]


def __getattr__(name: str):  # PEP 562: gymnasium is imported only when DataCollector is used
    if name == "DataCollector":
        from rollway.collector import DataCollector

        return DataCollector
    if name in ("make_vec", "VectorEnv"):
        from rollway import vector

        return getattr(vector, name)
    raise AttributeError(f"module 'rollway' has no attribute {name!r}")
