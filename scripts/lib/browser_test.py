"""Drives the admin console and the browser client in headless Chromium (Debian's chromium + chromium-driver) against
a live statusd; run by scripts/test-browser, which starts statusd and Redis and passes their address.

Each check prints "ok <what>" or raises; screenshots of the console go to the directory given with --screenshots.
"""

import argparse
import http.server
import json
import os
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.support.ui import Select, WebDriverWait

parser = argparse.ArgumentParser()
parser.add_argument("--url", required=True)
parser.add_argument("--admin-key", required=True)
parser.add_argument("--screenshots", default="docs")
args = parser.parse_args()
BASE = args.url.rstrip("/")



def waiting(driver, seconds):
    """A wait that reads an element again when the page replaced it meanwhile: the console re-renders its table rows
    on every update, so a row found a moment ago may be gone when its text is read."""
    return WebDriverWait(driver, seconds, ignored_exceptions=(StaleElementReferenceException,))

def api(method, path, body=None, key=None):
    """One HTTP call; returns (status, JSON body or None)."""
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {key or args.admin_key}"}
    request = urllib.request.Request(BASE + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            text = response.read()
            return response.status, (json.loads(text) if text else None)
    except urllib.error.HTTPError as error:
        text = error.read()
        return error.code, (json.loads(text) if text else None)


def ok(message):
    print(f"ok    {message}", flush=True)


def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = os.environ.get("CHROMIUM_BIN", "/usr/bin/chromium")
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1280,1000"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(os.environ.get("CHROMEDRIVER_BIN", "/usr/bin/chromedriver"))
    return webdriver.Chrome(service=service, options=options)


def text_of(driver, element_id):
    return driver.find_element(By.ID, element_id).text


def wait_text(driver, element_id, predicate, what, timeout=10):
    try:
        waiting(driver, timeout).until(lambda d: predicate(text_of(d, element_id)))
    except Exception:
        raise AssertionError(f"{what}: #{element_id} shows {text_of(driver, element_id)!r}")


def set_value(driver, element_id, value):
    element = driver.find_element(By.ID, element_id)
    element.clear()
    element.send_keys(value)


def screenshot(driver, name):
    """The whole page, as tall as it is."""
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1280, max(1000, height + 140))
    driver.execute_script("window.scrollTo(0, 0)")
    time.sleep(0.3)
    driver.save_screenshot(os.path.join(args.screenshots, name))
    driver.set_window_size(1280, 1000)


