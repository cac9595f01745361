"""Issue 34: a node removed from the Ray cluster mid-run costs the fragment its actor was making;
Ray restarts that actor on a node that is left, and the learner goes on with both actors. A cluster
of its own (the other Ray tests share one whose nodes must stay): a head that runs no actors and
three one-CPU worker nodes, one of them spare."""

import time

import numpy as np
import pytest

ray = pytest.importorskip("ray")
# A Ray cluster of three nodes starts and stops: a long test whose workers mostly wait (issue 66).
pytestmark = pytest.mark.heavy
import rollway.ray  # noqa: E402
from test_ray_rollout import Weighted, check_exact_versions, gone_within, is_restarted  # noqa: E402


@pytest.fixture()
def three_nodes():
    from ray.cluster_utils import Cluster

    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    for _ in range(3):
        c.add_node(num_cpus=1)
    c.wait_for_nodes()
    ray.init(address=c.address, logging_level="ERROR", log_to_driver=False)
    yield c
    ray.shutdown()
    c.shutdown()


def test_issue34_a_removed_node_costs_its_actors_fragment_and_the_learner_goes_on(three_nodes, tmp_path):
    out = tmp_path / "replay"
    with rollway.ray.Rollout("CartPole-v1", Weighted(0.01), num_actors=2, num_envs=2, steps_per_fragment=40, max_policy_lag=2,
                             stale="drop", max_restarts=2, out=out, commit_every=0.05) as r:
        # Both actors have delivered (actor 1 may start well after actor 0 on a loaded machine).
        first, deadline = [], time.monotonic() + 120
        while len({f.actor for f in first}) < 2 and time.monotonic() < deadline:
            first.append(r.collect())
        placed = {f.actor: f.node for f in first}
        assert len(placed) == 2 and len(set(placed.values())) == 2, "one actor per one-CPU node"
        victim = next(n for n in three_nodes.list_all_nodes() if n.node_id == placed[0])
        three_nodes.remove_node(victim)
        after, deadline = [], time.monotonic() + 120
        # On until a restarted actor has delivered, told by its episode ids: the lost actor's own
        # fragment under way may still arrive first.
        while time.monotonic() < deadline and not any(map(is_restarted, after)):
            f = r.collect()
            check_exact_versions(f, 2, r.version)
            after.append(f)
            r.publish(r.version + 1.0)
        s = r.summary()
    assert s["actor_failures"] == 1 and s["lost_fragments"] == 1, s
    again = [f for f in after if f.actor == 0 and is_restarted(f)]
    assert again, "actor 0 delivers again, as a new incarnation with new episode ids"
    assert {f.node for f in again} and placed[0] not in {f.node for f in again}, "restarted on a node that is left"
    eps = rollway.Dataset(out).episodes
    ids = [e["run_index"] for e in eps]
    assert len(ids) == len(set(ids)), "every episode recorded once"
    assert np.isfinite([e["return"] for e in eps]).all()
    assert gone_within(30)
