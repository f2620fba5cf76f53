#!/usr/bin/env bash
# A throwaway Ceph RADOS Gateway for the tests: a real S3 server that honours conditional writes
# (`If-None-Match: *` on PUT answers 412 when the key exists), which no S3 server on npm does.
# One monitor, one OSD on memstore (objects in memory, nothing on a disk) and radosgw on the beast
# frontend, every file under DIR, every socket on 127.0.0.1, no systemd, auth none. Debian/Ubuntu:
#   apt-get install --no-install-recommends radosgw ceph-mon ceph-osd
#
#   bash scripts/ceph-rgw.sh [start] [DIR]   DIR must be missing or empty (default: mktemp -d)
#   bash scripts/ceph-rgw.sh stop DIR        kills what `start DIR` started and removes DIR
#
# `start` prints `RGW_READY endpoint=http://127.0.0.1:PORT access=KEY secret=KEY dir=DIR` once radosgw
# answers, then stays in the foreground watching: it kills the daemons and removes DIR on SIGTERM,
# SIGINT or SIGHUP, when its parent process goes away (a test runner that crashed leaves nothing
# running) and when one of the daemons dies (with the logs' tail on stderr). Every wait is bounded
# by CEPH_RGW_TIMEOUT seconds (default 180); past it the logs' tail is printed and it gives up.
# Environment: CEPH_RGW_ACCESS_KEY, CEPH_RGW_SECRET_KEY (the S3 user's fixed keys),
# CEPH_RGW_MEMSTORE_BYTES (the capacity the OSD reports, default 256 MiB; memstore keeps every
# object in memory and does not refuse writes past it),
# CEPH_RGW_KEEP=1 (leave DIR behind after a failure, to read the logs).
set -euo pipefail

die() {
  echo "ceph-rgw: $*" >&2
  exit 1
}

# Only the processes whose command line names DIR's ceph.conf are ever killed: a pid in a stale
# pid file may belong to an unrelated process by now.
ours() {
  local cmdline
  cmdline=$(tr '\0' ' ' 2> /dev/null < "/proc/$1/cmdline") || return 1
  [[ $cmdline == *"$2/ceph.conf"* ]]
}

kill_daemons() {
  local dir=$1 pid
  [ -f "$dir/pids" ] || return 0
  # SIGKILL at once: the cluster is thrown away, and a memstore OSD stopped gently first writes
  # every object it holds to its data directory.
  while read -r pid; do
    if ours "$pid" "$dir"; then kill -9 "$pid" 2> /dev/null || true; fi
  done < "$dir/pids"
  for _ in $(seq 50); do
    local alive=0
    while read -r pid; do
      if ours "$pid" "$dir"; then alive=1; fi
    done < "$dir/pids"
    [ "$alive" = 0 ] && return 0
    sleep 0.1
  done
  echo "ceph-rgw: some processes of $dir outlived SIGKILL" >&2
}

if [ "${1:-}" = stop ]; then
  [ -n "${2:-}" ] || die "usage: $0 stop DIR"
  dir=$(cd "$2" 2> /dev/null && pwd) || exit 0
  [ -f "$dir/ceph.conf" ] || die "$dir holds no ceph.conf: not a folder this script made"
  sup=$(cat "$dir/supervisor.pid" 2> /dev/null || true)
  # The supervisor first: its trap kills the daemons and removes DIR, and told last it would see
  # them die and report a failure. Whatever is left after 5 s is killed here.
  if [ -n "$sup" ] && tr '\0' ' ' 2> /dev/null < "/proc/$sup/cmdline" | grep -q ceph-rgw; then
    kill -TERM "$sup" 2> /dev/null || true
    for _ in $(seq 50); do
      kill -0 "$sup" 2> /dev/null || break
      sleep 0.1
    done
  fi
  kill_daemons "$dir"
  rm -rf "$dir"
  exit 0
fi
[ "${1:-}" = start ] && shift

for bin in ceph-mon ceph-osd radosgw radosgw-admin monmaptool ceph; do
  command -v "$bin" > /dev/null ||
    die "$bin is not on PATH: apt-get install --no-install-recommends radosgw ceph-mon ceph-osd"
done