def console_flow(driver):
    wait = waiting(driver, 10)
    driver.get(BASE + "/console")
    # A wrong key is refused with the SPEC error, as returned.
    set_value(driver, "admin-key", "not-the-key")
    driver.find_element(By.ID, "login-button").click()
    wait_text(driver, "login-error", lambda t: "UNAUTHORIZED" in t, "a wrong admin key is refused")
    ok("console: a wrong admin key shows 401 UNAUTHORIZED")
    set_value(driver, "admin-key", args.admin_key)
    driver.find_element(By.ID, "login-button").click()
    wait.until(EC.visibility_of_element_located((By.ID, "app-view")))
    ok("console: signs in with the admin key")

    # Create an app with a config; the API key is shown once; the app is listed and selected.
    set_value(driver, "new-app-id", "console-demo")
    set_value(driver, "new-app-config", '{"plan": "premium", "statusQuery": true}')
    driver.find_element(By.ID, "create-button").click()
    wait_text(driver, "create-result", lambda t: "sk_" in t, "the created app's API key is shown")
    wait.until(lambda d: any(li.text == "console-demo" for li in d.find_elements(By.CSS_SELECTOR, "#app-list li")))
    status, app = api("GET", "/v1/apps/console-demo")
    assert status == 200 and app["config"]["plan"] == "premium" and app["config"]["statusQuery"] is True, app
    ok("console: creates an app with a config, lists it and shows its API key once")
    # Creating it again shows APP_EXISTS as statusd returns it.
    set_value(driver, "new-app-id", "console-demo")
    driver.find_element(By.ID, "create-button").click()
    wait_text(driver, "create-error", lambda t: "409 APP_EXISTS" in t, "a duplicate app is refused")
    ok("console: a duplicate appId shows 409 APP_EXISTS")

    # A bad value: statusd's validation error is shown and nothing changes.
    wait.until(lambda d: d.find_element(By.ID, "cfg-heartbeatTimeoutSeconds").get_attribute("value") == "400")
    set_value(driver, "cfg-heartbeatTimeoutSeconds", "2")
    driver.find_element(By.ID, "cfg-friendStatusNotify").click()
    driver.find_element(By.ID, "save-config").click()
    wait_text(driver, "config-error", lambda t: "400 INVALID_REQUEST" in t and "heartbeatTimeoutSeconds" in t, "a bad value is refused")
    _, app = api("GET", "/v1/apps/console-demo")
    assert app["config"]["heartbeatTimeoutSeconds"] == 400 and app["config"]["friendStatusNotify"] is False, app
    ok(f"console: a bad flag value shows statusd's error ({text_of(driver, 'config-error')!r}) and changes nothing")
    screenshot(driver, "console-error.png")

    # A good change is saved and read back.
    set_value(driver, "cfg-heartbeatTimeoutSeconds", "60")
    set_value(driver, "cfg-allowedOrigins", "https://chat.example.com")
    Select(driver.find_element(By.ID, "cfg-loginPolicy")).select_by_visible_text("singlePerPlatform")
    Select(driver.find_element(By.ID, "cfg-lastSeenPrivacy")).select_by_visible_text("friends")
    driver.find_element(By.ID, "save-config").click()
    wait_text(driver, "config-saved", lambda t: "Saved" in t, "a valid change is saved")
    _, app = api("GET", "/v1/apps/console-demo")
    config = app["config"]
    assert config["heartbeatTimeoutSeconds"] == 60 and config["friendStatusNotify"] is True, config
    assert config["allowedOrigins"] == ["https://chat.example.com"], config
    assert config["loginPolicy"] == "singlePerPlatform" and config["lastSeenPrivacy"] == "friends", config
    ok("console: changed flags (heartbeatTimeoutSeconds, friendStatusNotify, allowedOrigins, loginPolicy, lastSeenPrivacy) are saved")
    return app


def watch_flow(driver, api_key):
    """The console watches alice through the browser client and sees her changes made elsewhere."""
    wait = waiting(driver, 10)
    # The console's own page is not an allowed origin now: its WebSocket is refused (403) and the console says so.
    for user in ("alice", "bob"):
        assert api("PUT", f"/v1/apps/console-demo/users/{user}", {"name": user.title()}, key=api_key)[0] == 200
    set_value(driver, "watch-users", "alice, bob")
    driver.find_element(By.ID, "watch-button").click()
    wait_text(driver, "watch-error", lambda t: "CONNECT_FAILED" in t, "a page of a disallowed origin cannot connect", timeout=15)
    ok("browser client: a page whose origin the app does not allow is refused")
    status, _ = api("PATCH", "/v1/apps/console-demo/config", {"allowedOrigins": [BASE]})
    assert status == 200
    driver.find_element(By.ID, "watch-button").click()
    wait_text(driver, "watch-state", lambda t: t == "client: open", "the client connects", timeout=15)
    row = lambda user, field: driver.find_element(By.CSS_SELECTOR, f'tr[data-user="{user}"] td[data-field="{field}"]').text
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, 'tr[data-user="alice"]')) == 1)
    assert row("alice", "statusType") == "unlogined", row("alice", "statusType")
    ok("browser client: the console connects as a watcher, subscribes and shows alice unlogined")

    # alice comes online on a device driven by the backend, then sets a custom status: both reach the page as events.
    assert api("POST", "/v1/apps/console-demo/users/alice/devices/phone-1/login", {"platform": "ios"}, key=api_key)[0] == 200
    wait.until(lambda d: row("alice", "statusType") == "online")
    assert api("PUT", "/v1/apps/console-demo/users/alice/status", {"customStatus": "in a meeting"}, key=api_key)[0] == 200
    wait.until(lambda d: row("alice", "customStatus") == "in a meeting")
    ok("browser client: alice's login and custom status (made through the server API) arrive on the page as events")

    # The live counts: the console's own socket is a connected device; alice and the watcher are online.
    wait_text(driver, "stat-devices", lambda t: t == "1", "connected devices")
    wait_text(driver, "stat-online", lambda t: t == "2", "online users")
    wait_text(driver, "stat-events", lambda t: t not in ("–", "…"), "events/s", timeout=10)
    ok(f"console: live counts shown (devices {text_of(driver, 'stat-devices')}, online {text_of(driver, 'stat-online')})")
    # Selecting the app again reloads its config (changed above through the API) and clears the earlier messages.
    driver.find_element(By.CSS_SELECTOR, '#app-list li[data-app="console-demo"]').click()
    wait.until(lambda d: d.find_element(By.ID, "cfg-allowedOrigins").get_attribute("value") == BASE)
    driver.execute_script("for (const id of ['create-error', 'create-result']) document.getElementById(id).hidden = true")
    driver.find_element(By.ID, "new-app-id").clear()
    wait_text(driver, "stat-events", lambda t: t not in ("–", "…"), "events/s after reselecting", timeout=10)


