// did:wba resolution (ANP-03 §2.5.2) for the test's ANP client and
// service, written from the spec: the document over HTTPS (the test's CA;
// the test domains map to 127.0.0.1 through lookup, never DNS), its id,
// for an e1_ DID the fingerprint and the eddsa-jcs-2022 proof (vc-di-eddsa
// §3.3: canonicalize, SHA-256, Ed25519), and the key a DID URL names in
// authentication.

import https from 'node:https';
import { createHash, createPublicKey, verify as edVerify } from 'node:crypto';
import { readFileSync } from 'node:fs';
import canonicalize from 'canonicalize';
import bs58 from 'bs58';
import * as jose from 'jose';

export const env = (k) => {
  if (!process.env[k]) throw new Error(`${k} is not set`);
  return process.env[k];
};
const hosts = new Set(env('HOSTS').split(','));
const ca = readFileSync(env('CA_FILE'));

// lookup maps the test domains to 127.0.0.1 and refuses every other name.
function lookup(hostname, options, cb) {
  if (!hosts.has(hostname)) return cb(new Error(`not a test domain: ${hostname}`));
  if (options && options.all) return cb(null, [{ address: '127.0.0.1', family: 4 }]);
  return cb(null, '127.0.0.1', 4);
}

// request makes an HTTPS request to a test domain.
export function request(method, url, headers = {}, body) {
  return new Promise((resolve, reject) => {
    const req = https.request(url, { method, headers, ca, lookup }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

// didURL is the URL of a did:wba DID's document.
export function didURL(did) {
  const parts = did.slice('did:wba:'.length).split(':');
  const host = decodeURIComponent(parts[0]);
  const path = parts.slice(1).map(decodeURIComponent);
  return `https://${host}/${path.length ? path.join('/') : '.well-known'}/did.json`;
}

// multikeyJWK is the JWK of a multibase z + multicodec ed25519-pub key.
export function multikeyJWK(mb) {
  const b = Buffer.from(bs58.decode(mb.slice(1)));
  if (mb[0] !== 'z' || b[0] !== 0xed || b[1] !== 0x01 || b.length !== 34) throw new Error(`not an Ed25519 Multikey: ${mb}`);
  return { kty: 'OKP', crv: 'Ed25519', x: jose.base64url.encode(b.subarray(2)) };
}

// verifyProof checks an eddsa-jcs-2022 proof with jwk.
export function verifyProof(doc, jwk) {
  const { proof, ...unsecured } = doc;
  const { proofValue, ...options } = proof;
  if (doc['@context'] && !options['@context']) options['@context'] = doc['@context'];
  const sha = (o) => createHash('sha256').update(canonicalize(o), 'utf8').digest();
  const data = Buffer.concat([sha(options), sha(unsecured)]);
  return edVerify(null, data, createPublicKey({ key: jwk, format: 'jwk' }), Buffer.from(bs58.decode(proofValue.slice(1))));
}

// resolve fetches and checks the document of a did:wba DID; it throws
// what fails.
export async function resolve(did) {
  const res = await request('GET', didURL(did));
  if (res.status !== 200) throw new Error(`GET ${didURL(did)}: ${res.status}`);
  const doc = JSON.parse(res.body);
  if (doc.id !== did) throw new Error(`document id ${doc.id} is not ${did}`);
  const last = did.split(':').pop();
  if (last.startsWith('e1_')) {
    const vm = (doc.verificationMethod || []).find((m) => m.id === doc.proof?.verificationMethod);
    if (!vm || vm.type !== 'Multikey') throw new Error('proof.verificationMethod is not a Multikey of the document');
    const jwk = multikeyJWK(vm.publicKeyMultibase);
    if (last !== 'e1_' + (await jose.calculateJwkThumbprint(jwk, 'sha256'))) throw new Error('the e1_ fingerprint is not the proof key');
    if (doc.proof.cryptosuite !== 'eddsa-jcs-2022' || !verifyProof(doc, jwk)) throw new Error('the eddsa-jcs-2022 proof does not verify');
  }
  return doc;
}

// authKey is the JWK of the method keyid names, which must be in the
// document's authentication.
export function authKey(doc, keyid) {
  const vm = (doc.verificationMethod || []).find((m) => m.id === keyid);
  const auth = (doc.authentication || []).map((a) => (typeof a === 'string' ? a : a.id)).map((a) => (a.startsWith('#') ? doc.id + a : a));
  if (!vm || !auth.includes(keyid)) throw new Error(`${keyid} is not an authentication method of ${doc.id}`);
  return multikeyJWK(vm.publicKeyMultibase);
}
