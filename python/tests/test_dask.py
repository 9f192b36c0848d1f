"""A sweep on a Dask cluster (a LocalCluster of two worker processes) gives
the local run's frame, value for value."""
import os

import pandas as pd
import pytest

import splitsim
from conftest import SCENARIOS

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as c:
        assert len(c.nthreads()) == 2
        yield c


def test_a_sweep_on_two_dask_workers_equals_the_local_run(client):
    s = splitsim.Scenario(os.path.join(SCENARIOS, "resnet20_kstage.json"))
    plans = splitsim.plan(s, progress=False)
    local = splitsim.simulate(plans, progress=False)
    remote = splitsim.simulate(plans, client=client, progress=False)
    pd.testing.assert_frame_equal(local, remote, check_exact=True)


def test_an_exploration_on_dask_ranks_as_the_local_one(client):
    path = os.path.join(SCENARIOS, "mobilenet_v2_ushape.json")
    args = dict(kinds=["ushape"], chunks=[1, 4], max_simulations=40, spread_pct=5, progress=False)
    local = splitsim.explore(path, **args)
    remote = splitsim.explore(path, client=client, **args)
    columns = ["label", "time_per_batch_s", "time_per_batch_spread_s", "on_front"]
    pd.testing.assert_frame_equal(local.ranking[columns], remote.ranking[columns],
                                  check_exact=True)
    assert local.json["tied_with_best"] == remote.json["tied_with_best"]