def views_flow(driver, api_key):
    """The console shows alice's own view next to the public view: invisible, she is online to herself and offline to
    everyone else; visible again, both views show her online."""
    wait = waiting(driver, 10)
    cell = lambda view, field: driver.find_element(By.CSS_SELECTOR, f'#views-table tr[data-field="{field}"] td[data-view="{view}"]').text
    differs = lambda field: "differs" in driver.find_element(By.CSS_SELECTOR, f'#views-table tr[data-field="{field}"]').get_attribute("class")
    watched = lambda field: driver.find_element(By.CSS_SELECTOR, f'tr[data-user="alice"] td[data-field="{field}"]').text

    assert api("PUT", "/v1/apps/console-demo/users/alice/status", {"availability": "invisible"}, key=api_key)[0] == 200
    # The watcher, a user like any other, hears her go offline.
    wait.until(lambda d: watched("statusType") == "offline")
    set_value(driver, "views-user", "alice")
    driver.find_element(By.ID, "views-button").click()
    wait_text(driver, "views-note", lambda t: t == "Public view as console-observer sees alice.", "the observer is named")
    wait.until(lambda d: cell("own", "statusType") == "online" and cell("public", "statusType") == "offline")
    assert cell("own", "availability") == "invisible" and cell("public", "availability") == "", cell("public", "availability")
    assert cell("own", "customStatus") == "in a meeting" and cell("public", "customStatus") == "", cell("public", "customStatus")
    # A backend-driven device that passed no state is `active` (SPEC §10.4); the detail query lists it.
    assert cell("own", "onlineDevices") == "phone-1 (ios, active)", cell("own", "onlineDevices")
    assert cell("public", "onlineDevices") in ("", "not listed"), cell("public", "onlineDevices")
    assert differs("statusType") and differs("customStatus") and differs("availability")
    status, observer = api("GET", "/v1/apps/console-demo/users/console-observer", key=api_key)
    assert status == 200, observer
    ok("console: invisible alice side by side: own view online, invisible, 'in a meeting', phone-1 (ios, active); public "
       "view offline, none of it")

    # Visible again: the next poll shows her online in both columns, with her custom status.
    assert api("PUT", "/v1/apps/console-demo/users/alice/status", {"availability": "available"}, key=api_key)[0] == 200
    wait.until(lambda d: cell("public", "statusType") == "online")
    assert cell("own", "statusType") == "online" and not differs("statusType"), cell("own", "statusType")
    assert cell("public", "customStatus") == "in a meeting" and cell("public", "availability") == "available"
    ok("console: alice visible again: both views show her online with her custom status (polled, no reload)")

    # Invisible for the screenshot; an unknown user is reported as the server answers.
    assert api("PUT", "/v1/apps/console-demo/users/alice/status", {"availability": "invisible"}, key=api_key)[0] == 200
    wait.until(lambda d: cell("public", "statusType") == "offline")
    screenshot(driver, "console.png")
    set_value(driver, "views-user", "nobody-here")
    driver.find_element(By.ID, "views-button").click()
    wait_text(driver, "views-error", lambda t: "nobody-here: USER_NOT_FOUND" in t, "an unknown user")
    assert not driver.find_element(By.ID, "views-table").is_displayed(), "alice's views stay on screen for nobody-here"
    set_value(driver, "views-user", "console-observer")
    driver.find_element(By.ID, "views-button").click()
    wait_text(driver, "views-error", lambda t: "the observer must be another user" in t, "the observer itself")
    ok("console: an unknown user shows USER_NOT_FOUND; the observer cannot watch itself")


