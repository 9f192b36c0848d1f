"""What the calls return: Plan (one variant's plan, its stages and
boundaries as DataFrames) and Exploration (the ranking and the Pareto
front). Both only reshape the JSON the C++ side writes (the plan file's and
explore --json's schemas); no figure is computed here."""
import json

import pandas as pd

from ._native import _core


def _scalars(row):
    return {k: v for k, v in row.items() if not isinstance(v, (dict, list))}


class Plan:
    """One variant's Plan (schema splitsim.plan/1, costmodel/README.md).

    ``stages``: one row per stage (its scalar fields and its units);
    ``boundaries``: one row per boundary and direction; ``json``: the whole
    plan file object; ``simulate(plan)`` takes Plans too. Pickles exactly
    (for Dask)."""

    def __init__(self, handle):
        self._handle = handle
        self._json = None

    @classmethod
    def from_json(cls, data):
        """A Plan from a plan file's object (a dict or its JSON text)."""
        text = data if isinstance(data, str) else json.dumps(data)
        return cls(_core.plan_from_json(text))

    @property
    def variant(self):
        return self._handle.variant

    @property
    def json(self):
        if self._json is None:
            self._json = json.loads(self._handle.to_json())
        return self._json

    @property
    def stages(self):
        rows = []
        for i, stage in enumerate(self.json["stages"]):
            row = {"stage": i, **_scalars(stage)}
            row["units"] = stage.get("units", [])
            rows.append(row)
        return pd.DataFrame(rows)

    @property
    def boundaries(self):
        rows = []
        for i, b in enumerate(self.json["boundaries"]):
            for direction in ("forward", "backward"):
                rows.append({"boundary": i, "from_stage": b["from_stage"],
                             "to_stage": b["to_stage"], "direction": direction,
                             "activation_shape": b["activation_shape"],
                             **_scalars(b[direction])})
        return pd.DataFrame(rows)

    def __getstate__(self):
        return self._handle.to_bytes()

    def __setstate__(self, state):
        self._handle = _core.plan_from_bytes(state)
        self._json = None

    def __repr__(self):
        return f"Plan({self.variant!r}, {len(self.json['stages'])} stages)"


class Exploration:
    """explore's answer: ``ranking`` (every simulated candidate, best first,
    with its ``rank`` from 1 and whether it is ``on_front``), ``front`` (the
    Pareto front over time, bytes, client MACs and client memory) and
    ``json`` (explore --json's report with the whole ranking,
    sim/explore/README.md). The command line prints ``ranking.head(top)``."""

    def __init__(self, report):
        self.json = report
        front_labels = {c["label"] for c in report.get("front", [])}
        ranking = pd.DataFrame(report.get("ranking", []))
        if not ranking.empty:
            ranking.insert(0, "rank", range(1, len(ranking) + 1))
            ranking.insert(1, "label", ranking.pop("label"))
            ranking.insert(2, "time_per_batch_s", ranking.pop("time_per_batch_s"))
            ranking["on_front"] = ranking["label"].isin(front_labels)
        self.ranking = ranking
        self.front = pd.DataFrame(report.get("front", []))

    def __repr__(self):
        return (f"Exploration({self.json.get('scenario')!r}: {len(self.ranking)} ranked, "
                f"{len(self.front)} on the front)")


class Calibration:
    """A fitted calibration (schema splitsim.calibration/1,
    sim/calibrate/README.md): ``json`` (the file's object), ``report`` (the
    fit as ``splitsim calibrate`` prints it: parameters, rows, leave-one-out
    errors) and ``save(path)``."""

    def __init__(self, data, report=""):
        self.json = data
        self.report = report

    def save(self, path):
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.json, f, indent=2)
            f.write("\n")

    def __repr__(self):
        return f"Calibration({len(self.json.get('parties', {}))} parties)"


class Validation:
    """validate's report (``validate --matrix --json``, exec/validate/README.md):
    ``errors``, one row per run and metric (variant, chunks, metric, predicted,
    measured, error_pct); ``summary`` (the medians, p90s and targets);
    ``json``; ``ok`` (False when a run failed: its ``failure`` is in json)."""

    def __init__(self, report, ok=True):
        self.json = report
        self.ok = ok
        self.summary = report.get("summary", {})
        rows = []
        for run in report.get("runs", []):
            for metric, e in run.get("errors", {}).items():
                rows.append({"variant": run["variant"], "chunks": run.get("chunks"),
                             "metric": metric, "predicted": e["predicted"],
                             "measured": e["measured"], "error_pct": e["error_pct"]})
        self.errors = pd.DataFrame(rows)

    def __repr__(self):
        return f"Validation({len(self.json.get('runs', []))} runs, ok={self.ok})"
