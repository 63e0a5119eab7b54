#!/usr/bin/env bash
# SIGTERM to one rank of a real mpirun job: every rank stops at the same step boundary, the job
# prints one "stopped by SIGTERM (received by rank R) after step S" line and exits 5, well before its
# steps are done. Usage: sigterm_one_rank.sh MPIRUN "MPIRUN_FLAGS" NP RANK TIERZERO [train args...]
set -u
mpirun=$1 flags=$2 np=$3 victim=$4 tierzero=$5
shift 5
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# shellcheck disable=SC2086  # the flags are a list
"$mpirun" $flags -np "$np" "$tierzero" train "$@" >"$log" 2>&1 &
job=$!
# Wait for training to be under way (two steps logged), at most 120 s.
for _ in $(seq 1200); do
  grep -q "step     2/" "$log" && break
  kill -0 "$job" 2>/dev/null || break
  sleep 0.1
done
if ! grep -q "step     2/" "$log"; then
  echo "training did not start:"; cat "$log"; kill "$job" 2>/dev/null; exit 1
fi
# The ranks are mpirun's children, in launch order: OMPI_COMM_WORLD_RANK in their environment.
pid=""
for child in $(pgrep -P "$job"); do
  if tr '\0' '\n' <"/proc/$child/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$victim"; then pid=$child; fi
done
if [ -z "$pid" ]; then echo "no process of rank $victim under mpirun $job"; kill "$job"; exit 1; fi
kill -TERM "$pid"
wait "$job"
rc=$?
cat "$log"
line=$(grep -c "stopped by SIGTERM (received by rank $victim) after step [0-9]* of" "$log")
if [ "$rc" -ne 5 ]; then echo "exit code $rc, expected 5 (stopped on request)"; exit 1; fi
if [ "$line" -ne 1 ]; then echo "expected one 'stopped by SIGTERM' line, got $line"; exit 1; fi
if grep -q "done: final loss" "$log"; then echo "the run went on to its end"; exit 1; fi
echo "ok: exit code 5, one line"