def client_flow(driver, api_key):
    """The browser client on its own: typed helpers, events from another user, reconnect after a dropped socket."""
    assert api("PUT", "/v1/apps/console-demo/users/carol", {}, key=api_key)[0] == 200
    _, minted = api("POST", "/v1/apps/console-demo/users/bob/tokens", {"ttlSeconds": 600}, key=api_key)
    driver.set_script_timeout(30)
    result = driver.execute_async_script(
        """
        const [token, done] = [arguments[0], arguments[arguments.length - 1]];
        import("/client/statusd.js").then(async ({ StatusClient }) => {
          const log = { welcomes: 0, states: [], events: [] };
          // Records the URL of every socket the client opens (to see what it sends on reconnect); nothing else changes.
          window.bobUrls = [];
          const RecordingSocket = class extends WebSocket {
            constructor(url, protocols) { super(url, protocols); window.bobUrls.push(url); }
          };
          const client = new StatusClient({ token, deviceId: "bob-web", minReconnectDelayMs: 100, WebSocket: RecordingSocket });
          client.on("welcome", (w) => { (window.bobWelcomes ||= []).push(w); });
          client.on("welcome", () => { log.welcomes += 1; });
          client.on("state", (s) => log.states.push(s));
          client.on("statusChanged", (statuses) => statuses.forEach((s) => log.events.push([s.userId, s.customStatus || null])));
          window.bobClient = client;
          window.bobLog = log;
          const welcome = await client.connect();
          log.own = welcome.status.statusType;
          log.subscribed = (await client.subscribeUserStatus(["carol"])).subscribed;
          log.self = (await client.setSelfStatus("reviewing")).customStatus;
          log.expiring = (await client.setSelfStatus("reviewing", { clearAfterSeconds: 3600 })).customStatusExpiresAt > Date.now();
          log.availability = (await client.setAvailability("busy")).availability;
          log.query = (await client.getUserStatus(["carol"])).statuses.map((s) => s.statusType);
          log.heartbeat = (await client.heartbeat()).heartbeatSeconds;
          try { await client.subscribeUserStatus(["bad id"]); } catch (e) { log.badId = e.code; }
          done(log);
        }).catch((e) => done({ error: String(e) }));
        """,
        minted["token"],
    )
    assert "error" not in result, result
    assert result["own"] == "online" and result["subscribed"] == ["carol"] and result["self"] == "reviewing", result
    assert result["query"] == ["unlogined"] and result["heartbeat"] > 0 and result["badId"] == "INVALID_USER_ID", result
    assert result["expiring"] is True and result["availability"] == "busy", result
    ok("browser client: connect, subscribeUserStatus, setSelfStatus (with an expiry), setAvailability, getUserStatus, "
       "heartbeat and error codes")

    assert api("PUT", "/v1/apps/console-demo/users/carol/status", {"customStatus": "lunch"}, key=api_key)[0] == 200
    waiting(driver, 10).until(lambda d: ["carol", "lunch"] in d.execute_script("return window.bobLog.events"))
    ok("browser client: another user's status change arrives as a statusChanged callback")

    # The socket drops (not asked for by the app): the client reconnects with backoff and events flow again.
    driver.execute_script("window.bobClient._socket.close(4001, 'test drop')")
    waiting(driver, 15).until(lambda d: d.execute_script("return window.bobLog.welcomes") >= 2)
    states = driver.execute_script("return window.bobLog.states")
    assert "reconnecting" in states and states[-1] == "open", states
    # SPEC §7 resume: the token of the welcome before the drop goes back on the reconnect (when the server sends one).
    urls, welcomes = driver.execute_script("return [window.bobUrls, window.bobWelcomes]")
    first_resume = welcomes[0].get("resume")
    assert first_resume, welcomes[0]
    reconnect_query = urllib.parse.parse_qs(urllib.parse.urlparse(urls[1]).query)
    assert reconnect_query.get("resume") == [first_resume], (first_resume, urls[1])
    assert welcomes[1].get("resume") not in (None, first_resume), welcomes[1]
    assert "resume" not in urllib.parse.parse_qs(urllib.parse.urlparse(urls[0]).query), urls[0]
    assert all(urllib.parse.parse_qs(urllib.parse.urlparse(u).query).get("snapshot") == ["true"] for u in urls), urls
    assert api("PUT", "/v1/apps/console-demo/users/carol/status", {"customStatus": "back"}, key=api_key)[0] == 200
    waiting(driver, 10).until(lambda d: ["carol", "back"] in d.execute_script("return window.bobLog.events"))
    ok("browser client: reconnects after a dropped socket, sends the welcome's resume token back and keeps receiving events")

    # A kick is final: the client reports it and does not reconnect.
    assert api("POST", "/v1/apps/console-demo/users/bob/kick", {"deviceId": "bob-web"}, key=api_key)[0] == 200
    waiting(driver, 10).until(lambda d: d.execute_script("return window.bobClient.state") == "closed")
    time.sleep(1)
    assert driver.execute_script("return window.bobLog.welcomes") == 2
    ok("browser client: a kick closes it for good (no reconnect)")


