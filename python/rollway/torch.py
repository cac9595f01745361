"""``rollway.torch``: rollway's arrays as torch tensors, on the CPU or a GPU.

- :class:`IterableDataset`: the loader as a ``torch.utils.data.IterableDataset``
  (``device=`` puts each batch on a device).
- :class:`Policy`: a torch policy for :func:`rollway.run`, :class:`rollway.Rollout` and
  :class:`rollway.ray.Rollout`, acting on ``device``: each batch of observations goes
  to the device in one host-to-device copy per array.
- :meth:`rollway.Fragment.to`: a fragment's arrays (Dict observations, extras, final
  observations) as tensors on the learner's device, one copy per array.
- :class:`Staging`: what the three share: host-to-device copies through reused pinned
  buffers.

**Why pinned staging, and what it costs.** A copy from ordinary (pageable) host memory
to a GPU is synchronous and goes through the driver's own bounce buffer; from page-locked
("pinned") memory it is a DMA the CPU does not wait for (``non_blocking=True``). Pinning
memory is expensive (a ``cudaHostAlloc`` costs far more than the copy it enables), so
:class:`Staging` keeps its pinned buffers and reuses them: an array is ``memcpy``-ed into
a pinned buffer (host to host, at memory speed) and sent from there, one host-to-device
copy per array. ``depth`` (2) sets of buffers take turns, and a set is written again
only once the copies out of it have finished (a CUDA event per turn), so the copy of one
batch overlaps the making of the next. Buffers grow to the largest batch seen and
are kept per array (its dtype and its place in the tree), never per shape: the varying
batch sizes of :func:`rollway.run`'s central inference allocate nothing once warm.

On the CPU (``device="cpu"``) nothing is staged: tensors are ``torch.from_numpy`` of
rollway's own arrays, without a copy, and results are the same as on a GPU's path.

**Batch shaping for a GPU.** :func:`rollway.run` calls a policy on the batches its
central inference makes. In sync mode every call takes all ``workers × envs_per_worker``
envs: one call per step of the slowest env. In async mode (``mode="async"``, which the
run's calibration often picks) a call takes whatever envs are ready, between
``batch=(min, max)`` rows, waiting up to ``max_wait`` seconds for ``min`` of them. A GPU's
forward costs nearly the same at 32 rows as at 1,024, so a GPU wants few, full calls:
async with ``min`` about half the envs and a wait of a few milliseconds
(``batch=(N // 2, 0), max_wait=0.005``) keeps the envs stepping while the GPU works on
full batches. On the CPU a forward's cost grows with its rows, and the defaults (``min``
1, no wait) do as well as any: ``bench/gpu.py --cpu`` found sync, the defaults and the GPU
advice within 4% of each other with a CNN on 8 Atari envs. A :class:`rollway.Rollout` calls its policy on all ``num_envs``
envs at every step: its batch is ``num_envs``. ``bench/gpu.py`` measures a CNN's rows/s
by batch size on the CPU and on a GPU (so far rehearsed on the CPU only: no GPU machine
has run it, and the GPU advice here is the usual one, not yet a measurement of ours).
"""

from __future__ import annotations

import copy
import os
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple, Union

import numpy as np
import torch
import torch.utils.data

from rollway.loader import Loader

Device = Union[str, "torch.device"]


