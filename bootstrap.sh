#!/usr/bin/env bash
# splitsim set-up: installs what is missing (Debian 12 packages only), builds,
# then runs the main job on the default scenario (`./bootstrap.sh`: builds
# only `splitsim`, its simulation worker and the Python package) or the whole test suite
# (`./bootstrap.sh test`: builds everything). Safe to run again: it installs
# and rebuilds only what is missing or changed. `./bootstrap.sh build`
# builds everything and runs nothing.
set -euo pipefail
cd "$(dirname "$0")"

mode="${1:-run}"
case "$mode" in
  run|test|build) ;;
  *) echo "usage: $0 [run|test|build]" >&2; exit 2 ;;
esac

packages=(
  cmake g++ ninja-build pkg-config ccache          # ccache: the test suite's build without LibTorch reuses these objects
  libtorch-dev libgloo-dev libopenblas0-openmp  # LibTorch; without OpenBLAS matmuls run ~50x slower
  libsimgrid-dev libeigen3-dev libboost-graph-dev nlohmann-json3-dev libgtest-dev libcli11-dev
  iproute2                                      # network namespaces for `validate`
  nftables                                      # its lossy links (network.loss_rate): this kernel has no netem
  dataset-fashion-mnist                         # real data for `exec` (IDX files)
  jupyter-nbconvert python3-ipykernel python3-matplotlib python3-pandas  # notebooks/
  pybind11-dev python3-dev                      # the Python package (python/)
)
if [[ $mode == test ]]; then
  # Test-only: tests/torchscript/write_models.py scripts torchvision models
  # with them, the Python package's tests hand it live models, run pytest and
  # a local Dask cluster (the package itself needs none of them).
  packages+=(python3-torch python3-torchvision python3-pytest python3-distributed)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "missing Debian packages: ${missing[*]}" >&2
    echo "run this script as root, or: sudo apt-get install ${missing[*]}" >&2
    exit 1
  fi
  echo "== installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

targets=()  # everything
if [[ $mode == run ]]; then
  targets=(--target splitsim splitsim-simworker splitsim_python)
fi
echo "== building (build/${targets[*]:+: ${targets[*]:1}})"
start=$SECONDS
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" "${targets[@]}"
echo "== built in $((SECONDS - start)) s"

case "$mode" in
  run)
    echo "== splitsim simulate scenarios/mobilenet_v2_ushape.json"
    ./build/cli/splitsim simulate scenarios/mobilenet_v2_ushape.json
    ;;
  test)
    echo "== ctest"
    ctest --test-dir build --output-on-failure -j"$(nproc)"
    ;;
esac
