#!/usr/bin/env node
// An independent implementation of the W3C Data Integrity cryptosuite
// eddsa-jcs-2022 (vc-di-eddsa, "Data Integrity EdDSA Cryptosuites v1.0",
// section 3.3), written from the spec and sharing no code with lmosnode's Go
// implementation (proto/proof.go). It shows that a third party can verify a
// signed LMOS Thing Description with off-the-shelf parts:
//
//   - Node's built-in crypto for Ed25519 and SHA-256,
//   - the npm package "canonicalize" (the RFC 8785 JCS reference
//     implementation) for canonical JSON,
//   - the npm package "bs58" for base58btc.
//
// Usage (a FILE of "-" or none reads standard input):
//
//   node verify-eddsa-jcs.mjs verify [FILE]
//       Verifies the proof of a secured document. Prints a JSON report and
//       exits 0 if the proof verifies, 1 if not, 2 on usage errors.
//   node verify-eddsa-jcs.mjs verify-lines [FILE]
//       Verifies one secured document per line (JSON Lines); prints one
//       report per line and exits 0 if every proof verifies.
//   node verify-eddsa-jcs.mjs sign SEED_HEX CREATED [--proof-context] [FILE]
//       Signs a document with the Ed25519 key of the 32-byte seed; prints the
//       secured document. With --proof-context the proof options carry the
//       document's @context (as lmosnode writes them); without, they do not
//       (the spec allows both; the signed bytes are the same).
//   node verify-eddsa-jcs.mjs sign-lines [FILE]
//       Signs in bulk: each input line is a JSON object {"seed": SEED_HEX,
//       "created": CREATED, "proofContext": BOOL, "document": {...}}; prints
//       one secured document per line.
//   node verify-eddsa-jcs.mjs canonicalize [FILE]
//       Prints the JCS form of a JSON document.

import { createHash, createPrivateKey, createPublicKey, sign, verify } from 'node:crypto';
import { readFileSync } from 'node:fs';
import canonicalize from 'canonicalize';
import bs58 from 'bs58';

// Multicodec prefix of an Ed25519 public key (varint 0xed).
const ED25519_PUB = [0xed, 0x01];
// DER prefixes that wrap raw Ed25519 keys for node:crypto (RFC 8410).
const PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

const sha256 = (s) => createHash('sha256').update(s, 'utf8').digest();

class VerifyError extends Error {}

