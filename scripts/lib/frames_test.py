"""The device WebSocket's frames against the AsyncAPI document (scripts/test-frames).

Devices connect to a live statusd and drive every kind of frame: the welcome, each request op and its reply, error
replies, onUserStatusChanged as a change, a snapshot and a resume, `kicked`, and the close codes of a logout, a kick
and an oversized message. Every frame received is validated against the schema of the message it must be (by its
`event`, by `ok`, and for a result by the op of the request with its id), every request sent against its op's
schema, and every request the server refused must be refused by the document too. The examples of every message are
validated against its schema as well, the schemas shared with /openapi.json (a status, an error code…) must match
those, and a few frames known to be wrong must fail, so that a validator that passes everything cannot go unnoticed. Validation is jsonschema's (Draft 2020-12). Exits 1 on the first mismatch.

Arguments: the base URL of statusd, its admin key, the path of the document (as the node serves it at /asyncapi.json,
or another to check), and optionally a file of the requests the browser client wrote (one JSON object a line, from
scripts/lib/frames_client_check.mjs), each validated as a request of its op.
"""

import contextlib
import json
import sys
import urllib.request

import jsonschema
import referencing
import referencing.jsonschema
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

BASE, ADMIN = sys.argv[1], sys.argv[2]
# Every socket is opened as websockets wants it, as a context, and stays open until the end unless the server closes it.
SOCKETS = contextlib.ExitStack()
WS_BASE = "ws" + BASE[len("http"):]
FRAMES_VALIDATED = {"received": 0, "sent": 0, "refused": 0, "examples": 0, "controls": 0, "client": 0}


def fail(message):
    print(f"FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def call(method, path, body=None, key=ADMIN):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(BASE + path, data=data, method=method,
                                     headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request) as response:
        text = response.read()
        return json.loads(text) if text else None


with open(sys.argv[3]) as file:
    DOCUMENT = json.load(file)

if DOCUMENT.get("asyncapi") != "3.0.0":
    fail("the document is not AsyncAPI 3.0.0")
CHANNEL = DOCUMENT["channels"]["device"]
MESSAGES = CHANNEL["messages"]
CLOSE_CODES = {entry["code"]: entry for entry in CHANNEL["x-close-codes"]}
REGISTRY = referencing.Registry().with_resource(
    "urn:statusd:asyncapi", referencing.Resource.from_contents(DOCUMENT, default_specification=referencing.jsonschema.DRAFT202012))
for name, schema in DOCUMENT["components"]["schemas"].items():
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as error:
        fail(f"components/schemas/{name} is not a valid Draft 2020-12 schema: {error.message}")


# The schemas the two documents share (a status, an error code, a platform…) must say the same: the frames' copies are
# only stricter, refusing members the server does not write.
with urllib.request.urlopen(BASE + "/openapi.json") as response:
    HTTP_SCHEMAS = json.load(response)["components"]["schemas"]
for name, schema in DOCUMENT["components"]["schemas"].items():
    if name in HTTP_SCHEMAS:
        loose = {key: value for key, value in schema.items() if key != "additionalProperties"}
        if loose != {key: value for key, value in HTTP_SCHEMAS[name].items() if key != "additionalProperties"}:
            fail(f"components/schemas/{name} differs from the one of /openapi.json")


