#!/usr/bin/env bash
# tierzero trains across real hosts of the testbed (scripts/cluster.sh), without --emulate (CTest,
# labels cluster and mpi). Usage:
#   train_across_hosts_test.sh CLUSTER_SH TIERZERO PYTHON COMPARE_METRICS TOPOLOGY HOSTS RANKS_PER_HOST OUTDIR PRESET...
# TOPOLOGY puts RANKS_PER_HOST ranks on one host (its host tier); for each PRESET, fp32, 3 steps of the
# tiny model:
#   - across HOSTS hosts: the host tier is checked against the ranks' real hostnames (tzc-host1...), the
#     ranks of one host share memory, the others talk over TCP through the bridge: the bytes that crossed
#     the bridge are at least the outer tiers' bytes the run reports;
#   - its losses, gradient norms and learning rates are bitwise those of the same ranks on one host
#     (mpirun --emulate): the hosts change the transport, never the numbers;
#   - its losses are within 1e-5 relative of one process training the same global batch (the sum over
#     ranks is in another order, as in the engine's parity tests); quantized presets (zeropp) only
#     bitwise against one host.
# A topology whose host tier contradicts the hostnames fails naming both hosts.
# Exits 77 (skipped) where this machine cannot host the testbed (no root, no network namespaces).
set -uo pipefail
[ $# -ge 9 ] || { echo "usage: $0 CLUSTER_SH TIERZERO PYTHON COMPARE_METRICS TOPOLOGY HOSTS RANKS_PER_HOST OUTDIR PRESET..."; exit 2; }
cluster=$1 tz=$2 python=$3 compare=$4 topology=$5 hosts=$6 per_host=$7 out=$8
shift 8
presets=("$@")
np=$((hosts * per_host))
fail() {
  echo "FAIL: $*"
  exit 1
}
rm -rf "$out" && mkdir -p "$out" || fail "cannot make $out"
trap 'bash "$cluster" down >/dev/null 2>&1' EXIT
bash "$cluster" down >/dev/null 2>&1
up_out=$(bash "$cluster" up "$hosts" --ranks-per-host "$per_host" 2>&1)
rc=$?
echo "$up_out"
[ $rc -ne 77 ] || { echo "SKIP: $up_out"; exit 77; }
[ $rc -eq 0 ] || fail "cluster.sh up exited $rc"

train=(train --no-progress --seq 32 --log-every 1 --steps 3 --fp32 --threads 1 --peak-tflops 1)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Bytes the hosts sent into the bridge (each host's link, counted at the bridge end).
bridge_bytes() {
  local i sum=0
  for ((i = 1; i <= hosts; i++)); do sum=$((sum + $(cat /sys/class/net/tzc-v$i/statistics/rx_bytes))); done
  echo $sum
}

# A host tier that puts every rank on one host contradicts the hostnames: named, exit 2.
printf '{"name": "one-host", "tiers": [{"name": "gcd", "fanout": %d, "bandwidth_GBps": 100, "latency_us": 2},
  {"name": "node", "fanout": "auto", "bandwidth_GBps": 10, "latency_us": 5}], "host_tier": "gcd"}\n' "$np" \
  >"$out/one_host.json"
timeout 120 bash "$cluster" run -np "$np" "$tz" "${train[@]}" --batch 2 --topology "$out/one_host.json" >"$out/mismatch.log" 2>&1
rc=$?
grep -q "puts ranks 0 and $per_host on one gcd but they run on hosts 'tzc-host1' and 'tzc-host2'" "$out/mismatch.log" &&
  [ $rc -eq 2 ] || fail "a topology contradicting the hosts: exit $rc, said: $(tail -3 "$out/mismatch.log")"
echo "ok: the host tier is checked against the real hostnames: $(grep -m1 -o "puts ranks.*" "$out/mismatch.log")"

# One process, the same global batch: the reference within 1e-5.
timeout 120 "$tz" "${train[@]}" --batch $((2 * np)) --metrics "$out/one_process.jsonl" >"$out/one_process.log" 2>&1 ||
  fail "one process: $(tail -3 "$out/one_process.log")"

for preset in "${presets[@]}"; do
  before=$(bridge_bytes)
  start=$SECONDS
  timeout 300 bash "$cluster" run -np "$np" "$tz" "${train[@]}" --batch 2 --plan "$preset" --topology "$topology" \
    --metrics "$out/$preset.hosts.jsonl" >"$out/$preset.hosts.log" 2>&1 ||
    fail "$preset across $hosts hosts: $(tail -5 "$out/$preset.hosts.log")"
  seconds=$((SECONDS - start))
  crossed=$(($(bridge_bytes) - before))
  # The tiers above the host tier: what the run says it sent across hosts, every rank, every step.
  outer=$("$python" - "$out/$preset.hosts.jsonl" "$topology" <<'EOF'
import json, sys
steps = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
topo = json.load(open(sys.argv[2]))
names = [t["name"] for t in topo["tiers"]]
outer = names[names.index(topo["host_tier"]) + 1:]
print(int(sum(s["bytes_per_tier"].get(t, 0) for s in steps for t in outer) * steps[0]["world_size"]))
EOF
  ) || fail "$preset: reading $out/$preset.hosts.jsonl"
  [ "$outer" -gt 0 ] && [ "$crossed" -ge $((outer * 9 / 10)) ] ||
    fail "$preset: the run reports $outer bytes across hosts but only $crossed crossed the bridge"
  timeout 300 mpirun --oversubscribe --allow-run-as-root --mca btl_vader_single_copy_mechanism none --bind-to none \
    -np "$np" "$tz" "${train[@]}" --batch 2 --plan "$preset" --topology "$topology" --emulate \
    --metrics "$out/$preset.one_host.jsonl" >"$out/$preset.one_host.log" 2>&1 ||
    fail "$preset on one host: $(tail -5 "$out/$preset.one_host.log")"
  same=$("$python" "$compare" "$out/$preset.one_host.jsonl" "$out/$preset.hosts.jsonl" --from-step 1) ||
    fail "$preset: across hosts vs one host: $same"
  if [ "$preset" = zeropp ]; then
    close="quantized: not compared with one process"
  else
    close=$("$python" "$compare" "$out/one_process.jsonl" "$out/$preset.hosts.jsonl" --from-step 1 --rtol 1e-5) ||
      fail "$preset: across hosts vs one process: $close"
  fi
  echo "ok: $preset on $hosts hosts x $per_host ranks (${seconds} s, $crossed bytes over the bridge for $outer" \
    "reported): vs one host: $same; vs one process: $close"
done
echo "PASS"
