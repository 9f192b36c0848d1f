"""Simulations on a Dask cluster (python3-distributed), for a sweep
(simulate) and for the explorer (explore): the plans are made
here (the model is measured once, in this process), cut into pieces,
pickled as their exact bytes, simulated by the cluster's workers, each
piece with as many simulations at once as its worker has threads, and put
back in order. The results equal a local run's: every worker simulates the
same bytes with the same code. Each worker must import this same build of
splitsim (a LocalCluster does; on other machines, install it there)."""
import json
import math

from .progress import Progress


def _simulate_piece(plans, server_order, metrics):
    from distributed import get_worker

    from ._native import _core
    try:
        worker = get_worker()
        state = getattr(worker, "state", worker)  # Worker.state.nthreads from distributed 2022.12
        jobs = max(1, int(state.nthreads))
    except (ValueError, AttributeError):  # not on a worker (a test calls it directly)
        jobs = 1
    out = _core.simulate([p._handle for p in plans], jobs, server_order, metrics, None)
    return json.loads(out)


def simulate_on(client, plans, server_order, progress=None, metrics=False, pieces_per_thread=4):
    """The CSV records (with `metrics`: the metrics objects) of `plans`,
    simulated on `client`'s cluster, in order."""
    from distributed import as_completed

    progress = progress or Progress(False)
    threads = max(1, sum(client.nthreads().values()))
    size = max(1, math.ceil(len(plans) / (pieces_per_thread * threads)))
    pieces = [plans[i:i + size] for i in range(0, len(plans), size)]
    futures = client.map(_simulate_piece, pieces, server_order=server_order, metrics=metrics,
                         pure=False)
    index = {f.key: i for i, f in enumerate(futures)}
    results = [None] * len(pieces)
    done = 0
    try:
        for future in as_completed(futures):
            results[index[future.key]] = future.result()
            done += len(pieces[index[future.key]])
            progress("simulate", done, len(plans))
    finally:
        progress.close()
    return [record for piece in results for record in piece]


def explorer_simulate(client):
    """The explorer's simulate function on `client`'s cluster: PlanHandles in,
    their metrics' JSON array out (what splitsim._core.explore calls)."""
    from .results import Plan

    def simulate(handles):
        return json.dumps(simulate_on(client, [Plan(h) for h in handles], "fifo", metrics=True))
    return simulate
