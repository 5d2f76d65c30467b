#!/usr/bin/env bash
# Smoke test of the BPF congestion controls bpf/proprate.bpf.c and bpf/cesar.bpf.c on a
# real Linux TCP flow.
#
# Builds both objects (with SEC(".struct_ops"), which Debian's bpftool/libbpf 1.1 can
# register), registers them, runs a short flow through a 12 Mbit/s tbf bottleneck for
# each, and checks through the stats maps that the algorithm saw ACKs and wrote a
# non-zero pacing rate and cwnd. Everything it creates is removed on exit.
#
#   sender netns --veth-- middle netns (tbf 12 Mbit/s towards the receiver) --veth-- receiver netns
#
# Needs root, /sys/kernel/btf/vmlinux, clang, bpftool, tc, ip, python3 and the libbpf
# headers (<bpf/bpf_helpers.h>); skips (exit 0) with a message when one is missing.
# Environment: CELLCC_SMOKE_SECONDS (flow length, default 4), CELLCC_SMOKE_RATE (tbf rate,
# default 12mbit), BPF_INCLUDE (directory holding bpf/bpf_helpers.h, default the system's).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bpf_dir="$(dirname "$here")"
seconds="${CELLCC_SMOKE_SECONDS:-4}"
rate="${CELLCC_SMOKE_RATE:-12mbit}"

skip() {
	echo "SKIP: $*"
	exit 0
}

[ "$(id -u)" -eq 0 ] || skip "must run as root (registers struct_ops, creates network namespaces)"
[ -r /sys/kernel/btf/vmlinux ] || skip "no kernel BTF at /sys/kernel/btf/vmlinux"
for tool in clang bpftool tc ip python3; do
	command -v "$tool" >/dev/null 2>&1 || skip "$tool not found"
done
inc="${BPF_INCLUDE:-}"
if [ -z "$inc" ]; then
	for d in /usr/include /usr/local/include; do
		[ -r "$d/bpf/bpf_helpers.h" ] && inc="$d" && break
	done
fi
[ -n "$inc" ] && [ -r "$inc/bpf/bpf_helpers.h" ] || skip "libbpf headers (bpf/bpf_helpers.h) not found; set BPF_INCLUDE"

for name in cellcc_proprate cellcc_cesar; do
	if grep -qw "$name" /proc/sys/net/ipv4/tcp_available_congestion_control; then
		echo "FAIL: $name is already registered (by another loader?); unregister it first" >&2
		exit 1
	fi
done

id=$(($$ % 10000))
ns_s="bpfalgs-smoke-snd-$id"
ns_m="bpfalgs-smoke-mid-$id"
ns_r="bpfalgs-smoke-rcv-$id"
work="$(mktemp -d "${TMPDIR:-/tmp}/bpfalgs-smoke.XXXXXX")"
registered=()
pids=()

cleanup() {
	set +e
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for m in "${registered[@]}"; do bpftool struct_ops unregister name "$m" >/dev/null 2>&1; done
	for n in "$ns_s" "$ns_m" "$ns_r"; do ip netns del "$n" 2>/dev/null; done
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

echo "== build"
bpftool btf dump file /sys/kernel/btf/vmlinux format c >"$work/vmlinux.h"
for algo in proprate cesar; do
	clang -g -O2 -Wall -Werror -target bpf -D__TARGET_ARCH_x86 \
		-DCELLCC_STRUCT_OPS_SEC='".struct_ops"' \
		-I"$work" -I"$bpf_dir" -idirafter "$inc" \
		-c "$bpf_dir/$algo.bpf.c" -o "$work/$algo.bpf.o"
done

echo "== register"
for algo in proprate cesar; do
	bpftool struct_ops register "$work/$algo.bpf.o"
	registered+=("$algo")
	grep -qw "cellcc_$algo" /proc/sys/net/ipv4/tcp_available_congestion_control ||
		{ echo "FAIL: cellcc_$algo not in tcp_available_congestion_control" >&2; exit 1; }
done
echo "available: $(cat /proc/sys/net/ipv4/tcp_available_congestion_control)"

echo "== network (tbf $rate)"
for n in "$ns_s" "$ns_m" "$ns_r"; do
	ip netns add "$n"
	ip -n "$n" link set lo up
done
ip link add "bpfalgs-s$id" netns "$ns_s" type veth peer name "bpfalgs-m$id" netns "$ns_m"
ip link add "bpfalgs-n$id" netns "$ns_m" type veth peer name "bpfalgs-r$id" netns "$ns_r"
ip -n "$ns_s" addr add 10.231.101.1/24 dev "bpfalgs-s$id"
ip -n "$ns_m" addr add 10.231.101.2/24 dev "bpfalgs-m$id"
ip -n "$ns_m" addr add 10.231.102.2/24 dev "bpfalgs-n$id"
ip -n "$ns_r" addr add 10.231.102.1/24 dev "bpfalgs-r$id"
ip -n "$ns_s" link set "bpfalgs-s$id" up
ip -n "$ns_m" link set "bpfalgs-m$id" up
ip -n "$ns_m" link set "bpfalgs-n$id" up
ip -n "$ns_r" link set "bpfalgs-r$id" up
ip -n "$ns_s" route add default via 10.231.101.2
ip -n "$ns_r" route add default via 10.231.102.2
ip netns exec "$ns_m" sysctl -qw net.ipv4.ip_forward=1
# A paced sender on a path with a base RTT of microseconds: Linux sizes TSO bursts up to
# 64 KB for min_rtt < 512 us (tcp_tso_rtt_log), one burst taking ~0.5 s at PropRate's
# drain rate. Real cellular paths have RTTs far above that; switch the term off here.
ip netns exec "$ns_s" sysctl -qw net.ipv4.tcp_tso_rtt_log=0 2>/dev/null || true
# The bottleneck is in the middle: on the sender's own qdisc, TCP small queues would keep
# the queue from building.
tc -n "$ns_m" qdisc add dev "bpfalgs-n$id" root tbf rate "$rate" burst 16k latency 400ms

cat >"$work/sink.py" <<'EOF'
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1])))
s.listen(4)
while True:
    c, _ = s.accept()
    while c.recv(1 << 16):
        pass
    c.close()
