// statusd browser client: one ES module, no dependencies.
//
//   import { StatusClient } from "https://status.example.com/client/statusd.js";
//   const client = new StatusClient({ token, deviceId: "web-1" });
//   client.on("statusChanged", (statuses) => render(statuses));
//   await client.connect();
//   await client.subscribeUserStatus(["bob", "carol"]);
//
// The socket is the device WebSocket of SPEC §7 (`GET /v1/connect`). The client heartbeats at the interval the
// welcome names, reconnects with jittered exponential backoff after any loss it did not ask for, and passes the
// welcome's `resume` token back on reconnect so the server can send what changed while it was away. It reports the
// device's state (SPEC §10.4): `background` while the page is hidden, `idle` after a while without input, `active`
// otherwise, so that the user shows `away` when no device is in use and a backend can choose between an in-app
// notification and a push.

/**
 * @typedef {"ios"|"android"|"ipad"|"web"|"windows"|"macos"|"linux"|"other"} Platform
 * @typedef {"online"|"offline"|"unlogined"} StatusType
 * @typedef {"active"|"idle"|"background"} DeviceState
 * @typedef {"available"|"away"|"busy"|"dnd"|"invisible"} Availability
 * @typedef {{deviceId: string, platform: Platform, state?: DeviceState}} OnlineDevice
 * @typedef {{userId: string, statusType: StatusType, customStatus?: string, customStatusExpiresAt?: number,
 *   availability?: Availability, lastActiveAt?: number, version: number, onlineDevices?: OnlineDevice[]}} UserStatus
 * @typedef {{userId: string, code: string}} UserFailure
 * @typedef {{statuses: UserStatus[], failures: UserFailure[]}} StatusQueryResult
 * @typedef {{subscribed: string[], evicted: string[], failures: UserFailure[]}} SubscribeResult
 * @typedef {{unsubscribed: string[]}} UnsubscribeResult
 * @typedef {{event: "welcome", userId: string, deviceId: string, heartbeatSeconds: number, status: UserStatus,
 *   resume?: string}} Welcome
 * @typedef {"idle"|"connecting"|"open"|"reconnecting"|"closed"} ConnectionState
 *
 * @typedef {object} StatusClientOptions
 * @property {string | (() => string | Promise<string>)} token A user token, or a function returning a fresh one
 *   (called before every connect, so an expiring token can be renewed by the app's backend).
 * @property {string} deviceId 1–64 chars of `A-Z a-z 0-9 _ -`; the same id on reconnect replaces the old socket.
 * @property {Platform} [platform] Default `"web"`.
 * @property {string} [presence] `"subscriptions"` (default), `"friends"`, `"all"` or `"roles:a,b"`.
 * @property {string} [url] The server's base URL; default: where this module was loaded from.
 * @property {boolean} [reconnect] Reconnect after losses the app did not ask for (default true).
 * @property {number} [minReconnectDelayMs] First backoff ceiling (default 500).
 * @property {number} [maxReconnectDelayMs] Largest backoff ceiling (default 30000).
 * @property {number} [requestTimeoutMs] How long a request waits for its reply (default 10000).
 * @property {boolean} [snapshot] Ask for the current statuses on every connect (default true, SPEC §10.6).
 * @property {boolean} [backgroundWhenHidden] Report the device `background` while the page is hidden (Page Visibility
 *   API; default true).
 * @property {number | null} [idleAfterSeconds] Report the device `idle` after this long without pointer, keyboard,
 *   touch, wheel or scroll input (default 300; `0` or `null`: never).
 * @property {typeof WebSocket} [WebSocket] A WebSocket implementation (default the global one).
 */

/** @type {DeviceState[]} */
const DEVICE_STATES = ["active", "idle", "background"];
/** The input that makes a device `active` (captured at the document, so element scrolls count too). */
const INPUT_EVENTS = ["pointerdown", "pointermove", "keydown", "wheel", "touchstart", "scroll"];

/** An error reply of statusd, or a request that could not be answered (`DISCONNECTED`, `TIMEOUT`). */
export class StatusError extends Error {
  /**
   * @param {string} code
   * @param {string} message
   * @param {number} [retryAfterMs]
   */
  constructor(code, message, retryAfterMs) {
    super(`${code}: ${message}`);
    this.name = "StatusError";
    this.code = code;
    this.retryAfterMs = retryAfterMs;
  }
}

