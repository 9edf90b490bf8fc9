#!/usr/bin/env bash
# A local slotlock cluster: 3 redis-server nodes and 3 slotlock replicas on
# loopback, with the demo configuration, their logs merged on stdout (one
# line per log record, prefixed by the replica). Ctrl-C stops everything:
# the replicas first (SIGTERM, as a container runtime does), then Redis.
#
#   deploy/local/run.sh                   # until Ctrl-C
#   deploy/local/run.sh --duration 20s    # a bounded run (used by the test)
#
# Options:
#   --duration D   stop after D (30, 30s, 2m, 1h); default: run until Ctrl-C
#   --config FILE  slotlock configuration (default deploy/local/demo.yaml)
#   --workdir DIR  where binaries, Redis data and logs go (default: a new
#                  temporary directory, kept afterwards so the logs can be read)
#   --bin FILE     use this slotlock binary instead of building ./cmd/slotlock
#
# Needs: bash, go (unless --bin), redis-server (apt-get install redis-server).
# Files in the work directory: replica-N.log (JSON lines), redis-X.log, pids
# ("name pid" per process started), ports, stopping (the time the stop began).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
config=$repo/deploy/local/demo.yaml
duration=""
workdir=""
bin=""

die() { echo "run.sh: $*" >&2; exit 2; }

while [ $# -gt 0 ]; do
  case $1 in
    --duration) [ $# -ge 2 ] || die "--duration needs a value"; duration=$2; shift 2 ;;
    --config) [ $# -ge 2 ] || die "--config needs a value"; config=$2; shift 2 ;;
    --workdir) [ $# -ge 2 ] || die "--workdir needs a value"; workdir=$2; shift 2 ;;
    --bin) [ $# -ge 2 ] || die "--bin needs a value"; bin=$2; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done

# seconds D: a Go-like duration (s, m, h; plain number = seconds) in seconds.
seconds() {
  case $1 in
    *[!0-9smh]*|"") die "bad duration $1 (want e.g. 20s, 2m)" ;;
    *h) echo $(( ${1%h} * 3600 )) ;;
    *m) echo $(( ${1%m} * 60 )) ;;
    *s) echo $(( ${1%s} )) ;;
    *) echo $(( $1 )) ;;
  esac
}
if [ -n "$duration" ]; then
  limit=$(seconds "$duration")
  [ "$limit" -gt 0 ] || die "--duration must be positive"
fi

command -v redis-server >/dev/null || die "redis-server not found; install it: apt-get install -y redis-server"
[ -f "$config" ] || die "no such config file: $config"
config=$(cd "$(dirname "$config")" && pwd)/$(basename "$config")

if [ -z "$workdir" ]; then
  workdir=$(mktemp -d "${TMPDIR:-/tmp}/slotlock-local.XXXXXX")
else
  mkdir -p "$workdir"
  workdir=$(cd "$workdir" && pwd)
fi
mkdir -p "$workdir/bin"
: >"$workdir/pids"

# --- build -----------------------------------------------------------------
if [ -z "$bin" ]; then
  command -v go >/dev/null || die "go not found (or pass --bin)"
  echo "building slotlock into $workdir/bin ..." >&2
  commit=$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)
  (cd "$repo" && CGO_ENABLED=0 go build -trimpath \
    -ldflags "-X github.com/slotlock/slotlock/cmd/cli.version=local -X github.com/slotlock/slotlock/cmd/cli.commit=$commit" \
    -o "$workdir/bin/slotlock" ./cmd/slotlock)
  bin=$workdir/bin/slotlock
else
  [ -x "$bin" ] || die "not an executable: $bin"
  bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
  [ "$bin" = "$workdir/bin/slotlock" ] || cp "$bin" "$workdir/bin/slotlock"
  bin=$workdir/bin/slotlock
fi
# Jobs of the demo run `slotlock version`: put this binary first on PATH.
export PATH="$workdir/bin:$PATH"

# Every background job gets its own process group, so Ctrl-C reaches only
# this script, which then stops the replicas before Redis (instead of the
# terminal signalling all of them at once).
set -m

names=()  # "redis-a" ... "replica-3"
pids=()

