"""What a device's connect+disconnect cycle costs Redis in statusd's two scripts (device_connect.lua and
devices_remove.lua), for the scripts of several git revisions side by side (scripts/bench-scripts).

The calls are captured once from a real node (MONITOR while users connect and close a WebSocket), then replayed on an
idle redis-server against each revision's scripts, rounds interleaved: the same keys, arguments and stored state for
every revision, with no node, driver or network in the figure. The revisions must share the calls' key and argument
layout (the captured calls are this checkout's).

Realism: the churn bench's users each connect every few seconds, so their connect rate log holds at most one entry;
the replay shortens the logged window to 1 ms to keep it so. The app's online index, applied versions and recent
changes are filled to `--members` users, as a node holding that many devices has them.

usage: script_cost.py REDIS_PORT STATUSD_PORT TOKENFILE REV [REV...] [--statusd-pid PID]   (REV `worktree`: the files as they are)
Prints one row per round and revision (with the bytes the scripts' writes add to the append-only file, which is what a
replica is sent too), then the medians."""
import argparse
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import threading
import time

parser = argparse.ArgumentParser()
parser.add_argument("redis_port", type=int)
parser.add_argument("statusd_port", type=int)
parser.add_argument("tokens")
parser.add_argument("revs", nargs="+")
parser.add_argument("--cycles", type=int, default=20000)
parser.add_argument("--rounds", type=int, default=3)
parser.add_argument("--members", type=int, default=5000)
parser.add_argument("--statusd-pid", type=int, help="stopped once the calls are captured, so the replay runs alone")
parser.add_argument(
    "--callgrind", type=int, default=0, metavar="CYCLES",
    help="also count the instructions Redis runs per cycle: CYCLES cycles per revision on a copy of the data in a "
    "redis-server under valgrind's callgrind (exact counts, where times move by 10 %% or more)")
parser.add_argument(
    "--callgrind-keep", metavar="DIR",
    help="keep each revision's callgrind count as DIR/callgrind.REV, for callgrind_annotate (where the instructions go)")
options = parser.parse_args()
SCRIPTS = "Sources/StatusServer/Scripts/"


def resp(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Redis:
    """A blocking RESP client with just enough parsing for replies of nested arrays."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.buf = b""

    def _line(self):
        while b"\r\n" not in self.buf:
            self.buf += self.sock.recv(1 << 20)
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def read(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind in (b"+", b"-"):
            return rest if kind == b"+" else RuntimeError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self.buf += self.sock.recv(1 << 20)
            value, self.buf = self.buf[:n], self.buf[n + 2 :]
            return value
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        raise RuntimeError("unexpected reply %r" % line)

    def call(self, *args):
        self.sock.sendall(resp(*args))
        reply = self.read()
        if isinstance(reply, RuntimeError):
            raise reply
        return reply


def body(rev, name):
    """A script as statusd loads it: the prelude, a newline, the script (ScriptLibrary.swift)."""

    def source(path):
        if rev == "worktree":
            return open(path, "rb").read()
        return subprocess.check_output(["git", "show", "%s:%s" % (rev, path)])

    return source(SCRIPTS + "lib.lua") + b"\n" + source(SCRIPTS + name + ".lua")


def monitor_cycles(tokens):
    """Connects and closes one device per token while MONITOR records; returns the EVALSHA lines' arguments."""
    mon = socket.create_connection(("127.0.0.1", options.redis_port))
    mon.sendall(resp("MONITOR"))
    lines = []
    done = threading.Event()

    def record():
        buf = b""
        mon.settimeout(0.2)
        while not done.is_set():
            try:
                chunk = mon.recv(1 << 20)
            except socket.timeout:
                continue
            if not chunk:
                break
            buf += chunk
            *complete, buf = buf.split(b"\r\n")
            lines.extend(complete)

    thread = threading.Thread(target=record)
    thread.start()
    time.sleep(0.2)
    for token in tokens:
        ws = socket.create_connection(("127.0.0.1", options.statusd_port))
        ws.sendall(
            b"GET /v1/connect?deviceId=c&platform=web HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
            b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
            b"Authorization: Bearer " + token.encode() + b"\r\n\r\n"
        )
        got = b""
        while b"\r\n\r\n" not in got or len(got.split(b"\r\n\r\n", 1)[1]) < 2:
            got += ws.recv(65536)
        if not got.startswith(b"HTTP/1.1 101"):
            raise SystemExit("the node refused the upgrade: %r" % got[:200])
        # A masked close frame, code 1000, as scripts/lib/churn_client.c ends a cycle.
        mask = b"\x5a\x17\xc3\x9e"
        ws.sendall(b"\x88\x82" + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(b"\x03\xe8")))
        while ws.recv(65536):
            pass
        ws.close()
    time.sleep(1.0)
    done.set()
    thread.join()
    mon.close()
    calls = []
    for line in lines:
        text = line.decode("latin-1")
        if "EVALSHA" not in text or "lua]" in text:
            continue
        args = []
        for m in re.finditer(r'"((?:[^"\\]|\\.)*)"', text.split("] ", 1)[1]):
            s = re.sub(r"\\x([0-9a-fA-F]{2})", lambda h: chr(int(h.group(1), 16)), m.group(1))
            s = s.replace('\\"', '"').replace("\\\\", "\\").replace("\\n", "\n").replace("\\r", "\r").replace("\\t", "\t")
            args.append(s.encode("latin-1"))
        calls.append(args)
    return calls