/**
 * A device connection to statusd.
 *
 * Events (`on(name, callback)`):
 * - `welcome` (welcome): every (re)connect, after the server admitted the device;
 * - `statusChanged` (statuses, event): `onUserStatusChanged`; statuses older than one already seen are dropped;
 * - `kicked` (reason): the server closed the device (`loginPolicy`, `tooManyDevices`, ...); no reconnect follows;
 * - `state` (state): `connecting`, `open`, `reconnecting`, `closed`;
 * - `deviceState` (state): the device's state changed (`active`, `idle`, `background`), whether or not it is sent yet;
 * - `reconnecting` ({attempt, delayMs}): a reconnect is scheduled;
 * - `error` (error): a connect attempt failed.
 */
export class StatusClient {
  /** @param {StatusClientOptions} options */
  constructor(options) {
    if (!options || !options.token || !options.deviceId) throw new TypeError("token and deviceId are required");
    this.options = {
      platform: "web",
      reconnect: true,
      minReconnectDelayMs: 500,
      maxReconnectDelayMs: 30000,
      requestTimeoutMs: 10000,
      backgroundWhenHidden: true,
      idleAfterSeconds: 300,
      ...options,
    };
    /** @type {ConnectionState} */
    this.state = "idle";
    /** @type {Welcome | null} */
    this.welcome = null;
    /** The resume token of the last welcome, sent back on the next connect. */
    this.resumeToken = null;
    this._listeners = new Map();
    this._pending = new Map();
    this._nextId = 1;
    this._versions = new Map();
    this._attempt = 0;
    this._socket = null;
    this._heartbeatTimer = null;
    this._reconnectTimer = null;
    this._wanted = false;
    this._connecting = null;
    /** @type {DeviceState} The device's state as this page sees it (SPEC §10.4). */
    this.deviceState = "active";
    /** The state the server holds for the current socket; a new device starts `active` there. */
    this._serverDeviceState = null;
    this._idle = false;
    this._lastInputAt = 0;
    this._idleTimer = null;
    this._tracking = null;
  }

  /**
   * Registers a callback; returns a function that removes it.
   * @param {"welcome"|"statusChanged"|"kicked"|"state"|"deviceState"|"reconnecting"|"error"} name
   * @param {(...args: any[]) => void} callback
   */
  on(name, callback) {
    if (!this._listeners.has(name)) this._listeners.set(name, new Set());
    this._listeners.get(name).add(callback);
    return () => this._listeners.get(name).delete(callback);
  }

  /**
   * Opens the connection; resolves with the first welcome (failed attempts are retried with backoff meanwhile, unless
   * `reconnect` is off). Later losses reconnect on their own until `close()`.
   * @returns {Promise<Welcome>}
   */
  connect() {
    this._wanted = true;
    this._startDeviceTracking();
    if (this.state === "open" && this.welcome) return Promise.resolve(this.welcome);
    if (this._connecting) return this._connecting;
    this._connecting = new Promise((resolve, reject) => {
      this._firstConnect = { resolve, reject };
    });
    this._open();
    return this._connecting;
  }

  /** Closes the socket and stops reconnecting. The device goes away as a drop (offline), not a logout. */
  close() {
    this._wanted = false;
    clearTimeout(this._reconnectTimer);
    this._stopHeartbeat();
    this._stopDeviceTracking();
    if (this._socket) this._socket.close(1000, "client closed");
    this._setState("closed");
  }

  /**
   * setSelfStatus: sets (or with `""`/`null` clears) the user's custom status; with `clearAfterSeconds`
   * (1–604,800) it clears itself then (the status carries `customStatusExpiresAt`, SPEC §10.2).
   * @param {string | null} customStatus
   * @param {{clearAfterSeconds?: number}} [options]
   * @returns {Promise<UserStatus>}
   */
  setSelfStatus(customStatus, options = {}) {
    const fields = { customStatus };
    if (options.clearAfterSeconds !== undefined) fields.clearAfterSeconds = options.clearAfterSeconds;
    return this.request("setSelfStatus", fields);
  }

  /**
   * setAvailability: `available`, `away`, `busy`, `dnd` or `invisible` (SPEC §10.1), kept across reconnects and
   * devices; `invisible` shows the user offline to everyone else while their own devices see the truth.
   * @param {"available" | "away" | "busy" | "dnd" | "invisible"} availability
   * @returns {Promise<UserStatus>}
   */
  setAvailability(availability) {
    return this.request("setSelfStatus", { availability });
  }

