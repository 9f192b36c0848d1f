"""The calls: plan, simulate, explore. Each checks its arguments (an
InputError naming the argument), hands the work to splitsim._core, which
releases the GIL and reports progress, and reshapes the JSON it returns."""
import contextlib
import json
import numbers
import os
import tempfile

import pandas as pd

from ._native import _core, input_error
from .progress import Progress
from .results import Calibration, Exploration, Plan, Validation
from .scenario import Scenario, as_scenario


def _text(value, where):
    if value is None:
        return ""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str):
        raise input_error(where, f"a string; got {type(value).__name__}")
    return value


def _count(value, where, default, low=1, high=1 << 20):
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not low <= value <= high:
        raise input_error(where, f"an integer in [{low}, {high}]; got {value!r}")
    return int(value)


def _number(value, where, default, low=None, high=None):
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or value != value:
        raise input_error(where, f"a number; got {value!r}")
    if (low is not None and value < low) or (high is not None and value > high):
        raise input_error(where, f"a number in [{low}, {high}]; got {value!r}")
    return float(value)


def _list_text(value, where):
    """A list of numbers or names as the command line's comma list."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        items = list(value)
    except TypeError:
        raise input_error(where, f"a list; got {type(value).__name__}") from None
    return ",".join(repr(v) if isinstance(v, float) else str(v) for v in items)


class _TemporaryJson:
    """`data` in a temporary JSON file while in the `with` block: its path."""

    def __init__(self, data):
        self.data = data

    def __enter__(self):
        f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        with f:
            json.dump(self.data, f)
        self.path = f.name
        return self.path

    def __exit__(self, *exc):
        os.unlink(self.path)


class _CalibrationFile:
    """A calibration argument as a path ("" for none): a file's, or a
    temporary file's holding a Calibration's JSON."""

    def __init__(self, calibration, where="calibration"):
        self.calibration, self.where, self.temp = calibration, where, None

    def __enter__(self):
        if isinstance(self.calibration, Calibration):
            self.temp = _TemporaryJson(self.calibration.json)
            return self.temp.__enter__()
        return _text(self.calibration, self.where)

    def __exit__(self, *exc):
        if self.temp is not None:
            self.temp.__exit__(*exc)


def plan(scenario, *, variant="", calibration=None, progress=None):
    """The Plan of every variant of `scenario` (a Scenario, a dict or a file)
    whose label contains `variant`, as ``splitsim plan`` plans it; with
    `calibration` (a calibration file) applied. A list of Plans."""
    s = as_scenario(scenario)
    with _CalibrationFile(calibration) as file, contextlib.closing(Progress(progress)) as bar:
        handles = _core.plan(*s._source(), _text(variant, "variant"), file, bar)
    return [Plan(h) for h in handles]


def _plans_of(what, variant, calibration, progress):
    """Plans from Plans, a plan file, or anything plan() takes."""
    if isinstance(what, Plan):
        what = [what]
    if isinstance(what, (list, tuple)) and all(isinstance(p, Plan) for p in what):
        plans = [p for p in what if _text(variant, "variant") in p.variant]
        if calibration is not None:
            with _CalibrationFile(calibration) as file:
                plans = [Plan(_core.apply_calibration(p._handle, file)) for p in plans]
        if not plans:
            raise input_error("variant", f'no plan\'s variant contains "{variant}"')
        return plans
    if isinstance(what, (str, os.PathLike)):
        handles = _core.plan_file(os.fspath(what))
        if handles is not None:
            return _plans_of([Plan(h) for h in handles], variant, calibration, progress)
    return plan(what, variant=variant, calibration=calibration, progress=progress)


def simulate(what, *, variant="", calibration=None, jobs=None, server_order="fifo",
             timeline=False, client=None, progress=None):
    """Simulates every selected variant of `what` (a Scenario, a dict, a
    scenario or plan file, a Plan or a list of Plans): one DataFrame row per
    variant, with the columns of ``splitsim simulate --csv`` at full
    precision (the figures of ``simulate --json``).

    jobs: simulations at once (default: the CPU count). client: a
    dask.distributed.Client runs the simulations on its cluster instead
    (splitsim.distributed). timeline=True (one variant): returns
    (frame, events), the simulated events as a DataFrame."""
    jobs = _count(jobs, "jobs", 0, 1, 1024)
    server_order = _text(server_order, "server_order")
    plans = _plans_of(what, variant, calibration, progress)
    if timeline and len(plans) != 1:
        raise input_error("timeline", f"one variant's timeline; {len(plans)} are selected "
                          "(pick one with variant=...)")
    if client is not None:
        from .distributed import simulate_on
        records = simulate_on(client, plans, server_order, Progress(progress))
    else:
        with contextlib.closing(Progress(progress)) as bar:
            records = json.loads(_core.simulate([p._handle for p in plans], jobs, server_order,
                                                False, bar))
    frame = pd.DataFrame(records)
    if not timeline:
        return frame
    events = pd.DataFrame(json.loads(_core.timeline(plans[0]._handle, server_order)))
    return frame, events


_SPACE_KEYS = ("objective", "kinds", "chunks", "bandwidths")


def explore(scenario, *, variant="", space=None, objective=None, kinds=None, chunks=None,
            bandwidths=None, stages=None, client_memory_bytes=None, max_client_mac_share=None,
            calibration=None, top=10, jobs=None, max_simulations=1000, spread_pct=None,
            client=None, progress=None):
    """``splitsim explore`` around a scenario's variant: cut points, codecs,
    chunk counts, schedules and bandwidths searched, screened and simulated.
    space: an explore space file or dict (schema splitsim.explore/1); the
    other arguments override it as the command's flags do (lists for
    kinds, chunks and bandwidths). client: a dask.distributed.Client runs
    the simulations on its cluster. An Exploration (.ranking, .front, .json)."""
    s = as_scenario(scenario)
    flags = _core.SpaceFlags()
    with contextlib.ExitStack() as stack:
        if isinstance(space, dict):
            flags.space_file = stack.enter_context(_TemporaryJson(space))
        else:
            flags.space_file = _text(space, "space")
        flags.objective = _text(objective, "objective")
        flags.kinds = _list_text(kinds, "kinds")
        flags.chunks = _list_text(chunks, "chunks")
        flags.bandwidths = _list_text(bandwidths, "bandwidths")
        flags.stages = _count(stages, "stages", 0, 1, 64)
        flags.client_memory_bytes = _count(client_memory_bytes, "client_memory_bytes", -1, 0,
                                           1 << 62)
        flags.max_client_mac_share = _number(max_client_mac_share, "max_client_mac_share", -1,
                                             0, 1)
        flags.calibration = stack.enter_context(_CalibrationFile(calibration))
        simulate_fn = None
        if client is not None:
            from .distributed import explorer_simulate
            simulate_fn = explorer_simulate(client)
        bar = stack.enter_context(contextlib.closing(Progress(progress)))
        report = _core.explore(*s._source(), _text(variant, "variant"), flags,
                               _count(top, "top", 10), _count(jobs, "jobs", 0, 1, 1024),
                               _count(max_simulations, "max_simulations", 1000),
                               _number(spread_pct, "spread_pct", -1, 0, 99), simulate_fn, bar)
    return Exploration(json.loads(report))


def calibrate(what, measured, *, variant="", leave_one_out=True, jobs=None, progress=None):
    """``splitsim calibrate``: fits a calibration to measured runs of the
    variants of `what` (anything simulate takes). measured: a measured file
    (CSV with a `variant` column, or exec's metrics JSON), a list of them,
    or a DataFrame with the CSV's columns. A Calibration (.json, .report,
    .save(path)); every call that takes `calibration` takes it too."""
    plans = _plans_of(what, variant, None, progress)
    with tempfile.TemporaryDirectory() as tmp:
        if isinstance(measured, pd.DataFrame):
            files = [os.path.join(tmp, "measured.csv")]
            measured.to_csv(files[0], index=False)
        elif isinstance(measured, (str, os.PathLike)):
            files = [os.fspath(measured)]
        else:
            files = [_text(f, "measured") for f in measured]
        with contextlib.closing(Progress(progress)) as bar:
            text, report = _core.calibrate([p._handle for p in plans], files,
                                           bool(leave_one_out), _count(jobs, "jobs", 0, 1, 1024),
                                           bar)
    return Calibration(json.loads(text), report)


def validate(scenarios, *, variant="", link_rate=None, calibration=None, quick=False, repeat=3,
             iterations=None, timeout_s=300, keep_going=False, platform_model=True,
             progress=None):
    """``splitsim validate --matrix``: the selected variants predicted and run
    for real (``splitsim exec``, client and server processes; as root over a
    shaped veth pair between two network namespaces, else over loopback),
    repeated and interleaved. scenarios: a scenario file, a Scenario read from
    one, or a list of them (the parties read the files). platform_model=False
    is ``--no-platform-model``: no link probe, co-compute slowdown or wake
    cost (each measured before the runs; the probe alone takes some 20 s). A
    Validation (.errors, .summary, .json, .ok)."""
    items = scenarios if isinstance(scenarios, (list, tuple)) else [scenarios]
    files = []
    for item in items:
        if isinstance(item, Scenario):
            if item._name.startswith("<"):
                raise input_error("scenarios", "validate runs the parties on scenario files; "
                                  "this Scenario was made from a dict: save it as a file first")
            files.append(item._name)
        else:
            files.append(_text(item, "scenarios"))
    with contextlib.ExitStack() as stack:
        calibration_path = stack.enter_context(_CalibrationFile(calibration))
        bar = stack.enter_context(contextlib.closing(Progress(progress)))
        ok, report = _core.validate(
            files, _text(variant, "variant"), _text(link_rate, "link_rate"), calibration_path,
            bool(quick), _count(repeat, "repeat", 3, 1, 100),
            _count(iterations, "iterations", 0, 1, 1 << 30),
            _number(timeout_s, "timeout_s", 300, 1, 86400), bool(keep_going),
            bool(platform_model), bar)
    return Validation(json.loads(report), ok)


__all__ = ["Scenario", "plan", "simulate", "explore", "calibrate", "validate"]
