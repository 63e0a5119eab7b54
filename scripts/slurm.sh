#!/usr/bin/env bash
# A local Slurm cluster of its own, for running tierzero under srun as on a real cluster: munged,
# slurmctld and slurmd started from Debian's packages (slurmctld, slurmd, slurm-client, munge) with a
# configuration, key, spool and log directories of their own; nothing of a system Slurm or munge is
# read or touched.
#
#   scripts/slurm.sh up [--cpus N]   start it. Where the cluster testbed of the same TZC_PREFIX is up
#       (scripts/cluster.sh up H), one slurmd runs inside each testbed host (node PREFIX-hostI at
#       SUBNET.I; slurmctld in this namespace on the bridge, SUBNET.254), so `srun -N 2` spans two
#       hosts; else one slurmd runs on this machine (node NAME-of-this-machine at 127.0.0.1). N CPUs
#       per node (default 4; they need not exist: the config overrides what slurmd detects).
#   scripts/slurm.sh down            stop what `up` started and remove its state, also after a failed
#                                    or partial `up`; idempotent
#   scripts/slurm.sh status          what runs: daemons, nodes (sinfo)
#   scripts/slurm.sh env             the environment a Slurm command needs (SLURM_CONF=..., one line)
#
# The cluster's settings (see `env`): process tracking by process tree (proctrack/linuxproc, no
# cgroups), no task plugin, MpiDefault=pmix, SlurmUser and SlurmdUser root, the partition `tz` of
# every node, ports of its own (derived from the subnet, so testbeds of other names do not collide).
# State lives in /run/PREFIX-slurm (PREFIX from TZC_PREFIX, default tzc): slurm.conf, munge/ (key,
# socket), ctld/ (slurmctld's state), spool/NODE, log/*.log, pid/*.pid.
# Exit codes: 0 done, 1 a command failed, 2 bad usage, 3 not up (env), 77 this machine cannot run
# Slurm (not root, packages missing): tests skip on it.
set -euo pipefail

readonly PREFIX=${TZC_PREFIX:-tzc}
readonly SUBNET=${TZC_SUBNET:-10.213.47}
readonly CLUSTER_STATE=/run/${PREFIX}
readonly STATE=/run/${PREFIX}-slurm
readonly CONF=$STATE/slurm.conf
# Each node's scratch directory (Slurm's TmpFS; the PMIx plugin puts a step's directory there, named
# by job and step only, so two nodes must not share it): in /dev/shm, which every testbed host has
# of its own.
readonly NODE_TMP=/dev/shm/${PREFIX}-slurm
readonly CANNOT_RUN=77
HERE=$(cd "$(dirname "$0")" && pwd)
readonly HERE

