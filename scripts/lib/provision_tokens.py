"""Creates an app with users u0..u(N-1) on a statusd node and writes one device token per user, one per line, for
scripts/lib/churn_client.c. The app is configured as statusload configures its churn app: premium, statusQuery, no
subscriptions, the rate and connect limits lifted, a one-hour heartbeat timeout. Standard library only.
usage: provision_tokens.py BASE_URL ADMIN_KEY APP_ID N TOKENFILE"""
import concurrent.futures
import http.client
import json
import sys
import threading
import urllib.parse

base, admin, app_id, count, path = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
target = urllib.parse.urlsplit(base)
local = threading.local()


def call(method, url, key, body=None):
    if not hasattr(local, "conn"):
        local.conn = http.client.HTTPConnection(target.hostname, target.port, timeout=30)
    payload = json.dumps(body) if body is not None else None
    headers = {"Authorization": "Bearer " + key, "Content-Type": "application/json"}
    for attempt in range(20):
        try:
            local.conn.request(method, url, body=payload, headers=headers)
            response = local.conn.getresponse()
            data = response.read()
        except (ConnectionError, http.client.HTTPException):
            local.conn = http.client.HTTPConnection(target.hostname, target.port, timeout=30)
            continue
        if response.status == 503:
            continue
        if response.status not in (200, 201):
            raise SystemExit("%s %s: %d %s" % (method, url, response.status, data[:200]))
        return json.loads(data) if data else None
    raise SystemExit("%s %s: no answer" % (method, url))


config = {
    "plan": "premium",
    "statusQuery": True,
    "rateLimit": {"calls": 100000000, "windowSeconds": 1},
    "connectRateLimit": {"calls": 100000000, "windowSeconds": 1},
    "heartbeatTimeoutSeconds": 3600,
}
api_key = call("POST", "/v1/apps", admin, {"appId": app_id, "config": config})["apiKey"]


def user(i):
    call("PUT", "/v1/apps/%s/users/u%d" % (app_id, i), api_key, {})
    return call("POST", "/v1/apps/%s/users/u%d/tokens" % (app_id, i), api_key, {"ttlSeconds": 86400})["token"]


with concurrent.futures.ThreadPoolExecutor(16) as pool:
    tokens = list(pool.map(user, range(count)))
with open(path, "w") as out:
    out.write("\n".join(tokens) + "\n")
print("provisioned %d users with tokens in %s" % (count, path))
