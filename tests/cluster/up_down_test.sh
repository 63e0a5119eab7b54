#!/usr/bin/env bash
# scripts/cluster.sh up and down (CTest, labels cluster and mpi). Usage: up_down_test.sh CLUSTER_SH
#   - up 3: every host has its hostname, its address, its shaped link, its own /dev/shm; the hostfile and the rsh agent
#     work (mpirun starts one daemon per host: `run` prints each hostname);
#   - down: no namespace, link, mount, state file or process of the testbed is left (a process left
#     running inside a host is ended), and a second down changes nothing;
#   - a partial up (it fails half-way: a link name is taken) removes what it made;
#   - --delay: applied where the kernel has netem, else one line naming sch_netem and nothing left.
# Exits 77 (skipped) where this machine cannot host the testbed (no root, no network namespaces).
set -uo pipefail
cluster=$1
fail() {
  echo "FAIL: $*"
  exit 1
}
up() {  # up ARGS...: the testbed, or exit 77 with cluster.sh's one line where it cannot run here
  local out rc
  out=$(bash "$cluster" up "$@" 2>&1)
  rc=$?
  echo "$out"
  [ $rc -ne 77 ] || { echo "SKIP: $out"; exit 77; }
  [ $rc -eq 0 ] || fail "cluster.sh up $* exited $rc"
}
# Nothing of the testbed exists: namespaces, links, mounts, state files.
expect_nothing_left() {
  local what=$1
  grep -q '^tzc-' <<<"$(ip netns list 2>/dev/null)" && fail "$what: namespaces left: $(ip netns list | grep '^tzc-')"
  grep -q ': tzc-' <<<"$(ip -o link show)" && fail "$what: links left: $(ip -o link show | grep ': tzc-' | cut -d: -f2)"
  grep -q '/run/tzc' /proc/self/mountinfo && fail "$what: mounts left under /run/tzc"
  [ ! -e /run/tzc ] || fail "$what: /run/tzc is left"
  echo "ok: $what leaves nothing"
}
trap 'bash "$cluster" down >/dev/null 2>&1' EXIT
bash "$cluster" down >/dev/null 2>&1

up 3 --link 1gbit --ranks-per-host 2
for i in 1 2 3; do
  name=$(bash "$cluster" exec tzc-host$i hostname) || fail "exec tzc-host$i hostname"
  [ "$name" = tzc-host$i ] || fail "tzc-host$i has hostname '$name'"
  addr=$(bash "$cluster" exec tzc-host$i ip -4 -o addr show dev eth0 | awk '{print $4}')
  [ "$addr" = 10.213.47.$i/24 ] || fail "tzc-host$i has address '$addr'"
  grep -q 'tbf .*rate 1Gbit' <<<"$(bash "$cluster" exec tzc-host$i tc qdisc show dev eth0)" ||
    fail "tzc-host$i: its outgoing link is not shaped: $(bash "$cluster" exec tzc-host$i tc qdisc show dev eth0)"
  grep -q 'tbf .*rate 1Gbit' <<<"$(tc qdisc show dev tzc-v$i)" || fail "tzc-host$i: its incoming link is not shaped"
done
[ "$(hostname)" != tzc-host1 ] || fail "the root namespace's hostname changed"
# Each host has its own /dev/shm, as hosts of a cluster do: a segment made on one is not on another.
bash "$cluster" exec tzc-host1 sh -c 'echo x >/dev/shm/tzc-shm-probe' || fail "writing /dev/shm in tzc-host1"
bash "$cluster" exec tzc-host1 test -e /dev/shm/tzc-shm-probe || fail "tzc-host1 does not see its own /dev/shm file"
bash "$cluster" exec tzc-host2 test -e /dev/shm/tzc-shm-probe && fail "tzc-host2 sees tzc-host1's /dev/shm"
[ ! -e /dev/shm/tzc-shm-probe ] || fail "the root namespace sees tzc-host1's /dev/shm"
echo "ok: 3 hosts with their hostnames, addresses, shaped links and /dev/shm of their own"
printf 'tzc-host1 slots=2\ntzc-host2 slots=2\ntzc-host3 slots=2\n' | cmp -s - /run/tzc/hostfile ||
  fail "hostfile: $(cat /run/tzc/hostfile)"
