#!/usr/bin/env bash
# tierzero under Slurm's srun (CTest, labels cluster and mpi): a Slurm cluster of its own
# (scripts/slurm.sh) on the testbed (scripts/cluster.sh), one slurmd in each of 2 hosts, 4 ranks
# launched by `srun --mpi=pmix -N 2 --ntasks-per-node 2` (Open MPI started through Slurm's PMIx
# server, no mpirun). Usage:
#   slurm_train_test.sh SLURM_SH CLUSTER_SH TIERZERO PYTHON COMPARE_METRICS TOPOLOGY OUTDIR
# Checks, fp32, the tiny model, zero3 on TOPOLOGY (2 ranks per host):
#   - the ranks' hostnames reach the topology: a host tier that puts all 4 ranks on one host fails
#     naming tzs-host1 and tzs-host2 (the testbed's names);
#   - 3 steps under srun: losses, gradient norms and learning rates bitwise those of the same ranks
#     under mpirun on one host (--emulate);
#   - `scancel --signal=TERM JOB` during a long run: every rank stops at the same step boundary S,
#     the job exits 5 with one "stopped by SIGTERM (received by rank(s) R) after step S" line and
#     saves step_S; `--resume` under srun continues to S+2; the steps before and after the stop are
#     bitwise those of one uninterrupted run (mpirun, one host).
# Exits 77 (skipped) with one line where this machine cannot run it (not root, no network
# namespaces, Slurm or munge not installed). Brings its testbed and Slurm up and always down.
set -uo pipefail
[ $# -eq 7 ] || { echo "usage: $0 SLURM_SH CLUSTER_SH TIERZERO PYTHON COMPARE_METRICS TOPOLOGY OUTDIR"; exit 2; }
slurm=$1 cluster=$2 tz=$3 python=$4 compare=$5 topology=$6 out=$7
prefix=${TZC_PREFIX:-tzc}
fail() {
  echo "FAIL: $*"
  exit 1
}
rm -rf "$out" && mkdir -p "$out" || fail "cannot make $out"
trap 'bash "$slurm" down >/dev/null 2>&1; bash "$cluster" down >/dev/null 2>&1' EXIT
bash "$slurm" down >/dev/null 2>&1
bash "$cluster" down >/dev/null 2>&1
up_out=$(bash "$cluster" up 2 --ranks-per-host 2 2>&1)
rc=$?
echo "$up_out"
[ $rc -ne 77 ] || { echo "SKIP: $up_out"; exit 77; }
[ $rc -eq 0 ] || fail "cluster.sh up exited $rc"
# shellcheck source=tests/cluster/slurm_up.sh
source "$(dirname "$0")/slurm_up.sh"
slurm_up "$slurm"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
srun=(srun --mpi=pmix -N 2 -n 4 --ntasks-per-node 2 --kill-on-bad-exit=0)
# The learning rate decays over a fixed 100000 steps, not over each run's --steps: the stopped run
# (--steps 100000), its resume and the uninterrupted reference (--steps S+2) then share one schedule
# wherever the stop lands, inside the warmup or after it (fixed_schedule.json).
train=(train --no-progress --seq 32 --log-every 1 --fp32 --threads 1 --peak-tflops 1 --batch 2 --plan zero3
  --config "$(cd "$(dirname "$0")" && pwd)/fixed_schedule.json")
one_host() {  # the same 4 ranks under mpirun on this machine
  timeout 120 mpirun --oversubscribe --allow-run-as-root --mca btl_vader_single_copy_mechanism none \
    --bind-to none -np 4 "$tz" "${train[@]}" --topology "$topology" --emulate "$@"
}
host1=$prefix-host1 host2=$prefix-host2

# Hostnames: a host tier holding every rank contradicts the two hosts srun ran them on.
printf '{"name": "one-host", "tiers": [{"name": "gcd", "fanout": 4, "bandwidth_GBps": 100, "latency_us": 2},
  {"name": "node", "fanout": "auto", "bandwidth_GBps": 10, "latency_us": 5}], "host_tier": "gcd"}\n' \
  >"$out/one_host.json"
timeout 120 "${srun[@]}" "$tz" "${train[@]}" --steps 3 --topology "$out/one_host.json" >"$out/mismatch.log" 2>&1
rc=$?
grep -q "puts ranks 0 and 2 on one gcd but they run on hosts '$host1' and '$host2'" "$out/mismatch.log" &&
  [ $rc -ne 0 ] || fail "srun, a topology contradicting the hosts: exit $rc, said: $(tail -3 "$out/mismatch.log")"
echo "ok: srun's ranks report their hosts: $(grep -m1 -o "puts ranks.*" "$out/mismatch.log")"

# The start-up watchdog under srun: rank 3 never starts tierzero (it sleeps), so the others' MPI_Init
# cannot complete: each ends itself after --startup-timeout, naming it, instead of hanging.
printf '0-2 %s %s --steps 3 --topology %s --startup-timeout 5\n3 sleep 60\n' "$tz" "${train[*]}" \
  "$topology" >"$out/never_starts.conf"