EOF
cat >"$work/send.py" <<'EOF'
import socket, sys, time
host, port, cca, seconds = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
s = socket.socket()
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cca.encode())
s.connect((host, port))
got = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).rstrip(b"\0").decode()
assert got == cca, f"socket uses {got}, not {cca}"
buf = b"\0" * (1 << 16)
sent, t0 = 0, time.time()
while time.time() - t0 < seconds:
    sent += s.send(buf)
s.close()
print(f"  {cca}: {sent} bytes written in {seconds:.0f} s ({sent * 8 / seconds / 1e6:.2f} Mbit/s)")
EOF
ip netns exec "$ns_r" python3 "$work/sink.py" 5201 &
pids+=($!)
sleep 0.5

cat >"$work/check.py" <<'EOF'
import json, subprocess, sys
algo = sys.argv[1]
# Maps of an earlier registration can outlive it while its sockets close, so dump the
# newest map of that name by id rather than every map with the name.
maps = json.loads(subprocess.run(["bpftool", "-j", "map", "show"],
                                 capture_output=True, text=True, check=True).stdout or "[]")
ids = [m["id"] for m in maps if m.get("name") == f"{algo}_stats"]
if not ids:
    sys.exit(f"FAIL: no map named {algo}_stats")
out = json.loads(subprocess.run(["bpftool", "-j", "map", "dump", "id", str(max(ids))],
                                capture_output=True, text=True, check=True).stdout or "[]")
rows = [e["formatted"]["value"] for e in out if "formatted" in e]
if not rows:
    sys.exit(f"FAIL: {algo}_stats is empty")
v = max(rows, key=lambda r: r["acks"])
show = {"proprate": ["state", "acks", "rho_bps", "pacing_rate_bps", "cwnd", "t_buff_us",
                     "threshold_us", "min_rtt_us", "srtt_us", "k_f_x1000", "k_d_x1000",
                     "fill_to_drain", "drain_to_fill", "drain_to_monitor"],
        "cesar": ["phase", "acks", "su_us", "pacing_rate_bps", "cwnd", "min_rtt_us",
                  "srtt_us", "bbr_bw_bps", "decisions", "pattern_decisions",
                  "no_pattern_decisions", "steady_entries", "sets"]}[algo]
print("  " + " ".join(f"{k}={v[k]}" for k in show))
bad = [k for k in ("acks", "pacing_rate_bps", "cwnd") if not v[k] > 0]
if algo == "proprate" and not v["rho_bps"] > 0:
    bad.append("rho_bps")
if bad:
    sys.exit(f"FAIL: {algo}: zero {', '.join(bad)}")
print(f"PASS: {algo}")
EOF

for algo in proprate cesar; do
	echo "== flow with cellcc_$algo ($seconds s)"
	ip netns exec "$ns_s" python3 "$work/send.py" 10.231.102.1 5201 "cellcc_$algo" "$seconds" &
	sender=$!
	sleep "$(python3 -c "print($seconds / 2)")"
	# Informational: what the stack reports for the flow half-way through.
	{ ip netns exec "$ns_s" ss -tin dst 10.231.102.1 | grep -A1 "cellcc_$algo\|:5201" |
		grep -Eo "cellcc_$algo|rtt:[0-9.]+/[0-9.]+|cwnd:[0-9]+|pacing_rate [0-9]+bps" |
		tr '\n' ' ' | sed 's/^/  ss: /'; } || true
	echo
	wait "$sender"
	python3 "$work/check.py" "$algo"
done
echo "OK"
