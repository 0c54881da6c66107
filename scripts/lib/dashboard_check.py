"""Checks that every metric the Grafana dashboard (deploy/grafana-dashboard.json) queries is one a running statusd
serves at /metrics; run by scripts/check-dashboard, which starts statusd and Redis.

Metrics are exported once first used, so the node is put through what makes each of them appear: a WebSocket device,
a status change delivered to it, a webhook delivered, a call refused by the rate limit, and last Redis going away
(requests answered 503, the client's disconnects). Prints "ok"/"FAIL" lines and exits non-zero on any failure.
"""

import argparse
import base64
import http.server
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

parser = argparse.ArgumentParser()
parser.add_argument("--url", required=True)
parser.add_argument("--admin-key", required=True)
parser.add_argument("--redis-port", type=int, required=True)
parser.add_argument("--dashboard", default="deploy/grafana-dashboard.json")
args = parser.parse_args()
BASE = args.url.rstrip("/")

# PromQL words that are not metric names: functions, aggregations, keywords, Grafana's variables.
PROMQL_WORDS = {
    "sum", "avg", "min", "max", "count", "stddev", "stdvar", "topk", "bottomk", "quantile", "count_values", "group",
    "rate", "irate", "increase", "delta", "idelta", "deriv", "predict_linear", "histogram_quantile", "abs", "ceil",
    "floor", "round", "clamp", "clamp_min", "clamp_max", "label_replace", "label_join", "vector", "scalar", "time",
    "absent", "changes", "resets", "avg_over_time", "max_over_time", "min_over_time", "sum_over_time",
    "count_over_time", "by", "without", "on", "ignoring", "group_left", "group_right", "offset", "bool", "and", "or",
    "unless", "label_values", "le", "inf", "nan",
}


def referenced_metrics(dashboard):
    expressions = []

    def walk(value):
        if isinstance(value, dict):
            for key, item in value.items():
                if key in ("expr", "definition") and isinstance(item, str):
                    expressions.append(item)
                elif key == "query" and isinstance(item, str) and "(" in item:
                    expressions.append(item)
                else:
                    walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(dashboard)
    names = set()
    for expr in expressions:
        text = re.sub(r'"(?:[^"\\]|\\.)*"', "", expr)  # strings
        text = re.sub(r"\{[^}]*\}", "", text)  # label matchers
        text = re.sub(r"\[[^\]]*\]", "", text)  # ranges
        text = re.sub(r"\b(by|without|on|ignoring)\s*\([^)]*\)", "", text)  # grouping labels
        text = re.sub(r"\$\w+", "", text)  # Grafana variables
        for token in re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*", text):
            if token.lower() not in PROMQL_WORDS:
                names.add(token)
    # label_values(metric, label): the label is not a metric.
    for expr in expressions:
        for metric, label in re.findall(r"label_values\(\s*([A-Za-z_:][A-Za-z0-9_:]*)\s*,\s*([A-Za-z_]\w*)\s*\)", expr):
            names.discard(label)
            names.add(metric)
    return expressions, names


def api(method, path, body=None, key=None):
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {key or args.admin_key}"}
    request = urllib.request.Request(BASE + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            text = response.read()
            return response.status, (json.loads(text) if text else None)
    except urllib.error.HTTPError as error:
        return error.code, None


def served_metrics():
    # The public listener's /metrics asks for the admin key (the node's counts are the operator's).
    request = urllib.request.Request(BASE + "/metrics", headers={"Authorization": f"Bearer {args.admin_key}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        text = response.read().decode()
    return {re.match(r"[A-Za-z_:][A-Za-z0-9_:]*", line).group(0) for line in text.splitlines() if line and not line.startswith("#")}


def websocket_device(token, device_id):
    """A device on a plain socket: the RFC 6455 handshake, then the welcome frame (server frames are unmasked)."""
    host, port = BASE.split("//")[1].split(":")
    sock = socket.create_connection((host, int(port)), timeout=10)
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(
        (
            f"GET /v1/connect?deviceId={device_id}&platform=web HTTP/1.1\r\nHost: {host}:{port}\r\n"
            f"Authorization: Bearer {token}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        ).encode()
    )
    received = b""
    while b"\r\n\r\n" not in received:
        received += sock.recv(4096)
    assert received.startswith(b"HTTP/1.1 101"), received[:80]
    return sock


class Receiver(http.server.BaseHTTPRequestHandler):
    """A webhook receiver that accepts everything."""

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *_):
        pass


def wait_for(predicate, what, timeout=15):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def exercise():
    receiver = http.server.HTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    hook = f"http://127.0.0.1:{receiver.server_address[1]}/hook"
    config = {"plan": "premium", "statusQuery": True, "rateLimit": {"calls": 1, "windowSeconds": 60},
              "webhook": {"url": hook, "secret": "dashboard-check"}}
    status, created = api("POST", "/v1/apps", {"appId": "dashboard", "config": config})
    assert status == 201, status
    key = created["apiKey"]
    for user in ("alice", "bob"):
        assert api("PUT", f"/v1/apps/dashboard/users/{user}", {}, key=key)[0] == 200
    _, minted = api("POST", "/v1/apps/dashboard/users/alice/tokens", {}, key=key)
    device = websocket_device(minted["token"], "web-1")
    # alice's own change reaches her device (multiDeviceSync): an event delivered; her login went to the webhook.
    assert api("PUT", "/v1/apps/dashboard/users/alice/status", {"customStatus": "here"}, key=key)[0] == 200
    assert api("POST", "/v1/apps/dashboard/users/bob/status/query", {"userIds": ["alice"]}, key=key)[0] == 200
    assert api("POST", "/v1/apps/dashboard/users/bob/status/query", {"userIds": ["alice"]}, key=key)[0] == 429
    wait_for(lambda: {"statusd_events_delivered_total", "statusd_webhook_deliveries_total"} <= served_metrics(),
             "an event delivered and a webhook sent")
    # A second device of alice drops: its departure is filed (presence accuracy); the housekeeping's census runs.
    websocket_device(minted["token"], "web-2").close()
    wait_for(lambda: {"statusd_departure_lag_seconds_bucket", "statusd_ghost_devices"} <= served_metrics(),
             "a departure filed and a ghost census")
    # Redis goes away: requests that need it are answered 503 (counted as Redis errors), the client disconnects.
    subprocess.run(["redis-cli", "-p", str(args.redis_port), "shutdown", "nosave"], capture_output=True)
    wait_for(lambda: api("GET", "/v1/apps/dashboard/users/alice", key=key)[0] == 503, "a 503 without Redis")
    wait_for(lambda: "redis_client_disconnects_total" in served_metrics(), "the Redis client's disconnects")
    device.close()
    receiver.shutdown()


def main():
    with open(args.dashboard) as handle:
        dashboard = json.load(handle)
    expressions, referenced = referenced_metrics(dashboard)
    failed = 0
    if not referenced:
        print("FAIL  the dashboard references no metric")
        return 1
    print(f"ok    {args.dashboard}: {len(dashboard.get('panels', []))} panels, {len(expressions)} queries, "
          f"{len(referenced)} metric names")
    exercise()
    served = served_metrics()
    for name in sorted(referenced):
        if name in served:
            print(f"ok    served: {name}")
        else:
            failed += 1
            print(f"FAIL  not served by /metrics: {name}")
    print(f"{len(referenced) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