record() { names+=("$1"); pids+=("$2"); echo "$1 $2" >>"$workdir/pids"; }

alive() { kill -0 "$1" 2>/dev/null; }

# free_port prints a loopback TCP port that nothing listens on now, chosen
# below the kernel's ephemeral range, so that outgoing connections (the
# replicas' own, or any other program's) cannot take it before it is bound.
read -r eph_lo _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || eph_lo=32768
if [ "$eph_lo" -gt 12000 ]; then port_lo=10000; port_span=$((eph_lo - 10000)); else port_lo=20000; port_span=40000; fi
used_ports=" "
free_port() {
  local p
  for _ in $(seq 200); do
    p=$(( port_lo + (RANDOM * 32768 + RANDOM) % port_span ))
    case $used_ports in *" $p "*) continue ;; esac
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      used_ports="$used_ports$p "
      echo "$p"
      return 0
    fi
  done
  die "no free port found"
}

# ping_redis PORT: true when the server answers PING with PONG.
ping_redis() {
  local reply
  { exec 3<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null || return 1
  printf 'PING\r\n' >&3
  IFS= read -r -t 1 reply <&3 || reply=""
  exec 3<&- 3>&-
  [ "${reply%$'\r'}" = "+PONG" ]
}

# http_ok PORT PATH: true on a 2xx answer.
http_ok() {
  local status
  { exec 3<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null || return 1
  printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' "$2" >&3
  IFS= read -r -t 2 status <&3 || status=""
  exec 3<&- 3>&-
  case $status in "HTTP/1."?" 2"*) return 0 ;; *) return 1 ;; esac
}

stopping=0
failed=0
sleep_pid=""
display_pid=""
awk_pid=""
stop_all() {
  [ "$stopping" = 1 ] && return
  stopping=1
  trap '' INT TERM
  date +%s.%N >"$workdir/stopping"
  echo "stopping: SIGTERM to the replicas ..." >&2
  local i
  for i in "${!names[@]}"; do
    case ${names[$i]} in replica-*) kill -TERM "${pids[$i]}" 2>/dev/null || true ;; esac
  done
  for i in "${!names[@]}"; do
    case ${names[$i]} in
      replica-*)
        local status=0
        wait "${pids[$i]}" || status=$?
        if [ "$status" != 0 ]; then
          echo "${names[$i]} exited with status $status" >&2
          failed=1
        fi ;;
    esac
  done
  # Let the merged display catch up with the replicas' last lines, then
  # stop it: tail by PID, and awk when its input closes.
  if [ -n "$display_pid" ]; then
    sleep 0.5
    kill -TERM "$display_pid" 2>/dev/null || true
    wait "$display_pid" 2>/dev/null || true
  fi
  exec 4>&-
  [ -z "$awk_pid" ] || wait "$awk_pid" 2>/dev/null || true
  [ -z "$sleep_pid" ] || { kill "$sleep_pid" 2>/dev/null || true; wait "$sleep_pid" 2>/dev/null || true; }
  echo "stopping: SIGTERM to Redis ..." >&2
  for i in "${!names[@]}"; do
    case ${names[$i]} in redis-*) kill -TERM "${pids[$i]}" 2>/dev/null || true ;; esac
  done
  for i in "${!names[@]}"; do
    case ${names[$i]} in redis-*) wait "${pids[$i]}" 2>/dev/null || true ;; esac
  done
  echo "stopped; logs in $workdir" >&2
  exit "$failed"
}
trap stop_all INT TERM
# Whatever else ends the script (a failed start, set -e), leave nothing running.
trap 'rc=$?; trap - EXIT; if [ "$stopping" = 0 ]; then for p in "${pids[@]}" $display_pid $sleep_pid; do kill -KILL "$p" 2>/dev/null || true; done; fi; exit $rc' EXIT

