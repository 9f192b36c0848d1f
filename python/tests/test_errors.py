"""Bad input raises splitsim.InputError (a ValueError) naming where, never
another exception, a crash or a hang; Ctrl-C stops a long call."""
import copy
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import splitsim
from conftest import SCENARIOS

BASE = {
    "schema": "splitsim.scenario/1",
    "name": "mutated",
    "model": {"name": "resnet20"},
    "batch_size": 8,
    "partition": [{"party": "client", "from": "conv1", "to": "layer1"},  # layer1.0 .. layer1.2
                  {"party": "server", "from": "layer2", "to": "head"}],
    "chunks": 2,
    "schedule": "gpipe",
    "devices": {"client": "xeon_40core", "server": "gtx1080"},
    "network": {"bandwidth_bit_per_s": 1e8, "latency_s": 0.001},
    "compression": [{"forward": {"method": "quantize", "bits": 8},
                     "backward": {"method": "none"}}],
    "iterations": 6,
    "warmup": 1,
}

# Values a mutation puts somewhere: wrong types, out of range, odd strings.
ODD = [None, True, -1, 0, 2**63, -2**70, 1e308, -0.0, 3.5, "", "x" * 5000, "conv1", "fc",
       "\u00e9\u4e2d", [], [1, 2], {}, {"a": 1}, "NaN", 1e-320, "gpipe", "none", 7]


def paths(value, prefix=()):
    """Every (path) into a JSON value."""
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from paths(v, prefix + (i,))


def mutate(rng):
    d = copy.deepcopy(BASE)
    for _ in range(rng.choice([1, 1, 2, 3])):
        all_paths = [p for p in paths(d) if p]
        path = rng.choice(all_paths)
        parent = d
        for k in path[:-1]:
            parent = parent[k]
        op = rng.choice(["set", "set", "delete", "add"])
        if op == "delete":
            del parent[path[-1]]
        elif op == "add" and isinstance(parent, dict):
            parent["unknown_" + str(rng.randint(0, 9))] = rng.choice(ODD)
        else:
            parent[path[-1]] = copy.deepcopy(rng.choice(ODD))
    return d


def test_200_mutated_scenarios_raise_input_errors_naming_where():
    # In a child interpreter: a crash or a hang shows as its exit, not ours.
    script = textwrap.dedent(f"""
        import json, random, sys
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        import splitsim
        from test_errors import mutate
        rng = random.Random(20261128)
        tally = {{"ok": 0, "input_error": 0}}
        for i in range(200):
            d = mutate(rng)
            try:
                splitsim.simulate(splitsim.Scenario(d), progress=False, jobs=1)
                tally["ok"] += 1
            except splitsim.InputError as e:
                assert isinstance(e, ValueError)
                assert e.where, (i, str(e))
                assert str(e).startswith(e.where), (i, str(e))
                tally["input_error"] += 1
            except Exception as e:
                print("NOT AN InputError", i, json.dumps(d)[:400], type(e).__name__, e)
                sys.exit(3)
        print(json.dumps(tally))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=900, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    tally = json.loads(done.stdout.strip().splitlines()[-1])
    assert tally["ok"] + tally["input_error"] == 200
    assert tally["input_error"] >= 100  # the mutations do break things
    assert tally["ok"] >= 10  # and some are still scenarios that simulate


def test_the_unmutated_scenario_simulates_and_names_modules_as_their_units():
    by_module = splitsim.plan(BASE, progress=False)[0]
    by_units = copy.deepcopy(BASE)
    by_units["partition"] = [{"party": "client", "from": "conv1", "to": "layer1.2"},
                             {"party": "server", "from": "layer2.0", "to": "head"}]
    assert by_module.json == splitsim.plan(by_units, progress=False)[0].json
    assert list(by_module.stages["units"][0]) == ["conv1", "layer1.0", "layer1.1", "layer1.2"]


@pytest.mark.parametrize("kwargs,where", [
    ({"jobs": 0}, "jobs"), ({"jobs": "2"}, "jobs"), ({"jobs": True}, "jobs"),
    ({"server_order": "lifo"}, "server_order"), ({"variant": 3}, "variant"),
    ({"variant": "no such label"}, "variant"), ({"calibration": "/nonexistent.json"}, None),
])
def test_bad_arguments_name_themselves(kwargs, where):
    with pytest.raises(splitsim.InputError) as e:
        splitsim.simulate(os.path.join(SCENARIOS, "mobilenet_v2_ushape.json"), progress=False,
                          **kwargs)
    assert e.value.where == where if where else e.value.where


def test_a_file_that_is_not_there_or_not_json():
    with pytest.raises(splitsim.InputError):
        splitsim.Scenario("/nonexistent/scenario.json")
    with pytest.raises(splitsim.InputError) as e:
        splitsim.Scenario(BASE, batch_size=float("nan"))
    assert e.value.where == "$"
    with pytest.raises(splitsim.InputError) as e:
        splitsim.Scenario(42)
    assert e.value.where == "source"


def test_a_known_mistake_names_its_json_path():
    d = copy.deepcopy(BASE)
    d["partition"][1]["to"] = "no_such_unit"
    with pytest.raises(splitsim.InputError) as e:
        splitsim.plan(d, progress=False)
    assert e.value.where == "$.partition[1].to"


def test_ctrl_c_stops_a_long_simulation():
    script = textwrap.dedent(f"""
        import sys, time
        import splitsim
        s = splitsim.Scenario({os.path.join(SCENARIOS, "mobilenet_v2_ushape.json")!r},
                              sweep={{"network.bandwidth_bit_per_s": [1e8 + i for i in range(4000)]}})
        plans = splitsim.plan(s, progress=False)
        print("planned", flush=True)
        start = time.monotonic()
        try:
            splitsim.simulate(plans, jobs=1, progress=False)
        except KeyboardInterrupt:
            print("interrupted after", round(time.monotonic() - start, 1), flush=True)
            sys.exit(0)
        sys.exit(4)
    """)
    # As a terminal sends it: to the whole process group, the simulation workers too.
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert child.stdout.readline().strip() == "planned"
        time.sleep(1.0)
        os.killpg(child.pid, signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
    assert child.returncode == 0, out + err
    assert "interrupted after" in out
