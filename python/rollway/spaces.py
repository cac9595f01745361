"""Gymnasium spaces ↔ rollway's space JSON (Minari's format), and packing values into
rollway's row layout.

A row holds a space's leaves (Box, Discrete as int64, MultiDiscrete as int64,
MultiBinary as int8) depth-first, each starting at a multiple of 8 bytes; the layout
itself comes from the Rust core (``_rollway.layout``), so the two never disagree.
"""

from __future__ import annotations

import json
import struct
from typing import Any, Callable, Dict, List, Tuple

import numpy as np

from rollway import _rollway


def to_json(space: Any) -> str:
    """A ``gymnasium.spaces.Space`` as rollway's (Minari's) space JSON."""
    return json.dumps(_to_obj(space))


def _to_obj(space: Any) -> Dict[str, Any]:
    from gymnasium import spaces as S

    if isinstance(space, S.Box):
        return {"type": "Box", "dtype": str(space.dtype), "shape": list(space.shape),
                "low": space.low.tolist(), "high": space.high.tolist()}
    if isinstance(space, S.Discrete):
        return {"type": "Discrete", "dtype": "int64", "start": int(space.start), "n": int(space.n)}
    if isinstance(space, S.MultiDiscrete):
        if space.nvec.ndim != 1:
            raise _rollway.InputError(f"MultiDiscrete with nvec of shape {space.nvec.shape}: only 1-D nvec is supported")
        return {"type": "MultiDiscrete", "dtype": "int64", "nvec": space.nvec.tolist(), "start": space.start.tolist()}
    if isinstance(space, S.MultiBinary):
        n = space.n if isinstance(space.n, int) else list(space.n)
        return {"type": "MultiBinary", "dtype": "int8", "n": n}
    if isinstance(space, S.Dict):
        return {"type": "Dict", "subspaces": {k: _to_obj(s) for k, s in space.spaces.items()}}
    if isinstance(space, S.Tuple):
        return {"type": "Tuple", "subspaces": [_to_obj(s) for s in space.spaces]}
    raise _rollway.InputError(
        f"space {space!r}: rollway records Box, Discrete, MultiDiscrete, MultiBinary, Dict and Tuple spaces"
    )


def from_json(text: str) -> Any:
    """rollway's space JSON as a ``gymnasium.spaces.Space``."""
    return _from_obj(json.loads(text))


def _from_obj(o: Dict[str, Any]) -> Any:
    from gymnasium import spaces as S

    t = o["type"]
    if t == "Box":
        return S.Box(low=np.array(o["low"], dtype=o["dtype"]), high=np.array(o["high"], dtype=o["dtype"]),
                     shape=tuple(o["shape"]), dtype=o["dtype"])
    if t == "Discrete":
        return S.Discrete(o["n"], start=o.get("start", 0))
    if t == "MultiDiscrete":
        return S.MultiDiscrete(o["nvec"], start=o.get("start"))
    if t == "MultiBinary":
        return S.MultiBinary(o["n"])
    if t == "Dict":
        return S.Dict({k: _from_obj(v) for k, v in o["subspaces"].items()})
    if t == "Tuple":
        return S.Tuple([_from_obj(v) for v in o["subspaces"]])
    raise ValueError(f"unknown space type {t!r}")


Leaf = Tuple[str, str, Tuple[int, ...], int]


def _get(value: Any, path: str) -> Any:
    for part in path.split("/") if path else []:
        value = value[int(part[len("_index_"):])] if part.startswith("_index_") else value[part]
    return value


def packer(space_json: str) -> Callable[[Any], bytes]:
    """A function packing a value of the space into one row of its layout."""
    leaves, row_bytes = _rollway.layout(space_json)
    if len(leaves) == 1:
        # The common case, packed on every step of a DataCollector: as little Python as possible.
        path, dtype, shape, nbytes = leaves[0]
        pad = b"\0" * (row_bytes - nbytes)
        dt = np.dtype(dtype)
        if shape == () and dt == np.int64:
            return struct.Struct("<q").pack
        if not pad:
            return lambda v: np.ascontiguousarray(v, dtype=dt).tobytes()
        return lambda v: np.ascontiguousarray(v, dtype=dt).tobytes() + pad
    parts: List[Tuple[str, np.dtype, bytes]] = []
    for path, dtype, shape, nbytes in leaves:
        parts.append((path, np.dtype(dtype), b"\0" * ((-nbytes) % 8)))

    def pack(v: Any) -> bytes:
        return b"".join(np.ascontiguousarray(_get(v, p), dtype=dt).tobytes() + pad for p, dt, pad in parts)

    return pack


def unpacker(space_json: str) -> Callable[[bytes], Any]:
    """A function turning one row of the space's layout back into a value of the space
    (ints for Discrete, numpy arrays for the other leaves, dicts and tuples nested)."""
    space = json.loads(space_json)
    leaves, _ = _rollway.layout(space_json)
    offsets, at = [], 0
    for path, dtype, shape, nbytes in leaves:
        offsets.append((path, np.dtype(dtype), tuple(shape), at))
        at += nbytes + (-nbytes) % 8

    def leaf(row: bytes, dt: np.dtype, shape: Tuple[int, ...], off: int, discrete: bool) -> Any:
        a = np.frombuffer(row, dtype=dt, count=int(np.prod(shape)), offset=off).reshape(shape).copy()
        return int(a) if discrete else a

    def build(o: Dict[str, Any], row: bytes, it: Any) -> Any:
        if o["type"] == "Dict":
            return {k: build(v, row, it) for k, v in o["subspaces"].items()}
        if o["type"] == "Tuple":
            return tuple(build(v, row, it) for v in o["subspaces"])
        _, dt, shape, off = next(it)
        return leaf(row, dt, shape, off, o["type"] == "Discrete")

    return lambda row: build(space, row, iter(offsets))


def dump_info(info: Any) -> str:
    """An info dict as JSON text (numpy values as lists and numbers)."""
    return json.dumps(info, default=_plain)


def _plain(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    raise TypeError(f"info value of type {type(x).__name__} is not JSON-serializable")
