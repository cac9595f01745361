"""rollway.Loader: zero-copy numpy batches, held batches, resume, and torch."""

import gc
import itertools

import numpy as np
import pytest

import rollway


def test_an_epoch_is_every_window_once(cartpole):
    ld = rollway.Loader(cartpole, clip=8, stride=2, batch=16, seed=1)
    seen = []
    for b in ld:
        assert b["observations"].shape[1:] == (8, 4) and b["rewards"].shape[1] == 8
        seen += list(zip(b["episode_id"].tolist(), b["step"].tolist()))
    assert len(seen) == ld.num_windows == len(set(seen))
    ds = rollway.Dataset(cartpole)
    expected = sum(len(range(0, e.length - 8 + 1, 2)) for e in ds if e.length >= 8)
    assert ld.num_windows == expected


def test_windows_hold_the_dataset_values(cartpole):
    ds = rollway.Dataset(cartpole)
    eps = {e.id: e for e in ds}
    for b in rollway.Loader(cartpole, clip=5, batch=64, seed=2):
        for k in range(len(b["episode_id"])):
            e, s = eps[int(b["episode_id"][k])], int(b["step"][k])
            np.testing.assert_array_equal(b["observations"][k], e.observations[s:s + 5])
            np.testing.assert_array_equal(b["actions"][k], e.actions[s:s + 5])
            np.testing.assert_array_equal(b["rewards"][k], e.rewards[s:s + 5])
            assert b["first"][k][0] == (s == 0)


def test_batches_view_the_loader_buffers_without_a_copy(cartpole):
    b = next(iter(rollway.Loader(cartpole, clip=4, batch=8)))
    arrays = {k: v for k, v in b.items() if k != "index"}
    assert len(arrays) == 10
    for key, a in arrays.items():
        assert not a.flags.owndata and a.flags.writeable, key
    # One base object keeps the whole lent batch: every field views its memory.
    assert len({id(a.base) for a in arrays.values()}) == 1
    assert type(b["rewards"].base).__name__ == "Keeper"


def test_issue11_an_empty_field_is_a_view_too(cartpole):
    # A dataset without agent states has [B, 0] states. An empty Vec's pointer is not
    # aligned for float32, and the array used to be made by a copy through Python
    # calls: ~5 µs a batch, most of the loader's cost in Python.
    b = next(iter(rollway.Loader(cartpole, clip=4, batch=8)))
    s = b["state"]
    assert s.shape == (8, 0) and s.dtype == np.float32
    assert s.base is b["rewards"].base and not s.flags.owndata


def test_a_held_batch_is_never_overwritten(cartpole):
    ld = rollway.Loader(cartpole, clip=4, batch=8, prefetch=1, threads=1, epochs=3)
    held, copies = [], []
    for b in ld:
        held.append(b)
        copies.append({k: b[k].copy() for k in ("observations", "rewards", "episode_id", "step")})
    # Far more batches than the pool has buffers: held ones must not have been reused.
    assert len(held) > 3 * 4
    for b, c in zip(held, copies):
        for k, v in c.items():
            np.testing.assert_array_equal(b[k], v)


def test_released_batches_are_reused(cartpole):
    ld = rollway.Loader(cartpole, clip=4, batch=8, prefetch=1, threads=1, epochs=2)
    addresses = set()
    # 24 batches, six times the pool's buffers, are enough to see them go round; each gc.collect() walks
    # every object that torch, jax and Ray put in this process (a quarter of a second), and the whole
    # loader's 200 batches took 50 s (issue 46).
    for b in itertools.islice(ld, 24):
        addresses.add(b["rewards"].__array_interface__["data"][0])
        del b
        gc.collect()
    # The pool's few buffers go round: no fresh memory per batch.
    assert len(ld) > 24 and len(addresses) <= 4


def test_state_dict_resumes_with_the_remaining_windows(cartpole):
    full = [b["episode_id"].tolist() + b["step"].tolist() for b in rollway.Loader(cartpole, clip=6, batch=10, seed=5, epochs=2)]
    ld = rollway.Loader(cartpole, clip=6, batch=10, seed=5, epochs=2)
    it = iter(ld)
    first = [next(it)["episode_id"].tolist() for _ in range(7)]
    state = ld.state_dict()
    resumed = rollway.Loader(cartpole, clip=6, batch=10, seed=5, epochs=2)
    resumed.load_state_dict(state)
    rest = [b["episode_id"].tolist() + b["step"].tolist() for b in resumed]
    assert len(ld) > 7
    assert first == [x[:len(f)] for x, f in zip(full[:7], first)]
    assert rest == full[7:]


