"""A live torch.nn.Module gives the cut list, the plan and the simulation
of the same model saved with torch.jit.script(...).save and named in a
scenario file."""
import pandas as pd
import pytest

import splitsim

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")

FIELDS = {
    "schema": "splitsim.scenario/1",
    "name": "resnet18_live",
    "partition": [{"party": "client", "from": "conv1", "to": "maxpool"},
                  {"party": "server", "from": "layer1.0", "to": "layer4.1"},
                  {"party": "client", "from": "avgpool", "to": "fc"}],
    "chunks": 2,
    "schedule": "gpipe",
    "devices": {"client": "xeon_40core", "server": "gtx1080"},
    "network": {"bandwidth_bit_per_s": 1e8, "latency_s": 0.001},
    "iterations": 6,
    "warmup": 1,
}


@pytest.fixture(scope="module")
def model_and_file(tmp_path_factory):
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=10)
    path = tmp_path_factory.mktemp("model") / "resnet18.pt"
    torch.jit.script(model).save(str(path))
    return model, path


def file_scenario(path):
    return splitsim.Scenario({**FIELDS, "batch_size": 16, "model": {
        "name": "torchscript", "path": str(path), "input_shape": [3, 32, 32]}})


def live_scenario(model):
    return splitsim.Scenario(model=model, example_input=torch.zeros(16, 3, 32, 32), **FIELDS)


def test_cuts_plan_and_simulation_equal_the_scripted_file(model_and_file):
    model, path = model_and_file
    live, saved = live_scenario(model), file_scenario(path)
    assert live.to_dict()["batch_size"] == 16
    pd.testing.assert_frame_equal(live.cuts(progress=False), saved.cuts(progress=False))
    live_plan = splitsim.plan(live, progress=False)[0].json
    saved_plan = splitsim.plan(saved, progress=False)[0].json
    assert live_plan["stages"] == saved_plan["stages"]
    assert live_plan["boundaries"] == saved_plan["boundaries"]
    pd.testing.assert_frame_equal(splitsim.simulate(live, progress=False),
                                  splitsim.simulate(saved, progress=False), check_exact=True)


def test_the_live_models_file_goes_with_its_scenario(model_and_file):
    import gc
    import os
    s = live_scenario(model_and_file[0])
    path = s.to_dict()["model"]["path"]
    assert os.path.exists(path)
    del s
    gc.collect()
    assert not os.path.exists(path)


def test_a_live_model_needs_an_example_batch(model_and_file):
    with pytest.raises(splitsim.InputError) as e:
        splitsim.Scenario(model=model_and_file[0], **FIELDS)
    assert e.value.where == "example_input"


def test_a_module_that_does_not_script_is_an_input_error():
    class Untyped(torch.nn.Module):
        def forward(self, x):
            return x.numpy()  # not TorchScript

    with pytest.raises(splitsim.InputError) as e:
        splitsim.Scenario(model=Untyped(), example_input=torch.zeros(2, 3), **FIELDS)
    assert e.value.where == "model"


def test_a_partition_names_a_sequential_child_by_its_index():
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Sequential(torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.ReLU()),
        torch.nn.Flatten(), torch.nn.Linear(8 * 16 * 16, 10))
    fields = {**FIELDS, "partition": [{"party": "client", "from": "0", "to": "1"},
                                      {"party": "server", "from": "2", "to": "2"},
                                      {"party": "client", "from": "3", "to": "4"}]}
    s = splitsim.Scenario(model=model, example_input=torch.zeros(4, 3, 16, 16), **fields)
    plan = splitsim.plan(s, progress=False)[0]
    assert [list(u) for u in plan.stages["units"]] == [["0", "1"], ["2.0", "2.1"], ["3", "4"]]
