"""Run by tests/wheel/inside.sh in the bare root with the wheel installed: inside.py WHEEL_JOB SOURCE_JOB.

Checks that the package works with no system library of its own: the version, a run of a
hosted Gymnasium env (a worker process of this venv's Python), an ``onnx:`` model with no
onnxruntime installed (tract runs it), the default job's H.264 frames decoded back, a Minari export of the CartPole run (HDF5), and that the wheel's default job recorded the same
episodes as the source build's (SOURCE_JOB, made outside by target/release/rollway)."""

import hashlib
import importlib.metadata
import os
import sys

import numpy as np

import rollway

wheel_job, source_job = sys.argv[1:3]

assert rollway.__version__ == importlib.metadata.version("rollway"), (rollway.__version__, importlib.metadata.version("rollway"))
print("rollway", rollway.__version__)

summary = rollway.run("gym:CartPole-v1", "random", episodes=8, workers=2, out="cartpole", progress=False)
cart = rollway.Dataset("cartpole")
assert len(cart) == 8 and cart[0].observations.shape == (cart[0].length + 1, 4), cart[0]
print("hosted gym:CartPole-v1:", len(cart), "episodes")

ds = rollway.Dataset(wheel_job)
rgb = ds[0].observations["rgb"]
assert rgb.dtype == np.uint8 and rgb.shape == (ds[0].length + 1, 128, 128, 3) and rgb.std() > 0, rgb.shape
print("H.264 frames read back:", rgb.shape)

# The onnx: agent with no onnxruntime in this venv: tract, compiled into the wheel, runs the model.
s = rollway.run("CartPole-v1", "onnx:mlp.onnx", episodes=8, out="onnx", progress=False)
assert s.inference.startswith("tract") and len(rollway.Dataset("onnx")) == 8, s.inference
print("onnx: agent without onnxruntime:", s.inference.split(" · ")[0])

report = cart.export("minari", "cartpole-v0", progress=False)
h5 = [os.path.join(d, f) for d, _, fs in os.walk("cartpole-v0") for f in fs if f.endswith(".hdf5")]
assert h5 and os.path.getsize(h5[0]) > 0, report
print("Minari export:", report.get("episodes"), "episodes,", os.path.getsize(h5[0]), "bytes of HDF5")


def digests(path):
    """Per episode id, per field: the SHA-256 of the array's bytes."""
    out = {}
    for ep in rollway.Dataset(path):
        fields = {"actions": ep.actions, "rewards": ep.rewards, "terminations": ep.terminations, "truncations": ep.truncations}
        obs = ep.observations if isinstance(ep.observations, dict) else {"": ep.observations}
        fields.update({f"observations/{k}": v for k, v in obs.items()})
        out[ep.id] = {k: hashlib.sha256(np.ascontiguousarray(v).tobytes()).hexdigest() for k, v in fields.items()}
    return out


a, b = digests(wheel_job), digests(source_job)
assert a.keys() == b.keys(), (sorted(a), sorted(b))
frames = {"observations/rgb"}
differ = sorted({k for i in a for k in a[i] if a[i][k] != b[i][k]})
assert not set(differ) - frames, f"the wheel's and the source build's episodes differ in {differ}"
if differ:
    print(f"the default job, wheel vs source build: {len(a)} episodes, equal but for the decoded H.264 frames (the encoders differ)")
else:
    print(f"the default job, wheel vs source build: {len(a)} episodes, every array equal, the decoded H.264 frames included")
