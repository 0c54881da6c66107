# Sourced by the scripts that test a running statusd (test-openapi, test-browser, check-dashboard).
#
# live_start starts a throwaway redis-server and a statusd node on free ports, both stopped (and their directory
# removed) when the sourcing script exits, and sets:
#   LIVE_URL        http://127.0.0.1:<port> of statusd
#   LIVE_ADMIN_KEY  its admin key
#   LIVE_REDIS_PORT the port of its redis-server
#   LIVE_DIR        a scratch directory (logs: $LIVE_DIR/statusd.log, $LIVE_DIR/redis.log)
# The binary is $STATUSD_BIN, else .build/debug/statusd, built first when missing.
#
# tools_python installs the given PyPI packages into a virtualenv kept at $STATUSD_TOOLS_VENV (default .venv-tools,
# ignored by git) and sets TOOLS_PYTHON to its interpreter.

# redis_prioritize (the live checks' Redis runs at a higher CPU priority where allowed, as the suite's does).
source "$(dirname "${BASH_SOURCE[0]}")/redis-cluster.sh"

live_free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

live_stop() {
    if [ -n "${LIVE_STATUSD_PID:-}" ] && kill -0 "$LIVE_STATUSD_PID" 2>/dev/null; then
        kill -TERM "$LIVE_STATUSD_PID" 2>/dev/null || true
        for _ in $(seq 1 100); do kill -0 "$LIVE_STATUSD_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$LIVE_STATUSD_PID" 2>/dev/null || true
    fi
    if [ -n "${LIVE_DIR:-}" ] && [ -f "$LIVE_DIR/redis.pid" ]; then
        local redis_pid
        redis_pid=$(cat "$LIVE_DIR/redis.pid")
        kill "$redis_pid" 2>/dev/null || true
        # redis-server reopens its log file for every line: removing the directory while it logs its shutdown fails.
        for _ in $(seq 1 50); do kill -0 "$redis_pid" 2>/dev/null || break; sleep 0.1; done
    fi
    if [ -n "${LIVE_DIR:-}" ] && [ -z "${LIVE_KEEP:-}" ]; then rm -rf "$LIVE_DIR"; fi
}

live_start() {
    local bin=${STATUSD_BIN:-.build/debug/statusd}
    if [ ! -x "$bin" ]; then
        echo "building statusd (debug)"
        swift build --product statusd
        bin=.build/debug/statusd
    fi
    LIVE_DIR=$(mktemp -d)
    trap live_stop EXIT
    local redis_port statusd_port
    redis_port=$(live_free_port)
    redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no --daemonize yes \
        --zset-max-listpack-entries 256 --zset-max-listpack-value 128 \
        --pidfile "$LIVE_DIR/redis.pid" --logfile "$LIVE_DIR/redis.log" --dir "$LIVE_DIR"
    for _ in $(seq 1 50); do
        redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break
        sleep 0.1
    done
    redis_prioritize "$LIVE_DIR/redis.pid"
    statusd_port=$(live_free_port)
    LIVE_ADMIN_KEY="admin-$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
    LIVE_URL="http://127.0.0.1:$statusd_port"
    "$bin" --host 127.0.0.1 --port "$statusd_port" --redis-url "redis://127.0.0.1:$redis_port" \
        --admin-key "$LIVE_ADMIN_KEY" --log-level warning >"$LIVE_DIR/statusd.log" 2>&1 &
    LIVE_STATUSD_PID=$!
    for _ in $(seq 1 100); do
        if python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)' "$LIVE_URL/readyz" 2>/dev/null; then
            LIVE_REDIS_PORT=$redis_port
            export LIVE_URL LIVE_ADMIN_KEY LIVE_DIR LIVE_REDIS_PORT
            return 0
        fi
        kill -0 "$LIVE_STATUSD_PID" 2>/dev/null || break
        sleep 0.1
    done
    echo "statusd did not become ready:" >&2
    tail -20 "$LIVE_DIR/statusd.log" >&2
    return 1
}

tools_python() {
    local venv=${STATUSD_TOOLS_VENV:-.venv-tools}
    if [ ! -x "$venv/bin/python" ]; then
        python3 -m venv "$venv"
    fi
    local missing=()
    for package in "$@"; do
        "$venv/bin/python" -m pip show -q "$package" >/dev/null 2>&1 || missing+=("$package")
    done
    if [ "${#missing[@]}" -gt 0 ]; then
        echo "installing into $venv: ${missing[*]}"
        "$venv/bin/python" -m pip install -q --disable-pip-version-check "${missing[@]}"
    fi
    TOOLS_PYTHON="$venv/bin/python"
}
