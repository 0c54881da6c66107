# Sourced by scripts that need a throwaway Redis Cluster on loopback (scripts/test with STATUSD_TEST_CLUSTER=1,
# scripts/bench's cluster scenario).
#
# cluster_start DIR [MASTERS]  starts MASTERS (default 3) cluster-enabled redis-servers with their files in DIR, on free
#                              ports at most 55535 (a node's cluster bus listens on port + 10000), joins them with
#                              `redis-cli --cluster create`, waits for cluster_state:ok, and sets:
#   CLUSTER_PORTS  the nodes' ports, space-separated
#   CLUSTER_URL    redis://127.0.0.1:<first port>: the seed to give statusd or the tests
# cluster_stop DIR             stops the nodes started in DIR.

cluster_free_port() {
    python3 - <<'PY'
import socket
while True:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    if port <= 55535:
        b = socket.socket()
        try:
            b.bind(("127.0.0.1", port + 10000))
        except OSError:
            continue
        finally:
            b.close()
        print(port)
        break
PY
}

cluster_start() {
    local dir=$1 masters=${2:-3} port addresses=()
    mkdir -p "$dir"
    CLUSTER_PORTS=""
    for _ in $(seq 1 "$masters"); do
        port=$(cluster_free_port)
        redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --protected-mode no \
            --zset-max-listpack-entries 256 --zset-max-listpack-value 128 --cluster-enabled yes --cluster-config-file "$dir/nodes-$port.conf" --cluster-node-timeout 2000 \
            --daemonize yes --pidfile "$dir/redis-$port.pid" --logfile "$dir/redis-$port.log" --dir "$dir"
        for _ in $(seq 1 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
        CLUSTER_PORTS="$CLUSTER_PORTS $port"
        addresses+=("127.0.0.1:$port")
    done
    CLUSTER_PORTS=${CLUSTER_PORTS# }
    redis_prioritize "$dir"/redis-*.pid
    redis-cli --cluster create "${addresses[@]}" --cluster-replicas 0 --cluster-yes >"$dir/create.log" 2>&1
    for port in $CLUSTER_PORTS; do
        for _ in $(seq 1 100); do
            redis-cli -p "$port" cluster info 2>/dev/null | grep -q "cluster_state:ok" && break
            sleep 0.1
        done
    done
    CLUSTER_URL="redis://127.0.0.1:${CLUSTER_PORTS%% *}"
}

cluster_stop() {
    local dir=$1 pidfile
    for pidfile in "$dir"/redis-*.pid; do
        [ -f "$pidfile" ] && redis_stop "$pidfile"
    done
    return 0
}

# redis_prioritize PIDFILE...: raises those redis-servers' CPU priority (nice -10) where that is allowed (root), and
# leaves them as they are elsewhere. A test lane's Redis is single-threaded and every test and node of the lane waits
# on it: when the lanes of scripts/test start together on a 2-core machine (nodes, Python tools, Chromium), it was
# given too little of a core for seconds at a time, and its replies came after the client's 1.5 s command timeout,
# failing tests (and the fuzz's connects, 503) that had nothing to do with it.
redis_prioritize() {
    local pidfile
    for pidfile in "$@"; do
        if [ -f "$pidfile" ]; then renice -n -10 -p "$(cat "$pidfile")" >/dev/null 2>&1 || true; fi
    done
    return 0
}

# redis_stop PIDFILE: stops that redis-server and waits (at most 5 s) until it has exited: it reopens its log file for
# every line, so its directory can only be removed once it is gone.
redis_stop() {
    local pid
    pid=$(cat "$1" 2>/dev/null) || return 0
    kill "$pid" 2>/dev/null || return 0
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
    return 0
}
