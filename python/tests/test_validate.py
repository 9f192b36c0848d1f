"""splitsim.validate runs a variant for real (splitsim exec, two processes)
and returns predicted against measured, as `splitsim validate --matrix
--json` does."""
import copy
import json
import os

import pytest

import splitsim
from conftest import SOURCE

SMALL = os.path.join(SOURCE, "tests", "notebooks", "validation_small.json")


def test_one_variant_predicted_and_measured():
    # Without the platform model: its link probe (20 s of both cores) is the
    # command line's to test.
    v = splitsim.validate(SMALL, variant="compression=none chunks=1", repeat=1, timeout_s=120,
                          platform_model=False, progress=False)
    assert v.ok, v.json
    assert v.json["runs"][0].get("platform", {}).get("cpu_s_per_byte_sent", 0) == 0
    assert len(v.json["runs"]) == 1
    by_metric = v.errors.set_index("metric")
    tpb = by_metric.loc["time_per_batch_s"]
    assert tpb["predicted"] > 0 and tpb["measured"] > 0
    bytes_rows = v.errors[v.errors["metric"].str.contains("bytes_sent_per_batch")]
    assert not bytes_rows.empty and (bytes_rows["error_pct"] == 0).all()  # bytes are exact
    assert v.summary["bytes_checked"] == v.summary["bytes_exact"] == 1


def test_bad_input_is_refused_before_anything_runs():
    with pytest.raises(splitsim.InputError) as e:
        splitsim.validate(SMALL, variant="no such variant", progress=False)
    assert e.value.where == "variant"
    with open(SMALL) as f:
        data = json.load(f)
    with pytest.raises(splitsim.InputError) as e:
        splitsim.validate(splitsim.Scenario(copy.deepcopy(data)), progress=False)
    assert e.value.where == "scenarios"
    with pytest.raises(splitsim.InputError) as e:
        splitsim.validate(SMALL, variant="chunks=1", link_rate="fast", progress=False)
    assert e.value.where == "link_rate"