def device_state_flow(driver, api_key):
    """The client reports its device's state (SPEC §10.4): `background` while the page is hidden, `idle` after
    idleAfterSeconds without input, `active` on return; only changes are sent, and a state other than `active` again
    after a reconnect. The page's visibility is simulated by overriding document.visibilityState and dispatching
    visibilitychange; input by dispatching events. The server's side is read back with the backend detail query."""
    assert api("PUT", "/v1/apps/console-demo/users/erin", {}, key=api_key)[0] == 200
    _, minted = api("POST", "/v1/apps/console-demo/users/erin/tokens", {"ttlSeconds": 600}, key=api_key)
    driver.set_script_timeout(30)
    result = driver.execute_async_script(
        """
        const [token, done] = [arguments[0], arguments[arguments.length - 1]];
        import("/client/statusd.js").then(async ({ StatusClient }) => {
          const log = { frames: [], sent: [], replies: {}, welcomes: 0, changes: [] };
          window.erinLog = log;
          // Records every setDeviceState frame sent and the reply to each; nothing else changes.
          const RecordingSocket = class extends WebSocket {
            constructor(url, protocols) {
              super(url, protocols);
              this.addEventListener("message", (message) => {
                const frame = JSON.parse(message.data);
                if (frame.id in log.replies) log.replies[frame.id] = frame.ok ? "ok" : `${frame.error.code}: ${frame.error.message}`;
              });
            }
            send(data) {
              const frame = JSON.parse(data);
              if (frame.op === "setDeviceState") {
                log.frames.push(frame);
                log.sent.push(frame.state);
                log.replies[frame.id] = null;
              }
              super.send(data);
            }
          };
          let hidden = false;
          Object.defineProperty(document, "visibilityState", { configurable: true, get: () => (hidden ? "hidden" : "visible") });
          window.setHidden = (value) => {
            hidden = value;
            document.dispatchEvent(new Event("visibilitychange"));
          };
          const client = new StatusClient({
            token, deviceId: "erin-web", minReconnectDelayMs: 100, idleAfterSeconds: 3, WebSocket: RecordingSocket,
          });
          client.on("welcome", () => { log.welcomes += 1; });
          client.on("deviceState", (state) => log.changes.push(state));
          window.erinClient = client;
          await client.connect();
          done({ sent: log.sent.slice(), state: client.deviceState });
        }).catch((e) => done({ error: String(e) }));
        """,
        minted["token"],
    )
    assert "error" not in result, result
    assert result == {"sent": [], "state": "active"}, result

    def sent():
        return driver.execute_script("return window.erinLog.sent")

    def wait_replies():
        waiting(driver, 10).until(lambda d: None not in d.execute_script("return Object.values(window.erinLog.replies)"))

    def step(script, expected, what, timeout=10):
        """Runs script in the page, waits for exactly the setDeviceState frames expected and their replies, then
        reads erin's own view with the backend detail query."""
        driver.execute_script(script)
        try:
            waiting(driver, timeout).until(lambda d: sent() == expected)
        except Exception:
            raise AssertionError(f"{what}: sent {sent()}, expected {expected}")
        wait_replies()
        time.sleep(0.3)  # nothing more is sent
        assert sent() == expected, (what, sent(), expected)
        _, answer = api("POST", "/v1/apps/console-demo/status/query", {"userIds": ["erin"], "detail": True}, key=api_key)
        return answer["statuses"][0]

    # (what, expected state, expected availability, erin's own view), checked after the client's own checks.
    server = []
    server.append(("hidden", "background", "away", step("setHidden(true)", ["background"], "the page is hidden")))
    step("setHidden(true)", ["background"], "hidden again: no change, nothing sent")
    server.append(("visible again", "active", "available", step(
        "setHidden(false)", ["background", "active"], "the page is visible again (returning counts as input)")))
    server.append(("no input for 3 s", "idle", "away", step(
        "", ["background", "active", "idle"], "idleAfterSeconds without input", timeout=8)))
    server.append(("input", "active", "available", step(
        "document.body.dispatchEvent(new KeyboardEvent('keydown', { bubbles: true }));"
        "document.body.dispatchEvent(new PointerEvent('pointermove', { bubbles: true }));",
        ["background", "active", "idle", "active"], "a key after idle")))
    step("for (let i = 0; i < 50; i++) document.dispatchEvent(new PointerEvent('pointermove', { bubbles: true }))",
         ["background", "active", "idle", "active"], "more input while active: nothing sent")
    frames = driver.execute_script("return window.erinLog.frames")
    assert all(set(frame) == {"id", "op", "state"} for frame in frames), frames
    assert len({frame["id"] for frame in frames}) == len(frames), frames
    ok("browser client: device state frames background (hidden), active (visible), idle (3 s without input), active "
       "(a key), each sent once, with an id, nothing for repeated events")

    # A reconnect is a new device, `active` on the server: a hidden page says `background` again, a visible one nothing.
    before = sent()
    driver.execute_script("setHidden(true)")
    waiting(driver, 10).until(lambda d: sent() == before + ["background"])
    wait_replies()  # answered before the socket drops
    server.append(("hidden, after a reconnect", "background", "away", step(
        "window.erinClient._socket.close(4001, 'test drop')", before + ["background", "background"],
        "a reconnect while hidden re-sends background", timeout=15)))
    assert driver.execute_script("return window.erinLog.welcomes") == 2
    driver.execute_script("setHidden(false)")
    waiting(driver, 10).until(lambda d: sent() == before + ["background", "background", "active"])
    wait_replies()
    before = sent()
    # A key first, so that the idle time does not run out during the reconnect.
    step("document.body.dispatchEvent(new KeyboardEvent('keydown', { bubbles: true }));"
         "window.erinClient._socket.close(4001, 'test drop')", before, "a reconnect while active sends nothing")
    waiting(driver, 15).until(lambda d: d.execute_script("return window.erinLog.welcomes") == 3)
    time.sleep(0.5)
    assert sent() == before, sent()
    ok("browser client: after a reconnect, background is sent again while hidden, and nothing while active")

    # setDeviceState by hand: sent when it changes, answered with the reply; an unknown state is refused locally.
    manual = driver.execute_async_script(
        """
        const done = arguments[arguments.length - 1];
        (async () => {
          const client = window.erinClient;
          const out = {};
          try { out.first = await client.setDeviceState("idle"); } catch (e) { out.first = `error ${e.code}`; }
          try { out.again = await client.setDeviceState("idle"); } catch (e) { out.again = `error ${e.code}`; }
          try { await client.setDeviceState("sleeping"); } catch (e) { out.unknown = e.name; }
          out.state = client.deviceState;
          done(out);
        })();
        """
    )
    assert manual["unknown"] == "TypeError" and manual["state"] == "idle", manual
    assert sent()[: len(before) + 1] == before + ["idle"], sent()
    changes = driver.execute_script("return window.erinLog.changes")
    assert changes == ["background", "active", "idle", "active", "background", "active", "idle"], changes
    ok("browser client: setDeviceState by hand sends the change, refuses an unknown state, emits deviceState")
    driver.execute_script("window.erinClient.close(); delete document.visibilityState; "
                          "document.dispatchEvent(new Event('visibilitychange'))")

    # The server's side (SPEC §10.4, §10.1): each state shown in erin's onlineDevices, and automatic away.
    replies = driver.execute_script("return window.erinLog.replies")
    refused = sorted({reply for reply in replies.values() if reply != "ok"})
    assert not refused, f"statusd refused setDeviceState: {refused}"
    assert manual["first"] is not None and not str(manual["first"]).startswith("error"), manual
    # Held by the server, the same state again sends nothing (a refused one would be tried again).
    assert manual["again"] is None and sent() == before + ["idle"], (manual, sent())
    for what, state, availability, seen in server:
        devices = seen.get("onlineDevices") or []
        assert [d.get("state") for d in devices if d["deviceId"] == "erin-web"] == [state], (what, seen)
        assert seen.get("availability") == availability, (what, seen)
    ok("statusd: erin's onlineDevices show each state the client sent (background, active, idle, and background after a "
       "reconnect) and she is away exactly while no device is active")


