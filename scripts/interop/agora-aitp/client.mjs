// An Agora and AITP client written from the protocols' texts (the Agora
// specification, AITP's threads, capabilities and AITP-T01 Threads API
// pages), not from lmosnode's code. AITP capability payloads are checked
// with ajv against the official capability schemas: the verbatim copies
// of nearai/aitp's (MIT) the repository keeps in node/aitp/schemas/.
//
// Usage: node client.mjs '{"base": "http://127.0.0.1:PORT", "agora": "/agora/<publisher>/<id>", "aitp": "/aitp/<publisher>/<id>"}'
// Prints one line of JSON: what it saw, for the Go test to check; on a
// failed expectation {"error": "..."}.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

const req = JSON.parse(process.argv[2]);
const out = {};

function expect(cond, what) {
  if (!cond) throw new Error(what);
}

async function post(url, body) {
  const r = await fetch(url, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  const text = await r.text();
  let json;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: r.status, type: r.headers.get("content-type") || "", json, text };
}

async function get(url) {
  const r = await fetch(url);
  return { status: r.status, text: await r.text(), type: r.headers.get("content-type") || "" };
}

const sha1 = (text) => createHash("sha1").update(text, "utf8").digest("hex");

// Agora §8.1: YAML metadata, a line "---", the specification. Only the
// top-level scalar lines are read (name, description, multiround).
function metadataOf(doc) {
  const i = doc.indexOf("\n---\n");
  expect(i > 0, "a protocol document has metadata, a line ---, and a specification");
  const meta = {};
  for (const line of doc.slice(0, i).split("\n")) {
    const m = /^([A-Za-z][\w-]*):\s*(.*)$/.exec(line);
    if (m) meta[m[1]] = m[2].startsWith('"') ? JSON.parse(m[2]) : m[2] === "true" ? true : m[2] === "false" ? false : m[2];
  }
  return meta;
}

async function agora() {
  const base = req.base + req.agora;
  // §9: the well-known endpoint maps each supported hash to its sources.
  const wk = await get(base + "/wellknown");
  expect(wk.status === 200, `GET wellknown: ${wk.status} ${wk.text}`);
  const known = JSON.parse(wk.text);
  const hashes = Object.keys(known);
  expect(hashes.length === 1, `one protocol per action, the agent has one action: ${wk.text}`);
  const hash = hashes[0];
  const doc = known[hash].join("");
  // §8.2: the hash is the SHA1 of the entire document text.
  expect(sha1(doc) === hash, `SHA1 of the document ${sha1(doc)} is not its hash ${hash}`);
  const byHash = await get(req.base + "/agora/protocols/" + hash);
  expect(byHash.status === 200 && sha1(byHash.text) === hash, `GET /agora/protocols/${hash}: ${byHash.status}, SHA1 ${sha1(byHash.text)}`);
  const meta = metadataOf(byHash.text);
  out.protocol = { hash, name: meta.name, multiround: meta.multiround, hasDescription: typeof meta.description === "string" };

  // §6: a request under the protocol; the response's status and body.
  let r = await post(base, { protocolHash: hash, body: "hello", protocolSources: [doc] });
  expect(r.status === 200 && r.type.startsWith("application/json"), `protocol request: ${r.status} ${r.text}`);
  out.protocolCall = r.json;
  // §10.3: a body that breaks the protocol document's schema is a
  // protocol-level error: success, the error inside the body.
  r = await post(base, { protocolHash: hash, body: 42 });
  out.protocolError = { status: r.json.status, hasError: typeof r.json.body?.error === "string" };
  // §8.3: an unknown protocol.
  r = await post(base, { protocolHash: "0".repeat(40), body: "x" });
  out.unsupported = { http: r.status, ...r.json };
  // No protocol: natural language.
  r = await post(base, { protocolHash: null, body: "what is up" });
  out.naturalLanguage = r.json;

  // §7: a multi-round conversation.
  r = await post(base, { protocolHash: null, body: "one", multiround: true });
  const first = r.json;
  expect(first.status === "success" && typeof first.conversationId === "string" && Number.isInteger(first.conversationExpires),
    `multiround start: ${r.text}`);
  expect(first.conversationExpires > Date.now() / 1000, "conversationExpires is in the future");
  const conv = base + "/conversations/" + first.conversationId;
  const rounds = [first.body];
  r = await post(conv, { body: "two" });
  rounds.push(r.json.body);
  r = await post(conv, { body: "three" });
  rounds.push(r.json.body);
  r = await post(conv, { body: null, "lmos:end": true });
  rounds.push(r.json.body ?? null);
  out.conversation = { rounds, sameId: r.json.conversationId === first.conversationId };
  // §7.2: a follow-up must not change the protocol; §10.1: unknown ids are 404.
  r = await post(conv, { protocolHash: hash, body: "x" });
  out.changeProtocol = r.status;
  r = await post(base + "/conversations/no-such-conversation", { body: "x" });
  out.unknownConversation = r.status;
}