# --- Redis -----------------------------------------------------------------
redis_ports=()
for n in a b c; do
  for attempt in 1 2 3; do
    port=$(free_port)
    mkdir -p "$workdir/redis-$n"
    redis-server --bind 127.0.0.1 --port "$port" --dir "$workdir/redis-$n" \
      --save "" --appendonly no --protected-mode no --daemonize no \
      --logfile "$workdir/redis-$n.log" &
    pid=$!
    up=0
    for _ in $(seq 50); do
      if ping_redis "$port"; then up=1; break; fi
      alive "$pid" || break
      sleep 0.1
    done
    if [ "$up" = 1 ]; then
      record "redis-$n" "$pid"
      redis_ports+=("$port")
      break
    fi
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    [ "$attempt" = 3 ] && { echo "redis-$n did not start; see $workdir/redis-$n.log" >&2; exit 1; }
  done
done
nodes="127.0.0.1:${redis_ports[0]},127.0.0.1:${redis_ports[1]},127.0.0.1:${redis_ports[2]}"

# --- replicas ----------------------------------------------------------------
# start_replica N starts replica-N and waits until its /readyz answers; a
# replica whose port was taken meanwhile is started again on another.
http_ports=()
logs=("$workdir/replica-1.log" "$workdir/replica-2.log" "$workdir/replica-3.log")
: >"${logs[0]}"; : >"${logs[1]}"; : >"${logs[2]}"
start_replica() {
  local i=$1 port pid log=$workdir/replica-$1.log
  for attempt in 1 2 3; do
    port=$(free_port)
    SLOTLOCK_CONFIG=$config \
    SLOTLOCK_REPLICA=replica-$i \
    SLOTLOCK_REDIS__NODES=$nodes \
    SLOTLOCK_HTTP__ADDR=127.0.0.1:$port \
    SLOTLOCK_LOG__FORMAT=json \
      "$bin" run >>"$log" 2>&1 &
    pid=$!
    record "replica-$i" "$pid"
    for _ in $(seq 150); do
      if http_ok "$port" /readyz; then
        http_ports+=("$port")
        return 0
      fi
      alive "$pid" || break
      sleep 0.1
    done
    if alive "$pid"; then
      echo "replica-$i did not become ready within 15 s; the end of $log:" >&2
      tail -n 5 "$log" >&2
      failed=1
      stop_all
    fi
    wait "$pid" 2>/dev/null || true
    unset 'names[-1]' 'pids[-1]'
    if [ "$attempt" -lt 3 ] && grep -q "address already in use" "$log"; then
      echo "replica-$i: port $port was taken; trying another" >&2
      continue
    fi
    echo "replica-$i exited during start; the end of $log:" >&2
    tail -n 5 "$log" >&2
    failed=1
    stop_all
  done
}

# Merged logs: every line of every replica, prefixed with its name. tail
# follows the three files (and names each when it switches between them);
# awk ignores Ctrl-C so the last lines still show while the replicas stop.
exec 4> >(trap '' INT; exec awk '
  /^==> .* <==$/ { sub(/^==> /, ""); sub(/ <==$/, ""); sub(/.*\//, ""); sub(/\.log$/, ""); name = $0; next }
  NF == 0 { next }
  { printf "%-9s | %s\n", name, $0; fflush() }')
awk_pid=$!
tail -n +1 -F "${logs[@]}" 2>/dev/null >&4 &
display_pid=$!
record display "$display_pid"

for i in 1 2 3; do
  start_replica "$i"
done
{
  echo "redis ${redis_ports[*]}"
  echo "http ${http_ports[*]}"
} >"$workdir/ports"
echo "cluster up: redis on ${redis_ports[*]}, replicas' /metrics on ${http_ports[*]} (127.0.0.1); logs in $workdir" >&2
echo "up" >"$workdir/up"

# --- run until Ctrl-C, the duration, or a replica dies ----------------------
start=$SECONDS
while :; do
  for i in "${!names[@]}"; do
    if ! alive "${pids[$i]}"; then
      echo "${names[$i]} (pid ${pids[$i]}) exited unexpectedly" >&2
      failed=1
      stop_all
    fi
  done
  if [ -n "$duration" ] && [ $((SECONDS - start)) -ge "$limit" ]; then
    stop_all
  fi
  sleep 0.2 &
  sleep_pid=$!
  wait "$sleep_pid" || true
  sleep_pid=""
done
