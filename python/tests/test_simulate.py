"""splitsim.simulate and splitsim.plan give the command line's figures,
value for value, whatever the input form (file, dict, Plans, plan file,
pickled Plans)."""
import glob
import json
import os
import pickle

import pandas as pd
import pytest

import splitsim
from conftest import SCENARIOS, cli_json, run_cli

# A spread of the shipped scenarios: a sweep of codecs and chunk counts, a
# K-stage pipeline, schedules on a transformer, many clients on a shared link,
# the training modes.
# SPLITSIM_ALL_SCENARIOS=1 checks every shipped scenario file instead
# (scenarios/**, minutes; a TorchScript one needs its .pt file written first,
# else it is skipped).
CHECKED = ["mobilenet_v2_ushape.json", "resnet20_kstage.json", "bert_small_schedules.json",
           "resnet20_many_clients.json", "resnet20_training_modes.json"]


def shipped_scenarios():
    for path in sorted(glob.glob(os.path.join(SCENARIOS, "**", "*.json"), recursive=True)):
        with open(path) as f:
            data = json.load(f)
        if isinstance(data, dict) and data.get("schema") == "splitsim.scenario/1":
            yield os.path.relpath(path, SCENARIOS)


if os.environ.get("SPLITSIM_ALL_SCENARIOS"):
    CHECKED = list(shipped_scenarios())


def expected_record(m):
    """The CSV columns of one metrics object (simulate --json), derived here
    from the parties as sim/README.md defines them: one client (the mean
    over client parties), the other parties summed."""
    clients = [p for p in m["parties"].values() if p["client"]]
    others = [p for p in m["parties"].values() if not p["client"]]
    n = len(clients) or 1
    mean = lambda key: sum(p[key] for p in clients) / n  # noqa: E731
    total = lambda key: sum(p[key] for p in others)  # noqa: E731
    spread = m["time_per_batch_spread_s"]
    return {
        "source": m["source"], "scenario": m["scenario"], "variant": m["variant"],
        "schedule": m["schedule"], "clients": m["clients"], "batches": m["batches"],
        "warmup_batches": m["warmup_batches"], "time_per_batch_s": m["time_per_batch_s"],
        "time_per_batch_min_s": spread["min"], "time_per_batch_median_s": spread["median"],
        "time_per_batch_max_s": spread["max"], "computation_time_s": m["computation_time_s"],
        "client_bytes_sent_per_batch": mean("bytes_sent_per_batch"),
        "client_bytes_received_per_batch": mean("bytes_received_per_batch"),
        "server_bytes_sent_per_batch": total("bytes_sent_per_batch"),
        "server_bytes_received_per_batch": total("bytes_received_per_batch"),
        "client_bandwidth_avg_send_Bps": mean("bandwidth_avg_send_Bps"),
        "client_bandwidth_avg_recv_Bps": mean("bandwidth_avg_recv_Bps"),
        "bandwidth_peak_client_Bps": m["bandwidth_peak_client_Bps"],
        "bandwidth_peak_server_Bps": m["bandwidth_peak_server_Bps"],
        "client_busy_s_per_batch": mean("busy_s_per_batch"),
        "server_busy_s_per_batch": total("busy_s_per_batch"),
        "bubble_fraction": m["bubble_fraction"], "busiest_resource": m["busiest_resource"],
        "busiest_utilisation": m["busiest_utilisation"],
        "peak_stash_bytes_per_stage": [s["peak_stash_bytes"] for s in m["stages"]],
    }


def csv_header():
    return run_cli("simulate", "--csv", "--variant", "chunks=4",
                   os.path.join(SCENARIOS, "mobilenet_v2_ushape.json")).splitlines()[0].split(",")


@pytest.mark.parametrize("name", CHECKED)
def test_frame_equals_the_cli_json_value_for_value(name):
    path = os.path.join(SCENARIOS, name)
    with open(path) as f:
        model = json.load(f)["model"]
    if model.get("path") and not os.path.exists(os.path.join(os.path.dirname(path), model["path"])):
        pytest.skip(f"{model['path']} is not written (costmodel/README.md)")
    frame = splitsim.simulate(path, progress=False)
    metrics = cli_json("simulate", "--json", path)
    assert len(frame) == len(metrics)
    for (_, row), m in zip(frame.iterrows(), metrics):
        want = expected_record(m)
        # Sums over parties in another order may differ in the last bit.
        for key, value in want.items():
            if isinstance(value, float) and key.startswith(("client_", "server_")):
                assert row[key] == pytest.approx(value, rel=1e-12, abs=0), (m["variant"], key)
            else:
                assert row[key] == value, (m["variant"], key)


def test_columns_are_the_csv_header_in_order():
    frame = splitsim.simulate(os.path.join(SCENARIOS, "mobilenet_v2_ushape.json"),
                              variant="chunks=4", progress=False)
    assert list(frame.columns) == csv_header()


