#!/usr/bin/env bash
# A cluster in a box: N hosts on this one machine, each a network namespace with its own hostname (a
# UTS namespace), its own /dev/shm (a mount namespace) and an address on a shared Linux bridge, so an
# MPI job spans real hosts: Open MPI
# starts a daemon inside each host, ranks of one host talk through shared memory and ranks of
# different hosts over TCP through the bridge, and tierzero sees the hostnames a cluster would give it.
#
#   scripts/cluster.sh up N [--link RATE] [--delay TIME] [--ranks-per-host K]
#       N hosts tzc-host1..tzc-hostN (1-64) at 10.213.47.1..N/24 on the bridge tzc-br, whose root
#       namespace side is 10.213.47.254 (mpirun runs there). --link RATE (tc's units: 300mbit, 10Gbit)
#       shapes each host's link in both directions with a token bucket (tbf); --delay TIME (50us, 2ms)
#       adds a one-way delay between hosts (netem on each host's outgoing side; fails with one line if
#       the kernel has no sch_netem); K (default 2) slots per host in the hostfile.
#   scripts/cluster.sh run -np K CMD...   an MPI program over the hosts (mpirun with the testbed's
#       hostfile, rsh agent and TCP restricted to the bridge's subnet)
#   scripts/cluster.sh exec HOST CMD...   a command inside one host (its network, hostname, /dev/shm)
#   scripts/cluster.sh status             what exists: bridge, hosts, addresses, shaping, processes
#   scripts/cluster.sh down               removes everything any `up` made, also after a failed or
#                                         partial one; idempotent
#   scripts/cluster.sh mpirun-args        the mpirun options `run` uses, one per line
#
# State lives in /run/tzc: `hostfile` (tzc-hostI slots=K), `agent` (Open MPI's plm_rsh_agent: it gets
# HOST CMD... and runs CMD in that host's namespaces), `uts/HOST` (the bind-mounted UTS namespace that
# holds the hostname; no process is kept alive for it), `mnt/HOST` (the host's mount namespace, whose
# /dev/shm is a tmpfs of its own, so shared memory cannot reach across hosts), `link_rate` and `delay`.
# TZC_PREFIX (default tzc) and TZC_SUBNET (default 10.213.47) name another testbed, so that two can be
# up at once (each with its own names, subnet and state directory /run/PREFIX).
# Exit codes: 0 done, 1 a command failed, 2 bad usage, 3 no testbed is up (run/exec), 77 this
# machine cannot host the testbed (not root, no network namespaces, a tool missing): tests skip on it.
set -euo pipefail

readonly PREFIX=${TZC_PREFIX:-tzc}
readonly BRIDGE=${PREFIX}-br
readonly SUBNET=${TZC_SUBNET:-10.213.47}
readonly ROOT_ADDR=${SUBNET}.254
readonly STATE=/run/${PREFIX}
readonly NETNS_DIR=/run/netns
readonly MAX_HOSTS=64
readonly CANNOT_RUN=77

die() {  # die CODE MESSAGE: one line on stderr
  echo "cluster.sh: $2" >&2
  exit "$1"
}
usage() { die 2 "$1 (usage: cluster.sh up N [--link RATE] [--delay TIME] [--ranks-per-host K] | down | status | exec HOST CMD... | run -np K CMD... | mpirun-args)"; }
# Runs a command; on failure names it and fails (set -e alone would not say which one).
must() {
  local out
  if ! out=$("$@" 2>&1); then
    die 1 "'$*' failed: ${out//$'\n'/ }"
  fi
}
# Interface names hold at most 15 characters (PREFIX-v64p), and the subnet is a /24's first three octets.
[[ $PREFIX =~ ^[a-z][a-z0-9]{0,5}$ ]] || { echo "cluster.sh: TZC_PREFIX '$PREFIX': not 1-6 lower-case letters and digits, starting with a letter" >&2; exit 2; }
[[ $SUBNET =~ ^([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})$ ]] && [ "${BASH_REMATCH[1]}" -le 255 ] &&
  [ "${BASH_REMATCH[2]}" -le 255 ] && [ "${BASH_REMATCH[3]}" -le 255 ] ||
  { echo "cluster.sh: TZC_SUBNET '$SUBNET': not the first three octets of an IPv4 /24 (e.g. 10.213.47)" >&2; exit 2; }
host_name() { echo "${PREFIX}-host$1"; }
host_veth() { echo "${PREFIX}-v$1"; }       # root-namespace end of host I's link (on the bridge)
host_peer() { echo "${PREFIX}-v$1p"; }      # the other end, renamed eth0 inside the host
our_hosts() {  # the hosts that exist now, in order
  [ -d "$NETNS_DIR" ] || return 0
  local f
  for f in "$NETNS_DIR"/${PREFIX}-host*; do
    if [ -e "$f" ]; then basename "$f"; fi
  done | sort -V
}