class IterableDataset(torch.utils.data.IterableDataset):
    """Batches of torch tensors that share memory with rollway's batch buffers.

    Use it with ``DataLoader(ds, batch_size=None)``: rollway already batches, shuffles
    and prefetches on its own threads, and each tensor is ``torch.from_numpy`` of
    rollway's buffer (no copy). With ``torch.distributed`` initialised, rank and world
    size are taken from it; with DataLoader worker processes, each worker takes its
    own share of the windows (``num_workers=0`` is usually fastest).

    Takes :class:`rollway.Loader`'s arguments. ``rank``/``world`` default to
    ``torch.distributed``'s when it is initialised. Each ``iter()`` is one epoch (or
    ``epochs`` of them); ``state_dict``/``load_state_dict`` resume mid-epoch.
    ``device``: each batch's tensors on that device, one host-to-device copy per array
    from pinned buffers (:class:`Staging`), issued while the loader's threads make the
    next batch (use it in the main process: ``num_workers=0``).
    """

    def __init__(self, path: Union[str, "os.PathLike[str]"], rank: Optional[int] = None, world: Optional[int] = None,
                 device: Optional[Device] = None, **loader_args: Any):
        super().__init__()
        if rank is None or world is None:
            dist = torch.distributed
            on = dist.is_available() and dist.is_initialized()
            rank = rank if rank is not None else (dist.get_rank() if on else 0)
            world = world if world is not None else (dist.get_world_size() if on else 1)
        self.path, self.rank, self.world, self.loader_args = path, rank, world, loader_args
        self.device = None if device is None else torch.device(device)
        self._staging: Optional[Staging] = None
        self._loader: Optional[Loader] = None
        self._pending: Optional[Dict[str, Any]] = None

    def _get(self) -> Loader:
        if self._loader is None:
            info = torch.utils.data.get_worker_info()
            rank, world = self.rank, self.world
            if info is not None:
                rank, world = rank * info.num_workers + info.id, world * info.num_workers
            self._loader = Loader(self.path, rank=rank, world=world, torch=True, **self.loader_args)
            if self._pending is not None:
                self._loader.load_state_dict(self._pending)
        return self._loader

    def __iter__(self) -> Iterator[Dict[str, Any]]:
        # Tensors come from the loader itself (`torch=True`): no Python loop per batch.
        batches = iter(self._get())
        if self.device is None or self.device.type == "cpu":
            return batches
        if self._staging is None:
            self._staging = Staging(self.device)
        return map(self._staging.put, batches)

    def __getstate__(self) -> Dict[str, Any]:
        # DataLoader worker processes take a pickled copy: neither the loader nor pinned buffers travel.
        state = dict(self.__dict__)
        state["_loader"] = state["_staging"] = None
        return state

    def __len__(self) -> int:
        return len(self._get())

    def state_dict(self) -> Dict[str, Any]:
        return self._get().state_dict()

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        if self._loader is None:
            self._pending = dict(state)
        else:
            self._loader.load_state_dict(state)


