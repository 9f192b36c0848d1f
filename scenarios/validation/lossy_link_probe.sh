#!/usr/bin/env bash
# TCP's bulk rate on a lossy link, measured against the simulator's model
# (sim/README.md "Lossy links"): two network namespaces joined by a veth
# pair, each end shaped by htb at RATE, segmentation offload off (one packet
# per segment, so a drop is one segment), and an nftables rule in each
# namespace's input hook dropping that fraction of TCP packets at random
# (this kernel has no netem). `splitsim link-probe` times a 16 MB bulk
# transfer each way. Prints one line per loss rate: the measured goodputs
# (both ways, every repetition), what one lost segment cost them against
# the loss-free goodput (tcp_loss_recovery_from_goodput: what validate puts
# in network.loss_recovery_s), the default the simulator takes where nobody
# measured it (tcp_loss_recovery_s) and the rate that default predicts, and
# TCP's rate under loss over the probe's round trip (the bound). TCP CUBIC
# on every connection. As root, with iproute2 and nftables.
# Usage: lossy_link_probe.sh BIN [RATE_MBIT (300)] [REPEATS (3)] [OUTDIR]
set -euo pipefail
bin="${1:?usage: $0 path/to/splitsim [rate_mbit] [repeats] [outdir]}"
rate="${2:-300}" repeats="${3:-3}" out="${4:-$(mktemp -d)}"
mkdir -p "$out"
losses=(0 0.001 0.005 0.01 0.02)
a=splitsim_loss_a b=splitsim_loss_b
cleanup() { ip netns del "$a" 2>/dev/null || true; ip netns del "$b" 2>/dev/null || true; }
trap cleanup EXIT
link_up() {  # loss fraction
  cleanup
  ip netns add "$a"; ip netns add "$b"
  ip link add vloss_a type veth peer name vloss_b
  ip link set vloss_a netns "$a"; ip link set vloss_b netns "$b"
  ip -n "$a" addr add 10.78.0.1/24 dev vloss_a; ip -n "$b" addr add 10.78.0.2/24 dev vloss_b
  for side in "$a vloss_a" "$b vloss_b"; do
    read -r ns dev <<< "$side"
    ip -n "$ns" link set lo up
    ip -n "$ns" link set "$dev" gso_max_segs 1 up
    tc -n "$ns" qdisc add dev "$dev" root handle 1: htb default 1
    tc -n "$ns" class add dev "$dev" parent 1: classid 1:1 htb rate "${rate}mbit" ceil "${rate}mbit" 2>/dev/null  # "quantum is big": harmless
    per_100k=$(python3 -c "print(round($1 * 100000))")
    if [[ $per_100k -gt 0 ]]; then
      ip netns exec "$ns" nft add table inet splitsim_loss
      ip netns exec "$ns" nft add chain inet splitsim_loss input '{ type filter hook input priority 0; }'
      ip netns exec "$ns" nft add rule inet splitsim_loss input meta l4proto tcp \
        numgen random mod 100000 '<' "$per_100k" drop
    fi
  done
}
# CUBIC, as validate's runs: a namespace's default may be BBR, which hardly
# slows down for random loss and is not what the model describes.
probe=(link-probe --megabytes 16 --single-max-kib 64 --pair-max-kib 0 --json
       --tcp-congestion-control cubic)
for rep in $(seq "$repeats"); do  # interleaved: every loss rate once per repetition
  for loss in "${losses[@]}"; do
    link_up "$loss"
    ip netns exec "$a" timeout 300 "$bin" "${probe[@]}" --role server --listen 10.78.0.1:29650 \
      > "$out/loss${loss}_rep$rep.json" 2> "$out/loss${loss}_rep$rep.err" &
    sleep 0.5
    ip netns exec "$b" timeout 300 "$bin" "${probe[@]}" --role client --connect 10.78.0.1:29650 \
      > /dev/null 2>&1
    wait
  done
done
python3 - "$out" "$repeats" "${losses[@]}" <<'PY'
import json, math, statistics, sys
out, repeats, losses = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def runs(loss):
    return [json.load(open(f"{out}/loss{loss}_rep{r}.json")) for r in range(1, repeats + 1)]
base = statistics.median(g for r in runs(losses[0]) for g in r["goodput_Bps"].values())
for loss in losses:
    rs = runs(loss)
    good = sorted(g for r in rs for g in r["goodput_Bps"].values())
    rtt = 2 * statistics.median(r["link"]["latency_s"] for r in rs)
    p = float(loss)
    med = statistics.median(good)
    line = f"loss {100 * p:.1f}%: goodput {med / 1e6:.2f} MB/s ({good[0] / 1e6:.2f}..{good[-1] / 1e6:.2f})"
    if p > 0:
        cap = 1448 / rtt * math.sqrt(1.5) / math.sqrt(p)
        c = max(0.0, 1 / med - 1 / base) * 1448 / p
        default = 2 * rtt + 2 * p * 0.2
        default_rate = min(1 / (1 / base + p * default / 1448), cap)
        line += (f"; a lost segment cost {1e3 * c:.2f} ms; default {1e3 * default:.2f} ms predicts "
                 f"{default_rate / 1e6:.2f} MB/s ({100 * (default_rate / med - 1):+.1f}%); "
                 f"TCP's rate under loss over {1e3 * rtt:.2f} ms {cap / 1e6:.1f} MB/s")
    print(line)
PY
