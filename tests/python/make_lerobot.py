"""Records the small LeRobot v3.0 dataset in crates/interop/tests/data/ with
LeRobot's own writer, so rollway's Rust tests import a dataset rollway did not
make. lerobot is in the CI venv (tests/python/requirements.txt), where
test_lerobot_peer.py makes fresh datasets with LeRobot's defaults on every run;
this script made the checked-in ones, with lerobot 0.4.4:

    python make_lerobot.py OUT h264        # -> lerobot-0.4.4-h264/
    python make_lerobot.py OUT2 libsvtav1  # its mp4 -> lerobot-0.4.4-av1.mp4

Three episodes (7, 12 and 5 frames) at 15 fps: observation.state = [episode,
frame, 0.5], a 32x48 video whose left 4*(frame+1) columns are 40*episode+30 grey,
action = [frame, -frame], next.reward = frame/4, next.done on the last frame of
episodes 0 and 2 (episode 1 is cut off), and an unused next.success.
"""
import sys

import numpy as np
from lerobot.datasets.lerobot_dataset import LeRobotDataset

root, vcodec = sys.argv[1], sys.argv[2]
features = {
    "observation.state": {"dtype": "float32", "shape": (3,), "names": ["x", "y", "z"]},
    "observation.images.top": {"dtype": "video", "shape": (32, 48, 3), "names": ["height", "width", "channels"]},
    "action": {"dtype": "float32", "shape": (2,), "names": None},
    "next.reward": {"dtype": "float32", "shape": (1,), "names": None},
    "next.done": {"dtype": "bool", "shape": (1,), "names": None},
    "next.success": {"dtype": "bool", "shape": (1,), "names": None},
}
ds = LeRobotDataset.create("local/made", fps=15, features=features, root=root, vcodec=vcodec, video_backend="pyav")
for ep, n in enumerate([7, 12, 5]):
    for t in range(n):
        img = np.zeros((32, 48, 3), np.uint8)
        img[:, : 4 * t + 4] = 40 * ep + 30
        ds.add_frame(
            {
                "observation.state": np.array([ep, t, 0.5], np.float32),
                "observation.images.top": img,
                "action": np.array([t, -t], np.float32),
                "next.reward": np.array([t * 0.25], np.float32),
                "next.done": np.array([t == n - 1 and ep != 1]),
                "next.success": np.array([False]),
                "task": "push",
            }
        )
    ds.save_episode()
ds.finalize()
print("made", root)
