#!/usr/bin/env node
// An independent did:web / did:wba resolver, written from the W3C CCG
// did:web Method Specification (§3.2 Read) and ANP's did:wba method
// (§2.5.2 Reading), sharing no code with lmosnode's Go resolver
// (node/did). It checks an organisation binding the way docs/identity.md
// describes it: a signed LMOS Thing Description claims an organisation
// (lmos:organization); the TD's eddsa-jcs-2022 proof verifies; and the
// organisation's DID document, fetched over HTTPS, lists the proof's key
// in assertionMethod.
//
// Usage: node check-org.mjs TD_FILE
//
// Environment: DIDWEB_HOSTS maps host names to IP addresses for the test
// ("org.example=127.0.0.1,other.example=127.0.0.1"): the HTTPS agent's
// lookup answers them, so no real DNS is asked; NODE_EXTRA_CA_CERTS names
// the test CA. Prints a JSON report; exits 0 when the key is listed and the
// proof verifies, 1 when not, 2 on usage or fetch errors.

import https from 'node:https';
import { createHash, webcrypto } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import * as jose from 'jose';
import bs58 from 'bs58';
import canonicalize from 'canonicalize';

// didToURL: did:web §3.2 / did:wba §2.5.2. The method-specific id's ':'
// become '/', a percent-encoded port colon is decoded, /.well-known is
// added without a path, then /did.json.
export function didToURL(did) {
  const m = /^did:(web|wba):(.+)$/.exec(did);
  if (!m) throw new Error(`not a did:web or did:wba DID: ${did}`);
  const parts = m[2].split(':');
  const authority = decodeURIComponent(parts[0]);
  const host = authority.replace(/:\d+$/, '');
  if (isIP(host) || isIP(host.replace(/^\[|\]$/g, ''))) throw new Error(`an IP address is not allowed: ${host}`);
  const path = parts.slice(1).map(decodeURIComponent);
  return 'https://' + authority + (path.length ? '/' + path.join('/') : '/.well-known') + '/did.json';
}

const hosts = new Map((process.env.DIDWEB_HOSTS || '').split(',').filter(Boolean).map(kv => kv.split('=')));

// lookup answers the mapped hosts and refuses every other name.
function lookup(hostname, options, cb) {
  const ip = hosts.get(hostname.toLowerCase());
  if (!ip) return cb(Object.assign(new Error(`ENOTFOUND ${hostname} (not a test host)`), { code: 'ENOTFOUND' }));
  if (options && options.all) return cb(null, [{ address: ip, family: isIP(ip) }]);
  cb(null, ip, isIP(ip));
}

function fetchJSON(url) {
  const agent = new https.Agent({ lookup });
  return new Promise((resolve, reject) => {
    const req = https.get(url, { agent, headers: { accept: 'application/did+json, application/json' }, timeout: 10000 }, res => {
      if (res.statusCode !== 200) { res.resume(); return reject(new Error(`GET ${url}: ${res.statusCode}`)); }
      const chunks = [];
      let size = 0;
      res.on('data', c => { size += c.length; if (size > 1 << 20) req.destroy(new Error('document too large')); else chunks.push(c); });
      res.on('end', () => { try { resolve(JSON.parse(Buffer.concat(chunks).toString('utf8'))); } catch (e) { reject(e); } });
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
  });
}

// jwkOfMultikey turns an Ed25519 Multikey (z + base58btc of 0xed01 ‖ key)
// into its JWK.
function jwkOfMultikey(mb) {
  if (!mb.startsWith('z')) throw new Error(`not base58btc multibase: ${mb}`);
  const raw = bs58.decode(mb.slice(1));
  if (raw.length !== 34 || raw[0] !== 0xed || raw[1] !== 0x01) throw new Error(`not an Ed25519 multikey: ${mb}`);
  return { kty: 'OKP', crv: 'Ed25519', x: jose.base64url.encode(raw.slice(2)) };
}

// methodJWK is the Ed25519 JWK of a verification method, or null.
function methodJWK(vm) {
  if (vm.publicKeyJwk && vm.publicKeyJwk.kty === 'OKP' && vm.publicKeyJwk.crv === 'Ed25519') return vm.publicKeyJwk;
  if (vm.publicKeyMultibase) { try { return jwkOfMultikey(vm.publicKeyMultibase); } catch { return null; } }
  return null;
}

// verifyProof checks an eddsa-jcs-2022 proof (vc-di-eddsa §3.3) by a
// did:key and returns the signer's JWK.
async function verifyProof(doc) {
  const { proof, ...unsecured } = doc;
  if (!proof || proof.cryptosuite !== 'eddsa-jcs-2022') throw new Error('no eddsa-jcs-2022 proof');
  const { proofValue, ...config } = proof;
  const key = proof.verificationMethod.replace(/^did:key:/, '').split('#')[0];
  const jwk = jwkOfMultikey(key);
  const sha = s => createHash('sha256').update(s, 'utf8').digest();
  const data = Buffer.concat([sha(canonicalize(config)), sha(canonicalize(unsecured))]);
  const pub = await jose.importJWK({ ...jwk, alg: 'EdDSA' }, 'EdDSA');
  const ok = await webcrypto.subtle.verify('Ed25519', pub, bs58.decode(proofValue.slice(1)), data);
  if (!ok) throw new Error('the proof does not verify');
  return jwk;
}

async function main() {
  if (process.argv.length !== 3) { console.error('usage: node check-org.mjs TD_FILE'); process.exit(2); }
  const td = JSON.parse(readFileSync(process.argv[2], 'utf8'));
  const claim = td['lmos:organization'];
  if (typeof claim !== 'string') { console.log(JSON.stringify({ error: 'the TD claims no organisation' })); process.exit(1); }
  const signer = await verifyProof(td);
  const signerThumb = await jose.calculateJwkThumbprint(signer);
  const url = didToURL(claim);
  let doc;
  try { doc = await fetchJSON(url); } catch (e) { console.log(JSON.stringify({ url, error: String(e.message || e) })); process.exit(2); }
  if (doc.id !== claim) { console.log(JSON.stringify({ url, error: `document id ${doc.id} is not ${claim}` })); process.exit(1); }
  const abs = ref => (typeof ref === 'string' && ref.startsWith('#') ? claim + ref : ref);
  const methods = new Map((doc.verificationMethod || []).map(vm => [abs(vm.id), vm]));
  let listedAs = null;
  for (const ref of doc.assertionMethod || []) {
    const vm = typeof ref === 'string' ? methods.get(abs(ref)) : ref;
    const jwk = vm && methodJWK(vm);
    if (jwk && (await jose.calculateJwkThumbprint(jwk)) === signerThumb) { listedAs = vm.id; break; }
  }
  const domain = decodeURIComponent(claim.split(':')[2]).replace(/:\d+$/, '');
  console.log(JSON.stringify({ url, organization: claim, domain, signerThumbprint: signerThumb, proofVerified: true, listed: listedAs !== null, method: listedAs }));
  process.exit(listedAs ? 0 : 1);
}

main().catch(e => { console.log(JSON.stringify({ error: String(e.message || e) })); process.exit(2); });
