"""Records a small dataset with Minari's own DataCollector, for `rollway import minari`.

Usage: make_minari.py ROOT DATASET_ID EPISODES DUMP_JSON

Writes the dataset under ROOT (used as MINARI_DATASETS_PATH) and dumps what
minari.load_dataset reads back (every episode's values) to DUMP_JSON, so the
caller can compare an import against Minari's own reading, not ours.
"""
import json
import os
import sys


def main(root, dataset_id, episodes, dump):
    os.environ["MINARI_DATASETS_PATH"] = root
    import gymnasium as gym
    import minari
    import numpy as np

    env = minari.DataCollector(gym.make("CartPole-v1"), record_infos=False)
    rng = np.random.default_rng(7)
    for i in range(episodes):
        env.reset(seed=100 + i)
        done = False
        steps = 0
        while not done:
            _, _, term, trunc, _ = env.step(int(rng.integers(2)))
            steps += 1
            # Cut every third episode short: an unfinished episode is truncated on reset.
            done = term or trunc or (i % 3 == 2 and steps == 7)
    ds = env.create_dataset(dataset_id=dataset_id, algorithm_name="random-policy", author="rollway tests", description="rollway import test")
    env.close()

    ds = minari.load_dataset(dataset_id)
    out = {"total_episodes": ds.total_episodes, "total_steps": ds.total_steps, "episodes": []}
    for ep in ds.iterate_episodes():
        # Raw bytes (hex) and dtypes: exact, where decimal floats through JSON parsers need not be.
        row = {"id": int(ep.id)}
        for key in ["observations", "actions", "rewards", "terminations", "truncations"]:
            a = np.ascontiguousarray(getattr(ep, key))
            row[key] = {"dtype": str(a.dtype), "shape": list(a.shape), "hex": a.tobytes().hex()}
        out["episodes"].append(row)
    with open(dump, "w") as f:
        json.dump(out, f)
    print(f"make_minari: {ds.total_episodes} episodes, {ds.total_steps} steps")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4])
