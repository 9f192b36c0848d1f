#!/usr/bin/env python3
"""Calibration, measured: fit on a few measured variants, predict the rest.

For each model family of a `splitsim validate --matrix --report` file (its
exec measurements), the family's scenarios are planned with a deliberately
wrong device profile (DEVICE for both parties, default the spec sheet of a
40-core Xeon: this machine's runs are one thread per party), `splitsim
calibrate` fits FIT variants (spread over both partitions, link rates,
codecs and chunks), and `splitsim simulate` predicts every other variant
with and without the calibration. Prints, per family, the median and max
|error| of time per batch over the held-out variants, before and after.

Usage: calibrate_holdout.py BIN REPORT [--device NAME] [--fit N] [--keep DIR]
                            [--scenarios DIR] [--json OUT]
(BIN: path to splitsim; REPORT: a validation_matrix report; --scenarios: the
folder of the report's scenario files, default this one; --json: every
variant's measured, uncalibrated and calibrated time per batch, for the
validation notebook).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr}")
    return p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("bin")
    ap.add_argument("report")
    ap.add_argument("--device", default="xeon_40core")
    ap.add_argument("--fit", type=int, default=4)
    ap.add_argument("--keep", help="write the files here instead of a temporary folder")
    ap.add_argument("--scenarios", default=HERE, help="folder of the report's scenario files")
    ap.add_argument("--json", help="write every variant's times here")
    a = ap.parse_args()
    report = json.load(open(a.report))
    out = a.keep or tempfile.mkdtemp(prefix="splitsim_calib_")
    os.makedirs(out, exist_ok=True)

    # Measured runs by (scenario name, variant label); scenario files by name.
    measured = {}
    for r in report["runs"]:
        if r.get("failure") or "measured" not in r:
            continue
        m = r["measured"]
        measured[(m["scenario"], m["variant"])] = m
    files = {}
    for f in sorted(os.listdir(a.scenarios)):
        if f.endswith(".json"):
            s = json.load(open(os.path.join(a.scenarios, f)))
            if s.get("schema") != "splitsim.scenario/1":
                continue
            files[s["name"]] = (f, s)
    families = {}
    for name, (f, s) in files.items():
        if any(k[0] == name for k in measured):
            families.setdefault(s["model"]["name"], []).append(name)

    print(f"device profile for both parties: {a.device}; fit on {a.fit} variants per family")
    summary, points = [], []
    for model, names in sorted(families.items()):
        plans, rows = [], []
        for name in names:
            f, s = files[name]
            s = dict(s, devices={"client": a.device, "server": a.device})
            path = os.path.join(out, f"{name}.scenario.json")
            json.dump(s, open(path, "w"))
            short = name.replace("validation_", "")
            for p in json.loads(run([a.bin, "plan", "--json", path])):
                key = (name, p["variant"])
                if key not in measured:
                    continue
                p["variant"] = f"{short} {p['variant']}"
                plans.append(p)
                rows.append(dict(measured[key], variant=p["variant"]))
        # Every k-th variant, from an offset, so the fitted ones differ in
        # partition, link rate, codec and chunks.
        step = max(1, len(rows) // a.fit)
        fit_labels = {rows[(i * step + i) % len(rows)]["variant"] for i in range(a.fit)}
        plan_file = os.path.join(out, f"{model}.plans.json")
        json.dump(plans, open(plan_file, "w"))
        fit_file = os.path.join(out, f"{model}.measured.json")
        json.dump([r for r in rows if r["variant"] in fit_labels], open(fit_file, "w"))
        cal = os.path.join(out, f"{model}.calibration.json")
        print(f"\n{model}: {len(rows)} measured variants, fitting {len(fit_labels)}", flush=True)
        print(run([a.bin, "calibrate", plan_file, "--measured", fit_file, "-o", cal]), end="")
        before = {m["variant"]: m for m in json.loads(run([a.bin, "simulate", "--json", plan_file]))}
        after = {m["variant"]: m for m in json.loads(
            run([a.bin, "simulate", "--json", "--calibration", cal, plan_file]))}
        err_b, err_a = [], []
        for r in rows:
            points.append({"model": model, "variant": r["variant"],
                           "fitted": r["variant"] in fit_labels,
                           "measured": r["time_per_batch_s"],
                           "uncalibrated": before[r["variant"]]["time_per_batch_s"],
                           "calibrated": after[r["variant"]]["time_per_batch_s"]})
            if r["variant"] in fit_labels:
                continue
            t = r["time_per_batch_s"]
            err_b.append(abs(before[r["variant"]]["time_per_batch_s"] - t) / t * 100)
            err_a.append(abs(after[r["variant"]]["time_per_batch_s"] - t) / t * 100)
        if not err_a:
            continue
        line = (f"{model}: {len(err_a)} held-out variants, |error| of time per batch: "
                f"uncalibrated median {statistics.median(err_b):.1f}% (max {max(err_b):.1f}%), "
                f"calibrated median {statistics.median(err_a):.1f}% (max {max(err_a):.1f}%)")
        print(line)
        summary.append(line)
    print("\n" + "\n".join(summary))
    if a.json:
        json.dump({"device": a.device, "points": points}, open(a.json, "w"), indent=1)
    print(f"files in {out}")


if __name__ == "__main__":
    main()