def test_state_from_other_settings_is_refused(cartpole):
    state = rollway.Loader(cartpole, clip=6, batch=10, seed=5).state_dict()
    with pytest.raises(rollway.InputError, match="seed"):
        rollway.Loader(cartpole, clip=6, batch=10, seed=6).load_state_dict(state)


def test_ranks_split_the_windows(cartpole):
    ids = []
    for r in range(3):
        for b in rollway.Loader(cartpole, clip=8, batch=16, seed=4, rank=r, world=3):
            ids += list(zip(b["episode_id"].tolist(), b["step"].tolist()))
    assert len(ids) == len(set(ids)) == rollway.Loader(cartpole, clip=8).num_windows


def test_select_and_fields(cartpole):
    ds = rollway.Dataset(cartpole)
    ld = rollway.Loader(cartpole, clip=4, batch=32, select={"min_length": 30}, fields=["rewards", "episode_id"])
    b = next(iter(ld))
    assert set(b) == {"rewards", "episode_id", "index"}
    long_ids = {e.id for e in ds if e.length >= 30}
    for b in ld:
        assert set(b["episode_id"].tolist()) <= long_ids


def test_bad_loader_settings(cartpole):
    with pytest.raises(rollway.InputError, match="batch_size"):
        rollway.Loader(cartpole, batch=0)
    with pytest.raises(rollway.InputError, match="select"):
        rollway.Loader(cartpole, select={"colour": "red"})


def test_torch_tensors_share_the_buffers(cartpole):
    torch = pytest.importorskip("torch")
    import rollway.torch as rt

    ds = rt.IterableDataset(cartpole, clip=4, batch=8, seed=0)
    dl = torch.utils.data.DataLoader(ds, batch_size=None)
    n = 0
    for b in dl:
        assert isinstance(b["rewards"], torch.Tensor) and b["rewards"].shape == (len(b["step"]), 4)
        assert isinstance(b["observations"], torch.Tensor) and b["observations"].dtype == torch.float32
        n += len(b["step"])
    assert n == rollway.Loader(cartpole, clip=4).num_windows
    b = next(iter(rollway.Loader(cartpole, clip=4, batch=8)))
    t = torch.from_numpy(b["rewards"])
    assert t.data_ptr() == b["rewards"].__array_interface__["data"][0]


def test_torch_tensors_from_the_loader_are_never_overwritten_while_held(cartpole):
    torch = pytest.importorskip("torch")
    held, copies = [], []
    for b in rollway.Loader(cartpole, clip=4, batch=8, prefetch=1, threads=1, epochs=2, torch=True):
        assert isinstance(b["rewards"], torch.Tensor) and isinstance(b["observations"], torch.Tensor)
        held.append(b)
        copies.append({k: b[k].clone() for k in ("observations", "rewards", "episode_id")})
    assert len(held) > 8
    for b, c in zip(held, copies):
        for k, v in c.items():
            assert torch.equal(b[k], v), k


def test_issue48_next_observations_end_each_episode_with_its_final_observation(cartpole):
    ds = rollway.Dataset(cartpole)
    eps = {e.id: e for e in ds}
    ends = set()
    for b in rollway.Loader(cartpole, clip=3, stride=2, pad=True, batch=32, seed=2, next_observations=True):
        assert b["next_observations"].shape == b["observations"].shape
        for k in range(len(b["episode_id"])):
            e, s = eps[int(b["episode_id"][k])], int(b["step"][k])
            real = int(b["mask"][k].sum())
            np.testing.assert_array_equal(b["next_observations"][k][:real], e.observations[s + 1:s + 1 + real])
            assert not b["next_observations"][k][real:].any(), "padding is zeroed"
            if s + real == e.length:
                ends.add(e.id)
    assert len(ends) == len(ds), "every episode's last step came with its final observation"
    plain = next(iter(rollway.Loader(cartpole, clip=3, batch=4)))
    assert "next_observations" not in plain, "not asked for, not made"