if [ -n "${1:-}" ]; then
  mkdir -p "$1"
  dir=$(cd "$1" && pwd)
  [ -z "$(ls -A "$dir")" ] || die "$dir is not empty: stop removes the folder, so it must be ours alone"
else
  base=${TMPDIR:-/tmp}
  [ "${#base}" -le 50 ] || base=/tmp
  dir=$(mktemp -d "$base/ceph-rgw-XXXXXX")
fi
# The admin sockets live under DIR and a Unix socket's path is at most 107 bytes.
[ "${#dir}" -le 70 ] || die "$dir is too long a path for the daemons' admin sockets"

timeout_s=${CEPH_RGW_TIMEOUT:-180}
deadline=$((SECONDS + timeout_s))
access=${CEPH_RGW_ACCESS_KEY:-KCACHETESTACCESSKEY0}
secret=${CEPH_RGW_SECRET_KEY:-kcacheTestSecretKey0000000000000000000000}
conf=$dir/ceph.conf
mkdir -p "$dir/log" "$dir/run" "$dir/mon.a" "$dir/osd.0" "$dir/rgw.a"
echo $$ > "$dir/supervisor.pid"
: > "$dir/pids"

tail_logs() {
  local f
  for f in "$dir"/log/*; do
    [ -s "$f" ] || continue
    echo "==> $f <==" >&2
    tail -n 25 "$f" >&2
  done
}

ready=0
cleanup() {
  trap - EXIT INT TERM HUP
  kill_daemons "$dir"
  if [ "$ready" = 0 ] && [ "${CEPH_RGW_KEEP:-}" = 1 ]; then
    echo "ceph-rgw: kept $dir" >&2
  else
    rm -rf "$dir"
  fi
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
trap 'exit 129' HUP

fail() {
  echo "ceph-rgw: $*" >&2
  tail_logs
  exit 1
}

daemons_alive() {
  local pid
  while read -r pid; do
    ours "$pid" "$dir" || fail "$(cat "$dir/run/$pid.cmd" 2> /dev/null) (pid $pid) died"
  done < "$dir/pids"
}

# Waits for the command to succeed, polling, until the shared deadline; fails at once should a
# daemon die meanwhile (a port taken by another process, say).
wait_for() {
  local what=$1
  shift
  until "$@" > /dev/null 2>&1; do
    daemons_alive
    [ "$SECONDS" -lt "$deadline" ] || fail "gave up after ${timeout_s}s waiting for $what"
    sleep 0.5
  done
}

# A port no socket uses now, in any state, below the kernel's range for outgoing connections: a
# port of that range may be a connection's local end at any moment (one in TIME_WAIT included),
# and the monitor cannot bind it then. The daemons bind the port a moment later: another process
# could take it in between, and then the daemon dies, which the waits report at once.
used_ports=" "
free_port() {
  local port used first last min max
  read -r first last < /proc/sys/net/ipv4/ip_local_port_range
  if [ "$first" -gt 12000 ]; then
    min=10000 max=$((first - 1))
  else
    min=$((last + 1)) max=65535
  fi
  used=$({ ss -Htan 2> /dev/null || true; } | awk '{print $4}' | sed 's/.*://' | sort -u | tr '\n' ' ')
  for _ in $(seq 200); do
    port=$((min + RANDOM % (max - min + 1)))
    case " $used $used_ports " in *" $port "*) continue ;; esac
    if (: < "/dev/tcp/127.0.0.1/$port") 2> /dev/null; then continue; fi
    used_ports="$used_ports$port "
    echo "$port"
    return 0
  done
  fail "found no free port"
}

start_daemon() {
  local name=$1
  shift
  "$@" >> "$dir/log/$name.out" 2>&1 &
  echo $! >> "$dir/pids"
  echo "$name" > "$dir/run/$!.cmd"
  # Killed on purpose at the end: bash need not report it.
  disown $!
}

mon_v2=$(free_port)
mon_v1=$(free_port)
rgw_port=$(free_port)
fsid=$(cat /proc/sys/kernel/random/uuid)
cat > "$conf" << EOF
[global]
fsid = $fsid
mon initial members = a
mon host = [v2:127.0.0.1:$mon_v2,v1:127.0.0.1:$mon_v1]
public addr = 127.0.0.1
cluster addr = 127.0.0.1
ms bind ipv6 = false
auth cluster required = none
auth service required = none
auth client required = none
keyring = $dir/keyring
run dir = $dir/run
admin socket = $dir/run/\$name.asok
log file = $dir/log/\$name.log
pid file = $dir/run/\$name.pid
crash dir = $dir/crash
log to stderr = false
err to stderr = true
ms async op threads = 2
# One OSD holds every object once: size 1, placement across OSDs rather than hosts, few PGs (radosgw
# makes about eight pools; 32 PGs each would pass the per-OSD limit and its pool creation fails).
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
mon max pg per osd = 1000
mon warn on pool no redundancy = false
# A runner's nearly full disk must not stop the monitor: its store is small and thrown away.
mon data avail crit = 0
mon data avail warn = 0
# radosgw creates its pools one after another at startup, each a monitor proposal: at the default
# 1 s interval between proposals it answers after about 13 s, at 0.05 s after 2 to 4 s.
paxos propose interval = 0.05
paxos min wait = 0.01

[mon.a]
mon data = $dir/mon.a

[osd.0]
osd data = $dir/osd.0
osd objectstore = memstore
memstore device bytes = ${CEPH_RGW_MEMSTORE_BYTES:-268435456}
osd op num shards = 1
osd op num threads per shard = 2

[client.rgw.a]
# radosgw's built-in default is secure alone, which auth none cannot give: it would never connect.
ms mon client mode = crc secure
rgw data = $dir/rgw.a
rgw frontends = beast endpoint=127.0.0.1:$rgw_port
rgw thread pool size = 32
EOF
: > "$dir/keyring"

ceph_cli() {
  timeout 20 ceph -c "$conf" --connect-timeout 15 "$@"
}

monmaptool --create --fsid "$fsid" --addv a "[v2:127.0.0.1:$mon_v2,v1:127.0.0.1:$mon_v1]" \
  "$dir/monmap" > "$dir/log/monmaptool.out" 2>&1 || fail "monmaptool failed"
ceph-mon -c "$conf" --mkfs -i a --monmap "$dir/monmap" > "$dir/log/mon-mkfs.out" 2>&1 ||
  fail "ceph-mon --mkfs failed"
start_daemon mon.a ceph-mon -f -c "$conf" -i a
wait_for "the monitor" ceph_cli mon stat

osd_uuid=$(cat /proc/sys/kernel/random/uuid)
osd_id=$(ceph_cli osd new "$osd_uuid" 2> "$dir/log/osd-new.out") || fail "ceph osd new failed"
[ "$osd_id" = 0 ] || fail "ceph osd new gave id '$osd_id', not 0"
ceph-osd -c "$conf" -i 0 --mkfs --osd-uuid "$osd_uuid" > "$dir/log/osd-mkfs.out" 2>&1 ||
  fail "ceph-osd --mkfs failed"
start_daemon osd.0 ceph-osd -f -c "$conf" -i 0
osd_up() {
  ceph_cli osd stat -f json | grep -q '"num_up_osds":1'
}
wait_for "the OSD" osd_up

start_daemon rgw.a radosgw -f -c "$conf" -n client.rgw.a
# An anonymous GET / (the bucket list) answers 200 once radosgw has its pools and serves.
rgw_answers() {
  timeout 5 bash -c 'exec 3<> "/dev/tcp/127.0.0.1/$1" &&
    printf "GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n" >&3 && head -n 1 <&3 | grep -q " 200 "' _ "$rgw_port"
}
wait_for "radosgw" rgw_answers
timeout 60 radosgw-admin -c "$conf" user create --uid=kcache --display-name=kcache \
  --access-key="$access" --secret-key="$secret" > "$dir/log/user-create.out" 2>&1 ||
  fail "radosgw-admin user create failed"

ready=1
echo "RGW_READY endpoint=http://127.0.0.1:$rgw_port access=$access secret=$secret dir=$dir"

# Watch: stop with the parent (a crashed runner leaves nothing running) or when a daemon dies.
parent=$PPID
while :; do
  cur_parent=$(awk '/^PPid:/ {print $2}' "/proc/$$/status")
  [ "$cur_parent" = "$parent" ] || exit 0
  daemons_alive
  # Backgrounded so that a signal's trap runs at once rather than after the sleep.
  sleep 2 &
  wait $! || true
done
