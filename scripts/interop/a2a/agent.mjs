// An A2A agent built with the official A2A JavaScript SDK's server
// (@a2a-js/sdk, pinned in package-lock.json) on node:http, for
// node/a2a_test.go to import into an lmosnode. It listens on 127.0.0.1,
// prints {"url": "<base URL>"} and serves until its standard input closes.
//
// The agent echoes: a message with text T becomes a task that streams the
// artifact chunks "echo: " and T, then completes.
import http from "node:http";
import { AgentCard, Role, TaskState, formatSSEEvent } from "@a2a-js/sdk";
import { DefaultRequestHandler, InMemoryTaskStore, JsonRpcTransportHandler, ServerCallContext, AgentEvent } from "@a2a-js/sdk/server";

const text = (s) => ({ content: { $case: "text", value: s }, metadata: undefined, filename: "", mediaType: "text/plain" });
const now = () => new Date().toISOString();

const executor = {
  async execute(ctx, bus) {
    const user = ctx.userMessage;
    const input = user.parts.map((p) => (p.content?.$case === "text" ? p.content.value : JSON.stringify(p.content?.value))).join("");
    const ids = { taskId: ctx.taskId, contextId: ctx.contextId };
    bus.publish(AgentEvent.task({ id: ctx.taskId, contextId: ctx.contextId, status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: now() }, artifacts: [], history: [user], metadata: undefined }));
    bus.publish(AgentEvent.statusUpdate({ ...ids, status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: now() }, metadata: undefined }));
    const artifact = (s) => ({ artifactId: "echo", name: "echo", description: "", parts: [text(s)], metadata: undefined, extensions: [] });
    bus.publish(AgentEvent.artifactUpdate({ ...ids, artifact: artifact("echo: "), append: false, lastChunk: false, metadata: undefined }));
    bus.publish(AgentEvent.artifactUpdate({ ...ids, artifact: artifact(input), append: true, lastChunk: true, metadata: undefined }));
    bus.publish(AgentEvent.statusUpdate({ ...ids, status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: now() }, metadata: undefined }));
    bus.finished();
  },
  async cancelTask() {},
};

let cardJSON;
const server = http.createServer(async (req, res) => {
  if (req.method === "GET" && req.url === "/.well-known/agent-card.json") {
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(JSON.stringify(cardJSON));
    return;
  }
  if (req.method !== "POST" || req.url !== "/") {
    res.writeHead(404).end();
    return;
  }
  let body = "";
  for await (const chunk of req) body += chunk;
  const context = new ServerCallContext({ requestedVersion: req.headers["a2a-version"] || undefined });
  const out = await rpc.handle(body, context);
  if (typeof out?.[Symbol.asyncIterator] === "function") {
    res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache" });
    for await (const ev of out) res.write(formatSSEEvent(ev));
    res.end();
    return;
  }
  res.writeHead(200, { "Content-Type": "application/json" });
  res.end(JSON.stringify(out));
});

let rpc;
server.listen(0, "127.0.0.1", () => {
  const url = `http://127.0.0.1:${server.address().port}/`;
  cardJSON = {
    name: "EchoAgent",
    description: "Echoes what it is sent, streaming.",
    supportedInterfaces: [{ url, protocolBinding: "JSONRPC", protocolVersion: "1.0" }],
    provider: { organization: "A2A SDK Test", url: "https://a2a.example" },
    version: "1.0.0",
    capabilities: { streaming: true, pushNotifications: false },
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    skills: [{ id: "echo", name: "Echo", description: "Echoes the message.", tags: ["echo"], examples: ["hello"] }],
  };
  const handler = new DefaultRequestHandler(AgentCard.fromJSON(cardJSON), new InMemoryTaskStore(), executor);
  rpc = new JsonRpcTransportHandler(handler);
  console.log(JSON.stringify({ url }));
});
process.stdin.on("end", () => server.close(() => process.exit(0)));
process.stdin.resume();
