// The official A2A JavaScript SDK (@a2a-js/sdk, pinned in package-lock.json)
// as a client of an lmosnode's A2A bridge. Run by node/a2a_test.go:
//
//   node client.mjs '{"base": "http://127.0.0.1:PORT", "agent": "/a2a/<publisher>/<id>", "task": "…"}'
//
// It prints one JSON object with what it saw; the Go test asserts on it.
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } from "@a2a-js/sdk/client";
import { Role, TaskState, verifyAgentCardSignature } from "@a2a-js/sdk";

const req = JSON.parse(process.argv[2]);
const out = {};

// With req.token every request, card fetches included, carries the node's
// API token as a bearer token (what the cards' security scheme says).
const authFetch = (url, init = {}) => {
  const headers = new Headers(init.headers);
  if (req.token) headers.set("Authorization", "Bearer " + req.token);
  return fetch(url, { ...init, headers });
};
const factory = new ClientFactory(
  ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl: authFetch })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl: authFetch }),
  }),
);

const text = (s) => ({ content: { $case: "text", value: s } });
const message = (s, metadata) => ({
  messageId: crypto.randomUUID(),
  role: Role.ROLE_USER,
  parts: [text(s)],
  metadata,
});
const partText = (p) => (p?.content?.$case === "text" ? p.content.value : JSON.stringify(p?.content?.value));
// sendMessage answers a Task or a Message.
const taskOf = (res) => (res?.payload?.$case === "task" ? res.payload.value : res);
const stateName = (s) => TaskState[s] ?? String(s);

// Verifies a card's signature with the key its jku names.
async function verified(card) {
  await verifyAgentCardSignature(async (kid, jku) => {
    const jwks = await (await authFetch(jku)).json();
    const jwk = jwks.keys.find((k) => k.kid === kid);
    return crypto.subtle.importKey("jwk", jwk, { name: "Ed25519" }, true, ["verify"]);
  })(card);
  return true;
}

async function agentTasks(base) {
  const client = await factory.createFromUrl(base);
  const card = await (await authFetch(new URL(".well-known/agent-card.json", base))).json();
  out.card = { name: card.name, url: card.supportedInterfaces[0].url, skills: card.skills.map((s) => s.id), verified: await verified(card) };

  // Request-reply: a message answered by a completed task.
  const sent = await client.sendMessage({ message: message("hello") });
  const task = taskOf(sent);
  out.send = { state: stateName(task.status.state), artifacts: task.artifacts.map((a) => a.parts.map(partText).join("")) };

  // One request, many responses: the chunks stream as artifact updates.
  out.stream = [];
  for await (const ev of client.sendMessageStream({ message: message("stream") })) {
    const p = ev.payload;
    if (p?.$case === "task") out.stream.push("task:" + stateName(p.value.status.state));
    if (p?.$case === "statusUpdate") out.stream.push("status:" + stateName(p.value.status.state));
    if (p?.$case === "artifactUpdate") out.stream.push("artifact:" + p.value.artifact.artifactId + ":" + p.value.artifact.parts.map(partText).join(""));
  }

  // A long-running task: started, read, cancelled, read again.
  const started = await client.sendMessage({ message: message("slow"), configuration: { returnImmediately: true, acceptedOutputModes: [] } });
  const slow = taskOf(started);
  let got = await client.getTask({ id: slow.id });
  while (got.status.state !== TaskState.TASK_STATE_WORKING && got.status.state === TaskState.TASK_STATE_SUBMITTED) {
    await new Promise((r) => setTimeout(r, 20));
    got = await client.getTask({ id: slow.id });
  }
  const cancelled = await client.cancelTask({ id: slow.id });
  const after = await client.getTask({ id: slow.id });
  out.cancel = { got: stateName(got.status.state), cancelled: stateName(cancelled.status.state), after: stateName(after.status.state) };
}

// The node's own card lists the agents as skills; its interface is the
// node-wide endpoint, where message metadata names the agent.
async function nodeCard(base, thingId) {
  const card = await (await authFetch(base + "/.well-known/agent-card.json")).json();
  out.nodeCard = { skills: card.skills.map((s) => s.id), verified: await verified(card) };
  const client = await factory.createFromUrl(base);
  const task = taskOf(await client.sendMessage({ message: message("via the node", { "lmos:agent": thingId }) }));
  out.nodeCall = { state: stateName(task.status.state), artifacts: task.artifacts.map((a) => a.parts.map(partText).join("")) };
}

const describe = (ev) => {
  const p = ev.payload;
  switch (p?.$case) {
    case "task": return "task:" + stateName(p.value.status.state);
    case "statusUpdate": return "status:" + stateName(p.value.status.state);
    case "artifactUpdate": return "artifact:" + p.value.artifact.artifactId + ":" + p.value.artifact.parts.map(partText).join("");
    default: return "message";
  }
};

// A streaming conversation (an LMOS streaming session): the first message
// opens it (metadata lmos:stream) and streams the task; further messages
// name the task and are the session's input; lmos:streamEnd ends it.
async function session(base) {
  const client = await factory.createFromUrl(base);
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

async function callOnly(base, input) {
  try {
    const client = await factory.createFromUrl(base);
    const card = await (await authFetch(new URL(".well-known/agent-card.json", base))).json();
    out.security = { schemes: card.securitySchemes, verified: await verified(card) };
    const sent = await client.sendMessage({ message: message(input) });
    const task = taskOf(sent);
    out.call = { state: stateName(task.status.state), artifacts: task.artifacts.map((a) => a.parts.map(partText).join("")) };
  } catch (e) {
    out.call = { error: String(e?.message ?? e) };
  }
}

try {
  switch (req.task) {
    case "agent":
      await agentTasks(req.base + req.agent);
      await nodeCard(req.base, req.thingId);
      break;
    case "session":
      await session(req.base + req.agent);
      break;
    case "call":
      await callOnly(req.base + req.agent, req.input);
      break;
    default:
      throw new Error("unknown task " + req.task);
  }
} catch (e) {
  out.error = String(e?.stack ?? e);
}
console.log(JSON.stringify(out));