  /**
   * getUserStatus of the given users (others need premium + statusQuery).
   * @param {string[]} userIds
   * @returns {Promise<StatusQueryResult>}
   */
  getUserStatus(userIds) {
    return this.request("getUserStatus", { userIds });
  }

  /**
   * subscribeUserStatus: the users' changes arrive as `statusChanged` on every device of this user.
   * @param {string[]} userIds
   * @returns {Promise<SubscribeResult>}
   */
  async subscribeUserStatus(userIds) {
    const result = await this.request("subscribeUserStatus", { userIds });
    // The reply's `statuses` are the users' current statuses (SPEC §4): an event older than them is dropped.
    for (const status of result.statuses || []) this._fresh(status);
    return result;
  }

  /**
   * unsubscribeUserStatus; without ids, every subscription goes.
   * @param {string[]} [userIds]
   * @returns {Promise<UnsubscribeResult>}
   */
  unsubscribeUserStatus(userIds) {
    return this.request("unsubscribeUserStatus", userIds ? { userIds } : {});
  }

  /**
   * setDeviceState: `active`, `idle` or `background` (SPEC §10.4). The client reports these on its own (see the
   * `backgroundWhenHidden` and `idleAfterSeconds` options); call this to report a state the page knows better, e.g.
   * `idle` while a video plays full screen. The next input or visibility change the client tracks overrides it, so an
   * app that drives the state itself turns both options off. Sent only when it differs from what the server holds,
   * and again after every reconnect unless it is `active`.
   * @param {DeviceState} state
   * @returns {Promise<object | null>} the reply's result, or null when nothing was sent (unchanged, or not connected:
   *   it is sent after the next welcome).
   */
  setDeviceState(state) {
    if (!DEVICE_STATES.includes(state)) return Promise.reject(new TypeError(`unknown device state ${state}`));
    if (state !== this.deviceState) {
      this.deviceState = state;
      this._emit("deviceState", state);
    }
    return this._sendDeviceState();
  }

  /** An explicit heartbeat (the client sends them on its own while open). */
  heartbeat() {
    return this.request("heartbeat", {});
  }

  /**
   * Logs this device out (the user becomes `unlogined` if it was their last device) and stops reconnecting.
   * @returns {Promise<UserStatus>}
   */
  async logout() {
    this._wanted = false;
    try {
      return await this.request("logout", {});
    } finally {
      this.close();
    }
  }

