"""Makes area_210x160_84.bin: OpenCV's INTER_AREA shrink of the frame that
crates/envs/src/atari/resize.rs's test draws (run with opencv-python installed)."""
import pathlib

import cv2
import numpy as np

y, x = np.mgrid[0:210, 0:160]
frame = ((x * 7 + y * 13 + (x * y) % 31 + np.where((x // 8 + y // 5) % 2 == 0, 100, 0)) % 256).astype(np.uint8)
out = cv2.resize(frame, (84, 84), interpolation=cv2.INTER_AREA)
pathlib.Path(__file__).with_name("area_210x160_84.bin").write_bytes(out.tobytes())
