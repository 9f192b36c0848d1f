#!/usr/bin/env bash
# Predicted vs measured rounds for several real client processes behind one
# shaped server port (scenarios/FORMAT.md "Clients"; the figures in
# sim/README.md "Many clients, measured").
#
# Builds its own network namespaces: a switch (a bridge), the server and one
# namespace per client, each joined to the bridge by a veth pair. The
# server's port is shaped with tc tbf on both of its ends (each direction at
# the scenario's server_bandwidth_bit_per_s: the link every client's flows
# share), each client's port to its own rate: its group's
# bandwidth_bit_per_s (a number or a list, one per client), else the
# network's. With QUOTAS ("GROUP=FRACTION,..."), a group's client processes
# compute at that fraction of this machine's speed, and the prediction gives
# that group this machine's profile slowed by the same factor: by default
# each process emulates the slower processor (`exec --compute-slowdown
# 1/FRACTION`: each computation holds its processor 1/FRACTION times as
# long, the transfers run at full speed); with SSL_THROTTLE=cgroup the
# group's processes run in a cgroup limited to that fraction of one CPU
# (cgroup v2 cpu.max, or v1 cpu.cfs_quota_us; period 10 ms), which throttles
# their network threads too (sim/README.md "Many clients, measured"). Then,
# per variant of the scenario and repetition, it runs `splitsim exec` as the
# server and one process per client. The prediction is `splitsim simulate`
# of the same scenario on this machine's profile (`splitsim profile`,
# measured first). Prints per variant the time per round and, per client
# group, its clients' time per batch and bytes sent per batch: predicted,
# measured median (min..max over repetitions), error; the straggler group
# each names (the one whose client ends the most rounds' batches last:
# metrics' last_in_round); and the CPU steal during the runs. Everything it creates
# (namespaces, cgroups, files) is removed on exit.
#
# Usage (root; iproute2): shared_server_link.sh SPLITSIM [REPEAT] [SCENARIO] [QUOTAS]
#   e.g. scenarios/many_clients/shared_server_link.sh build/cli/splitsim 3
#        scenarios/many_clients/shared_server_link.sh build/cli/splitsim 3 \
#          scenarios/many_clients/resnet20_two_groups.json slow=0.25
set -euo pipefail

