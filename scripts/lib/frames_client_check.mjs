// The browser client (statusd.js) against the device WebSocket's frames (scripts/test-frames): a StatusClient on a
// socket stand-in is fed every example frame of the AsyncAPI document that the server sends, and must read each as
// the document means it (a welcome resolves connect, a reply settles its request with its result or its error code,
// onUserStatusChanged and kicked reach their listeners). The requests the client writes meanwhile are printed, one
// JSON object a line, for scripts/lib/frames_test.py's check to validate against the document.
//
// Usage: node frames_client_check.mjs <statusd.js> <asyncapi.json>
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { isDeepStrictEqual } from "node:util";

const [clientPath, documentPath] = process.argv.slice(2);
const { StatusClient } = await import(pathToFileURL(clientPath).href);
const messages = JSON.parse(readFileSync(documentPath, "utf8")).channels.device.messages;
const examples = (name) => messages[name].examples.map((example) => [example.name, example.payload]);
const sent = [];
let failures = 0;
const fail = (what) => {
  console.error(`FAIL: statusd.js: ${what}`);
  failures += 1;
};

class StandInSocket {
  constructor(url) {
    this.url = url;
    StandInSocket.last = this;
  }
  send(text) {
    sent.push(JSON.parse(text));
  }
  close() {}
  /** Delivers a server frame as the browser's WebSocket would. */
  receive(frame) {
    this.onmessage({ data: JSON.stringify(frame) });
  }
}

async function connected() {
  const client = new StatusClient({
    token: "token",
    deviceId: "web-1",
    url: "http://statusd.test/",
    WebSocket: StandInSocket,
    idleAfterSeconds: 0,
    backgroundWhenHidden: false,
    requestTimeoutMs: 1000,
  });
  const connecting = client.connect();
  await Promise.resolve();
  const socket = StandInSocket.last;
  const [name, welcome] = examples("welcome")[0];
  socket.receive(welcome);
  const admitted = await connecting;
  if (admitted.resume !== welcome.resume || client.resumeToken !== welcome.resume) fail(`welcome/${name}: resume not kept`);
  if (client.state !== "open") fail(`welcome/${name}: the client is ${client.state}, not open`);
  return { client, socket };
}

// A reply settles the request with its id: its result, or a StatusError with its code.
const replies = {
  statusReply: (client) => client.setSelfStatus("in a meeting"),
  statusQueryReply: (client) => client.getUserStatus(["bob"]),
  subscribeReply: (client) => client.subscribeUserStatus(["bob"]),
  unsubscribeReply: (client) => client.unsubscribeUserStatus(["bob"]),
  heartbeatReply: (client) => client.heartbeat(),
  errorReply: (client) => client.heartbeat(),
};
for (const [message, start] of Object.entries(replies)) {
  for (const [name, frame] of examples(message)) {
    if (frame.id === null) continue; // answers no request of this client, which always sends an id
    const { client, socket } = await connected();
    const pending = start(client);
    const request = sent[sent.length - 1];
    socket.receive({ ...frame, id: request.id });
    try {
      const result = await pending;
      if (!frame.ok) fail(`${message}/${name}: resolved instead of rejecting`);
      else if (!isDeepStrictEqual(result, frame.result)) fail(`${message}/${name}: resolved with ${JSON.stringify(result)}`);
    } catch (error) {
      if (frame.ok) fail(`${message}/${name}: rejected with ${error}`);
      else if (error.code !== frame.error.code || error.retryAfterMs !== frame.error.retryAfterMs)
        fail(`${message}/${name}: rejected with ${error.code} ${error.retryAfterMs}`);
    }
    client.close();
  }
}

// Events reach their listeners: every status is new to a fresh client, a snapshot without statuses says nothing.
for (const message of ["statusChanged", "statusSnapshot"]) {
  for (const [name, frame] of examples(message)) {
    const { client, socket } = await connected();
    const heard = [];
    client.on("statusChanged", (statuses, event) => heard.push({ statuses, event }));
    socket.receive(frame);
    const users = frame.statuses.map((status) => status.userId);
    if (users.length === 0 ? heard.length !== 0 : heard.length !== 1 || !isDeepStrictEqual(heard[0].statuses.map((s) => s.userId), users))
      fail(`${message}/${name}: heard ${JSON.stringify(heard)}`);
    if (heard.length === 1 && Boolean(heard[0].event.snapshot) !== (message === "statusSnapshot"))
      fail(`${message}/${name}: the snapshot flag is lost`);
    client.close();
  }
}
for (const [name, frame] of examples("kicked")) {
  const { client, socket } = await connected();
  let reason = null;
  client.on("kicked", (value) => (reason = value));
  socket.receive(frame);
  if (reason !== frame.reason) fail(`kicked/${name}: heard ${reason}`);
  client.close();
}

for (const frame of sent) console.log(JSON.stringify(frame));
process.exit(failures === 0 ? 0 : 1);