[ "$(/run/tzc/agent tzc-host2 'hostname; echo $((6 * 7))')" = "tzc-host2
42" ] || fail "the agent does not run a shell command inside tzc-host2"
/run/tzc/agent tzc-host9 true 2>/dev/null && fail "the agent accepted a host that does not exist"
ranks=$(timeout 60 bash "$cluster" run -np 6 hostname | sort | uniq -c | awk '{print $2 "=" $1}' | tr '\n' ' ')
[ "$ranks" = "tzc-host1=2 tzc-host2=2 tzc-host3=2 " ] || fail "mpirun over the testbed placed ranks as: $ranks"
echo "ok: mpirun places 2 ranks on each host: $ranks"
grep -q 'host tzc-host3: hostname tzc-host3, eth0 10.213.47.3/24' <<<"$(bash "$cluster" status)" ||
  fail "status: $(bash "$cluster" status)"
up_again=$(bash "$cluster" up 2 2>&1) && fail "a second up succeeded"
echo "$up_again" | grep -q 'already up' || fail "a second up says: $up_again"

# A process left inside a host (a daemon of a killed job) is ended by down.
bash "$cluster" exec tzc-host2 sleep 600 &
sleeper=$!
disown $sleeper  # its end (killed by down) is checked below, not reported by the shell
for _ in $(seq 50); do
  [ -n "$(ip netns pids tzc-host2)" ] && break
  sleep 0.1
done
inside=$(ip netns pids tzc-host2)
[ -n "$inside" ] || fail "no process started inside tzc-host2"
bash "$cluster" down || fail "down exited $?"
alive() { [ -e /proc/"$1" ] && ! grep -q '^State:.*zombie' /proc/"$1"/status 2>/dev/null; }
for pid in $inside; do
  for _ in $(seq 20); do
    alive "$pid" || break
    sleep 0.1
  done
  alive "$pid" && fail "process $pid inside tzc-host2 survived down"
done
expect_nothing_left "down"
bash "$cluster" down >/dev/null || fail "a second down exited $?"
expect_nothing_left "a second down"
grep -q 'no testbed is up' <<<"$(bash "$cluster" status)" || fail "status after down: $(bash "$cluster" status)"

# A partial up: host 1 is made, host 2's link name is taken, so up fails and removes everything.
ip link add tzc-v2 type bridge || fail "ip link add tzc-v2"
partial=$(bash "$cluster" up 3 2>&1) && fail "up succeeded although tzc-v2 was taken"
echo "$partial" | grep -q "tzc-v2" || fail "the failed up does not name what failed: $partial"
echo "ok: a failed up says: $partial"
expect_nothing_left "a failed up"

# --delay: netem where the kernel has it, else one line naming the module.
delay_out=$(bash "$cluster" up 2 --delay 50us 2>&1)
rc=$?
if [ $rc -eq 0 ]; then
  grep -q 'netem .*delay 50us' <<<"$(bash "$cluster" exec tzc-host1 tc qdisc show dev eth0)" ||
    fail "--delay 50us: no netem on tzc-host1's link"
  echo "ok: --delay 50us applied (netem)"
  bash "$cluster" down >/dev/null || fail "down after --delay"
else
  [ $rc -eq 1 ] && [ "$(echo "$delay_out" | wc -l)" -eq 1 ] && echo "$delay_out" | grep -q 'sch_netem' ||
    fail "--delay without netem: exit $rc, said: $delay_out"
  echo "ok: --delay without netem: $delay_out"
fi
expect_nothing_left "up --delay"
echo "PASS"