[[ $# -ge 1 ]] || { echo "usage: $0 SPLITSIM [REPEAT] [SCENARIO] [QUOTAS]" >&2; exit 2; }
bin=$(readlink -f "$1")
repeat=${2:-3}
here=$(cd "$(dirname "$0")" && pwd)
scenario=$(readlink -f "${3:-$here/resnet20_thin_3clients.json}")
quotas=${4:-}
[[ $(id -u) -eq 0 ]] || { echo "$0: needs root (network namespaces)" >&2; exit 2; }
py=/usr/bin/python3
# tc tbf's queue bound (its "latency"), as validate --shaper tbf; $SSL_TBF_LATENCY to vary it.
queue=${SSL_TBF_LATENCY:-200ms}
throttle=${SSL_THROTTLE:-slowdown}
[[ $throttle == slowdown || $throttle == cgroup ]] ||
  { echo "$0: SSL_THROTTLE is slowdown or cgroup, not $throttle" >&2; exit 2; }
[[ -x $py ]] || py=python3

work=$(mktemp -d)
tag=ssl$$
nss=()
cgroups=()
cleanup() {
  jobs -p | xargs -r kill 2>/dev/null || true
  wait 2>/dev/null || true
  for ns in "${nss[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
  for cg in "${cgroups[@]}"; do rmdir "$cg" 2>/dev/null || true; done
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

# 1. The clients: one line each, "GROUP RATE QUOTA" (RATE in bit/s).
"$py" - "$scenario" "$quotas" >"$work/clients.tsv" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
quota = {}
for part in filter(None, sys.argv[2].split(",")):
    name, _, q = part.partition("=")
    quota[name] = float(q)
    if not 0.01 <= quota[name] <= 1:
        sys.exit("QUOTAS: %s's fraction %s is not in [0.01, 1]" % (name, q))
net = s.get("network", {})
default = net.get("bandwidth_bit_per_s", 1e9)
groups = s.get("clients", 1)
if isinstance(groups, int):
    groups = [{"name": "clients", "count": groups}]
names = [g.get("name", "group%d" % i) for i, g in enumerate(groups)]
for name in quota:
    if name not in names:
        sys.exit("QUOTAS: no client group %r (the scenario's: %s)" % (name, ", ".join(names)))
for name, g in zip(names, groups):
    rate = g.get("bandwidth_bit_per_s", default)
    rates = rate if isinstance(rate, list) else [rate] * g["count"]
    if any(not isinstance(r, (int, float)) for r in rates):
        sys.exit("group %s: the script shapes given rates; a distribution has none" % name)
    for r in rates:
        print("%s\t%d\t%g" % (name, int(r), quota.get(name, 1)))
EOF
clients=$(wc -l <"$work/clients.tsv")
echo "== $(basename "$scenario"): $clients client processes, $repeat repetition(s)" >&2

# 2. This machine's profile, each group's (slowed by its quota), and the
#    scenario on them.
echo "measuring this machine (splitsim profile)" >&2
"$bin" profile --scenario "$scenario" -o "$work/here.json" >/dev/null 2>"$work/profile.err" ||
  { cat "$work/profile.err" >&2; exit 1; }
"$py" - "$scenario" "$work" "$quotas" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
work = sys.argv[2]
here = json.load(open(work + "/here.json"))
s["devices"] = {party: work + "/here.json" for party in s["devices"]}
quota = dict((p.split("=")[0], float(p.split("=")[1])) for p in filter(None, sys.argv[3].split(",")))
if isinstance(s.get("clients"), list):
    for i, g in enumerate(s["clients"]):
        q = quota.get(g.get("name", "group%d" % i), 1)
        slowed = json.loads(json.dumps(here))
        # A CPU share q: every second of compute takes 1/q.
        slowed["peak_flops"] *= q
        slowed["memory_bandwidth_Bps"] *= q
        slowed["efficiency"]["per_op_s"] /= q
        for u in slowed.get("measured", {}).get("units", []):
            for k in ("fwd_s", "bwd_s", "update_s"):
                if k in u:
                    u[k] /= q
        for c in slowed.get("measured_codecs", []):
            for k in c:
                if k.endswith("_s"):
                    c[k] /= q
        path = "%s/group%d.json" % (work, i)
        json.dump(slowed, open(path, "w"))
        g["device"] = path
json.dump(s, open(work + "/scenario.json", "w"), indent=1)
EOF
"$bin" simulate "$work/scenario.json" --json >"$work/predicted.json" 2>"$work/sim.err" ||
  { cat "$work/sim.err" >&2; exit 1; }

# 3. The namespaces: a bridge, the server's port and one port per client.
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
i=0
while IFS=$'\t' read -r _ rate _; do
  port "c$i" "10.214.0.$((11 + i))"
  shape "c$i" "$rate"
  i=$((i + 1))
done <"$work/clients.tsv"

# 4. A cgroup per group with a quota (v2 where mounted, else v1's cpu).
cgroup_of() {  # cgroup_of GROUP QUOTA: prints the cgroup's directory
  local dir period=10000
  local quota_us
  quota_us=$("$py" -c "print(max(1000, int($2 * $period)))")
  if [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
    grep -qw cpu /sys/fs/cgroup/cgroup.subtree_control ||
      echo +cpu >/sys/fs/cgroup/cgroup.subtree_control
    dir=/sys/fs/cgroup/$tag-$1
    mkdir -p "$dir"
    echo "$quota_us $period" >"$dir/cpu.max"
  else
    dir=/sys/fs/cgroup/cpu/$tag-$1
    mkdir -p "$dir"
    echo "$period" >"$dir/cpu.cfs_period_us"
    echo "$quota_us" >"$dir/cpu.cfs_quota_us"
  fi
  echo "$dir"
}
declare -A group_cgroup
while IFS=$'\t' read -r group _ q; do
  [[ $throttle == cgroup ]] || continue
  [[ $q == 1 || -n ${group_cgroup[$group]:-} ]] && continue
  group_cgroup[$group]=$(cgroup_of "$group" "$q")
  cgroups+=("${group_cgroup[$group]}")
done <"$work/clients.tsv"

# 5. Per variant: shape the server port, run the processes, repeat.
"$py" -c 'import json,sys; j=json.load(open(sys.argv[1])); j=j if isinstance(j,list) else [j]
for m in j: print(m["variant"])' "$work/predicted.json" >"$work/variants.txt"
port_no=29700
v=0
while read -r label; do
  rate=$("$py" -c "import json,sys
s=json.load(open('$scenario'))
rate=s['network'].get('server_bandwidth_bit_per_s', 1e10)
for part in sys.argv[1].split():
    k, _, val = part.partition('=')
    if k == 'network.server_bandwidth_bit_per_s': rate = float(val)
print(int(rate))" "$label")
  shape srv "$rate"
  s0=$(steal_ticks); b0=$(total_ticks)
  for ((r = 0; r < repeat; ++r)); do
    port_no=$((port_no + 1))
    ip netns exec "$tag-srv" "$bin" exec "$scenario" --variant "$label" --role server \
      --listen "10.214.0.1:$port_no" --json --timeout-s 120 >"$work/v${v}_r$r.json" \
      2>"$work/server.err" &
    server=$!
    pids=()
    i=0
    while IFS=$'\t' read -r group _ q; do
      cg=${group_cgroup[$group]:-}
      slowdown=1
      [[ $throttle == slowdown ]] && slowdown=$("$py" -c "print(1 / $q)")
      # The shell enters the group's cgroup (if any), then becomes the client process.
      bash -c '[[ -z $1 ]] || echo $$ >"$1/cgroup.procs"; shift; exec "$@"' _ "$cg" \
        ip netns exec "$tag-c$i" "$bin" exec "$scenario" --variant "$label" --role client \
        --client-index "$i" --connect "10.214.0.1:$port_no" --timeout-s 120 \
        --compute-slowdown "$slowdown" >/dev/null 2>"$work/client$i.err" &
      pids+=($!)
      i=$((i + 1))
    done <"$work/clients.tsv"
    ok=1
    wait "$server" || ok=0
    for p in "${pids[@]}"; do wait "$p" || ok=0; done
    if [[ $ok -ne 1 ]]; then
      echo "run failed: $(tail -2 "$work/server.err")" >&2
      exit 1
    fi
  done
  s1=$(steal_ticks); b1=$(total_ticks)
  echo "$(( s1 - s0 )) $(( b1 - b0 ))" >"$work/v${v}_steal"
  v=$((v + 1))
done <"$work/variants.txt"

# 6. The comparison.
"$py" - "$work" "$repeat" <<'EOF'
import json, statistics, sys
work, repeat = sys.argv[1], int(sys.argv[2])
predicted = json.load(open(work + "/predicted.json"))
predicted = predicted if isinstance(predicted, list) else [predicted]

def row(name, p, ms, unit="s", fmt="%10.3f"):
    ms = sorted(ms)
    m = statistics.median(ms)
    print(("  %-28s " + fmt + " %s " + fmt + " %s (" + fmt.strip() + ".." + fmt.strip() +
           ") %+7.1f%%") % (name, p, unit, m, unit, ms[0], ms[-1], 100 * (p - m) / m))

def straggler(groups):  # the group that ends the most rounds' batches last
    g = max(groups, key=lambda g: g["last_in_round"])
    return "%s (%.0f%% of rounds)" % (g["name"], 100 * g["last_in_round"])

for v, p in enumerate(predicted):
    runs = [json.load(open("%s/v%d_r%d.json" % (work, v, r))) for r in range(repeat)]
    steal, total = map(int, open("%s/v%d_steal" % (work, v)).read().split())
    print("%s (steal %.1f%%)" % (p["variant"], 100 * steal / max(total, 1)))
    print("  %-28s %12s %12s %s" % ("", "predicted", "measured", "(min..max), error"))
    row("time per round", p["time_per_batch_s"], [m["time_per_batch_s"] for m in runs])
    if "round_wait_s" in p:
        row("wait for the last client", p["round_wait_s"]["median"],
            [m["round_wait_s"]["median"] for m in runs])
    for i, g in enumerate(p.get("client_groups", [])):
        row(g["name"] + ": time per batch", g["time_per_batch_s"]["median"],
            [m["client_groups"][i]["time_per_batch_s"]["median"] for m in runs])
        row(g["name"] + ": bytes sent per batch", g["bytes_sent_per_batch"],
            [m["client_groups"][i]["bytes_sent_per_batch"] for m in runs], "B", "%10.0f")
    if len(p.get("client_groups", [])) > 1:
        print("  straggler: predicted %s, measured %s" % (
            straggler(p["client_groups"]),
            ", ".join(straggler(m["client_groups"]) for m in runs)))
EOF
