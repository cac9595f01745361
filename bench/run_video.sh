#!/usr/bin/env bash
# Frame encoding: rollway h264/jpeg frame media vs PyAV (seed 000's mp4 writer) and Pillow.
# Usage: bench/run_video.sh [--rollway PATH] [video_encode.py args, e.g. --quick --out FILE.md]
exec "$(dirname "${BASH_SOURCE[0]}")/_run.sh" video_encode.py "av, PIL, numpy" "$@"
