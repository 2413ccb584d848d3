// Verification of a Thing's proof in the page itself: W3C Data Integrity,
// cryptosuite eddsa-jcs-2022, as proto/proof.go signs it:
//
//   hashData = SHA-256(JCS(proof without proofValue, @context = document's))
//            ‖ SHA-256(JCS(document without proof))
//   valid    = Ed25519-Verify(did:key public key, hashData, base58btc(proofValue))
//
// JCS (RFC 8785) is JSON.stringify with object members sorted by UTF-16
// code units: ECMAScript's number and string serialisation is what JCS
// prescribes.

const B58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';

export function jcs(v) {
  if (v === null || typeof v !== 'object') {
    if (typeof v === 'number' && !Number.isFinite(v)) throw new Error('JCS: number out of range');
    return JSON.stringify(v);
  }
  if (Array.isArray(v)) return '[' + v.map(jcs).join(',') + ']';
  const keys = Object.keys(v).sort();
  return '{' + keys.map(k => JSON.stringify(k) + ':' + jcs(v[k])).join(',') + '}';
}

export function base58decode(s) {
  const bytes = [];
  for (const ch of s) {
    const d = B58.indexOf(ch);
    if (d < 0) throw new Error(`invalid base58 character ${JSON.stringify(ch)}`);
    let carry = d;
    for (let i = 0; i < bytes.length; i++) { carry += bytes[i] * 58; bytes[i] = carry & 0xff; carry >>= 8; }
    while (carry) { bytes.push(carry & 0xff); carry >>= 8; }
  }
  for (const ch of s) { if (ch !== '1') break; bytes.push(0); }
  return new Uint8Array(bytes.reverse());
}

export function base58encode(b) {
  const digits = [];
  for (const byte of b) {
    let carry = byte;
    for (let i = 0; i < digits.length; i++) { carry += digits[i] << 8; digits[i] = carry % 58; carry = (carry / 58) | 0; }
    while (carry) { digits.push(carry % 58); carry = (carry / 58) | 0; }
  }
  let out = '';
  for (const byte of b) { if (byte !== 0) break; out += '1'; }
  for (let i = digits.length - 1; i >= 0; i--) out += B58[digits[i]];
  return out;
}

// didKeyPublicKey returns the Ed25519 public key of did:key:z6Mk… (with or
// without a #fragment).
export function didKeyPublicKey(did) {
  const m = /^did:key:(z[1-9A-HJ-NP-Za-km-z]+)(#.*)?$/.exec(did || '');
  if (!m) throw new Error(`not a did:key: ${did}`);
  const b = base58decode(m[1].slice(1));
  if (b.length !== 34 || b[0] !== 0xed || b[1] !== 0x01) throw new Error('did:key is not an Ed25519 key');
  return b.slice(2);
}

// peerIDOf returns the libp2p peer ID (12D3KooW…) of an Ed25519 public
// key: the identity multihash of its protobuf encoding.
export function peerIDOf(pub) {
  const mh = new Uint8Array(6 + 32);
  mh.set([0x00, 0x24, 0x08, 0x01, 0x12, 0x20]);
  mh.set(pub, 6);
  return base58encode(mh);
}

async function sha256(text) {
  return new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)));
}

// verifyTD checks the proof of a signed TD and returns
// {valid, reason, signer (did:key), peerID, created}.
export async function verifyTD(td) {
  const out = { valid: false, reason: '', signer: '', peerID: '', created: '' };
  try {
    const proof = td?.proof;
    if (!proof || typeof proof !== 'object' || Array.isArray(proof)) throw new Error('no proof (or a proof set)');
    if (proof.type !== 'DataIntegrityProof') throw new Error(`proof type ${proof.type} is not DataIntegrityProof`);
    if (proof.cryptosuite !== 'eddsa-jcs-2022') throw new Error(`cryptosuite ${proof.cryptosuite} is not eddsa-jcs-2022`);
    if (proof.proofPurpose !== 'assertionMethod') throw new Error(`proofPurpose ${proof.proofPurpose} is not assertionMethod`);
    out.signer = String(proof.verificationMethod || '').split('#')[0];
    out.created = proof.created || '';
    const pub = didKeyPublicKey(proof.verificationMethod);
    out.peerID = peerIDOf(pub);
    if (typeof proof.proofValue !== 'string' || !proof.proofValue.startsWith('z')) throw new Error('proofValue is not base58btc multibase');
    const sig = base58decode(proof.proofValue.slice(1));
    if (sig.length !== 64) throw new Error('proofValue is not a 64-byte signature');
    const doc = { ...td }; delete doc.proof;
    const config = { ...proof }; delete config.proofValue;
    if ('@context' in config && jcs(config['@context']) !== jcs(doc['@context'])) throw new Error('proof @context differs from the document\'s');
    if ('@context' in doc) config['@context'] = doc['@context'];
    const a = await sha256(jcs(config)), b = await sha256(jcs(doc));
    const data = new Uint8Array(64); data.set(a); data.set(b, 32);
    const key = await crypto.subtle.importKey('raw', pub, { name: 'Ed25519' }, false, ['verify']);
    out.valid = await crypto.subtle.verify({ name: 'Ed25519' }, key, sig, data);
    if (!out.valid) out.reason = 'the signature does not match the document: it was changed after signing';
  } catch (e) {
    out.reason = e.message || String(e);
  }
  return out;
}