def test_a_dict_a_scenario_a_plan_file_and_pickled_plans_give_one_frame(tmp_path):
    path = os.path.join(SCENARIOS, "resnet20_kstage.json")
    with open(path) as f:
        data = json.load(f)
    from_file = splitsim.simulate(path, variant="partition=K3", progress=False)
    from_dict = splitsim.simulate(splitsim.Scenario(data, base_dir=SCENARIOS),
                                  variant="partition=K3", progress=False)
    plans = splitsim.plan(path, variant="partition=K3", progress=False)
    plan_file = tmp_path / "plans.json"
    plan_file.write_text(run_cli("plan", "--json", "--variant", "partition=K3", path))
    from_plan_file = splitsim.simulate(plan_file, progress=False)
    from_pickles = splitsim.simulate([pickle.loads(pickle.dumps(p)) for p in plans],
                                     progress=False)
    for other in (from_dict, from_plan_file, from_pickles):
        pd.testing.assert_frame_equal(from_file, other, check_exact=True)


def test_plans_equal_the_cli_plan_json():
    path = os.path.join(SCENARIOS, "mobilenet_v2_ushape.json")
    plans = splitsim.plan(path, variant="q8", progress=False)
    assert [p.json for p in plans] == cli_json("plan", "--json", "--variant", "q8", path)
    stages, boundaries = plans[0].stages, plans[0].boundaries
    assert list(stages["party"]) == [s["party"] for s in plans[0].json["stages"]]
    assert len(boundaries) == 2 * len(plans[0].json["boundaries"])
    forward = boundaries[boundaries["direction"] == "forward"]
    assert list(forward["wire_bytes_per_batch"]) == [
        b["forward"]["wire_bytes_per_batch"] for b in plans[0].json["boundaries"]]


def test_jobs_do_not_change_the_result():
    path = os.path.join(SCENARIOS, "mobilenet_v2_ushape.json")
    one = splitsim.simulate(path, jobs=1, progress=False)
    two = splitsim.simulate(path, jobs=2, progress=False)
    pd.testing.assert_frame_equal(one, two, check_exact=True)


def test_the_timeline_is_the_simulated_run():
    path = os.path.join(SCENARIOS, "mobilenet_v2_ushape.json")
    frame, events = splitsim.simulate(path, variant="chunks=4 compression=q8", timeline=True,
                                      progress=False)
    row = frame.iloc[0]
    assert set(events["kind"]) >= {"fwd", "bwd", "send", "recv", "update"}
    sends = events[(events["kind"] == "send") & (events["party"] == "client")]
    steady = sends[sends["batch"] >= row["warmup_batches"]]
    per_batch = steady["bytes"].sum() / (row["batches"] - row["warmup_batches"])
    assert per_batch == row["client_bytes_sent_per_batch"]
    assert (events["end_s"] >= events["start_s"]).all()


def test_a_timeline_needs_one_variant():
    with pytest.raises(splitsim.InputError) as e:
        splitsim.simulate(os.path.join(SCENARIOS, "mobilenet_v2_ushape.json"), timeline=True,
                          progress=False)
    assert e.value.where == "timeline"


def test_explore_ranks_as_the_cli_does():
    path = os.path.join(SCENARIOS, "mobilenet_v2_ushape.json")
    e = splitsim.explore(path, chunks=[1, 4], kinds=["ushape"], top=5, max_simulations=40,
                         progress=False)
    cli = cli_json("explore", "--json", "--chunks", "1,4", "--kinds", "ushape", "--top", "5",
                   "--max-simulations", "40", path)[0]
    top = e.ranking.head(5)
    assert list(top["label"]) == [c["label"] for c in cli["ranking"]]
    assert list(top["time_per_batch_s"]) == [c["time_per_batch_s"] for c in cli["ranking"]]
    assert list(e.front["label"]) == [c["label"] for c in cli["front"]]
    assert e.ranking["on_front"].sum() == len(set(e.front["label"]) & set(e.ranking["label"]))
    assert len(e.ranking) == cli["simulated"]


def test_progress_reaches_stderr_when_asked(capfd):
    splitsim.simulate(os.path.join(SCENARIOS, "mobilenet_v2_ushape.json"), progress=True)
    err = capfd.readouterr().err
    assert "simulate" in err and "15/15" in err and "plan" in err
    splitsim.simulate(os.path.join(SCENARIOS, "mobilenet_v2_ushape.json"), progress=False)
    assert "simulate" not in capfd.readouterr().err


def test_calibrate_fits_as_the_cli_does_and_simulate_takes_the_result(tmp_path):
    # The K2 variants of a small scenario (a fit simulates many times).
    path = os.path.join(SCENARIOS, "resnet20_kstage.json")
    sim = splitsim.simulate(path, variant="partition=K2", progress=False)
    # "Measured": every variant 25% slower than predicted.
    measured = pd.DataFrame({"variant": sim["variant"],
                             "time_per_batch_s": sim["time_per_batch_s"] * 1.25})
    cal = splitsim.calibrate(path, measured, variant="partition=K2", leave_one_out=False,
                             progress=False)
    csv, out = tmp_path / "measured.csv", tmp_path / "calibration.json"
    measured.to_csv(csv, index=False)
    run_cli("calibrate", path, "--measured", str(csv), "-o", str(out), "--no-leave-one-out")
    assert cal.json == json.loads(out.read_text())
    assert cal.report.strip()  # the fit as the command prints it
    after = splitsim.simulate(path, variant="partition=K2", calibration=cal, progress=False)
    from_file = splitsim.simulate(path, variant="partition=K2", calibration=out, progress=False)
    pd.testing.assert_frame_equal(after, from_file, check_exact=True)
    error = lambda f: (f["time_per_batch_s"] / measured["time_per_batch_s"] - 1).abs().median()  # noqa: E731
    assert error(after) < error(sim) / 3
