#!/usr/bin/env bash
# Regenerates the notebooks' inputs with the CLI (validation, accuracy: real runs), runs the
# notebooks headless and checks that each wrote its figures. report_figures and explore compute
# theirs with the Python package built beside SPLITSIM_BIN (BUILD/python, on PYTHONPATH here).
#
#   notebooks/run_notebooks.sh SPLITSIM_BIN OUT_DIR [report_figures|validation|explore|accuracy|leakage]
#
# With no name, runs all five. Inputs, executed notebooks and PNGs all go to OUT_DIR.
# Exits 77 (ctest: skipped) when `jupyter nbconvert` is not installed; Debian:
#   apt-get install jupyter-nbconvert python3-ipykernel python3-matplotlib python3-pandas
set -euo pipefail

if (($# < 2 || $# > 3)); then
  echo "usage: $0 SPLITSIM_BIN OUT_DIR [report_figures|validation|explore|accuracy|leakage]" >&2
  exit 2
fi
bin="$(realpath "$1")"
out="$(mkdir -p "$2" && realpath "$2")"
names=("${3:-report_figures}")
(($# == 3)) || names=(report_figures validation explore accuracy leakage)
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/.."  # the repository root: scenarios name devices and files relative to it

if ! jupyter nbconvert --version >/dev/null 2>&1; then
  echo "SKIP: 'jupyter nbconvert' is not installed, so the notebooks cannot run." >&2
  echo "      Debian: apt-get install jupyter-nbconvert python3-ipykernel python3-matplotlib python3-pandas" >&2
  exit 77
fi
[[ -x "$bin" ]] || { echo "$0: no splitsim executable at $1" >&2; exit 2; }
package="$(dirname "$bin")/../python"  # BUILD/python: the package `import splitsim` finds
[[ -d "$package/splitsim" ]] || { echo "$0: no Python package at $package/splitsim" >&2; exit 2; }
if [[ " ${names[*]} " == *" accuracy "* || " ${names[*]} " == *" leakage "* ]] && ! compgen -G "/usr/share/datasets/fashion-mnist/train-images*" >/dev/null; then
  echo "SKIP: the accuracy and leakage notebooks train on Fashion-MNIST: apt-get install dataset-fashion-mnist" >&2
  exit 77
fi

# The figures each notebook must write (its own final cell asserts the same).
expected_figures() {
  case "$1" in
    report_figures)
      echo report_peak_bandwidth.png report_average_bandwidth.png report_time_per_batch.png \
        report_computation_time.png report_timeline_chunks1_vs_8.png ;;
    validation)
      echo validation_time_per_batch.png validation_times.png validation_bandwidths.png \
        validation_bytes.png validation_calibration.png ;;
    explore) echo explore_pareto_front.png ;;
    accuracy) echo accuracy_vs_bytes.png accuracy_curves.png accuracy_time_to_target.png ;;
    leakage) echo leakage_front.png ;;
    *) echo "$0: unknown notebook '$1' (report_figures, validation, explore, accuracy or leakage)" >&2
       return 2 ;;
  esac
}

# Writes the CLI output the notebook reads into $out.
generate_inputs() {
  case "$1" in
    report_figures|explore) ;;  # the notebook calls the package
    validation)
      # Four short real runs (2x2 sweep, 4 iterations, once each) without the
      # platform model, whose link probe alone takes 20 s; the full matrix takes minutes.
      # Exit code 1 with a report: some run failed; the notebook leaves it out and asserts
      # that at least one run succeeded.
      local rc=0
      "$bin" validate tests/notebooks/validation_small.json --matrix --keep-going --json \
        --repeat 1 --timeout-s 60 --no-platform-model >"$out/validation_matrix.json" || rc=$?
      if ((rc == 1)) && [[ -s "$out/validation_matrix.json" ]]; then
        echo "warning: some validate runs failed; see the report's runs[].failure" >&2
      elif ((rc != 0)); then
        return "$rc"
      fi
      # Calibration: the same runs planned with a wrong profile (a 40-core
      # Xeon's spec sheet), 2 of them fitted, all predicted before and after.
      /usr/bin/python3 scenarios/validation/calibrate_holdout.py "$bin" \
        "$out/validation_matrix.json" --scenarios tests/notebooks --fit 2 \
        --keep "$out/calibration" --json "$out/calibration.json" >"$out/calibration.log" ;;
    accuracy)
      # Six codecs at chunks 1, two short epochs each on 256 Fashion-MNIST samples (seconds);
      # exec/TRAINING.md has the full table.
      "$bin" train scenarios/accuracy/resnet20_fashion_mnist.json --variant "chunks=1" \
        --epochs 2 --train-samples 256 --test-samples 128 --target-accuracy 25 --json \
        >"$out/train_sweep.json" ;;
    leakage)
      # Three cut depths x four codecs, one short epoch each on 256 Fashion-MNIST samples,
      # leakage at its end (seconds each); exec/TRAINING.md "Leakage" has the full table.
      local f
      for f in scenarios/leakage/resnet20_fashion_mnist_cut1.json \
        scenarios/leakage/resnet20_fashion_mnist_cut2.json \
        scenarios/leakage/resnet20_fashion_mnist_cut3.json; do
        "$bin" train "$f" --epochs 1 --train-samples 256 --test-samples 128 --leakage last \
          --leakage-attack-epochs 3 --json >"$out/leakage_$(basename "$f")"
      done ;;
  esac
}

status=0
for name in "${names[@]}"; do
  figures=$(expected_figures "$name")
  echo "== $name: generating inputs in $out"
  for f in $figures; do rm -f "$out/$f"; done
  generate_inputs "$name"
  echo "== $name: executing notebooks/$name.ipynb"
  PYTHONPATH="$package${PYTHONPATH:+:$PYTHONPATH}" \
  SPLITSIM_NB_INPUT_DIR="$out" SPLITSIM_NB_OUTPUT_DIR="$out" PYDEVD_DISABLE_FILE_VALIDATION=1 \
    jupyter nbconvert --to notebook --execute --ExecutePreprocessor.timeout=120 \
    --output-dir "$out" "notebooks/$name.ipynb"
  for f in $figures; do
    if [[ -s "$out/$f" ]]; then
      echo "ok   $out/$f"
    else
      echo "FAIL $name did not write $out/$f (or it is empty)" >&2
      status=1
    fi
  done
done
exit $status
