#!/usr/bin/env node
// An ANP client written from the ANP specifications (ANP-02 DID-WBA
// authentication, ANP-03 did:wba, ANP-07 agent descriptions, ANP-08
// discovery) with published libraries — http-message-signatures (RFC
// 9421), jose (JWK thumbprints, JWT), canonicalize (RFC 8785) — and none
// of lmosnode's code. It runs against a node behind an HTTPS front:
//
//   1. resolves the node's did:wba over HTTPS (the test's CA; the test
//      domains map to 127.0.0.1 through this script's own lookup, never
//      DNS), checks the document's id, its e1_ binding and its
//      eddsa-jcs-2022 proof;
//   2. reads /.well-known/agent-descriptions and the description of the
//      agent AGENT_NAME, signing its requests with its own did:wba
//      (CLIENT_DID, whose document the test hosts);
//   3. follows the description's WoT-TD interface to the action's form
//      and calls it with a DID-WBA signed POST (Content-Digest), then
//      again with the access token Authentication-Info returned, which it
//      verifies with the node's DID key;
//   4. checks that a tampered body and a bad signature get 401 with the
//      DIDWba challenge (WWW-Authenticate, Accept-Signature).
//
// Environment: NODE_DID, CLIENT_DID, CLIENT_JWK (the client's private
// Ed25519 JWK), CA_FILE, HOSTS (comma-separated test domains mapped to
// 127.0.0.1), AGENT_NAME, ACTION, INPUT (JSON). Prints a JSON report;
// exits 1 on the first failed check.

import { createHash, createPrivateKey, randomBytes } from 'node:crypto';
import * as jose from 'jose';
import { httpbis, createSigner } from 'http-message-signatures';
import { env, request, didURL, resolve, authKey } from './did.mjs';

const report = {};
function check(cond, what) {
  if (!cond) {
    console.log(JSON.stringify({ ok: false, failed: what, report }));
    process.exit(1);
  }
}

async function resolveNode(did) {
  let doc;
  try {
    doc = await resolve(did);
  } catch (e) {
    check(false, `resolving ${did}: ${e.message}`);
  }
  const keyid = doc.proof.verificationMethod;
  report.nodeDocument = { id: doc.id, key: keyid };
  return authKey(doc, keyid);
}

const clientDID = env('CLIENT_DID');
const clientKey = createPrivateKey({ key: JSON.parse(env('CLIENT_JWK')), format: 'jwk' });
const signer = createSigner(clientKey, 'ed25519', `${clientDID}#key-1`);

// signed sends a DID-WBA request (ANP-02 §3.1): RFC 9421 over @method,
// @target-uri, @authority, and with a body content-digest (RFC 9530
// sha-256) and content-type; created, expires, nonce, keyid.
async function signed(method, url, body, tamper) {
  const headers = { host: new URL(url).host };
  const fields = ['@method', '@target-uri', '@authority'];
  if (body !== undefined) {
    headers['content-type'] = 'application/json';
    headers['content-digest'] = `sha-256=:${createHash('sha256').update(body).digest('base64')}:`;
    fields.push('content-digest', 'content-type');
  }
  const msg = await httpbis.signMessage({
    key: signer, name: 'sig1', fields,
    params: ['created', 'expires', 'nonce', 'keyid'],
    paramValues: { nonce: randomBytes(16).toString('base64url'), expires: new Date(Date.now() + 60_000) },
  }, { method, url, headers });
  if (tamper) tamper(msg.headers);
  const out = { ...msg.headers };
  delete out.host;
  return request(method, url, out, tamper && tamper.body !== undefined ? tamper.body : body);
}

const nodeJWK = await resolveNode(env('NODE_DID'));
const nodeURL = new URL(didURL(env('NODE_DID'))).origin;

// 2. discovery and the agent's description.
let res = await signed('GET', nodeURL + '/.well-known/agent-descriptions');
check(res.status === 200, `GET agent-descriptions: ${res.status} ${res.body}`);
const coll = JSON.parse(res.body);
check(coll['@type'] === 'CollectionPage', 'a CollectionPage');
const item = coll.items.find((i) => i.name === env('AGENT_NAME'));
check(item && item['@type'] === 'ad:AgentDescription', `the collection lists ${env('AGENT_NAME')}`);
res = await signed('GET', item['@id'].replace(/^https?:\/\/[^/]+/, nodeURL));
check(res.status === 200, `GET ${item['@id']}: ${res.status}`);
const ad = JSON.parse(res.body);
check(ad.protocolType === 'ANP' && ad.name === env('AGENT_NAME') && ad.did === env('NODE_DID'), 'the description names the agent and the node DID');
check(ad.securityDefinitions[ad.security].scheme === 'didwba', 'the description asks for didwba');
const tdIf = ad.interfaces.find((i) => i.protocol === 'WoT-TD');
check(tdIf, 'a WoT-TD interface');
report.description = { url: item['@id'], interfaces: ad.interfaces.map((i) => i.protocol) };

// 3. the TD, the action's form, the signed call, the access token.
res = await signed('GET', tdIf.url.replace(/^https?:\/\/[^/]+/, nodeURL));
check(res.status === 200, `GET the TD: ${res.status} ${res.body}`);
const td = JSON.parse(res.body);
const form = td.actions[env('ACTION')].forms[0];
const actionURL = nodeURL + new URL(form.href, nodeURL).pathname + new URL(form.href, nodeURL).search;
const input = env('INPUT');
res = await signed('POST', actionURL, input);
check(res.status === 200, `signed POST ${actionURL}: ${res.status} ${res.body}`);
report.output = JSON.parse(res.body);
const info = res.headers['authentication-info'] || '';
const token = /access_token="([^"]+)"/.exec(info)?.[1];
check(token && /token_type="Bearer"/.test(info), `Authentication-Info: ${info}`);
const { payload } = await jose.jwtVerify(token, await jose.importJWK({ ...nodeJWK, alg: 'EdDSA' }, 'EdDSA'));
check(payload.sub === clientDID, `the token's sub ${payload.sub}`);
res = await request('POST', actionURL, { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, input);
check(res.status === 200, `POST with the access token: ${res.status} ${res.body}`);
report.tokenCall = JSON.parse(res.body);

// 4. refusals: a body that is not the digested one, a broken signature.
const tampered = (h) => { h['content-type'] = h['content-type']; };
tampered.body = JSON.stringify('tampered ' + JSON.parse(input));
res = await signed('POST', actionURL, input, tampered);
const challenge = (r) => r.status === 401 && /^DIDWba /.test(r.headers['www-authenticate'] || '') && !!r.headers['accept-signature'];
check(challenge(res) && /error="invalid_content_digest"/.test(res.headers['www-authenticate']), `tampered body: ${res.status} ${res.headers['www-authenticate']}`);
res = await signed('POST', actionURL, input, (h) => { h.Signature = h.Signature.replace(/:([A-Za-z0-9+/])/, (_, c) => ':' + (c === 'A' ? 'B' : 'A')); });
check(challenge(res) && /error="invalid_signature"/.test(res.headers['www-authenticate']), `bad signature: ${res.status} ${res.headers['www-authenticate']}`);
report.refusals = 'ok';
console.log(JSON.stringify({ ok: true, report }));
