#!/usr/bin/env bash
# The testbed's shaped links carry what --link says (CTest, labels cluster and mpi). Usage:
#   bandwidth_test.sh CLUSTER_SH PYTHON TCP_STREAM_PY RATE_MBIT SECONDS
# Two hosts with --link RATE_MBITmbit; one TCP stream each way between them (tcp_stream.py, timed at
# the receiver) must measure within 15% of the setting. TCP/IP and Ethernet headers take about 4.4%
# of a 1500-byte frame, so the payload rate sits a few percent under the setting; an unshaped link on
# one machine carries several times more, so a shaper that did not act fails here.
# Exits 77 (skipped) where this machine cannot host the testbed (no root, no network namespaces).
set -uo pipefail
cluster=$1 python=$2 stream=$3 rate=$4 seconds=$5
fail() {
  echo "FAIL: $*"
  exit 1
}
trap 'bash "$cluster" down >/dev/null 2>&1' EXIT
bash "$cluster" down >/dev/null 2>&1
up_out=$(bash "$cluster" up 2 --link "${rate}mbit" 2>&1)
rc=$?
echo "$up_out"
[ $rc -ne 77 ] || { echo "SKIP: $up_out"; exit 77; }
[ $rc -eq 0 ] || fail "cluster.sh up exited $rc"
log=$(mktemp)
trap 'bash "$cluster" down >/dev/null 2>&1; rm -f "$log"' EXIT
for pair in "1 2" "2 1"; do
  read -r from to <<<"$pair"
  bash "$cluster" exec tzc-host$to "$python" "$stream" receive 10.213.47.$to 5201 >"$log" 2>&1 &
  receiver=$!
  bash "$cluster" exec tzc-host$from "$python" "$stream" send 10.213.47.$to 5201 "$seconds" ||
    fail "sending from tzc-host$from to tzc-host$to failed"
  wait $receiver || fail "receiving on tzc-host$to failed: $(cat "$log")"
  measured=$(awk '/^goodput/ {print $2}' "$log")
  [ -n "$measured" ] || fail "no measurement from tzc-host$to: $(cat "$log")"
  awk -v m="$measured" -v r="$rate" 'BEGIN { exit !(m >= 0.85 * r && m <= 1.15 * r) }' ||
    fail "tzc-host$from -> tzc-host$to: $measured Mbit/s, not within 15% of the link's $rate Mbit/s"
  echo "ok: tzc-host$from -> tzc-host$to: $(cat "$log") on a ${rate} Mbit/s link"
done
echo "PASS"
