// A client of agents.json written from the specification and OpenAPI 3,
// not from lmosnode's code: it reads the document, takes one flow, finds
// its action's operation in the source's OpenAPI document (fetched from
// the source's path), builds the request from the flow's links and the
// operation's parameters, and calls it.
//
//   node client.mjs AGENTS-JSON-URL FLOW-ID PARAMETERS-JSON
//
// Prints {"status": HTTP status, "body": the parsed answer}.
const [docURL, flowID, paramsJSON] = process.argv.slice(2);
const params = JSON.parse(paramsJSON);

const get = async (url) => {
  const r = await fetch(url);
  if (!r.ok) throw new Error(`GET ${url}: HTTP ${r.status}`);
  return r.json();
};
const doc = await get(docURL);
const flow = doc.flows.find((f) => f.id === flowID);
if (!flow) throw new Error(`no flow ${flowID}`);
if (flow.actions.length !== 1) throw new Error("this client runs one-action flows");
const action = flow.actions[0];
const source = doc.sources.find((s) => s.id === action.sourceId);
const api = await get(new URL(source.path, docURL).href);

let method, path, op;
for (const [p, item] of Object.entries(api.paths)) {
  for (const [m, o] of Object.entries(item)) {
    if (o.operationId === action.operationId) [method, path, op] = [m, p, o];
  }
}
if (!op) throw new Error(`no operation ${action.operationId}`);

// Values of the flow's fields reach the operation through the links.
const url = new URL(api.servers[0].url + path);
let body;
const headers = {};
for (const link of flow.links ?? []) {
  if (link.target.actionId !== action.id) continue;
  if (link.origin.actionId !== flow.id) throw new Error("unexpected link origin");
  const value = link.origin.fieldPath === "requestBody" ? params : params[link.origin.fieldPath.replace(/^parameters\./, "")];
  if (value === undefined) continue;
  const target = link.target.fieldPath;
  if (target === "requestBody") body = value;
  else if (target.startsWith("requestBody.")) (body ??= {})[target.slice("requestBody.".length)] = value;
  else if (target.startsWith("parameters.")) url.searchParams.set(target.slice("parameters.".length), value);
}
// Required parameters the flow does not feed take their schema's default.
for (const p of op.parameters ?? []) {
  if (p.required && p.in === "query" && !url.searchParams.has(p.name)) url.searchParams.set(p.name, p.schema.default);
}
if (body !== undefined) headers["Content-Type"] = "application/json";
const res = await fetch(url, { method: method.toUpperCase(), headers, body: body === undefined ? undefined : JSON.stringify(body) });
const text = await res.text();
let parsed = text;
try {
  parsed = JSON.parse(text);
} catch {}
console.log(JSON.stringify({ status: res.status, body: parsed }));
