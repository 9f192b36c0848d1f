#!/usr/bin/env bash
# The build without LibTorch, from this source tree: configure a fresh build
# directory with -DSPLITSIM_WITH_TORCH=OFF, build sim_tests and splitsim only,
# run sim_tests, and check that this splitsim
#  - simulates a plan file written by the LibTorch build's `splitsim plan
#    --json` to the same metrics JSON that the LibTorch build prints for the
#    scenario,
#  - lists no command that needs LibTorch in --help,
#  - refuses a scenario file with exit code 2, saying to give a plan file.
# Usage: notorch_build_test.sh SOURCE_DIR TORCH_SPLITSIM [CXX_COMPILER]
# The build directory sits beside the LibTorch build's (TORCH_SPLITSIM is
# BUILD/cli/splitsim): where ccache is installed, CMakeLists.txt makes it the
# compiler launcher with paths relative to the build directory, so that the
# objects the two builds share (the core, the simulator, sim_tests) come from
# the cache instead of being compiled twice. Builds with
# $SPLITSIM_NOTORCH_JOBS jobs (default 2).
set -euo pipefail
src=$1
torch_bin=$2
cxx=${3:-}
torch_build=$(cd "$(dirname "$torch_bin")/.." && pwd)
tmp=$(mktemp -d)  # logs and outputs
build=$(mktemp -d "$torch_build-notorch.XXXXXX")
trap 'rm -rf "$tmp" "$build"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

args=(-S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
      -DSPLITSIM_WITH_TORCH=OFF -DSPLITSIM_BUILD_TESTS=ON)
[[ -n $cxx ]] && args+=(-DCMAKE_CXX_COMPILER="$cxx")
start=$SECONDS
cmake "${args[@]}" >"$tmp/configure.log" 2>&1 || { cat "$tmp/configure.log"; fail "configure"; }
grep -q "building without LibTorch" "$tmp/configure.log" || fail "configure did not go without LibTorch"
cmake --build "$build" --parallel "${SPLITSIM_NOTORCH_JOBS:-2}" --target sim_tests splitsim \
  >"$tmp/build.log" 2>&1 || { tail -50 "$tmp/build.log"; fail "build"; }
echo "configure + build: $((SECONDS - start)) s"
bin=$build/cli/splitsim
[[ -x $bin ]] || fail "no splitsim built"
if ldd "$bin" | grep -q -E "libtorch|libc10"; then
  fail "the splitsim built without LibTorch links it: $(ldd "$bin" | grep -E "torch|c10")"
fi

"$build/tests/sim_tests" --gtest_brief=1 >"$tmp/sim_tests.log" 2>&1 ||
  { tail -50 "$tmp/sim_tests.log"; fail "sim_tests"; }

# Same metrics from a plan file as the LibTorch build gets from the scenario.
scenario=$src/scenarios/mobilenet_v2_ushape.json
"$torch_bin" plan --json "$scenario" >"$tmp/plans.json" 2>"$tmp/plan.err" ||
  fail "LibTorch build: plan --json: $(cat "$tmp/plan.err")"
"$torch_bin" simulate --json "$scenario" >"$tmp/want.json" 2>"$tmp/want.err" ||
  fail "LibTorch build: simulate --json: $(cat "$tmp/want.err")"
"$bin" simulate --json "$tmp/plans.json" >"$tmp/got.json" 2>"$tmp/got.err" ||
  fail "simulate of the plan file: $(cat "$tmp/got.err")"
[[ -s $tmp/got.json ]] || fail "simulate of the plan file printed nothing"
cmp -s "$tmp/want.json" "$tmp/got.json" ||
  fail "the plan file's metrics differ from the scenario's: $(diff "$tmp/want.json" "$tmp/got.json" | head -20)"

# --help: simulate, and none of the commands that need LibTorch.
"$bin" --help >"$tmp/help.txt" 2>&1 || fail "--help exits $?"
subcommands=$(sed -n '/^Subcommands:/,$p' "$tmp/help.txt" | sed -n 's/^  \([a-z][a-z_-]*\).*/\1/p')
[[ $subcommands == simulate ]] || fail "--help lists \"$(echo $subcommands)\"; expected only simulate"
for cmd in plan profile bench exec validate explore link-probe; do
  set +e
  "$bin" "$cmd" --help >"$tmp/cmd.out" 2>&1
  code=$?
  set -e
  [[ $code == 2 ]] || fail "\`splitsim $cmd\` exits $code without LibTorch; expected 2"
  grep -q "unknown subcommand" "$tmp/cmd.out" || fail "\`splitsim $cmd\`: $(cat "$tmp/cmd.out")"
done

# A scenario file: exit 2, pointing to plan files.
set +e
"$bin" simulate "$scenario" >"$tmp/scenario.out" 2>"$tmp/scenario.err"
code=$?
set -e
[[ $code == 2 ]] || fail "simulate of a scenario exits $code without LibTorch; expected 2"
grep -q "no LibTorch" "$tmp/scenario.err" && grep -q "splitsim plan --json" "$tmp/scenario.err" ||
  fail "simulate of a scenario: $(cat "$tmp/scenario.err")"
[[ ! -s $tmp/scenario.out ]] || fail "simulate of a scenario printed to stdout"
echo "ok: $((SECONDS - start)) s"
