"""Simulations on a Dask cluster (python3-distributed): the plans are made
here (the model is measured once, in this process), cut into pieces,
pickled as their exact bytes, simulated by the cluster's workers, each
piece with as many simulations at once as its worker has threads, and put
back in order. The results equal a local run's: every worker simulates the
same bytes with the same code. Each worker must import this same build of
splitsim (a LocalCluster does; on other machines, install it there)."""
import json
import math

from .progress import Progress


def _simulate_piece(plans, server_order):
    from distributed import get_worker

    from ._native import _core
    try:
        jobs = max(1, int(get_worker().nthreads))
    except (ValueError, AttributeError):  # not on a worker (a test calls it directly)
        jobs = 1
    return json.loads(_core.simulate([p._handle for p in plans], jobs, server_order, None))


def simulate_on(client, plans, server_order, progress=None, pieces_per_thread=4):
    """The CSV records of `plans`, simulated on `client`'s cluster, in order."""
    from distributed import as_completed

    progress = progress or Progress(False)
    threads = max(1, sum(client.nthreads().values()))
    size = max(1, math.ceil(len(plans) / (pieces_per_thread * threads)))
    pieces = [plans[i:i + size] for i in range(0, len(plans), size)]
    futures = client.map(_simulate_piece, pieces, server_order=server_order, pure=False)
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
