"""Torch policies exported to ONNX, run by rollway with no Python in the loop.

    python -m rollway.examples.onnx_policies OUT_DIR

exports the README's MLP and an LSTM policy (``torch.onnx.export``), runs each
from the CLI (``rollway run --agent onnx:OUT_DIR/mlp.onnx``) and as a torch
policy (``rollway.run(agent=policy)``) with the same seed, and checks that both
chose the same actions. The names are the ``onnx:`` agent's contract:

- inputs ``obs`` (or one per Dict leaf: ``rgb``, ``inventory``), ``first`` (bool
  ``[n]``) and ``state`` (``float32 [n, d]``, zeros when an episode starts);
- outputs ``logits`` (argmax, or sampled with ``--agent-opt sample=true``) or
  ``action``, ``state_out`` (the next ``state``), and extras such as ``value``
  (recorded with ``--agent-opt extras=value``);
- a dynamic batch axis on every input and output (``dynamic_axes``).

The module's networks are also what the tests (tests/python/test_onnx.py) and
the benchmark (bench/onnx_agent.py) export.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any, Callable, Dict, List, Sequence, Tuple

import numpy as np
import torch
from torch import nn


def mlp(seed: int = 0) -> nn.Module:
    """The README's CartPole network, with seeded weights."""
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 64), nn.Tanh(), nn.Linear(64, 2))


class LSTMPolicy(nn.Module):
    """A recurrent policy: ``(obs, first, state) -> (logits, state_out, value)``.

    ``state`` is ``h`` and ``c`` side by side; ``first`` zeroes them, so the
    network is right whoever resets its state."""

    def __init__(self, obs_dim: int = 4, actions: int = 2, hidden: int = 32, seed: int = 0):
        super().__init__()
        torch.manual_seed(seed)
        self.hidden = hidden
        self.enc = nn.Linear(obs_dim, hidden)
        self.cell = nn.LSTMCell(hidden, hidden)
        self.pi = nn.Linear(hidden, actions)
        self.v = nn.Linear(hidden, 1)

    def forward(self, obs: torch.Tensor, first: torch.Tensor, state: torch.Tensor) -> Tuple[torch.Tensor, ...]:
        keep = (~first).to(state.dtype).unsqueeze(-1)
        h, c = (state * keep).chunk(2, -1)
        h, c = self.cell(torch.tanh(self.enc(obs)), (h, c))
        return self.pi(h), torch.cat([h, c], -1), self.v(h).squeeze(-1)


class Residual(nn.Module):
    def __init__(self, ch: int):
        super().__init__()
        self.a = nn.Conv2d(ch, ch, 3, padding=1)
        self.b = nn.Conv2d(ch, ch, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.b(torch.relu(self.a(torch.relu(x))))


class PixelPolicy(nn.Module):
    """A VPT-style recurrent pixel policy (IMPALA ResNet, 16-32-32 channels, then
    an LSTM) for PixelMine: ``(rgb uint8 [n,H,W,3], first, state) -> (logits,
    state_out, value)``. The pixels go in as uint8 and are scaled inside."""

    def __init__(self, actions: int, side: int = 128, hidden: int = 256, seed: int = 0):
        super().__init__()
        torch.manual_seed(seed)
        layers: List[nn.Module] = []
        ch = 3
        for out in (16, 32, 32):
            layers += [nn.Conv2d(ch, out, 3, padding=1), nn.MaxPool2d(3, 2, padding=1), Residual(out), Residual(out)]
            ch = out
        self.cnn = nn.Sequential(*layers)
        self.fc = nn.Linear(ch * (side // 8) ** 2, hidden)
        self.hidden = hidden
        self.cell = nn.LSTMCell(hidden, hidden)
        self.pi = nn.Linear(hidden, actions)
        self.v = nn.Linear(hidden, 1)

    def forward(self, rgb: torch.Tensor, first: torch.Tensor, state: torch.Tensor) -> Tuple[torch.Tensor, ...]:
        x = rgb.permute(0, 3, 1, 2).to(torch.float32) / 255.0
        x = torch.relu(self.fc(torch.relu(self.cnn(x)).flatten(1)))
        keep = (~first).to(state.dtype).unsqueeze(-1)
        h, c = (state * keep).chunk(2, -1)
        h, c = self.cell(x, (h, c))
        return self.pi(h), torch.cat([h, c], -1), self.v(h).squeeze(-1)


def export(model: nn.Module, args: Sequence[torch.Tensor], inputs: List[str], outputs: List[str], path: str) -> str:
    """``torch.onnx.export`` with rollway's names and a dynamic batch axis everywhere."""
    with torch.no_grad():
        torch.onnx.export(
            model,
            tuple(args),
            path,
            input_names=inputs,
            output_names=outputs,
            dynamic_axes={name: {0: "n"} for name in inputs + outputs},
            opset_version=17,
            dynamo=False,  # the TorchScript exporter: needs onnx only (the default also needs onnxscript)
        )
    return path


def export_mlp(model: nn.Module, path: str) -> str:
    return export(model, [torch.zeros(2, 4)], ["obs"], ["logits"], path)


def export_recurrent(model: nn.Module, obs: torch.Tensor, path: str, obs_name: str = "obs") -> str:
    n = obs.shape[0]
    args = [obs, torch.zeros(n, dtype=torch.bool), torch.zeros(n, 2 * model.hidden)]
    return export(model, args, [obs_name, "first", "state"], ["logits", "state_out", "value"], path)


def torch_policy(model: nn.Module, recurrent: bool = False, obs_key: str = "") -> Callable[..., Any]:
    """The same network as a rollway Python policy (argmax of the logits)."""

    @torch.no_grad()
    def policy(obs: Any, first: np.ndarray, state: np.ndarray) -> Any:
        x = torch.from_numpy(obs[obs_key] if obs_key else obs)
        if not recurrent:
            return model(x).argmax(-1).numpy()
        h = torch.from_numpy(state) if state.shape[1] else torch.zeros(len(first), 2 * model.hidden)
        logits, new_state, _ = model(x, torch.from_numpy(first), h)
        return logits.argmax(-1).numpy(), new_state.numpy()

    return policy


def main(out: str) -> None:
    import rollway

    os.makedirs(out, exist_ok=True)
    nets: Dict[str, Tuple[nn.Module, str, bool]] = {
        "mlp": (mlp(), export_mlp(mlp(), os.path.join(out, "mlp.onnx")), False),
        "lstm": (LSTMPolicy(), export_recurrent(LSTMPolicy(), torch.zeros(2, 4), os.path.join(out, "lstm.onnx")), True),
    }
    cli = os.path.join(os.path.dirname(sys.executable), "rollway")
    for name, (model, path, recurrent) in nets.items():
        native, hosted = os.path.join(out, f"{name}-onnx"), os.path.join(out, f"{name}-torch")
        subprocess.run([cli, "run", "--env", "CartPole-v1", "--agent", f"onnx:{path}", "--episodes", "32", "--out", native], check=True)
        rollway.run(env="CartPole-v1", agent=torch_policy(model, recurrent), episodes=32, out=hosted, progress=False)
        a, b = rollway.Dataset(native), rollway.Dataset(hosted)
        same = all(np.array_equal(a[i].actions, b[i].actions) for i in range(len(a)))
        print(f"{name}: {len(a)} episodes, actions equal to the torch policy's: {same}")
        if not same:
            raise SystemExit(1)


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("out", nargs="?", default="onnx-policies", help="the folder for the models and the two runs' datasets")
    main(ap.parse_args().out)
