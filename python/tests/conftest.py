"""Shared by the package's tests: the splitsim executable of the same build
(to compare with), the source tree's scenarios, and a run of the CLI."""
import json
import os
import subprocess

import pytest

import splitsim

SOURCE = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCENARIOS = os.path.join(SOURCE, "scenarios")


def splitsim_bin():
    """$SPLITSIM_BIN (ctest sets it), else the build tree's, beside the package."""
    env = os.environ.get("SPLITSIM_BIN")
    if env:
        return env
    package = os.path.dirname(os.path.realpath(splitsim._native._core.__file__))
    return os.path.normpath(os.path.join(package, "..", "..", "cli", "splitsim"))


def run_cli(*args, timeout=600):
    """The CLI's stdout for `args`; fails the test on a non-zero exit."""
    done = subprocess.run([splitsim_bin(), *args], capture_output=True, text=True,
                          timeout=timeout, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def cli_json(*args):
    out = json.loads(run_cli(*args))
    return out if isinstance(out, list) else [out]


@pytest.fixture
def scenario_path():
    return lambda name: os.path.join(SCENARIOS, name)
