#!/usr/bin/env node
// An ANP-described agent the test imports into a node, written from
// ANP-02/03/07 with http-message-signatures (RFC 9421) and none of
// lmosnode's code. It listens on 127.0.0.1 (plain HTTP) and serves:
//
//   GET  /agents/hotel/ad.json      its agent description (ANP-07), whose
//                                   openrpc interface is at
//   GET  /agents/hotel/api/services-interface.json   (ANP-07's example,
//                                   server URL rewritten to this service)
//   POST /api/v1/hotel/jsonrpc      the JSON-RPC endpoint: every call must be
//                                   DID-WBA signed (ANP-02): Content-Digest
//                                   matching the body, a signature covering
//                                   @method, @target-uri and content-digest
//                                   by a key in the authentication of the
//                                   caller's did:wba document, resolved over
//                                   HTTPS (did.mjs). Unsigned or bad: 401
//                                   with the DIDWba challenge.
//
// It prints {"port": N} on its first line, then one JSON line per call it
// answered ({"did": …} or {"refused": …}). Environment: HOSTS, CA_FILE
// (did.mjs).

import http from 'node:http';
import { createHash, createPublicKey } from 'node:crypto';
import { httpbis, createVerifier } from 'http-message-signatures';
import { resolve, authKey } from './did.mjs';

let port;
const ad = () => ({
  protocolType: 'ANP', protocolVersion: '1.0.0', type: 'AgentDescription',
  url: `http://127.0.0.1:${port}/agents/hotel/ad.json`,
  name: 'Grand Hotel Assistant',
  did: 'did:wba:grand-hotel.example:service:hotel-assistant',
  owner: { type: 'Organization', name: 'Grand Hotel Management Group', url: 'https://grand-hotel.example' },
  description: 'Hotel room search over JSON-RPC, DID-WBA authenticated.',
  securityDefinitions: { didwba_sc: { scheme: 'didwba', in: 'header', name: 'Authorization' } },
  security: 'didwba_sc',
  interfaces: [
    { type: 'NaturalLanguageInterface', protocol: 'YAML', url: '/agents/hotel/api/nl-interface.yaml', description: 'not served' },
    { type: 'StructuredInterface', protocol: 'openrpc', url: '/agents/hotel/api/services-interface.json', description: 'Room search.' },
  ],
});
const openrpc = () => ({
  openrpc: '1.3.2',
  info: { title: 'Grand Hotel Services API', version: '1.0.0', 'x-anp-protocol-type': 'ANP', 'x-anp-protocol-version': '1.0.0' },
  security: [{ didwba: [] }],
  servers: [{ name: 'Test Server', url: `http://127.0.0.1:${port}/api/v1/hotel/jsonrpc` }],
  methods: [{
    name: 'searchRooms', summary: 'Search available hotel rooms',
    description: 'Search available hotel rooms based on criteria such as dates, number of guests, and room type',
    params: [{ name: 'searchCriteria', required: true, schema: {
      type: 'object',
      properties: { checkIn: { type: 'string' }, checkOut: { type: 'string' }, guests: { type: 'integer', minimum: 1, maximum: 8 } },
      required: ['checkIn', 'checkOut', 'guests'] } }],
    result: { name: 'searchResult', schema: { type: 'object', properties: { rooms: { type: 'array', items: { $ref: '#/components/schemas/Room' } } } } },
  }],
  components: { securitySchemes: { didwba: { type: 'http', scheme: 'bearer', bearerFormat: 'DID-WBA' } } },
});

const log = (o) => console.log(JSON.stringify(o));

function refuse(res, code, descr) {
  log({ refused: code, descr });
  res.writeHead(401, { 'www-authenticate': `DIDWba error="${code}", error_description="${descr.replace(/"/g, "'")}"`, 'content-type': 'application/json' });
  res.end(JSON.stringify({ code: 401, error: code, error_description: descr }));
}

// authenticate verifies the DID-WBA signature of req with body; it
// returns the caller's DID.
async function authenticate(req, body) {
  const digest = req.headers['content-digest'] || '';
  const want = `sha-256=:${createHash('sha256').update(body).digest('base64')}:`;
  if (!digest.split(',').map((s) => s.trim()).includes(want)) throw Object.assign(new Error(`Content-Digest ${digest} is not ${want}`), { code: 'invalid_content_digest' });
  let caller;
  const ok = await httpbis.verifyMessage({
    requiredFields: ['@method', '@target-uri', 'content-digest'],
    requiredParams: ['created', 'keyid'],
    maxAge: 300,
    tolerance: 60,
    async keyLookup(params) {
      const [did] = params.keyid.split('#');
      const doc = await resolve(did);
      const jwk = authKey(doc, params.keyid);
      caller = did;
      return { id: params.keyid, algs: ['ed25519'], verify: createVerifier(createPublicKey({ key: jwk, format: 'jwk' }), 'ed25519') };
    },
  }, { method: req.method, url: `http://${req.headers.host}${req.url}`, headers: req.headers });
  if (!ok) throw Object.assign(new Error('the signature does not verify'), { code: 'invalid_signature' });
  return caller;
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', async () => {
    const body = Buffer.concat(chunks);
    const json = (v) => { res.writeHead(200, { 'content-type': 'application/json' }); res.end(JSON.stringify(v)); };
    if (req.method === 'GET' && req.url === '/agents/hotel/ad.json') return json(ad());
    if (req.method === 'GET' && req.url === '/agents/hotel/api/services-interface.json') return json(openrpc());
    if (req.method !== 'POST' || req.url !== '/api/v1/hotel/jsonrpc') { res.writeHead(404); return res.end(); }
    if (!req.headers['signature-input']) return refuse(res, 'invalid_request', 'no DID-WBA signature');
    let caller;
    try {
      caller = await authenticate(req, body);
    } catch (e) {
      return refuse(res, e.code || 'invalid_signature', e.message);
    }
    const rpc = JSON.parse(body.toString('utf8'));
    log({ did: caller, method: rpc.method });
    if (rpc.method !== 'searchRooms') return json({ jsonrpc: '2.0', id: rpc.id, error: { code: -32601, message: 'Method not found' } });
    const c = rpc.params.searchCriteria;
    json({ jsonrpc: '2.0', id: rpc.id, result: { rooms: [{ id: 'deluxe-1', type: 'deluxe', price: 1288 }], total: 1, guests: c.guests, caller } });
  });
});
server.listen(0, '127.0.0.1', () => {
  port = server.address().port;
  log({ port });
});
