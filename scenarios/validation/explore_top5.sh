#!/usr/bin/env bash
# The explorer's ranking, measured: for each setting (model x link rate),
# `splitsim explore` searches U-shape cuts x codecs x chunks 1,4 at that
# rate, then `--validate-top 5` measures its top 5 (one interleaved validate,
# 3 repetitions each) and says whether the measured best is the predicted
# best within the measured spread. Prints one line per setting and the count.
# Ten distinct settings: three models at three rates, and ResNet20 at
# 50 Mbit/s (link-bound). The search replaces the file's partition, codecs,
# chunks and rate, so one file per model (the ResNet20 thin client's, once
# the tenth, searched exactly the U-shape's space: a twin of the second).
# As root (validate shapes a veth link). Usage: explore_top5.sh BIN [OUTDIR]
set -euo pipefail
bin="${1:?usage: $0 path/to/splitsim [outdir]}"
out="${2:-$(mktemp -d)}"
mkdir -p "$out"
here="$(cd "$(dirname "$0")" && pwd)"
settings=(
  "resnet20_ushape.json 1e8" "resnet20_ushape.json 3e8" "resnet20_ushape.json 1e9"
  "mobilenet_v2_cifar_ushape.json 1e8" "mobilenet_v2_cifar_ushape.json 3e8"
  "mobilenet_v2_cifar_ushape.json 1e9"
  "roberta_small_ushape.json 1e8" "roberta_small_ushape.json 3e8" "roberta_small_ushape.json 1e9"
  "resnet20_ushape.json 5e7"
)
agree=0 agree_explorer=0 n=0
for s in "${settings[@]}"; do
  read -r file rate <<< "$s"
  name="${file%.json}_${rate}"
  n=$((n + 1))
  if ! "$bin" explore "$here/$file" --kinds ushape --chunks 1,4 --bandwidth-bit-per-s "$rate" \
      --validate-top 5 > "$out/$name.txt" 2> "$out/$name.log"; then
    echo "$name: FAILED (see $out/$name.log)"
    continue
  fi
  verdict=$(grep '^measured best: ' "$out/$name.txt" || true)
  [[ "$verdict" == *"(within the measured spread): yes"* ]] && agree=$((agree + 1))
  [[ "$verdict" == *"the explorer's best: yes"* ]] && agree_explorer=$((agree_explorer + 1))
  echo "$name: $verdict"
done
echo "measured best = predicted best (within the measured spread) in $agree of $n settings" \
     "(the explorer's own #1: $agree_explorer of $n); reports in $out"
