#!/bin/bash
# Usage: check_no_shm_left.sh COMMAND...   (CTest runs it around an mpirun job that must fail)
# Plants an empty /dev/shm/tierzero-<pid>-0-5eed0000 whose pid belongs to no process, runs COMMAND,
# which must fail (exit non-zero), and then fails if any /dev/shm/tierzero-* object of a process
# that no longer exists is left: one the failed job created and did not unlink, or the planted one,
# which the job's start-up sweep must have removed. Objects of live processes (other jobs running
# at the same time) are not judged.
set -u
bash -c 'exit 0' &
dead=$!
wait "$dead"
planted=/dev/shm/tierzero-$dead-0-5eed0000
: >"$planted" || { echo "cannot create $planted"; exit 1; }

"$@"
rc=$?
if [ "$rc" -eq 0 ]; then
  echo "FAILED: the job was expected to fail but exited 0"
  exit 1
fi

# True while process $1 exists and is not a zombie (the job's ranks may still be dying when mpirun
# returns).
alive() {
  local state
  state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}

left=()
for f in /dev/shm/tierzero-*; do
  [ -e "$f" ] || continue
  pid=$(basename "$f" | cut -d- -f2)
  for _ in $(seq 50); do alive "$pid" || break; sleep 0.2; done
  if ! alive "$pid" && [ -e "$f" ]; then left+=("$f"); fi
done
if [ "${#left[@]}" -ne 0 ]; then
  echo "FAILED: left in /dev/shm by processes that are gone: ${left[*]}"
  rm -f "${left[@]}"
  exit 1
fi
echo "job exited $rc; nothing left in /dev/shm"