APP_PAGE = """<!doctype html>
<meta charset="utf-8"><title>an app using statusd</title>
<ul id="events"></ul><p id="state"></p>
<script type="module">
  const params = new URLSearchParams(location.hash.slice(1));
  const { StatusClient } = await import(params.get("server") + "/client/statusd.js");
  const client = new StatusClient({ token: params.get("token"), deviceId: "app-page", url: params.get("server") });
  client.on("state", (state) => { document.getElementById("state").textContent = state; });
  client.on("statusChanged", (statuses) => {
    for (const status of statuses) {
      const item = document.createElement("li");
      item.textContent = `${status.userId}: ${status.statusType} ${status.customStatus ?? ""}`.trim();
      document.getElementById("events").append(item);
    }
  });
  await client.connect();
  await client.subscribeUserStatus(["carol"]);
  document.getElementById("state").textContent = "subscribed";
</script>
"""


class AppPage(http.server.BaseHTTPRequestHandler):
    """Serves the page of an app on another origin than statusd's."""

    def do_GET(self):
        body = APP_PAGE.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_):
        pass


def app_page_flow(driver, api_key):
    """An app's own page, on another origin, loads the client from statusd and receives another user's change."""
    # Threaded: a connection Chromium opens ahead and never uses must not hold up shutdown() (a one-thread server
    # serves it until it times out).
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), AppPage)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    origin = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        assert api("PATCH", "/v1/apps/console-demo/config", {"allowedOrigins": [BASE, origin]})[0] == 200
        assert api("PUT", "/v1/apps/console-demo/users/dave", {}, key=api_key)[0] == 200
        _, minted = api("POST", "/v1/apps/console-demo/users/dave/tokens", {"ttlSeconds": 600}, key=api_key)
        driver.get(f"{origin}/app.html#server={BASE}&token={minted['token']}")
        wait_text(driver, "state", lambda t: t == "subscribed", "the app page connects and subscribes", timeout=15)
        assert api("PUT", "/v1/apps/console-demo/users/carol/status", {"customStatus": "from elsewhere"}, key=api_key)[0] == 200
        wait_text(driver, "events", lambda t: "carol: unlogined from elsewhere" in t, "carol's change on the app page")
        ok(f"browser client: a page of another origin ({origin}) imports it from statusd and receives another user's change")
    finally:
        server.shutdown()


def main():
    os.makedirs(args.screenshots, exist_ok=True)
    driver = browser()
    try:
        app = console_flow(driver)
        api_key = driver.execute_script("return sessionStorage.getItem('statusd.apiKey.console-demo')")
        assert api_key and api_key.startswith("sk_"), api_key
        watch_flow(driver, api_key)
        views_flow(driver, api_key)
        client_flow(driver, api_key)
        device_state_flow(driver, api_key)
        app_page_flow(driver, api_key)
        # The deliberate refusals above (401, 409, 400, the refused WebSocket) are logged as network errors; any
        # other error, a script error above all, fails the run.
        errors = [
            entry for entry in driver.get_log("browser")
            if entry["level"] == "SEVERE" and entry.get("source") != "network" and "/v1/connect" not in entry["message"]
        ]
        assert not errors, f"errors in the browser console: {errors}"
        ok("no script errors in the browser console")
    except Exception:
        driver.save_screenshot(os.path.join(os.environ.get("LIVE_DIR", "/tmp"), "browser-failure.png"))
        raise
    finally:
        driver.quit()


if __name__ == "__main__":
    try:
        main()
    except AssertionError as error:
        print(f"FAIL  {error}", file=sys.stderr)
        sys.exit(1)
