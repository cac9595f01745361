"""rollway's rollout actors on Ray (``rollway.ray.Rollout``) as a fragment source for the PPO
bench (bench/ppo_cartpole.py's ``rollway-ray`` system): the same N envs, split over
``actors`` actors of N / actors envs each, at lag 0 (one synchronous round per update:
``collect(actors)``, every actor acting with the weights of the last update). The learner
gets the actors' fragments side by side, as one fragment of N envs; the weights go out
with every publish (``state_dict``, put in Ray's object store once).
"""

from __future__ import annotations

import contextlib
from types import SimpleNamespace
from typing import Any, Iterator, List

import numpy as np


def _side_by_side(frags: List[Any]) -> SimpleNamespace:
    """Fragments of the same T, joined along the env axis."""
    cat = lambda xs: np.concatenate(xs, axis=1)  # noqa: E731
    f0 = frags[0]
    return SimpleNamespace(
        steps=f0.steps, envs=sum(f.envs for f in frags), obs=cat([f.obs for f in frags]),
        first=cat([f.first for f in frags]), actions=cat([f.actions for f in frags]),
        rewards=cat([f.rewards for f in frags]), terminated=cat([f.terminated for f in frags]),
        truncated=cat([f.truncated for f in frags]), version=cat([f.version for f in frags]),
        extras={k: cat([f.extras[k] for f in frags]) for k in f0.extras},
        finished={"return": np.concatenate([f.finished["return"] for f in frags])},
        stats={"policy_s": max(f.stats["policy_s"] for f in frags)})


@contextlib.contextmanager
def two_nodes() -> Iterator[None]:
    """A local Ray cluster of two nodes of one CPU each (and a head that runs nothing), on loopback."""
    import ray
    from ray.cluster_utils import Cluster

    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    for _ in range(2):
        c.add_node(num_cpus=1)
    c.wait_for_nodes()
    ray.init(address=c.address, logging_level="ERROR", log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()
        c.shutdown()


class RaySource:
    """``actors`` rollout actors on the running Ray (``ray.init`` first), each ``envs / actors`` envs."""

    def __init__(self, acting: Any, envs: int, steps: int, seed: int, actors: int = 2):
        import rollway.ray

        # The policy's class lives in rollway.examples, which the actors import as any installed module.
        if envs % actors:
            raise ValueError(f"{envs} envs do not split over {actors} actors")
        self.acting, self.actors = acting, actors
        self.r = rollway.ray.Rollout("CartPole-v1", acting, num_actors=actors, num_envs=envs // actors, steps_per_fragment=steps,
                                     seed=seed, max_policy_lag=0, num_cpus_per_actor=1)

    def collect(self) -> SimpleNamespace:
        f = _side_by_side(self.r.collect(self.actors))
        # The forward ran in the actors, in parallel: the slowest one's time is what the learner waited.
        self.acting.forward_s += f.stats["policy_s"]
        return f

    def publish(self, weights: Any = None) -> int:
        # At lag 0 the local loop shares its network with the policy; an actor holds a copy.
        return self.r.publish(weights if weights is not None else {k: v.detach().clone() for k, v in
                                                                  self.acting.agent.state_dict().items()})

    def close(self) -> None:
        self.r.close()
