"""``rollway.torch``: the loader as a ``torch.utils.data.IterableDataset``.

Use it with ``DataLoader(ds, batch_size=None)``: rollway already batches, shuffles
and prefetches on its own threads, and each tensor is ``torch.from_numpy`` of
rollway's buffer (no copy). With ``torch.distributed`` initialised, rank and world
size are taken from it; with DataLoader worker processes, each worker takes its
own share of the windows (``num_workers=0`` is usually fastest).
"""

from __future__ import annotations

import os
from typing import Any, Dict, Iterator, Optional, Union

import torch
import torch.utils.data

from rollway.loader import Loader


class IterableDataset(torch.utils.data.IterableDataset):
    """Batches of torch tensors that share memory with rollway's batch buffers.

    Takes :class:`rollway.Loader`'s arguments. ``rank``/``world`` default to
    ``torch.distributed``'s when it is initialised. Each ``iter()`` is one epoch (or
    ``epochs`` of them); ``state_dict``/``load_state_dict`` resume mid-epoch.
    """

    def __init__(self, path: Union[str, "os.PathLike[str]"], rank: Optional[int] = None, world: Optional[int] = None, **loader_args: Any):
        super().__init__()
        if rank is None or world is None:
            dist = torch.distributed
            on = dist.is_available() and dist.is_initialized()
            rank = rank if rank is not None else (dist.get_rank() if on else 0)
            world = world if world is not None else (dist.get_world_size() if on else 1)
        self.path, self.rank, self.world, self.loader_args = path, rank, world, loader_args
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
        return iter(self._get())

    def __len__(self) -> int:
        return len(self._get())

    def state_dict(self) -> Dict[str, Any]:
        return self._get().state_dict()

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        if self._loader is None:
            self._pending = dict(state)
        else:
            self._loader.load_state_dict(state)
