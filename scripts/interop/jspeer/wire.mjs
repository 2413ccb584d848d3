// The lmosnode wire formats as docs/wire.md states them: records and
// their eddsa-jcs-2022 proofs, DHT keys, provider CIDs, the gossipsub
// message ID. Each function cites the section it follows, and reproduces
// that section's examples (the message IDs, the CIDs, the example record's
// proof). The TD JSON Schema and the LMOS term rules of "Valid TDs" are
// not checked here: the Go nodes check them.

import { createHash, createPrivateKey, createPublicKey, sign as edSign, verify as edVerify } from 'node:crypto'
import canonicalize from 'canonicalize'
import { base58btc } from 'multiformats/bases/base58'
import { CID } from 'multiformats/cid'
import { sha256 } from 'multiformats/hashes/sha2'
import { peerIdFromString } from '@libp2p/peer-id'

// docs/wire.md, Limits.
export const MaxRecordSize = 69632
export const MaxRecordAgeMs = 48 * 3600 * 1000
export const MaxClockSkewMs = 5 * 60 * 1000
export const TopicAnnounce = '/lmos/1/announce'
export const TopicGroupPrefix = '/lmos/1/group/'
export const KadProtocol = '/lmos/kad/1.0.0'
export const ContextLMOS = 'https://eclipse.dev/lmos/protocol/v1'

const sha = (b) => createHash('sha256').update(b).digest()
const utf8 = (s) => Buffer.from(s, 'utf8')

// docs/wire.md, Gossipsub: the raw SHA-256 of data (announce and events
// topics), or of topic, 0x00, data on a group topic.
export function messageID (msg) {
  const h = createHash('sha256')
  if (msg.topic.startsWith(TopicGroupPrefix)) {
    h.update(utf8(msg.topic))
    h.update(Buffer.from([0]))
  }
  h.update(msg.data)
  return new Uint8Array(h.digest())
}

// docs/wire.md, Provider records: CIDv1, codec raw, sha2-256 of the string.
export async function providerCID (kind, name) {
  return CID.create(1, 0x55, await sha256.digest(utf8(`lmos:${kind}:${name}`)))
}

// docs/wire.md, Thing records: Go's url.PathEscape, upper-case hex; ASCII
// letters, digits and - . _ ~ $ & + : = @ stay.
export function escapeKeyID (id) {
  let out = ''
  for (const b of utf8(id)) {
    const c = String.fromCharCode(b)
    if (/[A-Za-z0-9\-._~$&+:=@]/.test(c) && b < 0x80) out += c
    else out += '%' + b.toString(16).toUpperCase().padStart(2, '0')
  }
  return out
}

export function thingKey (publisher, id) {
  return `/lmos-td/${publisher}/${escapeKeyID(id)}`
}

// did:key of an Ed25519 public key: multicodec ed25519-pub (0xed, varint
// ed 01), base58btc multibase.
export function didKey (pub) {
  return 'did:key:' + base58btc.encode(Uint8Array.from([0xed, 0x01, ...pub]))
}

function didKeyPub (vm) {
  const m = /^did:key:(z[1-9A-HJ-NP-Za-km-z]+)#(z[1-9A-HJ-NP-Za-km-z]+)$/.exec(vm ?? '')
  if (m == null || m[1] !== m[2]) throw new Error(`verificationMethod ${vm}: not did:key:z…#z… with the fragment repeating the key`)
  const b = base58btc.decode(m[1])
  if (b.length !== 34 || b[0] !== 0xed || b[1] !== 0x01) throw new Error('verificationMethod: not an Ed25519 did:key')
  return b.subarray(2)
}

// The Ed25519 public key a peer ID names (identity multihash of the
// protobuf public key).
export function peerPub (peerID) {
  const p = peerIdFromString(peerID)
  if (p.type !== 'Ed25519' || p.publicKey == null) throw new Error(`peer ${peerID}: not an Ed25519 peer ID`)
  return p.publicKey.raw
}

const spki = (pub) => createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(pub).toString('base64url') }, format: 'jwk' })

// docs/wire.md, Records: the signed bytes are SHA-256(JCS(proof without
// proofValue)) ‖ SHA-256(JCS(document without proof)).
function signingInput (doc, proofConfig) {
  return Buffer.concat([sha(utf8(canonicalize(proofConfig))), sha(utf8(canonicalize(doc)))])
}

