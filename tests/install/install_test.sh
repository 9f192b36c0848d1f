#!/usr/bin/env bash
# `cmake --install` into a fresh prefix, then the installed binary, run from
# another working directory, must find the shipped scenarios and device
# profiles (share/splitsim/scenarios), honour $SPLITSIM_DATA_DIR, and hold
# no path of the source tree; the installed Python package (where the build
# has one) imports from there and simulates in the installed worker.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR [PYTHON]
set -euo pipefail
build=$1
src=$2
python=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
bin=$tmp/prefix/bin/splitsim
data=$tmp/prefix/share/splitsim/scenarios
[[ -x $bin ]] || fail "no installed binary $bin"
[[ -x $tmp/prefix/bin/splitsim-simworker ]] || fail "no installed simulation worker"
for f in mobilenet_v2_ushape.json FORMAT.md devices/v100.json validation/resnet20_ushape.json; do
  [[ -f $data/$f ]] || fail "not installed: share/splitsim/scenarios/$f"
done
if grep -q -a -F "$src" "$bin"; then
  fail "the installed binary contains the source path $src"
fi

mkdir "$tmp/elsewhere" "$tmp/empty"
cd "$tmp/elsewhere"
variant="chunks=1 compression=none"

# The installed default scenario; its devices come from its own devices/.
"$bin" plan "$data/mobilenet_v2_ushape.json" --variant "$variant" >plan.txt 2>plan.err ||
  fail "plan of the installed default scenario: $(cat plan.err)"
grep -q "gtx1080" plan.txt || fail "plan names no gtx1080 device: $(cat plan.txt)"

# Its simulations run in the installed splitsim-simworker (no note that it
# fell back to forked copies of itself).
"$bin" plan "$data/mobilenet_v2_ushape.json" --variant "$variant" --json >plan.json 2>/dev/null ||
  fail "plan --json of the installed default scenario"
env -u SPLITSIM_SIMWORKER "$bin" simulate plan.json >sim.txt 2>sim.err ||
  fail "simulate with the installed binary: $(cat sim.err)"
if grep -q "no splitsim-simworker" sim.err; then fail "the installed binary found no worker"; fi
grep -q "time/batch" sim.txt || fail "simulate printed no table: $(cat sim.txt)"
if grep -q -a -F "$src" "$tmp/prefix/bin/splitsim-simworker"; then
  fail "the installed worker contains the source path $src"
fi

# A scenario with no devices/ beside it: the device names (v100) resolve in
# the installed data.
cp "$data/resnet20_kstage.json" mine.json
"$bin" plan mine.json --json >mine.json.out 2>mine.err ||
  fail "plan of a copied scenario (devices by name from the data dir): $(cat mine.err)"
grep -q '"v100"' mine.json.out || fail "the plan names no v100 device"

# $SPLITSIM_DATA_DIR overrides: an empty one has no devices.
rc=0
SPLITSIM_DATA_DIR=$tmp/empty "$bin" plan mine.json >/dev/null 2>empty.err || rc=$?
[[ $rc -eq 2 ]] || fail "SPLITSIM_DATA_DIR=empty: exit $rc, expected 2"
grep -q 'no device profile "v100"' empty.err || fail "SPLITSIM_DATA_DIR=empty: $(cat empty.err)"
SPLITSIM_DATA_DIR=$data "$bin" plan mine.json >/dev/null 2>data.err ||
  fail "SPLITSIM_DATA_DIR=$data: $(cat data.err)"

# The Python package, beside the binary: imported from the prefix, it
# simulates with the installed worker and data (no variable set), and holds
# no path of the source or build tree.
if [[ -n $python && -d $build/python/splitsim ]]; then
  pkg=$tmp/prefix/lib/splitsim/python
  [[ -f $pkg/splitsim/__init__.py && -f $pkg/splitsim/_layout.py ]] || fail "no installed package in $pkg"
  if grep -r -q -a -F -e "$src" -e "$build" "$pkg"; then
    fail "the installed Python package contains the source or build path"
  fi
  env -u SPLITSIM_SIMWORKER -u SPLITSIM_DATA_DIR PYTHONPATH="$pkg" PYTHONDONTWRITEBYTECODE=1 \
    "$python" -c "
import os, splitsim
assert os.path.samefile(os.environ['SPLITSIM_SIMWORKER'], '$tmp/prefix/bin/splitsim-simworker')
assert os.path.samefile(os.environ['SPLITSIM_DATA_DIR'], '$data')
f = splitsim.simulate('$data/mobilenet_v2_ushape.json', variant='$variant', progress=False)
assert len(f) == 1 and f['time_per_batch_s'][0] > 0
s = splitsim.Scenario(dict(splitsim.Scenario('mine.json').to_dict()))
assert 'v100' in [st['device'] for st in splitsim.plan(s, progress=False)[0].json['stages']]
" >py.out 2>py.err || fail "the installed Python package: $(cat py.err)"
fi
echo "install test: ok"