def validator(message):
    pointer = MESSAGES[message]["payload"]["$ref"]
    return jsonschema.Draft202012Validator({"$ref": "urn:statusd:asyncapi" + pointer}, registry=REGISTRY,
                                           format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


VALIDATORS = {name: validator(name) for name in MESSAGES}
REQUESTS = {"setSelfStatus", "getUserStatus", "subscribeUserStatus", "unsubscribeUserStatus", "heartbeat",
            "setDeviceState", "logout"}
REPLY_OF = {"setSelfStatus": "statusReply", "setDeviceState": "statusReply", "logout": "statusReply",
            "getUserStatus": "statusQueryReply", "subscribeUserStatus": "subscribeReply",
            "unsubscribeUserStatus": "unsubscribeReply", "heartbeat": "heartbeatReply"}


def check(message, payload, what):
    errors = sorted(VALIDATORS[message].iter_errors(payload), key=lambda error: list(error.absolute_path))
    if errors:
        details = "; ".join(f"{'/'.join(map(str, error.absolute_path)) or '(root)'}: {error.message}" for error in errors[:5])
        fail(f"{what} does not match message {message}: {details}\n  frame: {json.dumps(payload)[:600]}")


def matches_any_request(payload):
    return [name for name in REQUESTS if VALIDATORS[name].is_valid(payload)]


# The document's own examples, each against its message.
for name, message in MESSAGES.items():
    if not message.get("examples"):
        fail(f"message {name} has no examples")
    for example in message["examples"]:
        check(name, example["payload"], f"example {name}/{example['name']}")
        FRAMES_VALIDATED["examples"] += 1

# The requests the browser client wrote while reading the examples.
if len(sys.argv) > 4:
    with open(sys.argv[4]) as file:
        for line in file:
            frame = json.loads(line)
            if frame.get("op") not in REQUESTS:
                fail(f"statusd.js sent an op the document does not have: {line.strip()}")
            check(frame["op"], frame, "a request statusd.js sent")
            FRAMES_VALIDATED["client"] += 1


class Device:
    """One device socket: every frame it reads is validated by what it must be, every request it sends by its op."""

    def __init__(self, user, device_id, token, query=""):
        self.name = f"{user}/{device_id}"
        self.ops = {}
        self.next_id = 1
        self.events = []
        self.replies = {}
        self.closed = None
        self.socket = SOCKETS.enter_context(connect(f"{WS_BASE}/v1/connect?deviceId={device_id}&platform=web{query}",
                                                    additional_headers={"Authorization": f"Bearer {token}"}, max_size=2 ** 22))

    def classify(self, frame):
        if "event" in frame:
            event = frame["event"]
            if event == "onUserStatusChanged":
                return "statusSnapshot" if "snapshot" in frame else "statusChanged"
            return {"welcome": "welcome", "kicked": "kicked"}.get(event) or fail(f"{self.name}: unknown event {event!r}")
        if frame.get("ok") is False:
            return "errorReply"
        op = self.ops.get(json.dumps(frame.get("id")))
        return REPLY_OF[op] if op else fail(f"{self.name}: a reply to no request: {json.dumps(frame)[:300]}")

    def read(self, timeout=10):
        """The next frame, validated; None once the server closed (then `closed` holds the code and reason)."""
        try:
            text = self.socket.recv(timeout=timeout)
        except ConnectionClosed as closed:
            received = closed.rcvd
            self.closed = (received.code, received.reason) if received else (None, "")
            self.check_close()
            return None
        except TimeoutError:
            fail(f"{self.name}: no frame within {timeout} s")
        if not isinstance(text, str):
            fail(f"{self.name}: a binary frame from the server")
        frame = json.loads(text)
        message = self.classify(frame)
        check(message, frame, f"{self.name}: received frame")
        FRAMES_VALIDATED["received"] += 1
        if message in ("welcome", "statusChanged", "statusSnapshot", "kicked"):
            self.events.append((message, frame))
        else:
            self.replies[json.dumps(frame["id"])] = (message, frame)
        return message, frame

    def check_close(self):
        code, reason = self.closed
        entry = CLOSE_CODES.get(code)
        if entry is None:
            fail(f"{self.name}: closed with {code}, which x-close-codes does not list")
        if reason not in entry["reasons"]:
            fail(f"{self.name}: closed with {code} {reason!r}, a reason x-close-codes does not list for it")

    def send(self, frame, valid=True):
        """Sends a request; `valid`: whether the document must accept it (a frame the server refuses it must not)."""
        accepted = matches_any_request(frame)
        if valid and accepted != [frame.get("op")]:
            check(frame.get("op") if frame.get("op") in REQUESTS else "heartbeat", frame, f"{self.name}: sent frame")
            fail(f"{self.name}: sent frame matches {accepted}, not exactly its op: {json.dumps(frame)}")
        if not valid and accepted:
            fail(f"{self.name}: the document accepts {json.dumps(frame)} (as {accepted}), which statusd refuses")
        FRAMES_VALIDATED["sent" if valid else "refused"] += 1
        self.ops[json.dumps(frame.get("id"))] = frame.get("op")
        self.socket.send(json.dumps(frame))

    def request(self, op, **fields):
        frame_id = f"{self.name}-{self.next_id}"
        self.next_id += 1
        self.send({"id": frame_id, "op": op, **fields})
        return self.reply(frame_id)

    def reply(self, frame_id):
        key = json.dumps(frame_id)
        while key not in self.replies:
            if self.read() is None:
                fail(f"{self.name}: closed ({self.closed}) before the reply to {frame_id}")
        return self.replies.pop(key)

    def expect(self, message, predicate=lambda frame: True, timeout=10):
        """Reads until an event of `message` that satisfies `predicate` (earlier events are kept, not matched)."""
        for index, (kind, frame) in enumerate(self.events):
            if kind == message and predicate(frame):
                del self.events[index]
                return frame
        while True:
            got = self.read(timeout)
            if got is None:
                fail(f"{self.name}: closed ({self.closed}) while waiting for {message}")
            kind, frame = got
            if kind == message and predicate(frame):
                self.events.remove((kind, frame))
                return frame

    def expect_close(self, code):
        while self.closed is None:
            self.read()
        if self.closed[0] != code:
            fail(f"{self.name}: closed with {self.closed}, expected {code}")

    def drop(self):
        self.socket.close()


def ok(reply, message):
    kind, frame = reply
    if kind != message:
        fail(f"expected {message}, got {kind}: {json.dumps(frame)[:400]}")
    return frame["result"]


def error(reply, code):
    kind, frame = reply
    if kind != "errorReply" or frame["error"]["code"] != code:
        fail(f"expected an error reply {code}, got {kind}: {json.dumps(frame)[:400]}")
    return frame


# Fixtures: an app with status queries, and users alice, bob and carol.
app = call("POST", "/v1/apps", {"appId": "frames", "config": {"plan": "premium", "statusQuery": True}})
KEY = app["apiKey"]
for user in ("alice", "bob", "carol"):
    call("PUT", f"/v1/apps/frames/users/{user}", {"name": user.title()}, key=KEY)
call("POST", "/v1/apps/frames/users/alice/subscriptions", {"userIds": ["bob"]}, key=KEY)


def token(user):
    return call("POST", f"/v1/apps/frames/users/{user}/tokens", {"ttlSeconds": 3600}, key=KEY)["token"]


# The welcome, and a snapshot that lists bob.
bob = Device("bob", "bob-web", token("bob"))
bob.expect("welcome")
alice = Device("alice", "alice-web", token("alice"), "&snapshot=true")
welcome = alice.expect("welcome")
snapshot = alice.expect("statusSnapshot")
if [status["userId"] for status in snapshot["statuses"]] != ["bob"]:
    fail(f"alice's snapshot lists {snapshot['statuses']}")

# Every op and its reply.
ok(alice.request("heartbeat"), "heartbeatReply")
status = ok(alice.request("setSelfStatus", customStatus="writing", availability="busy", clearAfterSeconds=3600), "statusReply")
if "customStatusExpiresAt" not in status:
    fail("setSelfStatus with clearAfterSeconds has no customStatusExpiresAt")
ok(alice.request("setSelfStatus", customStatus=None), "statusReply")
ok(alice.request("setSelfStatus", customStatus="back", availability="available"), "statusReply")
query = ok(alice.request("getUserStatus", userIds=["bob", "nobody"]), "statusQueryReply")
if [failure["code"] for failure in query["failures"]] != ["USER_NOT_FOUND"]:
    fail(f"getUserStatus of an unknown user: {query}")
ok(alice.request("subscribeUserStatus", userIds=["bob", "carol"]), "subscribeReply")
ok(alice.request("subscribeUserStatus", userIds=["alice"]), "subscribeReply")
ok(alice.request("unsubscribeUserStatus", userIds=["carol"]), "unsubscribeReply")
ok(alice.request("setDeviceState", state="idle"), "statusReply")
ok(alice.request("setDeviceState", state="active"), "statusReply")

# Error replies: each refused frame must be refused by the document too.
for frame, code in [
    ({"id": "e1", "op": "noSuchOp"}, "INVALID_REQUEST"),
    ({"id": "e2", "op": "heartbeat", "extra": 1}, "INVALID_REQUEST"),
    ({"id": "e3", "op": "getUserStatus"}, "INVALID_REQUEST"),
    ({"id": "e4", "op": "setDeviceState", "state": "asleep"}, "INVALID_REQUEST"),
    ({"id": "e5", "op": "setSelfStatus", "availability": "sleeping"}, "INVALID_REQUEST"),
    ({"id": "e6", "op": "setSelfStatus", "customStatus": "x", "clearAfterSeconds": None}, "INVALID_REQUEST"),
    ({"id": "e7", "op": "subscribeUserStatus", "userIds": "bob"}, "INVALID_REQUEST"),
    ({"id": "e8", "op": "getUserStatus", "userIds": [f"user-{index}" for index in range(501)]}, "TOO_MANY_USERS"),
]:
    alice.send(frame, valid=False)
    error(alice.reply(frame["id"]), code)
alice.socket.send("not json")
error(alice.reply(None), "INVALID_REQUEST")
alice.socket.send(b"\x01binary")
error(alice.reply(None), "INVALID_REQUEST")

# onUserStatusChanged as a change: bob's status reaches alice, who subscribed to him.
# Others see a user's public version (not the one of their own view), so the change is recognised by its content.
ok(bob.request("setSelfStatus", availability="away"), "statusReply")
alice.expect("statusChanged", lambda frame: any(s["userId"] == "bob" and s.get("availability") == "away" for s in frame["statuses"]))

# A resume: alice drops, bob changes meanwhile, alice comes back with her token and a snapshot.
alice.drop()
ok(bob.request("setSelfStatus", customStatus="while you were away"), "statusReply")
alice = Device("alice", "alice-web", token("alice"), f"&resume={welcome['resume']}&snapshot=true")
alice.expect("welcome")
first = alice.read()
if first is None or first[0] != "statusChanged" or not any(
        s["userId"] == "bob" and s.get("customStatus") == "while you were away" for s in first[1]["statuses"]):
    fail(f"the frame after a resume's welcome is not the resume's onUserStatusChanged with bob's change: {first}")
alice.events.remove(first)
alice.expect("statusSnapshot")

# kicked: replaced by the same deviceId, then a kick through the server API; each closes with 1000.
replacement = Device("bob", "bob-web", token("bob"))
replacement.expect("welcome")
bob.expect("kicked", lambda frame: frame["reason"] == "replaced")
bob.expect_close(1000)
call("POST", "/v1/apps/frames/users/alice/kick", {"deviceId": "alice-web"}, key=KEY)
alice.expect("kicked", lambda frame: frame["reason"] == "kicked")
alice.expect_close(1000)

# logout: the reply, then 1000.
ok(replacement.request("logout"), "statusReply")
replacement.expect_close(1000)

# RATE_LIMITED with retryAfterMs: a burst of heartbeats past the socket's rate.
carol = Device("carol", "carol-web", token("carol"))
carol.expect("welcome")
ids = []
for index in range(300):
    frame = {"id": f"burst-{index}", "op": "heartbeat"}
    carol.send(frame)
    ids.append(frame["id"])
limited = [carol.reply(frame_id) for frame_id in ids]
if not any(kind == "errorReply" and frame["error"]["code"] == "RATE_LIMITED" and "retryAfterMs" in frame["error"]
           for kind, frame in limited):
    fail("300 heartbeats at once were not rate-limited")

# An oversized message: 1009 with its reason.
carol.socket.send("x" * (65 * 1024))
carol.expect_close(1009)

# Negative controls: frames known to be wrong must fail, or the checks above prove nothing.
controls = [
    ("welcome", {**welcome, "extra": True}),
    ("welcome", {key: value for key, value in welcome.items() if key != "resume"}),
    ("statusChanged", {"event": "onUserStatusChanged", "statuses": [{"userId": "bob", "statusType": "away", "version": 1}]}),
    ("statusSnapshot", {"event": "onUserStatusChanged", "snapshot": False, "statuses": []}),
    ("kicked", {"event": "kicked", "reason": "bored"}),
    ("heartbeatReply", {"id": "1", "ok": True, "result": {}}),
    ("errorReply", {"id": "1", "ok": False, "error": {"code": "NOPE", "message": ""}}),
    ("setSelfStatus", {"id": "1", "op": "setSelfStatus", "clearAfterSeconds": 0}),
]
for message, frame in controls:
    if VALIDATORS[message].is_valid(frame):
        fail(f"a wrong {message} frame passes the document: {json.dumps(frame)[:300]}")
    FRAMES_VALIDATED["controls"] += 1

SOCKETS.close()
kinds = len(MESSAGES)
print(f"frames: {kinds} message kinds, {len(CLOSE_CODES)} close codes; validated {FRAMES_VALIDATED['received']} frames "
      f"received, {FRAMES_VALIDATED['sent']} sent, {FRAMES_VALIDATED['refused']} refused by both, "
      f"{FRAMES_VALIDATED['examples']} examples, {FRAMES_VALIDATED['client']} requests of statusd.js; "
      f"{FRAMES_VALIDATED['controls']} wrong frames rejected")
