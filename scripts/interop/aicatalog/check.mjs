// Independent checks of an lmosnode's AI Catalog, MCP Server Card and ARD
// search. Run by node/aicatalog_test.go:
//
//   node check.mjs '{"base": "http://127.0.0.1:PORT", "thingId": "…", "search": {…}}'
//
// - ajv 8 (draft 2020-12, ajv-formats) validates the catalog and every
//   search result against ARD's JSON Schema (ard-ai-catalog.schema.json,
//   copied from the ARD v0.9 spec), the ARD conformance examples against
//   the same schema, and the Server Card against the MCP Server Card
//   schema ($defs/ServerCard);
// - jose verifies each trust manifest as the AI Catalog spec says: the
//   payload is the manifest without signature.jws, canonicalized with JCS
//   (RFC 8785, canonicalize), the stored jws a detached compact JWS
//   (header..signature) whose payload segment the verifier rebuilds; typ
//   ai-catalog-trust-manifest+jws; signer == contributor; the kid the
//   signer's did:key; the key the did:key encodes; the subject bound to
//   the entry and the digest to the sha256 of the bytes fetched from url;
// - the official A2A SDK calls the agent req.thingId found in the catalog
//   through the card URL of its entry.
// It prints one JSON object with what it saw; the Go test asserts on it.
import { readFileSync, readdirSync } from "node:fs";
import { createHash } from "node:crypto";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import canonicalize from "canonicalize";
import { flattenedVerify, importJWK, base64url } from "jose";
import { ClientFactory } from "@a2a-js/sdk/client";
import { Role } from "@a2a-js/sdk";

const req = JSON.parse(process.argv[2]);
const out = {};
const ajv = new Ajv2020({ allErrors: true, strict: false });
addFormats(ajv);
const catalogSchema = ajv.compile(JSON.parse(readFileSync("ard-ai-catalog.schema.json", "utf8")));
ajv.addSchema(JSON.parse(readFileSync("mcp-server-card.schema.json", "utf8")), "mcp");
const serverCardSchema = ajv.getSchema("mcp#/$defs/ServerCard");
const errs = (v) => (v.errors ?? []).map((e) => `${e.instancePath} ${e.message}`);

// The ARD conformance examples.
out.conformance = {};
for (const f of readdirSync("conformance").sort()) {
  const ok = catalogSchema(JSON.parse(readFileSync("conformance/" + f, "utf8")));
  out.conformance[f] = ok ? "valid" : errs(catalogSchema);
}
// A control: an entry whose identifier is not a urn:air is refused (the
// validator is not a yes-machine).
out.control = catalogSchema({ specVersion: "1.0", entries: [{ identifier: "not a urn", displayName: "x", type: "t", url: "https://x.example" }] });

const get = async (path) => {
  const r = await fetch(new URL(path, req.base));
  return { status: r.status, type: r.headers.get("content-type"), bytes: Buffer.from(await r.arrayBuffer()) };
};

// did:key (Ed25519): multibase base58btc of 0xed 0x01 || key.
const B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
function base58(s) {
  let n = 0n;
  for (const c of s) n = n * 58n + BigInt(B58.indexOf(c));
  const bytes = [];
  while (n > 0n) { bytes.unshift(Number(n & 255n)); n >>= 8n; }
  for (const c of s) { if (c !== "1") break; bytes.unshift(0); }
  return Uint8Array.from(bytes);
}
function didKeyJWK(did) {
  if (!did.startsWith("did:key:z")) throw new Error("not a did:key: " + did);
  const b = base58(did.slice("did:key:z".length));
  if (b[0] !== 0xed || b[1] !== 0x01 || b.length !== 34) throw new Error("not an Ed25519 did:key");
  return { kty: "OKP", crv: "Ed25519", x: base64url.encode(b.slice(2)) };
}

async function verifyManifest(entry, artifact) {
  const m = entry.trustManifests[0];
  const sig = m.signature;
  if (sig.signer !== m.contributor) throw new Error("signer is not the contributor");
  const s = m.subject;
  if (s.identifier !== entry.identifier || s.type !== entry.type || s.digest !== entry.digest) throw new Error("subject is not the entry");
  const digest = "sha256:" + createHash("sha256").update(artifact).digest("hex");
  if (digest !== s.digest) throw new Error(`artifact digest ${digest} is not ${s.digest}`);
  const payload = structuredClone(m);
  delete payload.signature.jws;
  delete payload.additionalSignatures;
  const [protectedHeader, empty, signature] = sig.jws.split(".");
  if (empty !== "") throw new Error("jws is not detached");
  const key = await importJWK(didKeyJWK(sig.signer), "EdDSA");
  const res = await flattenedVerify({ protected: protectedHeader, payload: base64url.encode(canonicalize(payload)), signature }, key, { algorithms: ["EdDSA"] });
  const h = res.protectedHeader;
  if (h.typ !== "ai-catalog-trust-manifest+jws") throw new Error("typ " + h.typ);
  if (h.kid !== sig.signer + "#" + sig.signer.slice("did:key:".length)) throw new Error("kid " + h.kid);
  return sig.signer;
}

async function checkEntries(entries) {
  const seen = {};
  for (const e of entries) {
    if (!e.trustManifests) { seen[e.type] = (seen[e.type] ?? 0) + 1; continue; }
    const a = await get(e.url);
    if (a.status !== 200) throw new Error(`${e.url}: ${a.status}`);
    out.signers = [...new Set([...(out.signers ?? []), await verifyManifest(e, a.bytes)])];
    // A tampered artifact does not verify.
    try { await verifyManifest(e, Buffer.concat([a.bytes, Buffer.from(" ")])); out.tamperAccepted = true; } catch { /* refused */ }
    seen[e.type] = (seen[e.type] ?? 0) + 1;
  }
  return seen;
}

const cat = await get("/.well-known/ai-catalog.json");
const catalog = JSON.parse(cat.bytes);
out.catalog = { status: cat.status, type: cat.type, valid: catalogSchema(catalog) || errs(catalogSchema) };
out.catalog.types = await checkEntries(catalog.entries);

const card = await get("/.well-known/mcp/server-card.json");
const serverCard = JSON.parse(card.bytes);
out.serverCard = { valid: serverCardSchema(serverCard) || errs(serverCardSchema), versions: serverCard.remotes[0].supportedProtocolVersions, url: serverCard.remotes[0].url };

if (req.search) {
  const r = await fetch(new URL("/ard/search", req.base), { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(req.search) });
  const body = await r.json();
  const itemsValid = body.results.every((x) => catalogSchema({ specVersion: "1.0", entries: [x] }));
  out.search = { status: r.status, valid: itemsValid, thingIds: body.results.map((x) => x.metadata?.["lmos:thingId"]), scores: body.results.map((x) => x.score) };
  out.search.types = await checkEntries(body.results);
}

// The agent found in the catalog, called with the A2A SDK through its card URL.
const agent = catalog.entries.find((e) => e.metadata?.["lmos:thingId"] === req.thingId);
out.found = !!agent;
if (agent) {
  const base = agent.url.replace(/\.well-known\/agent-card\.json$/, "");
  const client = await new ClientFactory().createFromUrl(base);
  const sent = await client.sendMessage({ message: { messageId: crypto.randomUUID(), role: Role.ROLE_USER, parts: [{ content: { $case: "text", value: "from the catalog" } }] } });
  const task = sent?.payload?.$case === "task" ? sent.payload.value : sent;
  out.call = task.artifacts.map((a) => a.parts.map((p) => p.content.value).join(""));
}
console.log(JSON.stringify(out));