# Root, network and UTS namespaces and the tools, or one line and exit 77.
check_machine() {
  [ "$(id -u)" -eq 0 ] || die $CANNOT_RUN "cannot run here: needs root (network namespaces, bridges, tc)"
  local tool
  for tool in ip tc nsenter unshare mount umount; do
    command -v "$tool" >/dev/null || die $CANNOT_RUN "cannot run here: '$tool' is not installed"
  done
  [ -e /proc/self/ns/net ] && [ -e /proc/self/ns/uts ] ||
    die $CANNOT_RUN "cannot run here: the kernel has no network or UTS namespaces (/proc/self/ns)"
  unshare --net --uts --mount true 2>/dev/null ||
    die $CANNOT_RUN "cannot run here: creating network, UTS and mount namespaces is not permitted (unshare --net --uts --mount)"
  ip link add ${PREFIX}-probe type bridge 2>/dev/null ||
    die $CANNOT_RUN "cannot run here: creating a Linux bridge is not permitted (ip link add type bridge)"
  ip link del ${PREFIX}-probe
}

# tc's rate units, to bits per second (for the token bucket's burst).
rate_bits_per_s() {
  local r=${1,,} n unit
  [[ $r =~ ^([0-9]+(\.[0-9]+)?)(bit|kbit|mbit|gbit|tbit)$ ]] ||
    usage "--link '$1': not a rate (a number and bit, kbit, mbit, gbit or tbit, e.g. 300mbit, 10Gbit)"
  n=${BASH_REMATCH[1]} unit=${BASH_REMATCH[3]}
  local mult=1
  case $unit in kbit) mult=1000 ;; mbit) mult=1000000 ;; gbit) mult=1000000000 ;; tbit) mult=1000000000000 ;; esac
  awk -v n="$n" -v m="$mult" 'BEGIN { printf "%.0f", n * m }'
}

# Token bucket on one device: the burst holds 4 ms at the rate (at least 64 KiB, so a GSO super-packet
# is not split into a trickle), the queue holds 20 ms.
shape() {  # shape DEV NETNS|"" RATE BITS_PER_S DELAY|""
  local dev=$1 ns=$2 rate=$3 bps=$4 delay=$5
  local burst=$((bps / 8 / 250))
  [ "$burst" -ge 65536 ] || burst=65536
  local tc=(tc)
  [ -z "$ns" ] || tc=(ip netns exec "$ns" tc)
  if [ -n "$rate" ]; then
    must "${tc[@]}" qdisc add dev "$dev" root handle 1: tbf rate "$rate" burst "$burst" latency 20ms
    [ -z "$delay" ] || must "${tc[@]}" qdisc add dev "$dev" parent 1:1 handle 10: netem delay "$delay"
  elif [ -n "$delay" ]; then
    must "${tc[@]}" qdisc add dev "$dev" root handle 1: netem delay "$delay"
  fi
}

# netem is a kernel module (sch_netem); without it `tc ... netem` fails with "unknown qdisc".
check_netem() {
  if ! tc qdisc add dev "$BRIDGE" root netem delay "$1" 2>/dev/null; then
    command -v modprobe >/dev/null && modprobe sch_netem 2>/dev/null || true
    tc qdisc add dev "$BRIDGE" root netem delay "$1" 2>/dev/null ||
      die 1 "--delay $1: this kernel has no netem qdisc (module sch_netem missing), so delays cannot be emulated"
  fi
  must tc qdisc del dev "$BRIDGE" root
}