def main():
    redis = Redis(options.redis_port)
    tokens = [t for t in open(options.tokens).read().split() if t]
    connect_sha = hashlib.sha1(body("worktree", "device_connect")).hexdigest().encode()
    remove_sha = hashlib.sha1(body("worktree", "devices_remove")).hexdigest().encode()
    calls = monitor_cycles(tokens)
    if options.statusd_pid:
        os.kill(options.statusd_pid, 15)
        for _ in range(100):
            if not os.path.exists("/proc/%d" % options.statusd_pid):
                break
            time.sleep(0.1)
    connects = {c[3]: c for c in calls if c[1].lower() == connect_sha}
    removes = {c[3]: c for c in calls if c[1].lower() == remove_sha}
    users = [u for u in connects if u in removes]
    if not users:
        raise SystemExit(
            "no connect and departure of one user captured (%d EVALSHA calls): is the release build this tree's?" % len(calls)
        )
    cycles = []
    for user in users:
        connect, remove = list(connects[user]), list(removes[user])
        for call in (connect, remove):
            call[3 + int(call[2])] = b"0"  # no deadline (WriteFence): the replay comes long after the capture
        keys = int(connect[2])
        rules_at = 3 + keys + 3  # ARGV[3] after the deadline: the login rules
        rules = json.loads(connect[rules_at])
        if "connectWindowMs" in rules:
            rules["connectWindowMs"] = 1
            connect[rules_at] = json.dumps(rules).encode()
        cycles.append((connect, remove))
    # The app's indexes as a node holding `members` devices has them (single-server layout: KEYS[8..10]).
    connect = cycles[0][0]
    if int(connect[2]) >= 10:
        online, applied, recent = connect[3 + 7], connect[3 + 8], connect[3 + 9]
        far = int(time.time() * 1000) + 86_400_000
        for start in range(0, options.members, 500):
            members = range(start, min(start + 500, options.members))
            redis.call("ZADD", online, *[x for i in members for x in (b"0", b"filler-%d" % i)])
            redis.call("HSET", applied, *[x for i in members for x in (b"filler-%d" % i, b"1")])
            redis.call("ZADD", recent, *[x for i in members for x in (b"%d" % far, b"filler-%d" % i)])
    pid = int(re.search(rb"process_id:(\d+)", redis.call("INFO", "server")).group(1))
    tick = os.sysconf("SC_CLK_TCK")

    def cpu():
        fields = open("/proc/%d/stat" % pid).read().split(")")[1].split()
        return (int(fields[11]) + int(fields[12])) / tick

    # What the scripts' writes add to the append-only file: what a replica is sent as well (Redis propagates a script
    # as the writes it made). The AOF is kept in memory's page cache (no fsync) and never rewritten during the rounds.
    redis.call("CONFIG", "SET", "appendfsync", "no")
    redis.call("CONFIG", "SET", "auto-aof-rewrite-percentage", "0")
    redis.call("CONFIG", "SET", "appendonly", "yes")
    while b"aof_rewrite_in_progress:0" not in redis.call("INFO", "persistence") or b"aof_enabled:1" not in redis.call(
        "INFO", "persistence"
    ):
        time.sleep(0.1)

    def aof_size():
        return int(re.search(rb"aof_current_size:(\d+)", redis.call("INFO", "persistence")).group(1))

    def hundred_cycles(server, rev):
        """The RESP of 100 cycles with `rev`'s scripts, loaded on `server`."""
        shas = {}
        for name in ("device_connect", "devices_remove"):
            shas[name] = server.call("SCRIPT", "LOAD", body(rev, name))
        batch = []
        for i in range(100):
            connect, remove = cycles[i % len(cycles)]
            batch.append(resp(*([remove[0], shas["devices_remove"]] + remove[2:])))
            batch.append(resp(*([connect[0], shas["device_connect"]] + connect[2:])))
        return b"".join(batch)

    def send(server, payload, times):
        """Sends `payload` (100 cycles) `times` times, reading every reply; returns the error replies."""
        errors = 0
        for _ in range(times):
            server.sock.sendall(payload)
            for _ in range(200):
                if isinstance(server.read(), RuntimeError):
                    errors += 1
        return errors

    # The copy under callgrind, loaded from a dump of the data as the rounds find it.
    counted = None
    if options.callgrind:
        counted = Counted(redis)

    def replay(rev):
        payload = hundred_cycles(redis, rev)
        redis.call("CONFIG", "RESETSTAT")
        written = aof_size()
        start = cpu()
        errors = send(redis, payload, options.cycles // 100)
        used = cpu() - start
        written = aof_size() - written
        stats = redis.call("INFO", "commandstats").decode()
        evalsha = inner = 0
        for name, calls, usec in re.findall(r"cmdstat_(\w+):calls=(\d+),usec=(\d+)", stats):
            if name == "evalsha":
                evalsha = int(usec)
            elif name not in ("config", "info", "script"):
                inner += int(calls)
        n = options.cycles // 100 * 100
        return evalsha / n, used * 1e6 / n, inner / n, errors, written / n

    results = {rev: [] for rev in options.revs}
    print("| round | scripts of | µs per cycle in the scripts | Redis CPU µs per cycle | commands run per cycle | "
          "bytes to the AOF per cycle | errors |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for round in range(1, options.rounds + 1):
        for rev in options.revs:
            scripts, cpu_us, inner, errors, written = replay(rev)
            results[rev].append((scripts, cpu_us))
            print("| %d | `%s` | %.1f | %.1f | %.1f | %.0f | %d |" % (round, rev, scripts, cpu_us, inner, written, errors))
    print()
    print("| scripts of | median µs per cycle in the scripts | median Redis CPU µs per cycle |")
    print("|---|---:|---:|")
    for rev, runs in results.items():
        scripts = sorted(r[0] for r in runs)[len(runs) // 2]
        cpu_us = sorted(r[1] for r in runs)[len(runs) // 2]
        print("| `%s` | %.1f | %.1f |" % (rev, scripts, cpu_us))
    if counted:
        print()
        print("| scripts of | instructions Redis ran per cycle (callgrind, %d cycles) | errors |" % options.callgrind)
        print("|---|---:|---:|")
        for rev in options.revs:
            payload = hundred_cycles(counted.redis, rev)
            send(counted.redis, payload, 1)  # the scripts' first calls, out of the count
            hundreds = max(1, options.callgrind // 100)
            instructions, errors = counted.count(lambda: send(counted.redis, payload, hundreds), keep=options.callgrind_keep
                                                 and os.path.join(options.callgrind_keep, "callgrind." + rev))
            print("| `%s` | %.0f | %d |" % (rev, instructions / (hundreds * 100), errors))
        counted.stop()


class Counted:
    """A redis-server under valgrind's callgrind holding a copy of `source`'s data (SAVE, then loaded from the dump),
    whose instruction count is zeroed before a run and dumped after it (callgrind_control)."""

    def __init__(self, source):
        source.call("SAVE")
        directory = source.call("CONFIG", "GET", "dir")[1].decode()
        dbfilename = source.call("CONFIG", "GET", "dbfilename")[1].decode()
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        probe.close()
        self.out = os.path.join(directory, "callgrind")
        os.makedirs(self.out, exist_ok=True)
        self.process = subprocess.Popen(
            ["valgrind", "--tool=callgrind", "--callgrind-out-file=%s/out.%%n" % self.out, "redis-server",
             "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", directory,
             "--dbfilename", dbfilename],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(600):
            try:
                self.redis = Redis(port)
                if self.redis.call("PING") == b"PONG":
                    break
            except (OSError, RuntimeError):
                time.sleep(0.5)
        else:
            raise SystemExit("redis-server under callgrind did not start")

    def count(self, run, keep=None):
        """The instructions `run()` made the server run, and what `run()` returned; the count's file is copied to `keep`
        when given."""
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        before = set(os.listdir(self.out))
        subprocess.check_call(["callgrind_control", "-z", str(self.process.pid)], **quiet)
        result = run()
        subprocess.check_call(["callgrind_control", "-d", "run", str(self.process.pid)], **quiet)
        # The dump is written by the server itself, after callgrind_control has asked for it: read once it is whole.
        for _ in range(600):
            for name in set(os.listdir(self.out)) - before:
                total = re.search(r"^(?:summary|totals): (\d+)", open(os.path.join(self.out, name)).read(), re.M)
                if total:
                    if keep:
                        shutil.copyfile(os.path.join(self.out, name), keep)
                    return int(total.group(1)), result
            time.sleep(0.1)
        raise SystemExit("callgrind wrote no count")

    def stop(self):
        self.process.terminate()
        self.process.wait()


main()
