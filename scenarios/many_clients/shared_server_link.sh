#!/usr/bin/env bash
# Predicted vs measured time per round for several real client processes
# behind one shaped server port (scenarios/FORMAT.md "Clients"; the figures
# in sim/README.md "Many clients, measured").
#
# Builds its own network namespaces: a switch (a bridge), the server and one
# namespace per client, each joined to the bridge by a veth pair. The
# server's port is shaped with tc tbf on both of its ends (each direction at
# the scenario's server_bandwidth_bit_per_s: the link every client's flows
# share), each client's port to its own rate. Then, per variant of the
# scenario and repetition, it runs `splitsim exec` as the server and one
# process per client, and reads the time per round from the server's metrics;
# the prediction is `splitsim simulate` of the same scenario on this
# machine's profile (`splitsim profile`, measured first). Prints one row per
# variant: predicted, measured median (min..max over repetitions), error, and
# the CPU steal during the runs. Everything it creates is removed on exit.
#
# Usage (root; iproute2): shared_server_link.sh SPLITSIM [REPEAT] [SCENARIO]
#   e.g. scenarios/many_clients/shared_server_link.sh build/cli/splitsim 3
set -euo pipefail

[[ $# -ge 1 ]] || { echo "usage: $0 SPLITSIM [REPEAT] [SCENARIO]" >&2; exit 2; }
bin=$(readlink -f "$1")
repeat=${2:-3}
here=$(cd "$(dirname "$0")" && pwd)
scenario=$(readlink -f "${3:-$here/resnet20_thin_3clients.json}")
[[ $(id -u) -eq 0 ]] || { echo "$0: needs root (network namespaces)" >&2; exit 2; }
py=/usr/bin/python3
# tc tbf's queue bound (its "latency"), as validate --shaper tbf; $SSL_TBF_LATENCY to vary it.
queue=${SSL_TBF_LATENCY:-200ms}
[[ -x $py ]] || py=python3

work=$(mktemp -d)
tag=ssl$$
nss=()
cleanup() {
  jobs -p | xargs -r kill 2>/dev/null || true
  for ns in "${nss[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

field() {  # field FILE KEY...: a value of a JSON file
  "$py" -c 'import json,sys; v=json.load(open(sys.argv[1]))
for k in sys.argv[2:]: v=v[int(k)] if isinstance(v,list) else v[k]
print(v)' "$@"
}
steal_ticks() { awk '/^cpu /{print $9}' /proc/stat; }
total_ticks() { awk '/^cpu /{print $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat; }

clients=$(field "$scenario" clients)
echo "== $(basename "$scenario"): $clients client processes, $repeat repetition(s)" >&2

# 1. This machine's profile, and the scenario on it.
echo "measuring this machine (splitsim profile)" >&2
"$bin" profile --scenario "$scenario" -o "$work/here.json" >/dev/null 2>"$work/profile.err" ||
  { cat "$work/profile.err" >&2; exit 1; }
"$py" - "$scenario" "$work/here.json" "$work/scenario.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
s["devices"] = {party: sys.argv[2] for party in s["devices"]}
json.dump(s, open(sys.argv[3], "w"), indent=1)
EOF
"$bin" simulate "$work/scenario.json" --json >"$work/predicted.json" 2>"$work/sim.err" ||
  { cat "$work/sim.err" >&2; exit 1; }

# 2. The namespaces: a bridge, the server's port and one port per client.
sw=$tag-sw
ip netns add "$sw"; nss+=("$sw")
ip -n "$sw" link set lo up
ip -n "$sw" link add br0 type bridge
ip -n "$sw" link set br0 up
port() {  # port NAME ADDRESS: a namespace on the bridge
  local ns=$tag-$1
  ip netns add "$ns"; nss+=("$ns")
  ip link add "$tag$1" type veth peer name "$tag$1p"
  ip link set "$tag$1" netns "$ns"
  ip link set "$tag$1p" netns "$sw"
  ip -n "$sw" link set "$tag$1p" master br0 up
  ip -n "$ns" addr add "$2/24" dev "$tag$1"
  ip -n "$ns" link set "$tag$1" up
  ip -n "$ns" link set lo up
}
shape() {  # shape NAME RATE: tbf on both ends of the port (each direction)
  local rate=$2 burst
  burst=$("$py" -c "print(max(4096, int($rate / 8 * 0.001)))")
  ip netns exec "$tag-$1" tc qdisc replace dev "$tag$1" root tbf rate "${rate}bit" \
    burst "$burst" latency "$queue"
  ip netns exec "$sw" tc qdisc replace dev "$tag$1p" root tbf rate "${rate}bit" \
    burst "$burst" latency "$queue"
}
port srv 10.214.0.1
for ((i = 0; i < clients; ++i)); do port "c$i" "10.214.0.$((11 + i))"; done
client_rate=$(field "$scenario" network bandwidth_bit_per_s)
for ((i = 0; i < clients; ++i)); do shape "c$i" "$client_rate"; done

# 3. Per variant: shape the server port, run the processes, repeat.
"$py" -c 'import json,sys; j=json.load(open(sys.argv[1])); j=j if isinstance(j,list) else [j]
for m in j: print(m["variant"] + "\t" + repr(m["time_per_batch_s"]))' "$work/predicted.json" \
  >"$work/variants.tsv"
printf "%-52s %12s %12s %22s %8s %7s\n" variant predicted measured "(min..max)" error steal
port_no=29700
while IFS=$'\t' read -r label predicted; do
  rate=$("$py" -c "import json,sys
s=json.load(open('$scenario'))
label='$label'
rate=s['network'].get('server_bandwidth_bit_per_s', 0)
for part in label.split():
    k, _, v = part.partition('=')
    if k == 'network.server_bandwidth_bit_per_s': rate = float(v)
print(int(rate))")
  shape srv "$rate"
  times=()
  s0=$(steal_ticks); b0=$(total_ticks)
  for ((r = 0; r < repeat; ++r)); do
    port_no=$((port_no + 1))
    ip netns exec "$tag-srv" "$bin" exec "$scenario" --variant "$label" --role server \
      --listen "10.214.0.1:$port_no" --json --timeout-s 120 >"$work/server.json" \
      2>"$work/server.err" &
    server=$!
    pids=()
    for ((i = 0; i < clients; ++i)); do
      ip netns exec "$tag-c$i" "$bin" exec "$scenario" --variant "$label" --role client \
        --client-index "$i" --connect "10.214.0.1:$port_no" --timeout-s 120 >/dev/null \
        2>"$work/client$i.err" &
      pids+=($!)
    done
    ok=1
    wait "$server" || ok=0
    for p in "${pids[@]}"; do wait "$p" || ok=0; done
    if [[ $ok -ne 1 ]]; then
      echo "run failed: $(tail -2 "$work/server.err")" >&2
      exit 1
    fi
    times+=("$(field "$work/server.json" time_per_batch_s)")
  done
  s1=$(steal_ticks); b1=$(total_ticks)
  "$py" - "$label" "$predicted" "$(( s1 - s0 ))" "$(( b1 - b0 ))" "${times[@]}" <<'EOF'
import statistics, sys
label, predicted, steal, total = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
t = sorted(float(x) for x in sys.argv[5:])
m = statistics.median(t)
print("%-52s %10.3f s %10.3f s %9.3f..%-9.3f s %+7.1f%% %6.1f%%" % (
    label, predicted, m, t[0], t[-1], 100 * (predicted - m) / m, 100 * steal / max(total, 1)))
EOF
done <"$work/variants.tsv"
