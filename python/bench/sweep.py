#!/usr/bin/python3
"""The Python package's speed against the command line's, and Dask's scaling
(python/README.md; a benchmark, not a test).

usage: PYTHONPATH=build/python /usr/bin/python3 python/bench/sweep.py [--repeat 3]
       [--variants 5000] [--bin build/cli/splitsim]

1. A 5,000-variant sweep (the default scenario's 15 variants x link
   bandwidths), simulated whole: `splitsim simulate --csv FILE` against
   `splitsim.simulate(FILE)` in a fresh interpreter, model measurement and
   planning included in both, the two interleaved, --repeat times each.
2. The same plans on a local Dask cluster of 1 and of 2 worker processes
   (one thread each), interleaved: simulations per second.
Prints medians with min-max, and the CPU steal over the whole run.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SCENARIO = os.path.join(HERE, "..", "..", "scenarios", "mobilenet_v2_ushape.json")


def steal_jiffies():
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return fields[7], sum(fields)


def summary(values):
    return f"median {statistics.median(values):.2f} (min {min(values):.2f}, max {max(values):.2f})"


def sweep_file(variants, directory):
    with open(SCENARIO) as f:
        s = json.load(f)
    base = len(s["sweep"]["chunks"]) * len(s["sweep"]["compression"])
    n = -(-variants // base)
    s["sweep"]["network.bandwidth_bit_per_s"] = [1e8 + 1e7 * i for i in range(n)]
    s["name"] = "bench_sweep"
    path = os.path.join(directory, "sweep.json")
    with open(path, "w") as f:
        json.dump(s, f)
    return path, base * n


def timed(command, env=None):
    start = time.monotonic()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env=env)
    return time.monotonic() - start


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--variants", type=int, default=5000)
    ap.add_argument("--bin", default=os.path.join(HERE, "..", "..", "build", "cli", "splitsim"))
    a = ap.parse_args()
    steal0, total0 = steal_jiffies()
    with tempfile.TemporaryDirectory() as tmp:
        path, n = sweep_file(a.variants, tmp)  # its devices are the shipped profiles
        py = [sys.executable, "-c",
              f"import splitsim; splitsim.simulate({path!r}, progress=False)"]
        cli = [a.bin, "simulate", "--csv", path]
        t_cli, t_py = [], []
        for _ in range(a.repeat):
            t_cli.append(timed(cli))
            t_py.append(timed(py))
        print(f"{n}-variant sweep, wall s: CLI {summary(t_cli)}; Python {summary(t_py)}; "
              f"Python/CLI {statistics.median(t_py) / statistics.median(t_cli):.3f}")

        import distributed
        import splitsim
        plans = splitsim.plan(path, progress=False)
        rates = {1: [], 2: []}
        clusters = {w: distributed.LocalCluster(n_workers=w, threads_per_worker=1,
                                                processes=True, dashboard_address=":0")
                    for w in (1, 2)}
        try:
            clients = {w: distributed.Client(c) for w, c in clusters.items()}
            for w, client in clients.items():  # warm: the workers import splitsim once
                splitsim.simulate(plans[:8], client=client, progress=False)
            for _ in range(a.repeat):
                for w, client in clients.items():
                    start = time.monotonic()
                    splitsim.simulate(plans, client=client, progress=False)
                    rates[w].append(len(plans) / (time.monotonic() - start))
        finally:
            for c in clients.values():
                c.close()
            for c in clusters.values():
                c.close()
        print(f"Dask, simulations/s: 1 worker {summary(rates[1])}; 2 workers {summary(rates[2])}; "
              f"ratio {statistics.median(rates[2]) / statistics.median(rates[1]):.2f}")
    steal1, total1 = steal_jiffies()
    print(f"CPU steal over the run: {100 * (steal1 - steal0) / max(1, total1 - total0):.2f}%")


if __name__ == "__main__":
    main()
