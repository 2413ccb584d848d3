// The official A2A JavaScript SDK (@a2a-js/sdk, pinned in package-lock.json)
// as a client of an lmosnode's A2A bridge over its HTTP+JSON (REST)
// transport only. Run by node/a2a_rest_test.go:
//
//   node rest.mjs '{"base": "http://127.0.0.1:PORT", "agent": "/a2a/<publisher>/<id>/", "thingId": "…"}'
//
// It prints one JSON object with what it saw; the Go test asserts on it.
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, RestTransportFactory } from "@a2a-js/sdk/client";
import { Role, TaskState } from "@a2a-js/sdk";

const req = JSON.parse(process.argv[2]);
const out = {};

// Every request the REST transport makes is recorded: method and path.
const seen = [];
const recordingFetch = (url, init = {}) => {
  seen.push((init.method ?? "GET") + " " + new URL(url).pathname);
  return fetch(url, init);
};
const factory = new ClientFactory(
  ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new RestTransportFactory({ fetchImpl: recordingFetch })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl: fetch }),
    preferredTransports: ["HTTP+JSON"],
  }),
);

const message = (s, metadata) => ({
  messageId: crypto.randomUUID(),
  role: Role.ROLE_USER,
  parts: [{ content: { $case: "text", value: s } }],
  metadata,
});
const partText = (p) => (p?.content?.$case === "text" ? p.content.value : JSON.stringify(p?.content?.value));
const taskOf = (res) => (res?.payload?.$case === "task" ? res.payload.value : res);
const stateName = (s) => TaskState[s] ?? String(s);
const arts = (task) => task.artifacts.map((a) => a.parts.map(partText).join(""));
const describe = (ev) => {
  const p = ev.payload;
  switch (p?.$case) {
    case "task": return "task:" + stateName(p.value.status.state);
    case "statusUpdate": return "status:" + stateName(p.value.status.state);
    case "artifactUpdate": return "artifact:" + p.value.artifact.artifactId + ":" + p.value.artifact.parts.map(partText).join("");
    default: return "message";
  }
};
// An A2A error as the SDK raised it: its class and HTTP status.
const errorOf = async (f) => {
  try {
    await f();
    return "no error";
  } catch (e) {
    return `${e?.name}:${e?.statusCode}`;
  }
};
const waitWorking = async (client, id) => {
  let got = await client.getTask({ id });
  while (got.status.state === TaskState.TASK_STATE_SUBMITTED) {
    await new Promise((r) => setTimeout(r, 20));
    got = await client.getTask({ id });
  }
  return got;
};

async function agent(base) {
  const client = await factory.createFromUrl(base);

  // Request-reply: a message answered by a completed task.
  const task = taskOf(await client.sendMessage({ message: message("hello") }));
  out.send = { state: stateName(task.status.state), artifacts: arts(task) };

  // One request, many responses: the chunks stream as artifact updates.
  out.stream = [];
  for await (const ev of client.sendMessageStream({ message: message("stream") })) out.stream.push(describe(ev));

  // A long-running task: started, read, cancelled, read again.
  const slow = taskOf(await client.sendMessage({ message: message("slow"), configuration: { returnImmediately: true, acceptedOutputModes: [] } }));
  const got = await waitWorking(client, slow.id);
  const cancelled = await client.cancelTask({ id: slow.id });
  const after = await client.getTask({ id: slow.id, historyLength: 1 });
  out.cancel = { got: stateName(got.status.state), cancelled: stateName(cancelled.status.state), after: stateName(after.status.state), history: after.history.length };

  // A subscription to a running task sees it cancelled.
  const slow2 = taskOf(await client.sendMessage({ message: message("slow"), configuration: { returnImmediately: true, acceptedOutputModes: [] } }));
  await waitWorking(client, slow2.id);
  const subscribed = [];
  const sub = (async () => {
    for await (const ev of client.resubscribeTask({ id: slow2.id })) subscribed.push(describe(ev));
  })();
  await new Promise((r) => setTimeout(r, 200));
  await client.cancelTask({ id: slow2.id });
  await sub;
  out.subscribe = subscribed;

  const list = await client.listTasks({ contextId: task.contextId, pageSize: 10, includeArtifacts: true });
  out.list = { ids: list.tasks.map((t) => t.id), same: list.tasks[0]?.id === task.id, artifacts: list.tasks[0] ? arts(list.tasks[0]) : [] };

  // The A2A errors arrive as the SDK's error classes.
  out.errors = {
    getUnknown: await errorOf(() => client.getTask({ id: "no-such-task" })),
    cancelDone: await errorOf(() => client.cancelTask({ id: task.id })),
    subscribeDone: await errorOf(async () => {
      for await (const _ of client.resubscribeTask({ id: task.id }));
    }),
    wrongAction: await errorOf(() => client.sendMessage({ message: message("x", { "lmos:action": "nope" }) })),
  };
}

// The node's own card's HTTP+JSON interface is the node-wide endpoint,
// where message metadata names the agent.
async function nodeWide(base, thingId) {
  const client = await factory.createFromUrl(base);
  const task = taskOf(await client.sendMessage({ message: message("via the node", { "lmos:agent": thingId }) }));
  out.nodeCall = { state: stateName(task.status.state), artifacts: arts(task) };
  out.nodeGet = stateName((await client.getTask({ id: task.id })).status.state);
}

try {
  await agent(req.base + req.agent);
  await nodeWide(req.base, req.thingId);
} catch (e) {
  out.error = String(e?.stack ?? e);
}
out.requests = [...new Set(seen.map((s) => s.replace(/[0-9a-f-]{36}/g, "{id}").replace(/\/a2a\/[^/]+\/[^/]+\//, "/a2a/{agent}/")))];
console.log(JSON.stringify(out));