  /**
   * Sends one request frame and resolves with its `result` (rejects with a StatusError).
   * @param {string} op
   * @param {object} fields
   */
  request(op, fields) {
    const socket = this._socket;
    if (!socket || this.state !== "open") {
      return Promise.reject(new StatusError("DISCONNECTED", "not connected"));
    }
    const id = String(this._nextId++);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this._pending.delete(id);
        reject(new StatusError("TIMEOUT", `no reply to ${op} within ${this.options.requestTimeoutMs} ms`));
      }, this.options.requestTimeoutMs);
      this._pending.set(id, { resolve, reject, timer });
      socket.send(JSON.stringify({ id, op, ...fields }));
    });
  }

  // ---- internals

  async _open() {
    clearTimeout(this._reconnectTimer);
    this._setState(this._attempt === 0 ? "connecting" : "reconnecting");
    let token;
    try {
      token = typeof this.options.token === "function" ? await this.options.token() : this.options.token;
    } catch (error) {
      this._emit("error", error);
      this._scheduleReconnect();
      return;
    }
    if (!this._wanted) return;
    const url = this._url(token);
    const Socket = this.options.WebSocket || globalThis.WebSocket;
    const socket = new Socket(url);
    this._socket = socket;
    let welcomed = false;
    socket.onmessage = (message) => {
      let frame;
      try {
        frame = JSON.parse(message.data);
      } catch {
        return;
      }
      if (frame.event === "welcome") {
        welcomed = true;
        this._onWelcome(frame);
      } else {
        this._onFrame(frame);
      }
    };
    socket.onclose = (event) => {
      if (this._socket !== socket) return;
      this._socket = null;
      this._stopHeartbeat();
      this._failPending(new StatusError("DISCONNECTED", "the connection closed"));
      if (!welcomed) this._emit("error", new StatusError("CONNECT_FAILED", `connect refused or lost (close code ${event.code})`));
      if (this._kicked || !this._wanted || !this.options.reconnect) {
        if (this._firstConnect && !welcomed) {
          this._firstConnect.reject(new StatusError("CONNECT_FAILED", "could not connect"));
          this._firstConnect = null;
          this._connecting = null;
        }
        this._stopDeviceTracking();
        this._setState("closed");
        return;
      }
      // 1012 (the node restarts) and 1013 (it cannot reach Redis): reconnect at once, through another node.
      this._scheduleReconnect(event.code === 1012 || event.code === 1013);
    };
  }

  _url(token) {
    const base = new URL(this.options.url || new URL("/", import.meta.url).href);
    base.protocol = base.protocol === "https:" || base.protocol === "wss:" ? "wss:" : "ws:";
    const url = new URL("/v1/connect", base);
    url.searchParams.set("deviceId", this.options.deviceId);
    url.searchParams.set("platform", this.options.platform);
    if (this.options.presence) url.searchParams.set("presence", this.options.presence);
    url.searchParams.set("token", token);
    if (this.resumeToken) url.searchParams.set("resume", this.resumeToken);
    // Every connect starts from the current statuses (SPEC §10.6): one `statusChanged` whose frame has `snapshot`.
    if (this.options.snapshot !== false) url.searchParams.set("snapshot", "true");
    return url.href;
  }

  _onWelcome(welcome) {
    this.welcome = welcome;
    this._kicked = false;
    if (typeof welcome.resume === "string") this.resumeToken = welcome.resume;
    this._attempt = 0;
    if (welcome.status) this._fresh(welcome.status);
    // Every connect is a new device to the server, which starts it `active` (set before the `state` callbacks, which
    // may call setDeviceState); a page that is hidden or idle says so right after.
    this._serverDeviceState = "active";
    this._setState("open");
    this._startHeartbeat(welcome.heartbeatSeconds);
    this._sendDeviceState();
    this._emit("welcome", welcome);
    if (this._firstConnect) {
      this._firstConnect.resolve(welcome);
      this._firstConnect = null;
      this._connecting = null;
    }
  }

  _onFrame(frame) {
    if (frame.id !== undefined && frame.id !== null && this._pending.has(String(frame.id))) {
      const pending = this._pending.get(String(frame.id));
      this._pending.delete(String(frame.id));
      clearTimeout(pending.timer);
      if (frame.ok) {
        pending.resolve(frame.result);
      } else {
        const error = frame.error || {};
        pending.reject(new StatusError(error.code || "UNKNOWN", error.message || "", error.retryAfterMs));
      }
      return;
    }
    if (frame.event === "onUserStatusChanged" && Array.isArray(frame.statuses)) {
      const fresh = frame.statuses.filter((status) => this._fresh(status));
      if (fresh.length > 0) this._emit("statusChanged", fresh, frame);
    } else if (frame.event === "kicked") {
      this._kicked = true;
      this._emit("kicked", frame.reason);
    }
  }

  /** Whether a status is not older than the newest seen of its user (an equal version may list other devices). */
  _fresh(status) {
    const known = this._versions.get(status.userId);
    if (known !== undefined && status.version < known) return false;
    this._versions.set(status.userId, status.version);
    return true;
  }

  /** Sends the device state when the server holds another; a failure is left to the next welcome or change. */
  _sendDeviceState() {
    const state = this.deviceState;
    if (!this._socket || this.state !== "open" || this._serverDeviceState === state) return Promise.resolve(null);
    const socket = this._socket;
    this._serverDeviceState = state;
    const sent = this.request("setDeviceState", { state });
    sent.catch(() => {
      // Not held by the server (refused, or the socket went): the next change, or the next welcome, sends it again.
      if (this._socket === socket && this._serverDeviceState === state) this._serverDeviceState = null;
    });
    return sent;
  }

  /**
   * Listens to the page's visibility and input while the client is wanted (browsers only). With both options off
   * nothing is tracked and the state is the app's alone (`setDeviceState`).
   */
  _startDeviceTracking() {
    if (this._tracking || typeof document === "undefined" || typeof document.addEventListener !== "function") return;
    const tracksIdle = this._idleAfterMs() > 0;
    if (!tracksIdle && !this.options.backgroundWhenHidden) return;
    const onVisibility = () => {
      // Coming back to a page is input: it is in use again.
      if (tracksIdle && !this._hidden()) this._onInput();
      this._updateDeviceState();
    };
    const onInput = () => this._onInput();
    const options = { capture: true, passive: true };
    document.addEventListener("visibilitychange", onVisibility);
    if (tracksIdle) for (const name of INPUT_EVENTS) document.addEventListener(name, onInput, options);
    this._tracking = () => {
      document.removeEventListener("visibilitychange", onVisibility);
      for (const name of INPUT_EVENTS) document.removeEventListener(name, onInput, options);
    };
    if (tracksIdle) this._onInput();
    this._updateDeviceState();
  }

  _stopDeviceTracking() {
    if (!this._tracking) return;
    this._tracking();
    this._tracking = null;
    clearTimeout(this._idleTimer);
    this._idleTimer = null;
  }

  _hidden() {
    return Boolean(this.options.backgroundWhenHidden) && document.visibilityState === "hidden";
  }

  /**
   * Input of any kind. Input comes in bursts (every pointer move), so it only stamps the time; the idle timer, armed
   * once per idle period, looks at the stamp when it fires and sleeps again for the rest of the period.
   */
  _onInput() {
    this._lastInputAt = Date.now();
    if (this._idleTimer === null) this._armIdleTimer(this._idleAfterMs());
    this._idle = false;
    // Also ends an `idle` or `background` the app set by hand while the page was in use.
    if (this.deviceState !== "active") this._updateDeviceState();
  }

  _idleAfterMs() {
    const seconds = Number(this.options.idleAfterSeconds);
    return seconds > 0 ? seconds * 1000 : 0;
  }

  _armIdleTimer(delayMs) {
    if (!delayMs) return;
    this._idleTimer = setTimeout(() => {
      const idleAfterMs = this._idleAfterMs();
      const quietMs = Date.now() - this._lastInputAt;
      if (quietMs < idleAfterMs) {
        this._armIdleTimer(idleAfterMs - quietMs);
        return;
      }
      // Asleep until the next input, which arms it again.
      this._idleTimer = null;
      this._idle = true;
      this._updateDeviceState();
    }, delayMs);
  }

  /** The tracked state: hidden wins over idle; sent only when it changed. */
  _updateDeviceState() {
    const state = this._hidden() ? "background" : this._idle ? "idle" : "active";
    if (state === this.deviceState) return;
    this.deviceState = state;
    this._emit("deviceState", state);
    this._sendDeviceState();
  }

  _startHeartbeat(seconds) {
    this._stopHeartbeat();
    const interval = Math.max(1, Number(seconds) || 30) * 1000;
    this._heartbeatTimer = setInterval(() => {
      // A heartbeat that gets no reply means the path is dead even if the socket looks open: drop it and reconnect.
      this.heartbeat().catch((error) => {
        if (error.code === "TIMEOUT" && this._socket) this._socket.close(4000, "heartbeat timeout");
      });
    }, interval);
  }

  _stopHeartbeat() {
    clearInterval(this._heartbeatTimer);
    this._heartbeatTimer = null;
  }

  _scheduleReconnect(atOnce = false) {
    const ceiling = Math.min(this.options.maxReconnectDelayMs, this.options.minReconnectDelayMs * 2 ** this._attempt);
    // Half fixed, half random ("equal jitter"): spreads the reconnects of many clients after a server restart. A node
    // that sends its devices elsewhere (1012, 1013) gets them back at once, spread over half the first ceiling.
    const delayMs = atOnce
      ? Math.round(Math.random() * (this.options.minReconnectDelayMs / 2))
      : Math.round(ceiling / 2 + Math.random() * (ceiling / 2));
    this._attempt += 1;
    this._setState("reconnecting");
    this._emit("reconnecting", { attempt: this._attempt, delayMs });
    this._reconnectTimer = setTimeout(() => {
      if (this._wanted) this._open();
    }, delayMs);
  }

  _failPending(error) {
    for (const pending of this._pending.values()) {
      clearTimeout(pending.timer);
      pending.reject(error);
    }
    this._pending.clear();
  }

  _setState(state) {
    if (this.state === state) return;
    this.state = state;
    this._emit("state", state);
  }

  _emit(name, ...args) {
    for (const callback of this._listeners.get(name) || []) {
      try {
        callback(...args);
      } catch (error) {
        setTimeout(() => {
          throw error;
        });
      }
    }
  }
}
