"""Makes this folder's models and golden outputs: python crates/onnx/tests/data/make.py

The models are examples/onnx_policies.py's networks (seeded), exported with
torch.onnx.export; golden.json holds torch's own outputs for fixed inputs, which
the Rust tests compare both engines with (tests/engines.rs).
"""

import json
import os
import sys

import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "..", "..", "examples"))
import onnx_policies as P  # noqa: E402


class Pendulum(torch.nn.Module):
    """A continuous policy: ``obs -> action`` in [-2, 2]."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = torch.nn.Linear(3, 1)

    def forward(self, obs):
        return 2 * torch.tanh(self.fc(obs))


def main():
    g = torch.Generator().manual_seed(1)
    golden = {}
    mlp = P.mlp()
    obs = torch.randn(5, 4, generator=g)
    P.export_mlp(mlp, os.path.join(here, "mlp.onnx"))
    golden["mlp"] = {"obs": obs.tolist(), "logits": mlp(obs).tolist()}

    lstm = P.LSTMPolicy()
    P.export_recurrent(lstm, torch.zeros(2, 4), os.path.join(here, "lstm.onnx"))
    state = torch.zeros(5, 2 * lstm.hidden)
    first = torch.tensor([True, False, True, False, False])
    steps = []
    for _ in range(3):
        o = torch.randn(5, 4, generator=g)
        logits, new_state, value = lstm(o, first, state)
        steps.append({"obs": o.tolist(), "first": first.tolist(), "logits": logits.tolist(), "value": value.tolist()})
        state, first = new_state, torch.zeros(5, dtype=torch.bool)
    golden["lstm"] = steps

    pixel = P.PixelPolicy(actions=int(sys.argv[1]) if len(sys.argv) > 1 else 11, side=16, hidden=32)
    P.export_recurrent(pixel, torch.zeros(2, 16, 16, 3, dtype=torch.uint8), os.path.join(here, "pixel16.onnx"), obs_name="rgb")

    pend = Pendulum()
    P.export(pend, [torch.zeros(2, 3)], ["obs"], ["action"], os.path.join(here, "pendulum.onnx"))
    with torch.no_grad():
        json.dump(golden, open(os.path.join(here, "golden.json"), "w"), indent=1)


if __name__ == "__main__":
    with torch.no_grad():
        main()
