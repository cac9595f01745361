"""Issue 15: LeRobot datasets as LeRobot itself writes them, with its defaults (AV1 video
from SVT-AV1, several cameras, several tasks, episodes spread over several files and
chunks), imported by rollway and compared value by value with what `LeRobotDataset`
reads back. The v2.1 layout (one file per episode, `episodes.jsonl`) is made from the
same frames with LeRobot's own v2.1-era video encoder, `encode_video_frames`."""

import json
import os

import numpy as np
import pytest

import rollway

lerobot_dataset = pytest.importorskip("lerobot.datasets.lerobot_dataset")

FPS = 10
LENGTHS = [6, 9, 4, 7, 5]
TASKS = ["push", "pick"]
CAMERAS = {"front": (64, 96), "wrist": (64, 64)}


def frame(camera, ep, t):
    """A camera image: bands that move with the frame and change with the episode."""
    h, w = CAMERAS[camera]
    img = np.zeros((h, w, 3), np.uint8)
    if camera == "front":
        img[:, : 8 * t + 8] = 40 * ep + 30
        img[20:40, :, 1] = 200
    else:
        img[:] = 10 * t + 20
        img[:, : w // 2, 2] = 50 * ep
    return img


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A LeRobot v3.0 dataset written by `LeRobotDataset.create` with its defaults, and
    the frames `LeRobotDataset` reads back from it, one dict per frame."""
    root = tmp_path_factory.mktemp("lerobot") / "made"
    features = {
        "observation.state": {"dtype": "float32", "shape": (4,), "names": None},
        "action": {"dtype": "float32", "shape": (2,), "names": None},
        "next.reward": {"dtype": "float32", "shape": (1,), "names": None},
        "next.done": {"dtype": "bool", "shape": (1,), "names": None},
    }
    for cam, (h, w) in CAMERAS.items():
        features[f"observation.images.{cam}"] = {"dtype": "video", "shape": (h, w, 3), "names": ["height", "width", "channels"]}
    ds = lerobot_dataset.LeRobotDataset.create("local/made", fps=FPS, features=features, root=root)
    # Tiny files and chunks, so five small episodes spread over several of each.
    ds.meta.info.update(data_files_size_in_mb=0.001, video_files_size_in_mb=0.001, chunks_size=2)
    rng = np.random.default_rng(0)
    for ep, n in enumerate(LENGTHS):
        for t in range(n):
            f = {
                "observation.state": rng.standard_normal(4).astype(np.float32),
                "action": rng.standard_normal(2).astype(np.float32),
                "next.reward": np.array([t * 0.5], np.float32),
                "next.done": np.array([t == n - 1]),
                "task": TASKS[ep % 2],
            }
            for cam in CAMERAS:
                f[f"observation.images.{cam}"] = frame(cam, ep, t)
            ds.add_frame(f)
        ds.save_episode()
    ds.finalize()
    back = lerobot_dataset.LeRobotDataset("local/made", root=root, video_backend="pyav")
    frames = []
    for i in range(back.num_frames):
        item = back[i]
        f = {k: v.numpy() for k, v in item.items() if hasattr(v, "numpy")}
        for cam in CAMERAS:
            chw = f.pop(f"observation.images.{cam}")
            f[cam] = (chw.transpose(1, 2, 0) * 255).round().astype(np.uint8)
        f["task"] = item["task"]
        frames.append(f)
    return root, frames


def psnr(a, b):
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return float("inf") if mse == 0 else 10 * np.log10(255**2 / mse)


def check(imported, frames, min_psnr):
    """Every array as LeRobot reads it; images within `min_psnr` of LeRobot's decode."""
    assert [e.length for e in imported] == LENGTHS
    i = 0
    for ep, e in enumerate(imported):
        assert e.info["lerobot"]["tasks"] == [TASKS[ep % 2]]
        assert sorted(e.observations) == sorted(["state", *CAMERAS])
        for t in range(e.length):
            f = frames[i]
            i += 1
            assert f["episode_index"] == ep and f["frame_index"] == t and f["task"] == TASKS[ep % 2]
            np.testing.assert_array_equal(e.observations["state"][t], f["observation.state"])
            np.testing.assert_array_equal(e.actions[t], f["action"])
            assert e.rewards[t] == f["next.reward"].item()
            assert bool(e.terminations[t]) == bool(f["next.done"].item())
            for cam in CAMERAS:
                db = psnr(e.observations[cam][t], f[cam])
                assert db >= min_psnr, f"episode {ep} frame {t} {cam}: {db:.1f} dB"
        # LeRobot has no frame after the last step: the final observation repeats it.
        np.testing.assert_array_equal(e.observations["state"][-1], e.observations["state"][-2])


def test_lerobot_default_av1_dataset_imports_value_by_value(made, tmp_path):
    root, frames = made
    info = json.loads((root / "meta" / "info.json").read_text())
    assert info["codebase_version"].startswith("v3.")
    assert {info["features"][f"observation.images.{c}"]["info"]["video.codec"] for c in CAMERAS} == {"av1"}
    assert len(list((root / "data").rglob("*.parquet"))) > 2 and len(list((root / "data").iterdir())) > 1
    imported = rollway.import_lerobot(root, tmp_path / "back", progress=False)
    assert len(imported) == len(LENGTHS)
    # The same AV1 bitstream, decoded by dav1d on both sides: the same pixels, near enough.
    check(imported, frames, min_psnr=45)
    assert imported.verify()["problems"] == []


def keep_scheduling(fn, *args):
    """Calls ``fn`` and puts this thread back under the scheduling policy it had. Run as root,
    SVT-AV1 (here inside PyAV's FFmpeg, on the calling thread) makes that thread real-time
    (``SCHED_FIFO`` 99); left so, the whole pytest process and every process it starts later
    outrank the machine: the README's training example, started after this module, saw its
    dataset's commit thread starved for its whole loop. rollway's own AV1 encoder does the
    same for its threads (``crates/media/src/av1.rs``, ``KeepScheduling``)."""
    policy, param = os.sched_getscheduler(0), os.sched_getparam(0)
    try:
        return fn(*args)
    finally:
        if os.sched_getscheduler(0) != policy:
            os.sched_setscheduler(0, policy, param)


def write_v21(root, out, frames):
    """`root`'s episodes in LeRobot's v2.1 layout: a data file and a video per episode
    per camera (encoded by LeRobot's `encode_video_frames` with its defaults), and the
    JSON-lines metadata."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    from PIL import Image
    from lerobot.datasets.video_utils import encode_video_frames

    table = pq.read_table(root / "data")
    info = json.loads((root / "meta" / "info.json").read_text())
    info.update(
        codebase_version="v2.1",
        chunks_size=1000,
        data_path="data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet",
        video_path="videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4",
    )
    (out / "meta").mkdir(parents=True)
    (out / "meta" / "info.json").write_text(json.dumps(info))
    episodes, start = [], 0
    for ep, n in enumerate(LENGTHS):
        rows = table.filter(pc.equal(table["episode_index"], ep))
        (out / "data" / "chunk-000").mkdir(parents=True, exist_ok=True)
        pq.write_table(rows, out / "data" / "chunk-000" / f"episode_{ep:06d}.parquet")
        for cam in CAMERAS:
            pngs = out / "tmp" / f"{cam}-{ep}"
            pngs.mkdir(parents=True)
            for t in range(n):
                Image.fromarray(frames[start + t][cam]).save(pngs / f"frame-{t:06d}.png")
            video = out / "videos" / "chunk-000" / f"observation.images.{cam}" / f"episode_{ep:06d}.mp4"
            video.parent.mkdir(parents=True, exist_ok=True)
            keep_scheduling(encode_video_frames, pngs, video, FPS)
        episodes.append({"episode_index": ep, "tasks": [TASKS[ep % 2]], "length": n})
        start += n
    (out / "meta" / "episodes.jsonl").write_text("".join(json.dumps(e) + "\n" for e in episodes))
    (out / "meta" / "tasks.jsonl").write_text("".join(json.dumps({"task_index": i, "task": t}) + "\n" for i, t in enumerate(TASKS)))


def test_lerobot_v21_layout_imports(made, tmp_path):
    root, frames = made
    v21 = tmp_path / "v21"
    write_v21(root, v21, frames)
    imported = rollway.import_lerobot(v21, tmp_path / "back", progress=False)
    # Frames went through AV1 twice (LeRobot's file, then the v2.1 re-encode).
    check(imported, frames, min_psnr=30)


def test_lerobot_import_of_damaged_v21_loses_nothing(made, tmp_path):
    root, frames = made
    v21 = tmp_path / "v21"
    write_v21(root, v21, frames)
    os.remove(v21 / "data" / "chunk-000" / "episode_000003.parquet")
    with pytest.raises(rollway.InputError, match="episode_000003.parquet"):
        rollway.import_lerobot(v21, tmp_path / "back", progress=False)
    assert not (tmp_path / "back").exists()


def test_issue15_agent_state_exports_as_a_feature_lerobot_loads(tmp_path):
    """A recurrent policy's state goes to LeRobot as `rollway.agent_state` (zeros on the
    final-observation frame); LeRobotDataset serves it and the import takes it back."""
    def counter(obs, first, state):
        prev = state[:, 0] if state.shape[1] else np.zeros(len(obs), np.float32)
        return prev.astype(np.int64) % 2, np.stack([prev + 1, -prev], axis=1).astype(np.float32)

    src = tmp_path / "rnn"
    rollway.run(env="CartPole-v1", agent=counter, episodes=4, seed=3, out=src, progress=False)
    ds = rollway.Dataset(src)
    ds.export("lerobot", tmp_path / "lr", fps=50, progress=False)
    info = json.load(open(tmp_path / "lr" / "meta" / "info.json"))
    assert info["features"]["rollway.agent_state"]["shape"] == [2]
    theirs = lerobot_dataset.LeRobotDataset("local/rnn", root=tmp_path / "lr", video_backend="pyav")
    i = 0
    for ep in ds:
        for t in range(ep.length + 1):
            want = ep.agent_state[t] if t < ep.length else np.zeros(2, np.float32)
            np.testing.assert_array_equal(theirs[i]["rollway.agent_state"].numpy(), want)
            i += 1
    back = rollway.import_lerobot(tmp_path / "lr", tmp_path / "back", progress=False)
    for a, b in zip(ds, back):
        np.testing.assert_array_equal(a.agent_state, b.agent_state)
