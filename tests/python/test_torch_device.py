"""Issue 56: torch policies and fragments on a device (rollway.torch.Policy, Fragment.to,
IterableDataset(device=), Staging). CI has no GPU: the CPU path is checked for equal results
to plain numpy policies and arrays, and the staging path (pinned buffers, host-to-device
copies) runs on torch's ``meta`` device, which takes shapes and dtypes but no values: the
values are read back from the staging buffers. bench/gpu.py checks the same on a GPU."""

import os
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import rollway  # noqa: E402
import rollway.torch as rt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


class Net(torch.nn.Module):
    """A small actor-critic whose ``act`` returns tensors, as a GPU policy would."""

    def __init__(self, seed=0):
        super().__init__()
        torch.manual_seed(seed)
        self.body = torch.nn.Linear(4, 2)

    def act(self, obs, first, state):
        assert isinstance(obs, torch.Tensor) and isinstance(first, torch.Tensor) and isinstance(state, torch.Tensor)
        logits = self.body(obs)
        return {"actions": logits.argmax(-1), "value": logits[:, 0]}

    def numpy_act(self, obs, first, state):
        with torch.no_grad():
            logits = self.body(torch.from_numpy(obs))
        return {"actions": logits.argmax(-1).numpy(), "value": logits[:, 0].numpy()}


def fragments(policy, lag=0, publish=None, n=3):
    out = []
    with rollway.Rollout("CartPole-v1", policy, num_envs=4, steps_per_fragment=16, seed=3, max_policy_lag=lag) as r:
        for _ in range(n):
            out.append(r.collect())
            r.publish(publish() if publish else None)
    return out


def test_issue56_a_torch_policy_on_cpu_acts_as_the_same_numpy_policy_in_run_and_rollout(tmp_path):
    net = Net()
    policy = rt.Policy(net.act, "cpu")
    assert policy.module is net and policy.__qualname__ == "Net.act"
    for got, want in zip(fragments(policy), fragments(net.numpy_act)):
        for k in ("obs", "actions", "rewards", "terminated", "truncated", "first", "episode"):
            np.testing.assert_array_equal(getattr(got, k), getattr(want, k), err_msg=k)
        np.testing.assert_array_equal(got.extras["value"], want.extras["value"])

    # In a run: the same dataset as the numpy policy's, recorded under the acting function's name.
    def greedy(obs, first, state):
        return net.body(obs).argmax(-1)

    for name, agent in (("torch", rt.Policy(greedy, "cpu", module=net)), ("numpy", lambda o, f, s: net.numpy_act(o, f, s)["actions"])):
        rollway.run(env="CartPole-v1", agent=agent, episodes=12, workers=2, seed=5, out=tmp_path / name, progress=False)
    a, b = rollway.Dataset(tmp_path / "torch"), rollway.Dataset(tmp_path / "numpy")
    assert len(a) == len(b) == 12
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x.actions, y.actions)
    assert {e["run"] for e in a.episodes} == {0}


def test_issue56_published_weights_reach_a_torch_policys_module_at_lag_one():
    acting, learner = Net(seed=0), Net(seed=1)
    frags = fragments(rt.Policy(acting.act, "cpu"), lag=1, publish=lambda: {k: v.clone() for k, v in learner.state_dict().items()}, n=6)
    assert torch.equal(acting.body.weight, learner.body.weight)
    with torch.no_grad():
        v1 = learner.body(torch.from_numpy(frags[-1].obs[:-1]))[..., 0].numpy()
    late = frags[-1].version == frags[-1].version.max()
    assert frags[-1].version.max() >= 1 and late.any()
    np.testing.assert_allclose(frags[-1].extras["value"][late], v1[late], rtol=1e-6)
    with pytest.raises(TypeError, match="module="):
        rt.Policy(lambda o, f, s: o[:, 0].long()).load({})