die() {  # die CODE MESSAGE: one line on stderr
  echo "slurm.sh: $2" >&2
  exit "$1"
}
usage() { die 2 "$1 (usage: slurm.sh up [--cpus N] | down | status | env)"; }
[[ $PREFIX =~ ^[a-z][a-z0-9]{0,5}$ ]] || usage "TZC_PREFIX '$PREFIX': not 1-6 lower-case letters and digits"
[[ $SUBNET =~ ^[0-9]{1,3}\.[0-9]{1,3}\.([0-9]{1,3})$ ]] || usage "TZC_SUBNET '$SUBNET': not a /24's first three octets"
# Ports of this cluster: 17000 + 4 x the subnet's third octet (slurmctld), +1 (slurmd), so the
# testbeds of different subnets use different ports.
readonly CTLD_PORT=$((17000 + 4 * 10#${BASH_REMATCH[1]}))  # 10#: "049" is decimal
readonly SLURMD_PORT=$((CTLD_PORT + 1))

check_machine() {
  [ "$(id -u)" -eq 0 ] || die $CANNOT_RUN "cannot run here: needs root (slurmd runs jobs as any user)"
  local tool
  for tool in munged slurmctld slurmd srun sinfo scontrol; do
    command -v "$tool" >/dev/null ||
      die $CANNOT_RUN "cannot run here: '$tool' is not installed (Debian: slurmctld slurmd slurm-client munge; scripts/install_deps.sh)"
  done
  [ -e /usr/lib/x86_64-linux-gnu/slurm-wlm/mpi_pmix.so ] || ls /usr/lib/*/slurm-wlm/mpi_pmix.so >/dev/null 2>&1 ||
    die $CANNOT_RUN "cannot run here: Slurm's PMIx plugin (mpi_pmix.so) is not installed"
}

# The testbed's hosts (names in order) when the testbed of this prefix is up, else nothing.
testbed_hosts() {
  [ -e "$CLUSTER_STATE/hostfile" ] || return 0
  awk '{print $1}' "$CLUSTER_STATE/hostfile"
}

# A daemon's pid from its pid file, only while that process is still the daemon we started (its
# command line names our configuration, key or socket): a reused pid is never signalled.
our_pid() {  # our_pid PIDFILE
  local pid
  pid=$(cat "$1" 2>/dev/null) || return 1
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$STATE/" || return 1
  echo "$pid"
}

# Stops the daemon of a pid file: SIGTERM, then SIGKILL after 5 s.
stop_daemon() {  # stop_daemon PIDFILE
  local pid tries=0
  pid=$(our_pid "$1") || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  while kill -0 "$pid" 2>/dev/null; do
    tries=$((tries + 1))
    if [ $tries -ge 50 ]; then
      kill -KILL "$pid" 2>/dev/null || true
      break
    fi
    sleep 0.1
  done
}

write_conf() {  # write_conf CPUS NODE_LINE...
  local cpus=$1
  shift
  cat >"$CONF" <<EOF
# Written by scripts/slurm.sh up: a local cluster of its own (state in $STATE).
ClusterName=${PREFIX}slurm
SlurmctldHost=$(hostname -s)($CTLD_ADDR)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$STATE/munge/munge.socket
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/spool/%n
TmpFS=$NODE_TMP
SlurmctldPidFile=$STATE/pid/slurmctld.pid
SlurmdPidFile=$STATE/pid/slurmd-%n.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
MpiDefault=pmix
SwitchType=switch/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SlurmdParameters=config_overrides
ReturnToService=2
InactiveLimit=0
KillWait=10
MinJobAge=30
MessageTimeout=10
SlurmdTimeout=60
EOF
  printf '%s\n' "$@" >>"$CONF"
  echo "PartitionName=tz Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO" >>"$CONF"
}

# Waits until sinfo shows COUNT nodes idle (10 s), else fails naming their states and the logs.
wait_idle() {  # wait_idle COUNT
  local tries=0 idle
  while :; do
    idle=$(SLURM_CONF=$CONF sinfo -h -N -t idle -o '%N' 2>/dev/null | sort -u | wc -l || echo 0)
    [ "$idle" -lt "$1" ] || return 0
    tries=$((tries + 1))
    if [ $tries -ge 100 ]; then
      die 1 "up: $idle of $1 nodes idle after 10 s: $(SLURM_CONF=$CONF sinfo -h -N -o '%N %T' 2>&1 | tr '\n' ' ')(logs: $STATE/log)"
    fi
    sleep 0.1
  done
}

cmd_up() {
  local cpus=4
  while [ $# -gt 0 ]; do
    case $1 in
      --cpus)
        [ $# -ge 2 ] || usage "up: --cpus needs a value"
        [[ $2 =~ ^[0-9]+$ ]] && [ "$2" -ge 1 ] && [ "$2" -le 1024 ] || usage "up: --cpus '$2' is not a whole number in [1, 1024]"
        cpus=$2
        shift 2
        ;;
      *) usage "up: unknown option '$1'" ;;
    esac
  done
  check_machine
  [ ! -e "$STATE" ] || die 1 "a Slurm cluster of prefix '$PREFIX' is already up (scripts/slurm.sh status); run scripts/slurm.sh down first"
  trap 'status=$?; [ $status -eq 0 ] || (cmd_down >/dev/null 2>&1) || true; exit $status' EXIT
  mkdir -p "$STATE"/{munge,ctld,spool,pid,log}
  chmod 700 "$STATE/munge"
  local hosts=() nodes=() i
  mapfile -t hosts < <(testbed_hosts)
  if [ ${#hosts[@]} -gt 0 ]; then
    CTLD_ADDR=$SUBNET.254
    for i in "${!hosts[@]}"; do
      nodes+=("NodeName=${hosts[$i]} NodeAddr=$SUBNET.$((i + 1)) NodeHostname=${hosts[$i]} CPUs=$cpus State=UNKNOWN")
    done
  else
    CTLD_ADDR=127.0.0.1
    nodes+=("NodeName=$(hostname -s) NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN")
  fi
  write_conf "$cpus" "${nodes[@]}"
  # munge: a key of its own (1 KiB of random bytes, as mungekey makes), its own socket.
  head -c 1024 /dev/urandom >"$STATE/munge/munge.key"
  chmod 400 "$STATE/munge/munge.key"
  munged --force --key-file="$STATE/munge/munge.key" --socket="$STATE/munge/munge.socket" \
    --pid-file="$STATE/pid/munged.pid" --log-file="$STATE/log/munged.log" --seed-file="$STATE/munge/seed" ||
    die 1 "up: munged did not start: $(tail -n 3 "$STATE/log/munged.log" 2>/dev/null | tr '\n' ' ')"
  slurmctld -f "$CONF" -i ||
    die 1 "up: slurmctld did not start: $(tail -n 3 "$STATE/log/slurmctld.log" 2>/dev/null | tr '\n' ' ')"
  if [ ${#hosts[@]} -gt 0 ]; then
    for i in "${hosts[@]}"; do
      mkdir -p "$STATE/spool/$i"
      TZC_PREFIX=$PREFIX TZC_SUBNET=$SUBNET bash "$HERE/cluster.sh" exec "$i" mkdir -p "$NODE_TMP" ||
        die 1 "up: cannot make $NODE_TMP in $i"
      # Inside the host: its network (SUBNET.I), hostname and /dev/shm; the daemon stays in them.
      TZC_PREFIX=$PREFIX TZC_SUBNET=$SUBNET bash "$HERE/cluster.sh" exec "$i" slurmd -f "$CONF" -N "$i" ||
        die 1 "up: slurmd on $i did not start: $(tail -n 3 "$STATE/log/slurmd-$i.log" 2>/dev/null | tr '\n' ' ')"
    done
  else
    local node
    node=$(hostname -s)
    mkdir -p "$STATE/spool/$node" "$NODE_TMP"
    slurmd -f "$CONF" -N "$node" ||
      die 1 "up: slurmd did not start: $(tail -n 3 "$STATE/log/slurmd-$node.log" 2>/dev/null | tr '\n' ' ')"
  fi
  wait_idle "${#nodes[@]}"
  trap - EXIT
  if [ ${#hosts[@]} -gt 0 ]; then
    echo "slurm.sh: up: ${#hosts[@]} nodes (one slurmd in each testbed host ${hosts[0]}..${hosts[-1]}), $cpus CPUs each, slurmctld at $CTLD_ADDR:$CTLD_PORT; export SLURM_CONF=$CONF"
  else
    echo "slurm.sh: up: 1 node ($(hostname -s), this machine), $cpus CPUs, slurmctld at $CTLD_ADDR:$CTLD_PORT; export SLURM_CONF=$CONF"
  fi
}

cmd_down() {
  [ $# -eq 0 ] || usage "down takes no arguments"
  [ "$(id -u)" -eq 0 ] || die $CANNOT_RUN "cannot run here: needs root"
  if [ -e "$STATE" ]; then
    # Jobs first (their steps end with their slurmd), then the daemons: slurmd, slurmctld, munged.
    if [ -e "$CONF" ] && our_pid "$STATE/pid/slurmctld.pid" >/dev/null; then
      SLURM_CONF=$CONF timeout 10 scancel --full --quiet --partition=tz 2>/dev/null || true
    fi
    local f
    for f in "$STATE"/pid/slurmd-*.pid; do
      [ ! -e "$f" ] || stop_daemon "$f"
    done
    stop_daemon "$STATE/pid/slurmctld.pid"
    stop_daemon "$STATE/pid/munged.pid"
    # slurmstepd processes of a step that outlived its slurmd (they name the spool directory).
    local pid
    for pid in $(pgrep -x slurmstepd || true); do
      if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$STATE/" ||
        grep -qzF "SLURM_CONF=$CONF" "/proc/$pid/environ" 2>/dev/null; then
        kill -KILL "$pid" 2>/dev/null || true
      fi
    done
    # The nodes' scratch directories: in each testbed host still up (slurmd ran there), and here.
    local host
    for host in $(sed -n 's/^NodeName=\([^ ]*\) .*/\1/p' "$CONF" 2>/dev/null); do
      [ "$host" != "$(hostname -s)" ] || continue
      TZC_PREFIX=$PREFIX TZC_SUBNET=$SUBNET bash "$HERE/cluster.sh" exec "$host" rm -rf "$NODE_TMP" 2>/dev/null || true
    done
    rm -rf "$NODE_TMP" "$STATE"
  fi
  echo "slurm.sh: down: nothing of the Slurm cluster is left"
}

cmd_status() {
  if [ ! -e "$STATE" ]; then
    echo "slurm.sh: no Slurm cluster of prefix '$PREFIX' is up"
    return 0
  fi
  local f name
  for f in "$STATE"/pid/*.pid; do
    [ -e "$f" ] || continue
    name=$(basename "$f" .pid)
    if pid=$(our_pid "$f"); then echo "$name: running (pid $pid)"; else echo "$name: not running"; fi
  done
  SLURM_CONF=$CONF sinfo -N -o '%N %T %c' 2>&1 || true
}

cmd_env() {
  [ -e "$CONF" ] || die 3 "no Slurm cluster of prefix '$PREFIX' is up (scripts/slurm.sh up first)"
  echo "SLURM_CONF=$CONF"
}

[ $# -ge 1 ] || usage "no command"
command=$1
shift
case $command in
  up) cmd_up "$@" ;;
  down) cmd_down "$@" ;;
  status) cmd_status "$@" ;;
  env) cmd_env "$@" ;;
  *) usage "unknown command '$command'" ;;
esac
