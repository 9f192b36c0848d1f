"""A sweep on a Dask cluster (a LocalCluster of two worker processes) gives
the local run's frame, value for value."""
import os

import pandas as pd
import pytest

import splitsim
from conftest import SCENARIOS

distributed = pytest.importorskip("distributed")


def test_a_sweep_on_two_dask_workers_equals_the_local_run():
    s = splitsim.Scenario(os.path.join(SCENARIOS, "resnet20_kstage.json"))
    plans = splitsim.plan(s, progress=False)
    local = splitsim.simulate(plans, progress=False)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        remote = splitsim.simulate(plans, client=client, progress=False)
        assert len(client.nthreads()) == 2
    pd.testing.assert_frame_equal(local, remote, check_exact=True)