// The capability schemas, by capability id; 01 and 02 are OpenAPI
// documents whose components.schemas hold the message types.
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
const capabilities = {};
for (const [id, root] of [["aitp-01-payments", "PaymentProtocol"], ["aitp-02-decisions", "DecisionProtocol"],
  ["aitp-03-data-request", null], ["aitp-04-near-wallet", null], ["aitp-05-evm-wallet", null]]) {
  const url = `https://aitp.dev/capabilities/${id}/v1.0.0/schema.json`;
  const schema = JSON.parse(readFileSync(new URL(`../../../node/aitp/schemas/${id}.v1.0.0.json`, import.meta.url)));
  delete schema.$schema; // 2020-12 is the default of Ajv2020
  ajv.addSchema(schema, url);
  capabilities[id] = { url, validate: ajv.getSchema(root ? `${url}#/components/schemas/${root}` : url) };
}

function checked(id, payload) {
  const c = capabilities[id];
  const msg = { $schema: c.url, ...payload };
  expect(c.validate(msg), `${id} payload invalid: ${ajv.errorsText(c.validate.errors)}`);
  return JSON.stringify(msg);
}

async function aitp() {
  const agent = req.base + req.aitp;
  const info = JSON.parse((await get(agent)).text);
  out.agent = { capabilities: info.capabilities.map((c) => c.schema), unsupported: info.unsupported_capabilities.map((c) => c.schema) };

  // AITP-T01: create a thread, declaring the client's capabilities.
  let r = await post(agent + "/v1/thread", {
    messages: [],
    metadata: { actors: [{ id: "js-client", client_id: "lmosnode-interop", capabilities: [capabilities["aitp-01-payments"].url, capabilities["aitp-02-decisions"].url] }] },
  });
  expect(r.status === 200, `create thread: ${r.status} ${r.text}`);
  const thread = r.json;
  expect(typeof thread.id === "string" && Array.isArray(thread.metadata.actors), `thread: ${r.text}`);
  const agentActor = thread.metadata.actors.find((a) => a.id !== "js-client");
  out.agentActor = agentActor.capabilities.map((c) => c.schema);
  const messages = agent + "/v1/threads/" + thread.id + "/messages";

  r = await post(messages, { role: "user", content: "hello thread" });
  expect(r.status === 200, `create message: ${r.status} ${r.text}`);
  // A structured decision, a capability both declared.
  r = await post(messages, { role: "user", content: [checked("aitp-02-decisions", { decision: { request_decision_id: "flight_options", options: [{ id: "f2" }] } })] });
  expect(r.status === 200, `decision message: ${r.status} ${r.text}`);
  // A payment quote: valid, but a capability the agent does not declare.
  r = await post(messages, { role: "user", content: [checked("aitp-01-payments", {
    quote: { quote_id: "q1", merchant_id: "shop.near", description: "one flight", merchant_signature: "sig",
      payment_options: [{ amount: "299.00", currency: "USD", payment_methods: [] }] },
  })] });
  out.refused = { http: r.status, code: r.json?.error?.code, type: r.json?.error?.type, hasMessage: typeof r.json?.error?.message === "string" };
  // A decision that breaks the official schema (no option selected).
  const bad = { $schema: capabilities["aitp-02-decisions"].url, decision: { request_decision_id: "flight_options", options: [] } };
  const validLocally = capabilities["aitp-02-decisions"].validate(bad);
  r = await post(messages, { role: "user", content: [JSON.stringify(bad)] });
  out.invalid = { validLocally, http: r.status, code: r.json?.error?.code, param: r.json?.error?.param };

  const list = JSON.parse((await get(messages)).text);
  const replies = list.data.filter((m) => m.role === "assistant");
  out.thread = { count: list.data.length, roles: list.data.map((m) => m.role), first: replies[0]?.content };
  // The agent answered the decision with a decision request: valid per the official schema.
  const structured = JSON.parse(replies[1].content[0]);
  out.replySchema = structured.$schema;
  out.replyValid = capabilities["aitp-02-decisions"].validate(structured);
  const again = JSON.parse((await get(agent + "/v1/threads/" + thread.id)).text);
  out.retrieved = again.messages.length;
  // A thread created with a message (AITP-T01: messages, an array of
  // strings), retrieved with POST as the transport page writes it.
  r = await post(agent + "/v1/thread", { messages: ["first words"], metadata: { actors: [{ id: "js-client", capabilities: [] }] } });
  const second = (await post(agent + "/v1/threads/" + r.json.id, {})).json;
  out.initial = second.messages.map((m) => `${m.role}:${m.content.join("|")}`);
}

try {
  await agora();
  await aitp();
  console.log(JSON.stringify(out));
} catch (e) {
  console.log(JSON.stringify({ error: String(e.stack || e), partial: out }));
}