write_agent() {
  cat >"$STATE/agent" <<EOF
#!/usr/bin/env bash
# Open MPI's rsh agent for the tzc testbed (scripts/cluster.sh): AGENT [OPTIONS] HOST CMD... runs CMD
# with a shell inside HOST's network and UTS namespaces, as ssh would run it on a real host.
set -euo pipefail
while [ \$# -gt 0 ] && [ "\${1#-}" != "\$1" ]; do shift; done  # ssh-style options: nothing to do here
[ \$# -ge 2 ] || { echo "tzc agent: usage: agent HOST CMD..." >&2; exit 2; }
host=\$1
shift
[ -e "$NETNS_DIR/\$host" ] && [ -e "$STATE/uts/\$host" ] && [ -e "$STATE/mnt/\$host" ] ||
  { echo "tzc agent: no testbed host '\$host' (scripts/cluster.sh status)" >&2; exit 1; }
exec nsenter --net="$NETNS_DIR/\$host" --uts="$STATE/uts/\$host" --mount="$STATE/mnt/\$host" -- /bin/sh -c "\$*"
EOF
  chmod 755 "$STATE/agent"
}

cmd_up() {
  [ $# -ge 1 ] || usage "up: how many hosts?"
  local n=$1 rate="" delay="" slots=2 bps=0
  shift
  [[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le $MAX_HOSTS ] ||
    usage "up: host count '$n' is not a whole number in [1, $MAX_HOSTS]"
  while [ $# -gt 0 ]; do
    [ $# -ge 2 ] || usage "up: $1 needs a value"
    case $1 in
      --link) rate=$2 bps=$(rate_bits_per_s "$2") ;;
      --delay)
        [[ ${2,,} =~ ^[0-9]+(\.[0-9]+)?(s|ms|us|usec|msec|sec)$ ]] ||
          usage "--delay '$2': not a time (a number and s, ms or us, e.g. 50us)"
        delay=$2
        ;;
      --ranks-per-host)
        [[ $2 =~ ^[0-9]+$ ]] && [ "$2" -ge 1 ] && [ "$2" -le 1024 ] ||
          usage "--ranks-per-host '$2': not a whole number in [1, 1024]"
        slots=$2
        ;;
      *) usage "up: unknown option '$1'" ;;
    esac
    shift 2
  done
  check_machine
  if [ -e "$STATE" ] || ip link show "$BRIDGE" >/dev/null 2>&1 || [ -n "$(our_hosts)" ]; then
    die 1 "a testbed is already up (scripts/cluster.sh status); run scripts/cluster.sh down first"
  fi
  if ip -4 addr show | grep -q "inet ${SUBNET//./\\.}\."; then
    die 1 "the subnet ${SUBNET}.0/24 is already in use on this machine: $(ip -4 -o addr show | grep "inet ${SUBNET//./\\.}\." | awk '{print $2}' | head -1)"
  fi
  # From here on, a failure removes whatever was made.
  trap 'status=$?; [ $status -eq 0 ] || (cmd_down >/dev/null 2>&1) || true; exit $status' EXIT
  must mkdir -p "$STATE/uts" "$STATE/mnt" "$NETNS_DIR"
  # A mount namespace kept on a file needs a private parent mount (as ip netns makes /run/netns).
  must mount --bind "$STATE/mnt" "$STATE/mnt"
  must mount --make-private "$STATE/mnt"
  must ip link add "$BRIDGE" type bridge
  must ip addr add "$ROOT_ADDR/24" dev "$BRIDGE"
  must ip link set "$BRIDGE" up
  [ -z "$delay" ] || check_netem "$delay"
  local i host veth peer
  for ((i = 1; i <= n; i++)); do
    host=$(host_name "$i") veth=$(host_veth "$i") peer=$(host_peer "$i")
    must ip netns add "$host"
    must touch "$STATE/uts/$host"
    must unshare --uts="$STATE/uts/$host" hostname "$host"
    # Its own /dev/shm: on a real cluster a segment one host creates cannot be opened on another.
    # Slave propagation: mounts made later in the root namespace still show inside the host.
    must touch "$STATE/mnt/$host"
    must unshare --mount="$STATE/mnt/$host" --propagation slave mount -t tmpfs -o mode=1777 "$host-shm" /dev/shm
    must ip link add "$veth" type veth peer name "$peer"
    must ip link set "$peer" netns "$host"
    must ip netns exec "$host" ip link set "$peer" name eth0
    must ip netns exec "$host" ip addr add "$SUBNET.$i/24" dev eth0
    must ip netns exec "$host" ip link set eth0 up
    must ip netns exec "$host" ip link set lo up
    must ip link set "$veth" master "$BRIDGE"
    must ip link set "$veth" up
    # Both directions: out of the host (its eth0), into the host (the bridge side).
    shape eth0 "$host" "$rate" "$bps" "$delay"
    shape "$veth" "" "$rate" "$bps" ""
    echo "$host slots=$slots" >>"$STATE/hostfile"
  done
  write_agent
  echo "$rate" >"$STATE/link_rate"
  echo "$delay" >"$STATE/delay"
  # Every host's link is up (carrier on both ends) before `up` says it is done.
  for ((i = 1; i <= n; i++)); do
    local tries=0
    until ip netns exec "$(host_name "$i")" ip -o link show eth0 | grep -q 'state UP'; do
      tries=$((tries + 1))
      [ $tries -lt 50 ] || die 1 "host $(host_name "$i"): eth0 is not up after 5 s"
      sleep 0.1
    done
  done
  trap - EXIT
  echo "cluster.sh: up: $n hosts ($(host_name 1)..$(host_name "$n"), $SUBNET.1-$n), $slots slots each," \
    "link ${rate:-unshaped}${delay:+, delay $delay}; hostfile $STATE/hostfile"
}

cmd_down() {
  [ $# -eq 0 ] || usage "down takes no arguments"
  [ "$(id -u)" -eq 0 ] || die $CANNOT_RUN "cannot run here: needs root"
  local host pid failed=0
  for host in $(our_hosts); do
    # Whatever still runs inside the host (daemons of a killed job) would keep its namespace alive.
    for pid in $(ip netns pids "$host" 2>/dev/null); do
      kill -KILL "$pid" 2>/dev/null || true
    done
    ip netns del "$host" 2>/dev/null || { echo "cluster.sh: down: ip netns del $host failed" >&2; failed=1; }
  done
  local link
  for link in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | grep "^${PREFIX}-" || true); do
    ip link del "$link" 2>/dev/null || ! ip link show "$link" >/dev/null 2>&1 ||
      { echo "cluster.sh: down: ip link del $link failed" >&2; failed=1; }
  done
  local f
  for f in "$STATE"/mnt/* "$STATE"/uts/* "$STATE/mnt"; do
    while grep -q " $f " /proc/self/mountinfo; do
      umount "$f" 2>/dev/null || { echo "cluster.sh: down: umount $f failed" >&2; failed=1; break; }
    done
  done
  rm -rf "$STATE" || failed=1
  [ $failed -eq 0 ] || die 1 "down: some parts could not be removed (above)"
  echo "cluster.sh: down: nothing of the testbed is left"
}

cmd_status() {
  local hosts
  hosts=$(our_hosts)
  if [ -z "$hosts" ] && ! ip link show "$BRIDGE" >/dev/null 2>&1 && [ ! -e "$STATE" ]; then
    echo "cluster.sh: no testbed is up"
    return 0
  fi
  echo "bridge: $(ip -4 -o addr show dev "$BRIDGE" 2>/dev/null | awk '{print $2, $4}' || echo missing)"
  echo "link: $(cat "$STATE/link_rate" 2>/dev/null || true) delay: $(cat "$STATE/delay" 2>/dev/null || true)"
  local host
  for host in $hosts; do
    local name addr pids
    name=$(nsenter --uts="$STATE/uts/$host" hostname 2>/dev/null || echo "?")
    addr=$(ip netns exec "$host" ip -4 -o addr show dev eth0 2>/dev/null | awk '{print $4}')
    pids=$(ip netns pids "$host" 2>/dev/null | tr '\n' ' ')
    echo "host $host: hostname $name, eth0 ${addr:-none}, processes: ${pids:-none}"
    ip netns exec "$host" tc qdisc show dev eth0 2>/dev/null | sed 's/^/  out: /'
  done
  [ ! -e "$STATE/hostfile" ] || { echo "hostfile $STATE/hostfile:"; sed 's/^/  /' "$STATE/hostfile"; }
}

require_up() {
  [ -e "$STATE/hostfile" ] && [ -e "$STATE/agent" ] ||
    die 3 "no testbed is up (scripts/cluster.sh up N first)"
}

# The mpirun options of a run over the testbed: its hosts, its agent, daemons started one by one from
# here (no tree spawn: the agent runs in the root namespace), and Open MPI's TCP (ranks and daemons)
# on the bridge's subnet only, shared memory within a host.
mpirun_args() {
  printf '%s\n' --hostfile "$STATE/hostfile" --allow-run-as-root --bind-to none \
    --mca plm_rsh_agent "$STATE/agent" --mca plm_rsh_no_tree_spawn 1 \
    --mca pml ob1 --mca btl self,vader,tcp --mca btl_vader_single_copy_mechanism none \
    --mca btl_tcp_if_include "$SUBNET.0/24" --mca oob_tcp_if_include "$SUBNET.0/24"
}

cmd_run() {
  [ $# -ge 3 ] && [ "$1" = -np ] || usage "run -np K CMD..."
  [[ $2 =~ ^[0-9]+$ ]] && [ "$2" -ge 1 ] || usage "run: -np '$2' is not a positive whole number"
  require_up
  local np=$2
  shift 2
  local args
  mapfile -t args < <(mpirun_args)
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 exec mpirun "${args[@]}" -np "$np" "$@"
}

cmd_exec() {
  [ $# -ge 2 ] || usage "exec HOST CMD..."
  require_up
  local host=$1
  shift
  [ -e "$NETNS_DIR/$host" ] && [ -e "$STATE/uts/$host" ] && [ -e "$STATE/mnt/$host" ] ||
    die 2 "exec: no testbed host '$host' (hosts: $(our_hosts | tr '\n' ' '))"
  exec nsenter --net="$NETNS_DIR/$host" --uts="$STATE/uts/$host" --mount="$STATE/mnt/$host" -- "$@"
}

[ $# -ge 1 ] || usage "no command"
command=$1
shift
case $command in
  up) cmd_up "$@" ;;
  down) cmd_down "$@" ;;
  status) cmd_status "$@" ;;
  run) cmd_run "$@" ;;
  exec) cmd_exec "$@" ;;
  mpirun-args)
    require_up
    mpirun_args
    ;;
  *) usage "unknown command '$command'" ;;
esac