// signRecord secures doc with an eddsa-jcs-2022 proof by the Ed25519 key
// (seed, pub), created at now (UTC, second precision), and returns the
// record's bytes.
export function signRecord (doc, seed, pub, now = new Date()) {
  const vm = didKey(pub)
  const proof = {
    '@context': doc['@context'],
    type: 'DataIntegrityProof',
    cryptosuite: 'eddsa-jcs-2022',
    verificationMethod: `${vm}#${vm.slice('did:key:'.length)}`,
    proofPurpose: 'assertionMethod',
    created: now.toISOString().replace(/\.\d{3}Z$/, 'Z')
  }
  const key = createPrivateKey({ key: { kty: 'OKP', crv: 'Ed25519', d: Buffer.from(seed).toString('base64url'), x: Buffer.from(pub).toString('base64url') }, format: 'jwk' })
  const sig = edSign(null, signingInput(doc, proof), key)
  return utf8(JSON.stringify({ ...doc, proof: { ...proof, proofValue: base58btc.encode(sig) } }))
}

// verifyRecord checks a record as docs/wire.md's Record validation says
// (size, proof, signer = publisher, the Thing the key names, created
// within 48 h / 5 min), except the TD JSON Schema, which this peer does
// not carry. It returns {doc, seq, created, tombstone}.
export function verifyRecord (raw, publisher, id, now = Date.now()) {
  if (raw.length > MaxRecordSize) throw new Error(`record of ${raw.length} bytes`)
  const rec = JSON.parse(Buffer.from(raw).toString('utf8'))
  if (rec == null || typeof rec !== 'object' || Array.isArray(rec)) throw new Error('record: not a JSON object')
  const { proof, ...doc } = rec
  if (proof == null || typeof proof !== 'object') throw new Error('record: no proof')
  const { proofValue, ...proofConfig } = proof
  if (proof.type !== 'DataIntegrityProof' || proof.cryptosuite !== 'eddsa-jcs-2022' || proof.proofPurpose !== 'assertionMethod') {
    throw new Error('proof: not a DataIntegrityProof eddsa-jcs-2022 assertionMethod')
  }
  if ('@context' in proof && canonicalize(proof['@context']) !== canonicalize(doc['@context'])) throw new Error('proof: @context differs from the document\'s')
  const pub = didKeyPub(proof.verificationMethod)
  if (typeof proofValue !== 'string' || !proofValue.startsWith('z')) throw new Error('proof: proofValue not base58btc multibase')
  const sig = base58btc.decode(proofValue)
  if (sig.length !== 64) throw new Error('proof: signature not 64 bytes')
  if (!edVerify(null, signingInput(doc, proofConfig), spki(pub), sig)) throw new Error('proof: signature does not verify')
  if (!Buffer.from(pub).equals(Buffer.from(peerPub(publisher)))) throw new Error(`signer ${proof.verificationMethod} is not publisher ${publisher}`)
  if (typeof doc.id !== 'string' || doc.id === '') throw new Error('record: no id')
  if (id != null && doc.id !== id) throw new Error(`record of ${doc.id}, not ${id}`)
  const created = Date.parse(proof.created)
  if (!/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/.test(proof.created ?? '') || Number.isNaN(created)) throw new Error('proof: created is not a dateTimeStamp')
  if (created < now - MaxRecordAgeMs) throw new Error('proof: created more than 48 h ago')
  if (created > now + MaxClockSkewMs) throw new Error('proof: created more than 5 min ahead')
  const tombstone = 'lmos:tombstone' in doc
  const seq = doc['lmos:seq'] ?? 0
  if (!Number.isSafeInteger(seq) || seq < 0) throw new Error('lmos:seq: not a non-negative integer this peer can hold')
  return { doc, seq, created, tombstone }
}

// select returns the index of the record that ranks first (docs/wire.md,
// Select rule): higher seq, tombstone before TD, later created, greater
// bytes.
export function select (records) {
  const rank = (raw) => {
    const r = JSON.parse(Buffer.from(raw).toString('utf8'))
    return { seq: r['lmos:seq'] ?? 0, tomb: 'lmos:tombstone' in r, created: Date.parse(r.proof?.created) || 0, raw: Buffer.from(raw) }
  }
  let best = 0
  let b = rank(records[0])
  for (let i = 1; i < records.length; i++) {
    const r = rank(records[i])
    const newer = r.seq !== b.seq ? r.seq > b.seq : r.tomb !== b.tomb ? r.tomb : r.created !== b.created ? r.created > b.created : Buffer.compare(r.raw, b.raw) > 0
    if (newer) { best = i; b = r }
  }
  return best
}

// parseThingKey splits /lmos-td/<publisher>/<escaped id>; the id stays
// escaped (compare by escaping, never unescape).
export function parseThingKey (key) {
  const m = /^\/lmos-td\/([^/]+)\/(.+)$/.exec(Buffer.from(key).toString('utf8'))
  if (m == null) throw new Error('not a /lmos-td/ key')
  return { publisher: m[1], escapedID: m[2] }
}
