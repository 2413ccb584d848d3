// The official A2A JavaScript SDK's A2A 0.3 client (@a2a-js/sdk's
// compat/v0_3 JSON-RPC transport, or with "binding": "rest" its 0.3
// HTTP+JSON transport, pinned in package-lock.json) against an
// lmosnode's A2A bridge. Run by node/a2a03_test.go and
// node/a2a_rest03_test.go:
//
//   node client03.mjs '{"base": "http://127.0.0.1:PORT", "agent": "/a2a/<publisher>/<id>/", "thingId": "…", "task": "session"?, "binding": "rest"?}'
//
// The card is read as a 0.3 client reads it (its url, preferredTransport
// and protocolVersion, by the SDK's parseLegacyAgentCard), so that the
// client factory picks the 0.3 transport. It prints one JSON object with
// what it saw, including the JSON-RPC methods and A2A-Version headers
// that went over the wire; the Go test asserts on it.
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, RestTransportFactory } from "@a2a-js/sdk/client";
import { parseLegacyAgentCard } from "@a2a-js/sdk/compat/v0_3/client";
import { Role, TaskState } from "@a2a-js/sdk";

const req = JSON.parse(process.argv[2]);
const out = { wire: [] };

// Records the method and A2A-Version of every JSON-RPC request, the HTTP
// method and path (task ids as {id}) of every REST request.
const rest = req.binding === "rest";
const recordingFetch = (url, init = {}) => {
  if (rest) {
    const path = new URL(url).pathname.replace(/^.*\/v1\//, "/v1/").replace(/[0-9a-f]{8}-[0-9a-f-]{27}|no-such-task/, "{id}");
    const entry = (init.method ?? "GET") + " " + path;
    if (!out.wire.includes(entry)) out.wire.push(entry);
  } else if (init.body) {
    const headers = new Headers(init.headers);
    const v = headers.get("A2A-Version") ?? "";
    const entry = JSON.parse(init.body).method + (v ? " (A2A-Version " + v + ")" : "");
    if (!out.wire.includes(entry)) out.wire.push(entry);
  }
  return fetch(url, init);
};
const factory = rest
  ? new ClientFactory({ transports: [new RestTransportFactory({ fetchImpl: recordingFetch, legacyCompat: { enabled: true } })] })
  : new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [new JsonRpcTransportFactory({ fetchImpl: recordingFetch, legacyCompat: { enabled: true } })],
      }),
    );

// A 0.3 client knows nothing of supportedInterfaces: it reads the card's
// 0.3 members.
async function client03(cardURL) {
  const raw = await (await fetch(cardURL)).json();
  delete raw.supportedInterfaces;
  const card = parseLegacyAgentCard(raw);
  const client = await factory.createFromAgentCard(card);
  return { client, card: { url: raw.url, preferredTransport: raw.preferredTransport, protocolVersion: raw.protocolVersion, transport: client.protocolVersion } };
}

const text = (s) => ({ content: { $case: "text", value: s } });
const message = (s, metadata) => ({ messageId: crypto.randomUUID(), role: Role.ROLE_USER, parts: [text(s)], metadata });
const partText = (p) => (p?.content?.$case === "text" ? p.content.value : JSON.stringify(p?.content?.value));
const taskOf = (res) => (res?.payload?.$case === "task" ? res.payload.value : res);
const stateName = (s) => TaskState[s] ?? String(s);
const describe = (ev) => {
  const p = ev.payload;
  switch (p?.$case) {
    case "task": return "task:" + stateName(p.value.status.state);
    case "statusUpdate": return "status:" + stateName(p.value.status.state);
    case "artifactUpdate": return "artifact:" + p.value.artifact.artifactId + ":" + p.value.artifact.parts.map(partText).join("");
    default: return "message";
  }
};

async function agentTasks(base) {
  const { client, card } = await client03(base + ".well-known/agent-card.json");
  out.card = card;

  const task = taskOf(await client.sendMessage({ message: message("hello") }));
  out.send = { state: stateName(task.status.state), artifacts: task.artifacts.map((a) => a.parts.map(partText).join("")) };

  out.stream = [];
  for await (const ev of client.sendMessageStream({ message: message("stream") })) out.stream.push(describe(ev));

  // A long-running task: started without blocking, read, resubscribed to,
  // cancelled; the resubscription ends with the cancellation.
  const slow = taskOf(await client.sendMessage({ message: message("slow"), configuration: { returnImmediately: true, acceptedOutputModes: [] } }));
  let got = await client.getTask({ id: slow.id });
  while (got.status.state === TaskState.TASK_STATE_SUBMITTED) {
    await new Promise((r) => setTimeout(r, 20));
    got = await client.getTask({ id: slow.id });
  }
  const resub = [];
  let joined;
  const first = new Promise((r) => (joined = r));
  const subscribed = (async () => {
    for await (const ev of client.resubscribeTask({ id: slow.id })) {
      resub.push(describe(ev));
      joined();
    }
  })();
  await first; // the resubscription's first event: the task as it is
  const cancelled = await client.cancelTask({ id: slow.id });
  await subscribed;
  const after = await client.getTask({ id: slow.id });
  out.cancel = { got: stateName(got.status.state), cancelled: stateName(cancelled.status.state), after: stateName(after.status.state), resubscribed: resub };

  try {
    await client.getTask({ id: "no-such-task" });
    out.unknownTask = "found";
  } catch (e) {
    out.unknownTask = String(e?.message ?? e);
  }
}

// The node's card: its 0.3 url is the node-wide endpoint, where message
// metadata names the agent.
async function nodeCall(base, thingId) {
  const { client } = await client03(base + "/.well-known/agent-card.json");
  const task = taskOf(await client.sendMessage({ message: message("via the node", { "lmos:agent": thingId }) }));
  out.nodeCall = { state: stateName(task.status.state), artifacts: task.artifacts.map((a) => a.parts.map(partText).join("")) };
}

// A streaming conversation (an LMOS streaming session) in 0.3: the first
// message opens it (metadata lmos:stream) and streams the task; further
// messages name the task; lmos:streamEnd ends it.
async function session(base) {
  const { client } = await client03(base + ".well-known/agent-card.json");
  const events = [];
  let taskId;
  let opened;
  const ready = new Promise((r) => (opened = r));
  const collect = (async () => {
    for await (const ev of client.sendMessageStream({ message: message("hello", { "lmos:stream": true }) })) {
      if (ev.payload?.$case === "task") {
        taskId = ev.payload.value.id;
        opened();
      }
      events.push(describe(ev));
    }
  })();
  await ready;
  const more = taskOf(await client.sendMessage({ message: { ...message("world"), taskId } }));
  const last = taskOf(await client.sendMessage({ message: { ...message(""), taskId, metadata: { "lmos:streamEnd": true } } }));
  await collect;
  out.session = { events, more: stateName(more.status.state), last: stateName(last.status.state), history: last.history.length };
}

try {
  if (req.task === "session") {
    await session(req.base + req.agent);
  } else {
    await agentTasks(req.base + req.agent);
    await nodeCall(req.base, req.thingId);
  }
} catch (e) {
  out.error = String(e?.stack ?? e);
}
console.log(JSON.stringify(out));