start=$SECONDS
timeout 60 "${srun[@]}" --kill-on-bad-exit=1 --multi-prog "$out/never_starts.conf" >"$out/never_starts.log" 2>&1
rc=$?
waited=$((SECONDS - start))
[ "$(grep -c "communication error: start-up did not complete within 5 s" "$out/never_starts.log")" -ge 1 ] &&
  [ $rc -ne 0 ] && [ $rc -ne 124 ] ||
  fail "a rank that never starts: srun exit $rc after $waited s, said: $(tail -5 "$out/never_starts.log")"
echo "ok: a rank that never starts: srun exit $rc after $waited s: $(grep -m1 "start-up did not" "$out/never_starts.log")"

# 3 steps under srun, bitwise the same ranks under mpirun.
cmd=("${srun[@]}" "$tz" "${train[@]}" --steps 3 --topology "$topology" --metrics "$out/srun.jsonl")
start=$SECONDS
timeout 120 "${cmd[@]}" >"$out/srun.log" 2>&1 || fail "srun: $(tail -5 "$out/srun.log")"
echo "ok: ${cmd[*]} ($((SECONDS - start)) s):"
grep -E '^(world|step|done)' "$out/srun.log" | sed 's/^/  /'
one_host --steps 3 --metrics "$out/mpirun.jsonl" >"$out/mpirun.log" 2>&1 || fail "mpirun: $(tail -5 "$out/mpirun.log")"
same=$("$python" "$compare" "$out/mpirun.jsonl" "$out/srun.jsonl" --from-step 1) || fail "srun vs mpirun: $same"
echo "ok: srun vs mpirun: $same"

# scancel --signal=TERM: every rank stops at one step boundary and saves it.
"${srun[@]}" -J "${prefix}-sigterm" "$tz" "${train[@]}" --steps 100000 --topology "$topology" \
  --save-dir "$out/ck" --metrics "$out/stopped.jsonl" >"$out/stopped.log" 2>&1 &
job_pid=$!
for _ in $(seq 600); do
  grep -q "^step     2/" "$out/stopped.log" && break
  kill -0 $job_pid 2>/dev/null || break
  sleep 0.1
done
grep -q "^step     2/" "$out/stopped.log" || { kill $job_pid; fail "the long run did not start: $(tail -5 "$out/stopped.log")"; }
job=$(squeue -h -n "${prefix}-sigterm" -o %i)
[ -n "$job" ] || { kill $job_pid; fail "squeue does not show the job ${prefix}-sigterm"; }
scancel --signal=TERM "$job" || { kill $job_pid; fail "scancel --signal=TERM $job failed"; }
wait $job_pid
rc=$?
# Each node's slurmstepd signals its own tasks, so one node's ranks may see the signal a step boundary
# before the other's: R names those that had it when the ranks agreed to stop (one rank suffices).
line=$(grep -E "stopped by SIGTERM \(received by ranks? [0-3](,[0-3])*\) after step [0-9]+ of 100000: every rank stopped at this step boundary" "$out/stopped.log")
[ $rc -eq 5 ] && [ "$(echo "$line" | grep -c .)" -eq 1 ] ||
  fail "scancel --signal=TERM: srun exit $rc (5 expected), said: $(tail -5 "$out/stopped.log")"
steps=$(echo "$line" | sed 's/.*after step \([0-9]*\) of.*/\1/')
[ -d "$out/ck/step_$steps" ] || fail "no checkpoint $out/ck/step_$steps after the stop: $(ls "$out/ck")"
echo "ok: scancel --signal=TERM $job: srun exit 5, step_$steps saved:"
grep -E 'CANCELLED|stopped by|srun: error' "$out/stopped.log" | sed 's/^/  /'

# --resume under srun continues bitwise as the run that was never stopped.
total=$((steps + 2))
timeout 120 "${srun[@]}" "$tz" "${train[@]}" --steps $total --topology "$topology" --resume "$out/ck" \
  --metrics "$out/resumed.jsonl" >"$out/resumed.log" 2>&1 || fail "srun --resume: $(tail -5 "$out/resumed.log")"
one_host --steps $total --metrics "$out/whole.jsonl" >"$out/whole.log" 2>&1 || fail "mpirun, $total steps: $(tail -5 "$out/whole.log")"
same=$("$python" "$compare" "$out/whole.jsonl" "$out/resumed.jsonl" --from-step $((steps + 1))) ||
  fail "resumed vs uninterrupted: $same"
echo "ok: srun --resume $out/ck to step $total vs one uninterrupted run: $same"
same=$("$python" "$compare" "$out/whole.jsonl" "$out/stopped.jsonl" --from-step 1) ||
  fail "stopped run vs uninterrupted: $same"
echo "ok: the stopped run's steps vs the uninterrupted run: $same"
echo "PASS"
