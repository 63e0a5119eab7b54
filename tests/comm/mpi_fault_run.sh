#!/usr/bin/env bash
# A real fault under mpirun, checked from outside (CTest, label `mpi`). Usage:
#   mpi_fault_run.sh MODE TIERZERO MPIRUN [mpirun flags...]
# MODE:
#   stop         3 ranks train; once they are stepping, world rank 1 gets SIGSTOP. Every live rank
#                (0 and 2) must print the same "agreed fault report" naming world rank 1, within
#                --timeout + 5 s of the stop, and write its flight recorder.
#   kill         the same with SIGKILL: every live rank names world rank 1 as lost, within 5 s.
#   before-init  world rank 1 stops itself before MPI_Init; a live rank must give up at the start-up
#                deadline (--startup-timeout 3) with the start-up message, and the job end within 3 + 5 s
#                (the first rank to give up ends the job: the others may be torn down first).
# Prints what it saw and exits non-zero on any miss.
set -u
mode=$1
tz=$2
shift 2
mpirun=("$@")
timeout_s=2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
log=$work/log
train=(train --no-progress --seq 32 --batch 2 --log-every 1 --steps 100000 --threads 1 --timeout "$timeout_s"
  --flight-recorder "$work/flight")

fail() {
  echo "FAIL ($mode): $*"
  echo "---- output ----"
  cat "$log"
  exit 1
}

# The pid of world rank $1 among this job's processes (children of our mpirun).
rank_pid() {
  for p in $(pgrep -P "$(pgrep -P $job | head -1)"); do
    if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1"; then
      echo "$p"
      return
    fi
  done
}

if [ "$mode" = before-init ]; then
  start=$(date +%s.%N)
  timeout 60 "${mpirun[@]}" -np 3 bash -c \
    'if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then kill -STOP $$; fi; exec "$0" "$@" --startup-timeout 3' \
    "$tz" "${train[@]}" >"$log" 2>&1
  rc=$?
  elapsed=$(echo "$(date +%s.%N) - $start" | bc)
  echo "exit $rc after $elapsed s"
  [ "$rc" != 124 ] || fail "hung past 60 s"
  # The first live rank at its deadline exits; the launcher then ends the others, which may not
  # have reached theirs: at least one of them reports it, and the job ends.
  grep -Eq "tierzero: rank [02]: communication error: start-up did not complete within 3 s" "$log" ||
    fail "no live rank reported the start-up deadline"
  [ "$rc" != 0 ] || fail "exit code 0"
  (($(echo "$elapsed < 8" | bc))) || fail "took $elapsed s, more than 3 + 5 s"
  cat "$log"
  exit 0
fi

timeout 120 "${mpirun[@]}" -np 3 "$tz" "${train[@]}" >"$log" 2>&1 &
job=$!
for _ in $(seq 1 600); do
  grep -q "^step  *3/" "$log" && break
  kill -0 $job 2>/dev/null || fail "the run ended before it was stepping"
  sleep 0.1
done
grep -q "^step  *3/" "$log" || fail "not stepping after 60 s"
victim=$(rank_pid 1)
[ -n "$victim" ] || fail "no process of world rank 1"
start=$(date +%s.%N)
if [ "$mode" = stop ]; then kill -STOP "$victim"; else kill -KILL "$victim"; fi
# Every live rank's agreed line, as soon as both are there.
for _ in $(seq 1 200); do
  [ "$(grep -c "agreed fault report" "$log")" -ge 2 ] && break
  sleep 0.05
done
elapsed=$(echo "$(date +%s.%N) - $start" | bc)
[ "$mode" = stop ] && kill -CONT "$victim" 2>/dev/null
wait $job
rc=$?
echo "exit $rc; agreed lines after $elapsed s"
limit=$((timeout_s + 5))
[ "$mode" = kill ] && limit=5
lines=$(grep "agreed fault report" "$log" | sed 's/^tierzero: rank [0-9]*: //' | sort -u)
for r in 0 2; do
  grep -q "tierzero: rank $r: agreed fault report: culprit world rank(s) {1}" "$log" ||
    fail "rank $r did not name world rank 1"
done
[ "$(echo "$lines" | wc -l)" = 1 ] || fail "the live ranks printed different lines"
if [ "$mode" = kill ]; then
  echo "$lines" | grep -q "lost (process gone)" || fail "not named as lost"
else
  echo "$lines" | grep -q "did not answer the fault exchange" || fail "not named as silent"
fi
(($(echo "$elapsed < $limit" | bc))) || fail "agreed after $elapsed s, more than $limit s"
for r in 0 2; do
  [ -s "$work/flight/rank-$r.json" ] || fail "rank $r wrote no flight recorder"
done
"$tz" trace "$work/flight" >"$work/trace" 2>&1 || fail "tierzero trace failed: $(cat "$work/trace")"
# A killed rank leaves no record; a stopped one (continued above) writes its own when it fails.
if [ "$mode" = kill ]; then
  grep -q "no record from world rank(s) {1}" "$work/trace" || fail "trace does not miss rank 1: $(cat "$work/trace")"
fi
grep -q "parts at seq" "$work/trace" || fail "trace shows no parting point: $(cat "$work/trace")"
# Every rank wrote the run id rank 0 drew (trace refuses files of different runs).
grep -Eq "^flight records of .* \(run [0-9a-f]{16}\)$" "$work/trace" || fail "trace names no run id: $(cat "$work/trace")"
cat "$log" "$work/trace"