class Staging:
    """Host-to-device copies of arrays (and trees of them) through reused pinned buffers
    (see the module docs). ``put(tree)`` returns the tree with each numpy array or CPU
    tensor replaced by a tensor on ``device``: dicts, lists and tuples keep their shape,
    other leaves (ints, strings) pass as they are. The copies are issued without waiting
    (``non_blocking``) on the current CUDA stream, so work queued on that stream after
    ``put`` sees the data; the host arrays may be reused as soon as ``put`` returns.

    ``pin``: page-lock the buffers (default: when ``device`` is a CUDA device); ``depth``:
    sets of buffers taking turns. On a CPU device nothing is copied (``from_numpy``).
    """

    def __init__(self, device: Device = "cuda", *, pin: Optional[bool] = None, depth: int = 2):
        if depth < 1:
            raise ValueError(f"Staging(depth={depth!r}): at least 1 set of buffers")
        self.device = torch.device(device)
        self.pin = self.device.type == "cuda" if pin is None else bool(pin)
        self.depth = depth
        self._buffers: Dict[Tuple[int, str, torch.dtype], torch.Tensor] = {}
        self._done: List[Any] = [None] * depth  # each turn's CUDA event: its copies have been read
        self._turn = 0

    def put(self, tree: Any) -> Any:
        if self.device.type == "cpu":
            return _tree(tree, "", lambda _, a: _tensor(a))
        turn = self._turn % self.depth
        self._turn += 1
        if self._done[turn] is not None:
            self._done[turn].synchronize()  # the copies out of this turn's buffers have been made
        out = _tree(tree, "", lambda path, a: self._send(turn, path, a))
        if self.device.type == "cuda":
            # On the stream the copies were queued on: the target device's, which need not be the current device.
            ev = torch.cuda.Event()
            ev.record(torch.cuda.current_stream(self.device))
            self._done[turn] = ev
        return out

    def buffer(self, turn: int, path: str, dtype: torch.dtype, numel: int) -> torch.Tensor:
        """The flat host buffer of ``turn`` for the array at ``path``, grown to ``numel``
        (kept per array and dtype, never per shape: varying batch sizes reuse it)."""
        key = (turn, path, dtype)
        buf = self._buffers.get(key)
        if buf is None or buf.numel() < numel:
            # Grown with headroom so that a batch a little larger than the last does not reallocate.
            size = max(numel, 0 if buf is None else buf.numel() + buf.numel() // 2)
            buf = torch.empty(size, dtype=dtype, pin_memory=self.pin)
            self._buffers[key] = buf
        return buf

    def _send(self, turn: int, path: str, a: Union[np.ndarray, torch.Tensor]) -> torch.Tensor:
        if isinstance(a, torch.Tensor):
            if a.device.type != "cpu":
                return a.to(self.device, non_blocking=True)
            view = self.buffer(turn, path, a.dtype, a.numel())[: a.numel()].view(a.shape)
            view.copy_(a)
        else:
            dtype = torch.from_numpy(np.empty(0, a.dtype)).dtype
            view = self.buffer(turn, path, dtype, a.size)[: a.size].view(a.shape)
            np.copyto(view.numpy(), a, casting="no")
        return view.to(self.device, non_blocking=True)


def _tensor(a: Any) -> Any:
    if isinstance(a, np.ndarray):
        # Read-only arrays (rare: a user's own) are copied rather than shared, as torch asks.
        return torch.from_numpy(a if a.flags.writeable else a.copy())
    return a


def _tree(x: Any, path: str, leaf: Callable[[str, Any], Any]) -> Any:
    if isinstance(x, (np.ndarray, torch.Tensor)):
        return leaf(path, x)
    if isinstance(x, dict):
        return {k: _tree(v, f"{path}/{k}", leaf) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(_tree(v, f"{path}/{i}", leaf) for i, v in enumerate(x))
    return x


class Policy:
    """A torch policy acting on ``device``, for :func:`rollway.run`, :class:`rollway.Rollout`
    and :class:`rollway.ray.Rollout` alike::

        agent = Agent().to("cuda")
        rollout = rollway.Rollout("atari:Pong-v5", rollway.torch.Policy(agent.act, "cuda"), num_envs=64)

    ``act(obs, first, state)`` is called as a :mod:`rollway.policy` is, under
    ``torch.inference_mode()``, with tensors on ``device`` in place of the arrays: the
    observations (a dict of them for Dict/Tuple spaces), ``first`` and ``state``, each
    sent in one host-to-device copy per batch from pinned memory (:class:`Staging`; on the
    CPU, the arrays themselves without a copy). It returns what a policy returns; tensors
    come back to the host, one copy each. ``module``: the ``nn.Module`` whose
    ``load_state_dict`` takes what :meth:`rollway.Rollout.publish` hands over (default:
    ``act`` itself when it is a module, or the module ``act`` is a method of); it is moved
    to ``device``. A policy marked with :func:`rollway.policy.draws` keeps the mark and
    gets ``uniform`` as a tensor on ``device`` too.

    Pickled (into Ray actors or env processes), it leaves its buffers behind and makes new
    ones where it lands, on that process's ``device``.
    """

    def __init__(self, act: Callable[..., Any], device: Device = "cpu", *, module: Optional[torch.nn.Module] = None):
        self.act = act
        self.device = torch.device(device)
        # What runs record as the agent (``python:<name>``): the function acting, not this wrapper.
        self.__qualname__ = getattr(act, "__qualname__", None) or type(act).__name__
        owner = getattr(act, "__self__", None)
        self.module = module if module is not None else act if isinstance(act, torch.nn.Module) else (
            owner if isinstance(owner, torch.nn.Module) else None)
        if self.module is not None:
            self.module.to(self.device)
        draws = getattr(act, "rollway_draws", 0)
        if draws:
            self.rollway_draws = draws
        self._staging: Optional[Staging] = None

    def __call__(self, obs: Any, first: np.ndarray, state: np.ndarray, *uniform: np.ndarray) -> Any:
        if self._staging is None:
            self._staging = Staging(self.device)
        args = self._staging.put((obs, first, state, *uniform))
        with torch.inference_mode():
            return self.act(*args)

    def load(self, weights: Any) -> None:
        """Loads published weights into :attr:`module` (the rollout's thread, between batches)."""
        if self.module is None:
            raise TypeError("rollway.torch.Policy.load: no module to load weights into; pass module=")
        self.module.load_state_dict(weights)

    def __getstate__(self) -> Dict[str, Any]:
        state = dict(self.__dict__)
        state["_staging"] = None
        return state


# Every array of a fragment; steps, envs, final_info and stats stay as they are.
FRAGMENT_ARRAYS = ("obs", "actions", "rewards", "terminated", "truncated", "first", "episode", "version", "state", "extras",
                   "finished", "final_obs")


def fragment_to(frag: Any, device: Device, staging: Optional[Staging] = None) -> Any:
    """``frag.to(device)``: a copy of the fragment with every array a tensor on ``device``
    (see :meth:`rollway.Fragment.to`). Takes any object with a fragment's attributes (those
    it lacks are skipped), as another engine's fragments in a side-by-side bench."""
    staging = staging or Staging(device)
    moved = staging.put({k: getattr(frag, k) for k in FRAGMENT_ARRAYS if hasattr(frag, k)})
    out = copy.copy(frag)
    for k, v in moved.items():
        setattr(out, k, v)
    return out
