"""rollway on Ray: one run spread over the actors of a Ray cluster, one dataset; and, for
training, :class:`Rollout` (:mod:`rollway.ray.rollout`): rollout actors feeding one learner.

::

    import rollway.ray

    summary = rollway.ray.run(env="gym:CartPole-v1", agent="random", episodes=10_000,
                              out="/shared/cp", num_actors=8, num_gpus_per_actor=0.5)
    ds = rollway.ray.read_dataset("/shared/cp")      # a ray.data.Dataset of committed steps

**How it works.** The driver (this process) records the run in the dataset — its
config, exactly as ``rollway.run`` would store it — and hands out episode index ranges
to ``num_actors`` Ray actors. Each actor hosts a whole rollway engine (Rust envs on
threads, or Python envs in its own worker processes, with its own batched policy,
loaded once per actor on its GPU share) and commits its episodes into the same
dataset, as one of many writers: a directory on storage every node sees (FORMAT.md,
"Many writers"), or an ``s3://`` dataset for nodes that share no filesystem, whose lease
the driver holds while each actor pushes its shards under numbers it claims on the store
(FORMAT.md, "Many writers on a store"). Episode ``i`` gets the seed a local run gives it,
so a Ray run records the same episodes as a local run with the same settings, however
many actors it has and whichever of them die.

**The ledger.** The driver keeps every index of the target accounted for: committed
(completed or given up, as a local run gives up), or being run. When an actor dies
(its process killed, ``ray.kill``, its node gone), the driver reads the dataset's
index: what that actor committed stays, the rest of its range is run again elsewhere,
from the same seeds. Nothing is run twice once committed, even when the actor died
between committing and answering. ``max_restarts`` is Ray's restart budget for each
actor (and, inside an actor, the env rebuilds per worker, as in a local run); when no
actor is left, the run stops with the missing episodes ``untried`` and
``run(resume=out)`` finishes it.

Readers (``rollway inspect``, :class:`rollway.Dataset`, the loader, :func:`read_dataset`)
see committed episodes while the run goes on. The command line does the same with
``rollway run --backend ray [--ray-address auto|HOST:PORT]``.
"""

from rollway.ray.rollout import RayFragment, Rollout
from rollway.ray.driver import main, read_dataset, run

__all__ = ["RayFragment", "Rollout", "main", "read_dataset", "run"]