def test_issue56_a_fragment_on_a_device_holds_every_array_as_a_tensor():
    from hosted_envs import AllSpaces

    with rollway.Rollout(AllSpaces, "random", num_envs=3, steps_per_fragment=20, seed=1, host="inline") as r:
        frag = r.collect()
    assert len(frag.finished["env"]) > 0 and isinstance(frag.obs, dict)
    dev = frag.to("cpu")
    assert type(dev) is type(frag) and (dev.steps, dev.envs, dev.stats, dev.final_info) == (frag.steps, frag.envs, frag.stats, frag.final_info)
    for k in rt.FRAGMENT_ARRAYS:
        got, want = getattr(dev, k), getattr(frag, k)
        if isinstance(want, dict):
            assert sorted(got) == sorted(want), k
            pairs = [(got[j], want[j]) for j in want]
        else:
            pairs = [(got, want)]
        for g, w in pairs:
            assert isinstance(g, torch.Tensor) and g.device.type == "cpu", k
            np.testing.assert_array_equal(g.numpy(), w, err_msg=k)
            assert w.size == 0 or np.shares_memory(g.numpy(), w), f"{k}: on the CPU the tensor is the array's memory"
    assert torch.equal(dev.dones, torch.from_numpy(frag.dones))

    # The staging path: every array sent once, each from its own staging buffer, values there.
    meta = frag.to("meta")
    for k in ("actions", "rewards", "episode", "final_obs"):
        g, w = getattr(meta, k), getattr(frag, k)
        leaves = [(f"/{k}/{j}", g[j], w[j]) for j in w] if isinstance(w, dict) else [(f"/{k}", g, w)]
        for path, gl, wl in leaves:
            assert gl.device.type == "meta" and tuple(gl.shape) == wl.shape, path
            assert gl.dtype == torch.from_numpy(np.empty(0, wl.dtype)).dtype, path
            staged = r._stagings["meta"].buffer(0, path, gl.dtype, wl.size)[: wl.size].view(wl.shape).numpy()
            np.testing.assert_array_equal(staged, wl, err_msg=path)


def test_issue56_staging_reuses_its_buffers_across_batch_sizes_and_takes_turns():
    st = rt.Staging("meta", pin=False, depth=2)
    seen = {}
    for i, n in enumerate((8, 8, 4, 6, 8, 3, 10)):
        obs = np.arange(n * 3, dtype=np.uint8).reshape(n, 3) + i
        out = st.put({"obs": obs, "first": np.ones(n, np.bool_), "kept": ("text", 7), "t": torch.arange(n)})
        assert out["kept"] == ("text", 7)
        assert (tuple(out["obs"].shape), out["obs"].dtype, out["first"].dtype, out["t"].dtype) == ((n, 3), torch.uint8, torch.bool, torch.int64)
        assert all(v.device.type == "meta" for v in (out["obs"], out["first"], out["t"]))
        buf = st.buffer(i % 2, "/obs", torch.uint8, obs.size)
        np.testing.assert_array_equal(buf[: obs.size].view(n, 3).numpy(), obs)
        seen.setdefault(i % 2, set()).add(buf.data_ptr())
    # Two sets of buffers, taking turns; batches up to the largest yet reuse them, a larger one grows its turn's.
    assert {t: len(p) for t, p in seen.items()} == {0: 2, 1: 1}, seen
    assert st.buffer(0, "/obs", torch.uint8, 1).numel() >= 30
    with pytest.raises(ValueError, match="depth"):
        rt.Staging("cpu", depth=0)


def test_issue56_loader_batches_on_a_device_through_the_dataset(cartpole):
    on_cpu = list(rt.IterableDataset(cartpole, clip=4, batch=8, seed=0, device="cpu", epochs=1))
    plain = list(rollway.Loader(cartpole, clip=4, batch=8, seed=0, epochs=1))
    assert len(on_cpu) == len(plain) > 1
    for a, b in zip(on_cpu, plain):
        for k in ("observations", "actions", "rewards", "episode_id"):
            np.testing.assert_array_equal(a[k].numpy(), b[k])
    for batch, want in zip(rt.IterableDataset(cartpole, clip=4, batch=8, seed=0, device="meta", epochs=1), plain):
        assert batch["observations"].device.type == "meta" and tuple(batch["observations"].shape) == want["observations"].shape


def test_issue56_the_device_scripts_checks_pass_in_its_cpu_rehearsal(tmp_path):
    """bench/gpu.py is what a GPU machine runs (bench/gpu.sh); its checks part, rehearsed on the CPU,
    must find the device path equal to the host path, or the device minutes would measure a broken one."""
    import json
    import subprocess

    out = tmp_path / "gpu.json"
    script = os.path.join(HERE, "..", "..", "bench", "gpu.py")
    p = subprocess.run([sys.executable, script, "--cpu", "--parts", "checks", "--out", str(out)], capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stderr
    report = json.loads(out.read_text())
    assert report["rehearsal_on_cpu"] is True and report["machine"]["cores"] >= 1
    assert report["checks"] == {"fragment_to_equal": True, "loader_to_equal": True, "policy_same_actions_share": 1.0}
