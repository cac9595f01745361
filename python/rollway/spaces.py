"""Gymnasium spaces ↔ rollway's space JSON (Minari's format), and packing values into
rollway's row layout.

A row holds a space's leaves (Box, Discrete as int64, MultiDiscrete as int64,
MultiBinary as int8, Text as its code points zero-padded to ``max_length``, uint32)
depth-first, each starting at a multiple of 8 bytes; the layout
itself comes from the Rust core (``_rollway.layout``), so the two never disagree.
"""

from __future__ import annotations

import json
import struct
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple

import numpy as np

from rollway import _rollway

# The Dict key under which a rendering env's ``render()`` frame rides with each observation
# (``rollway._host.Rendered``, the ``atari:`` envs' screen): one name for the host and the envs.
RENDER_KEY = "render"


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
    if isinstance(space, S.Text):
        return {"type": "Text", "max_length": int(space.max_length), "min_length": int(space.min_length),
                "charset": space.characters}
    if isinstance(space, S.Dict):
        return {"type": "Dict", "subspaces": {k: _to_obj(s) for k, s in space.spaces.items()}}
    if isinstance(space, S.Tuple):
        return {"type": "Tuple", "subspaces": [_to_obj(s) for s in space.spaces]}
    raise _rollway.InputError(
        f"space {space!r}: rollway records Box, Discrete, MultiDiscrete, MultiBinary, Text, Dict and Tuple spaces"
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
    if t == "Text":
        return S.Text(o["max_length"], min_length=o["min_length"], charset=o["charset"])
    if t == "Dict":
        return S.Dict({k: _from_obj(v) for k, v in o["subspaces"].items()})
    if t == "Tuple":
        return S.Tuple([_from_obj(v) for v in o["subspaces"]])
    raise ValueError(f"unknown space type {t!r}")


class Leaf(NamedTuple):
    """One leaf of a row layout: where it sits in the row and what it holds."""

    path: str
    dtype: np.dtype
    shape: Tuple[int, ...]
    offset: int
    nbytes: int


def leaves(space_json: str) -> Tuple[List[Leaf], int]:
    """The leaves of the space's row layout (from the Rust core) with their byte
    offsets, and the row's size."""
    raw, row_bytes = _rollway.layout(space_json)
    out, at = [], 0
    for path, dtype, shape, nbytes in raw:
        out.append(Leaf(path, np.dtype(dtype), tuple(shape), at, nbytes))
        at += nbytes + (-nbytes) % 8
    return out, row_bytes


class RowViews:
    """Numpy views of packed rows of a space, leaf by leaf, with leading axes in front
    (a batch ``(n,)``; a fragment's ``(t, n)``): an array for a space of one leaf (a Box,
    Discrete, …: contiguous when its row is unpadded, strided over the padding when the row
    is padded to the packing's alignment, e.g. a ``Box(3,)`` of float32 in 16-byte rows),
    else a dict of arrays by leaf path. No copy: the views share ``buf``."""

    def __init__(self, space_json: str):
        self.leaves, self.row = leaves(space_json)
        # A space of one leaf is seen as that leaf's array, padded or not.
        self.one = len(self.leaves) == 1 and self.leaves[0].path == ""
        # One unpadded leaf: the rows are that leaf's array as is.
        self.single = self.one and self.leaves[0].nbytes == self.row

    def view(self, buf: Any, *lead: int) -> Any:
        if self.single:
            leaf = self.leaves[0]
            return np.frombuffer(buf, dtype=leaf.dtype).reshape((*lead, *leaf.shape))
        if 0 in lead:  # no rows (a fragment where no episode ended): nothing to view, any strides
            empty = {leaf.path: np.empty((*lead, *leaf.shape), leaf.dtype) for leaf in self.leaves}
            return empty[""] if self.one else empty
        outer: List[int] = []
        step = self.row
        for d in reversed(lead):
            outer.insert(0, step)
            step *= d
        out: Dict[str, np.ndarray] = {}
        for leaf in self.leaves:
            inner = np.empty(leaf.shape, leaf.dtype).strides
            out[leaf.path] = np.ndarray((*lead, *leaf.shape), dtype=leaf.dtype, buffer=buf, offset=leaf.offset,
                                        strides=(*outer, *inner))
        return out[""] if self.one else out


def leaf_value(value: Any, path: str) -> Any:
    """The part of a (nested dict/tuple) value at a leaf's path, e.g. ``"t/_index_0"``."""
    for part in path.split("/") if path else []:
        value = value[int(part[len("_index_"):])] if part.startswith("_index_") else value[part]
    return value


def text_paths(space_json: str) -> List[str]:
    """The leaf paths of the space's Text leaves (``""`` when the space is one)."""
    def walk(o: Dict[str, Any], path: str) -> List[str]:
        if o["type"] == "Dict":
            return [p for k, v in o["subspaces"].items() for p in walk(v, f"{path}/{k}" if path else k)]
        if o["type"] == "Tuple":
            return [p for i, v in enumerate(o["subspaces"]) for p in walk(v, f"{path}/_index_{i}" if path else f"_index_{i}")]
        return [path] if o["type"] == "Text" else []
    return walk(json.loads(space_json), "")


def text_codes(value: Any, dtype: np.dtype, max_length: int) -> Any:
    """A Text value (a ``str``) as its row: code points, zero-padded; other values as they are."""
    if not isinstance(value, str):
        return value
    codes = [ord(c) for c in value]
    if len(codes) > max_length:
        raise _rollway.InputError(f"text of {len(codes)} characters, the Text space holds at most {max_length}")
    return np.array(codes + [0] * (max_length - len(codes)), dtype=dtype)


def text_string(codes: np.ndarray) -> str:
    """A Text row (code points, zero-padded) as a ``str``."""
    return "".join(map(chr, codes[: int(np.argmin(codes)) if 0 in codes else len(codes)]))


class RowError(_rollway.InputError):
    """A value that does not convert into its row without loss (an :class:`rollway.InputError`,
    so a ``ValueError``, as every input mistake): a float that is not a
    whole number (``kind`` "fraction"), or an integer outside the leaf's dtype ("range"),
    for an integer leaf (Discrete, MultiDiscrete, MultiBinary, integer Box). ``row`` is
    the row of the batch (None for a single value), ``leaf`` the leaf's path, ``index``
    the element in it, ``value`` the value, ``dtype`` the leaf's."""

    def __init__(self, row: Optional[int], leaf: str, index: int, value: Any, dtype: np.dtype, scalar: bool, kind: str):
        at = (f"[{leaf!r}]" if leaf else "") + ("" if scalar else f"[{index}]")
        why = "is not a whole number" if kind == "fraction" else f"does not fit {dtype}"
        super().__init__(f"{at + ' = ' if at else ''}{value} {why} (the space holds {dtype} there)")
        self.row, self.leaf, self.index, self.value, self.dtype, self.kind = row, leaf, index, float(value), str(dtype), kind


def exact(v: Any, dt: np.dtype, shape: Optional[Tuple[int, ...]], path: str = "", batch: bool = False) -> np.ndarray:
    """``v`` as a contiguous array of ``dt``, refusing what would lose information
    (:class:`RowError`): floats that are not whole numbers (or not finite), and integers
    outside ``dt``'s range, for an integer ``dt``. ``shape``: the shape it must have, or
    None for any. ``batch``: the first axis counts rows (the error names the row)."""
    a = np.asarray(v)
    if shape is not None and a.shape != shape:
        raise _rollway.InputError(f"{'[' + repr(path) + '] ' if path else ''}has shape {a.shape}; the space's is {shape}")
    if a.dtype != dt and dt.kind in "iub" and a.dtype.kind in "fiub" and not np.can_cast(a.dtype, dt):
        # Only when the dtypes differ in a way that can lose: the common case costs a dtype compare.
        lo, hi = (0, 1) if dt.kind == "b" else (np.iinfo(dt).min, np.iinfo(dt).max)
        with np.errstate(invalid="ignore"):
            fraction = ~(np.isfinite(a) & (a == np.trunc(a))) if a.dtype.kind == "f" else np.zeros(a.shape, bool)
            bad = fraction | (a < lo) | (a > hi)
        if bad.any():
            at = np.argwhere(bad)[0]
            kind = "fraction" if fraction[tuple(at)] else "range"
            row, rest = (int(at[0]), at[1:]) if batch else (None, at)
            index = int(np.ravel_multi_index(tuple(rest), a.shape[1:] if batch else a.shape)) if len(rest) else 0
            raise RowError(row, path, index, a[tuple(at)], dt, scalar=a.ndim == (1 if batch else 0), kind=kind)
    return np.ascontiguousarray(a, dtype=dt)


def packer(space_json: str) -> Callable[[Any], bytes]:
    """A function packing a value of the space into one row of its layout: of the
    space's shapes, and without loss (:func:`exact`)."""
    parts, row_bytes = leaves(space_json)
    if len(parts) == 1:
        # The common case, packed on every step of a DataCollector: as little Python as possible.
        dt, shape = parts[0].dtype, parts[0].shape
        pad = b"\0" * (row_bytes - parts[0].nbytes)
        if shape == () and dt == np.int64:
            int_row = struct.Struct("<q").pack
            return lambda v: int_row(v) if type(v) is int else exact(v, dt, shape).tobytes() + pad
        if text_paths(space_json):
            return lambda v: np.ascontiguousarray(text_codes(v, dt, shape[0]), dtype=dt).tobytes() + pad
        return lambda v: exact(v, dt, shape).tobytes() + pad
    join = part_packer(space_json)
    return lambda v: b"".join(join(v))


def part_packer(space_json: str) -> Callable[[Any], List[Any]]:
    """Like :func:`packer`, but a row comes back as its parts, in order: each leaf as a flat
    contiguous ``uint8`` array (a view of the leaf's array where it already has the leaf's dtype
    and is contiguous) and the zero padding after it as ``bytes``. An env process copies them
    straight into its shared row: a row of several leaves and megabytes (a multi-agent env's
    stacked observations) is copied once, not first joined into new bytes."""
    parts, _ = leaves(space_json)
    if len(parts) == 1:
        one = packer(space_json)
        return lambda v: [one(v)]
    texts = set(text_paths(space_json))
    # Only Text leaves take a str: anywhere else a str stays an error, not code points.
    pads = [(leaf.path, leaf.dtype, leaf.shape, b"\0" * ((-leaf.nbytes) % 8), leaf.shape[0] if leaf.path in texts else None)
            for leaf in parts]

    def pack(v: Any) -> List[Any]:
        out: List[Any] = []
        for p, dt, shape, pad, n in pads:
            a = exact(leaf_value(v, p), dt, shape, p) if n is None else \
                np.ascontiguousarray(text_codes(leaf_value(v, p), dt, n), dtype=dt)
            out.append(a.reshape(-1).view(np.uint8))
            if pad:
                out.append(pad)
        return out

    return pack


def batch_packer(space_json: str, strict_as: Optional[str] = None, hint: str = "") -> Callable[[Any, int], bytes]:
    """A function packing ``n`` values of the space, batched leaf by leaf (arrays of
    shape ``(n, *leaf_shape)``, nested like the space), into ``n`` rows.
    ``strict_as`` (e.g. ``"the policy returned actions"``): each leaf must have exactly
    that shape, else a ``ValueError`` starting with those words (and ending with
    ``hint``, what the shape means); otherwise any array of the right size is taken."""
    parts, row_bytes = leaves(space_json)

    def leaf_array(v: Any, n: int, leaf: Leaf) -> np.ndarray:
        if strict_as is None:
            return np.ascontiguousarray(v, dtype=leaf.dtype)
        a = np.asarray(v)
        if a.shape != (n, *leaf.shape):
            where = f"[{leaf.path!r}]" if leaf.path else ""
            raise _rollway.InputError(f"{strict_as}{where} of shape {a.shape}; the batch needs {(n, *leaf.shape)}{hint}")
        return exact(a, leaf.dtype, None, leaf.path, batch=True)

    if len(parts) == 1 and parts[0].nbytes == row_bytes:
        return lambda v, n: leaf_array(v, n, parts[0]).tobytes()

    def pack(v: Any, n: int) -> bytes:
        rows = np.zeros((n, row_bytes), dtype=np.uint8)
        for leaf in parts:
            a = leaf_array(leaf_value(v, leaf.path), n, leaf)
            rows[:, leaf.offset:leaf.offset + leaf.nbytes] = a.reshape(n, -1).view(np.uint8)
        return rows.tobytes()

    return pack


def unpacker(space_json: str) -> Callable[[bytes], Any]:
    """A function turning one row of the space's layout back into a value of the space
    (ints for Discrete, numpy arrays for the other leaves, dicts and tuples nested)."""
    space = json.loads(space_json)
    parts, _ = leaves(space_json)

    def leaf(row: bytes, at: Leaf, discrete: bool) -> Any:
        a = np.frombuffer(row, dtype=at.dtype, count=int(np.prod(at.shape)), offset=at.offset).reshape(at.shape).copy()
        return int(a) if discrete else a

    def build(o: Dict[str, Any], row: bytes, it: Any) -> Any:
        if o["type"] == "Dict":
            return {k: build(v, row, it) for k, v in o["subspaces"].items()}
        if o["type"] == "Tuple":
            return tuple(build(v, row, it) for v in o["subspaces"])
        if o["type"] == "Text":
            return text_string(leaf(row, next(it), False))
        return leaf(row, next(it), o["type"] == "Discrete")

    return lambda row: build(space, row, iter(parts))


def env_spec(env: Any) -> Dict[str, Any]:
    """What rollway records of a Gymnasium env: id (else its class name), spaces as
    space JSON, time limit, ``render_fps``, reward threshold, and ``gymnasium``: the
    env's own ``spec.to_json()`` (what Minari's ``recover_environment`` rebuilds it from)
    when Gymnasium made it and its spec serializes (``None`` otherwise: a callable among
    its kwargs, an env made without ``gym.make``); ``agents``: a multi-agent env's possible
    agents, in the order its rows stack them (``None`` for one agent)."""
    spec = getattr(env, "spec", None)
    rows = _agent_rows(env)
    fps = (getattr(env, "metadata", None) or {}).get("render_fps")
    gymnasium = None
    if spec is not None and callable(getattr(spec, "to_json", None)):
        try:
            gymnasium = spec.to_json()
        except (ValueError, TypeError):  # Gymnasium's answer to kwargs JSON cannot hold
            gymnasium = None
    return {
        "id": spec.id if spec is not None else rows.name if rows is not None else type(getattr(env, "unwrapped", env)).__name__,
        "observation_space": to_json(env.observation_space),
        "action_space": to_json(env.action_space),
        "max_episode_steps": getattr(spec, "max_episode_steps", None),
        "render_fps": int(fps) if fps is not None else None,
        "reward_threshold": getattr(spec, "reward_threshold", None),
        "gymnasium": gymnasium,
        "agents": list(rows.possible_agents) if rows is not None else None,
    }


def _agent_rows(env: Any) -> Any:
    """A multi-agent env (``rollway.multiagent.AgentRows``, under any wrappers), else None."""
    from rollway.multiagent import AgentRows

    inner = getattr(env, "unwrapped", env)
    return inner if isinstance(inner, AgentRows) else None


def dump_info(info: Any) -> str:
    """An info dict as JSON text (numpy values as lists and numbers). A value that
    cannot be recorded (an object JSON has no form for, a NaN or infinity) is a
    ``TypeError`` naming its key, e.g. ``info['handle']: a Foo cannot be recorded``."""
    try:
        return json.dumps(info, default=_plain, allow_nan=False)
    except (TypeError, ValueError):
        raise TypeError(_unrecordable(info, "info")) from None


def _unrecordable(x: Any, at: str) -> str:
    """Where in ``x`` (reached by ``at``) the first value is that JSON cannot record, and why."""
    if isinstance(x, dict):
        for k, v in x.items():
            if not isinstance(k, (str, int, float, bool)) and k is not None:
                return f"{at}: the key {k!r} ({type(k).__name__}) cannot be recorded (keys are strings)"
            try:
                json.dumps(v, default=_plain, allow_nan=False)
            except (TypeError, ValueError):
                return _unrecordable(v, f"{at}[{k!r}]")
    if isinstance(x, (list, tuple)):
        for i, v in enumerate(x):
            try:
                json.dumps(v, default=_plain, allow_nan=False)
            except (TypeError, ValueError):
                return _unrecordable(v, f"{at}[{i}]")
    if isinstance(x, np.ndarray) and x.dtype.kind not in "fiub":
        return f"{at}: an array of {x.dtype} cannot be recorded"
    if isinstance(x, (float, np.floating)) or (isinstance(x, np.ndarray) and x.dtype.kind == "f"):
        return f"{at}: {x!r} cannot be recorded (JSON has no NaN or infinity)"
    return f"{at}: a {type(x).__name__} cannot be recorded (infos hold numbers, strings, lists, dicts and numpy arrays)"


def _plain(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    raise TypeError(f"info value of type {type(x).__name__} is not JSON-serializable")