// did:key:z6Mk…[#z6Mk…] -> 32 raw public key bytes.
function publicKeyFromDIDKey(vm) {
  const m = /^did:key:(z[1-9A-HJ-NP-Za-km-z]+)(?:#(z[1-9A-HJ-NP-Za-km-z]+))?$/.exec(vm);
  if (!m) throw new VerifyError(`verificationMethod ${JSON.stringify(vm)} is not a did:key`);
  if (m[2] !== undefined && m[2] !== m[1]) throw new VerifyError('did:key fragment does not repeat the key');
  const bytes = bs58.decode(m[1].slice(1));
  if (bytes.length !== 34 || bytes[0] !== ED25519_PUB[0] || bytes[1] !== ED25519_PUB[1]) {
    throw new VerifyError('did:key is not an Ed25519 public key');
  }
  return Buffer.from(bytes.subarray(2));
}

function didKeyFromPublicKey(pub) {
  const id = 'z' + bs58.encode(Buffer.concat([Buffer.from(ED25519_PUB), pub]));
  return { did: `did:key:${id}`, vm: `did:key:${id}#${id}` };
}

// 3.3.5 Proof Configuration (eddsa-jcs-2022).
function proofConfiguration(unsecuredDocument, options) {
  const proofConfig = structuredClone(options);
  if (proofConfig.type !== 'DataIntegrityProof' || proofConfig.cryptosuite !== 'eddsa-jcs-2022') {
    throw new VerifyError('PROOF_GENERATION_ERROR: wrong type or cryptosuite');
  }
  if (proofConfig.created !== undefined &&
      !/^-?\d{4,}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(proofConfig.created)) {
    throw new VerifyError('PROOF_GENERATION_ERROR: created is not a dateTimeStamp');
  }
  if (unsecuredDocument['@context'] !== undefined) {
    proofConfig['@context'] = unsecuredDocument['@context'];
  }
  return canonicalize(proofConfig);
}

// 3.3.3 Transformation (eddsa-jcs-2022).
function transformation(unsecuredDocument, options) {
  if (options.type !== 'DataIntegrityProof' || options.cryptosuite !== 'eddsa-jcs-2022') {
    throw new VerifyError('PROOF_TRANSFORMATION_ERROR: wrong type or cryptosuite');
  }
  return canonicalize(unsecuredDocument);
}

// 3.3.4 Hashing (eddsa-jcs-2022).
function hashing(transformedDocument, canonicalProofConfig) {
  return Buffer.concat([sha256(canonicalProofConfig), sha256(transformedDocument)]);
}

const asList = (ctx) => (Array.isArray(ctx) ? ctx : [ctx]);

// 3.3.2 Verify Proof (eddsa-jcs-2022).
function verifyProof(securedDocument) {
  if (securedDocument === null || typeof securedDocument !== 'object' || Array.isArray(securedDocument)) {
    throw new VerifyError('document is not a JSON object');
  }
  const proof = securedDocument.proof;
  if (proof === null || typeof proof !== 'object' || Array.isArray(proof)) {
    throw new VerifyError('document has no single proof object');
  }
  // 1. unsecuredDocument: securedDocument without proof.
  const unsecuredDocument = structuredClone(securedDocument);
  delete unsecuredDocument.proof;
  // 2. proofOptions: proof without proofValue.
  const proofOptions = structuredClone(proof);
  delete proofOptions.proofValue;
  // 3. proofBytes: multibase base58btc proofValue.
  if (typeof proof.proofValue !== 'string' || !proof.proofValue.startsWith('z')) {
    throw new VerifyError('proofValue is not multibase base58btc');
  }
  const proofBytes = Buffer.from(bs58.decode(proof.proofValue.slice(1)));
  // 4. @context: the document's must start with the proof's, in order.
  if (proofOptions['@context'] !== undefined) {
    const docCtx = asList(securedDocument['@context'] ?? []);
    const proofCtx = asList(proofOptions['@context']);
    const startsWith = proofCtx.length <= docCtx.length &&
      proofCtx.every((v, i) => canonicalize(v) === canonicalize(docCtx[i]));
    if (!startsWith) return { verified: false, reason: '@context mismatch' };
    unsecuredDocument['@context'] = proofOptions['@context'];
  }
  // 5.-7.
  const transformedData = transformation(unsecuredDocument, proofOptions);
  const proofConfig = proofConfiguration(unsecuredDocument, proofOptions);
  const hashData = hashing(transformedData, proofConfig);
  // 8. 3.3.7 Proof Verification: Ed25519 (pure) over hashData.
  if (proofOptions.proofPurpose !== 'assertionMethod') {
    return { verified: false, reason: 'proofPurpose is not assertionMethod' };
  }
  const pub = publicKeyFromDIDKey(proofOptions.verificationMethod);
  const key = createPublicKey({ key: Buffer.concat([SPKI_PREFIX, pub]), format: 'der', type: 'spki' });
  const verified = proofBytes.length === 64 && verify(null, hashData, key, proofBytes);
  return {
    verified,
    reason: verified ? undefined : 'signature does not verify',
    verificationMethod: proofOptions.verificationMethod,
    proofConfigSha256: sha256(proofConfig).toString('hex'),
    documentSha256: sha256(transformedData).toString('hex'),
  };
}

// 3.3.1 Create Proof (eddsa-jcs-2022), then Add Proof.
function signDocument(document, seedHex, created, proofContext) {
  const seed = Buffer.from(seedHex, 'hex');
  if (seed.length !== 32) throw new Error('SEED_HEX must be 32 bytes of hex');
  const privateKey = createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, seed]), format: 'der', type: 'pkcs8' });
  const pub = createPublicKey(privateKey).export({ format: 'der', type: 'spki' }).subarray(SPKI_PREFIX.length);
  const unsecuredDocument = structuredClone(document);
  delete unsecuredDocument.proof;
  const options = {
    type: 'DataIntegrityProof',
    cryptosuite: 'eddsa-jcs-2022',
    verificationMethod: didKeyFromPublicKey(pub).vm,
    proofPurpose: 'assertionMethod',
    created,
  };
  if (proofContext && unsecuredDocument['@context'] !== undefined) {
    options['@context'] = unsecuredDocument['@context'];
  }
  const proof = structuredClone(options);
  const proofConfig = proofConfiguration(unsecuredDocument, options);
  const transformedData = transformation(unsecuredDocument, options);
  const hashData = hashing(transformedData, proofConfig);
  const proofBytes = sign(null, hashData, privateKey);
  proof.proofValue = 'z' + bs58.encode(proofBytes);
  return { ...unsecuredDocument, proof };
}

function readInput(file) {
  return readFileSync(file === undefined || file === '-' ? 0 : file, 'utf8');
}

function main(argv) {
  const [cmd, ...args] = argv;
  switch (cmd) {
    case 'verify': {
      let report;
      try {
        report = verifyProof(JSON.parse(readInput(args[0])));
      } catch (e) {
        report = { verified: false, reason: e.message };
      }
      process.stdout.write(JSON.stringify(report) + '\n');
      return report.verified ? 0 : 1;
    }
    case 'verify-lines': {
      let ok = true;
      for (const line of readInput(args[0]).split('\n')) {
        if (line.trim() === '') continue;
        let report;
        try {
          report = verifyProof(JSON.parse(line));
        } catch (e) {
          report = { verified: false, reason: e.message };
        }
        ok &&= report.verified;
        process.stdout.write(JSON.stringify(report) + '\n');
      }
      return ok ? 0 : 1;
    }
    case 'sign': {
      const proofContext = args.includes('--proof-context');
      const rest = args.filter((a) => a !== '--proof-context');
      const [seedHex, created, file] = rest;
      if (!seedHex || !created) break;
      const secured = signDocument(JSON.parse(readInput(file)), seedHex, created, proofContext);
      process.stdout.write(JSON.stringify(secured) + '\n');
      return 0;
    }
    case 'sign-lines': {
      for (const line of readInput(args[0]).split('\n')) {
        if (line.trim() === '') continue;
        const job = JSON.parse(line);
        const secured = signDocument(job.document, job.seed, job.created, job.proofContext);
        process.stdout.write(JSON.stringify(secured) + '\n');
      }
      return 0;
    }
    case 'canonicalize':
      process.stdout.write(canonicalize(JSON.parse(readInput(args[0]))));
      return 0;
  }
  process.stderr.write('usage: verify-eddsa-jcs.mjs verify [FILE] | verify-lines [FILE] | sign SEED_HEX CREATED [--proof-context] [FILE] | sign-lines [FILE] | canonicalize [FILE]\n');
  return 2;
}

process.exitCode = main(process.argv.slice(2));
