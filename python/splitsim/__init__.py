"""splitsim from Python: scenarios, plans, simulations and explorations as
pandas DataFrames, computed in this process by splitsim's C++ libraries.

    import splitsim
    frame = splitsim.simulate("scenarios/mobilenet_v2_ushape.json")

The same figures as the ``splitsim`` command line (``simulate --json``,
``plan --json``, ``explore --json``); see python/README.md.
"""
from ._native import InputError
from .scenario import Scenario
from .api import calibrate, explore, plan, simulate, validate
from .results import Calibration, Exploration, Plan, Validation

__all__ = ["InputError", "Scenario", "Plan", "Exploration", "Calibration", "Validation", "plan",
           "simulate", "explore", "calibrate", "validate"]
