#!/usr/bin/env bash
# The explorer's ranking, measured: for each setting (model x link rate),
# `splitsim explore` searches U-shape cuts x codecs x chunks 1,4 at that
# rate, then `--validate-top 5` measures its top 5 (one interleaved validate,
# 3 repetitions each) and says whether the measured best is the predicted
# best or one the prediction declared a tie with it (their predicted spreads
# overlap), and Kendall's tau between the predicted and the measured order
# of the five. Prints two lines per setting, the count and the median tau.
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
agree=0 agree_explorer=0 agree_or_tie=0 n=0 taus=() taus_b=()
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
  ties=$(grep '^predicted ties with the predicted best: ' "$out/$name.txt" || true)
  [[ "$ties" == *"or a declared tie: yes"* ]] && agree_or_tie=$((agree_or_tie + 1))
  tau=$(sed -n 's/.*Kendall tau, predicted vs measured order: \([-0-9.]*\).*/\1/p' "$out/$name.txt")
  [[ -n "$tau" ]] && taus+=("$tau")
  tau=$(sed -n 's/.*ties where the spreads overlap: \([-0-9.]*\).*/\1/p' "$out/$name.txt")
  [[ -n "$tau" ]] && taus_b+=("$tau")
  echo "$name: $verdict"
  echo "$name: $ties"
done
median() {
  (($# == 0)) && { echo undefined; return; }
  printf '%s\n' "$@" | sort -g |
    awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}
echo "measured best = predicted best or a declared tie in $agree_or_tie of $n settings;" \
     "median Kendall tau $(median "${taus[@]}") over ${#taus[@]}" \
     "(ties where the spreads overlap: $(median "${taus_b[@]}") over ${#taus_b[@]})"
echo "measured best = predicted best (within the measured spread) in $agree of $n settings" \
     "(the explorer's own #1: $agree_explorer of $n); reports in $out"
