// A js-libp2p peer of an lmosnode federation, written from docs/wire.md
// alone, driven by node/jspeer_test.go. Usage:
//
//   node peer.mjs '<JSON request>'
//
// The request's "mode" is one of
//
//   read     {peers, publisher, id, capability}: read the Thing's record
//            and the capability's providers from the DHT, verify the
//            record, print {record (base64), seq, providers}.
//   publish  {peers, id, title, capability}: sign a TD with this peer's
//            key, announce it on /lmos/1/announce and put it in the DHT,
//            print {peer, record, sentTo, putTo};
//            exit when standard input closes.
//   examples {record (base64), publisher, at}: the values docs/wire.md
//            gives as examples, computed here: the record's announce
//            message ID and whether it verifies at time at, a group
//            message ID, provider CIDs, DHT keys.
//   late     {msgid: "lmos"|"default"}: print {peer}; read one line
//            {relay} from standard input, dial the relay, subscribe to the
//            announce topic only then, and print what arrives through
//            gossip repair (IHAVE/IWANT).
//
// Every result is one JSON line on standard output; a failure is a
// message on standard error and exit status 1.

import './polyfill.mjs'
import { createLibp2p } from 'libp2p'
import { tcp } from '@libp2p/tcp'
import { noise } from '@chainsafe/libp2p-noise'
import { yamux } from '@chainsafe/libp2p-yamux'
import { identify } from '@libp2p/identify'
import { ping } from '@libp2p/ping'
import { kadDHT, passthroughMapper } from '@libp2p/kad-dht'
import { gossipsub } from '@libp2p/gossipsub'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { multiaddr } from '@multiformats/multiaddr'
import { createInterface } from 'node:readline'
import * as wire from './wire.mjs'

const req = JSON.parse(process.argv[2] ?? '{}')
const deadline = Date.now() + (req.timeoutMs ?? 20000)

function out (v) { process.stdout.write(JSON.stringify(v) + '\n') }
function fail (msg) { process.stderr.write(msg + '\n'); process.exit(1) }
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

// A DHT validator and selector for /lmos-td/: docs/wire.md's record
// validation with the key's publisher and id.
const tdValidator = async (key, value) => {
  const { publisher, escapedID } = wire.parseThingKey(key)
  const { doc } = wire.verifyRecord(value, publisher, null)
  if (wire.escapeKeyID(doc.id) !== escapedID) throw new Error(`record of ${doc.id} under key ${escapedID}`)
}
const tdSelector = (key, records) => wire.select(records)

async function newPeer ({ msgid = 'lmos', gossipOnly = false, dht = true } = {}) {
  const privateKey = await generateKeyPair('Ed25519')
  const gs = {
    // docs/wire.md: StrictSign, the content message ID, 135168-byte
    // messages, flood publishing.
    globalSignaturePolicy: 'StrictSign',
    maxInboundDataLength: 135168,
    floodPublish: true,
    allowPublishToZeroTopicPeers: false,
    emitSelf: false
  }
  if (msgid === 'lmos') gs.msgIdFn = wire.messageID
  else if (msgid !== 'default') fail(`msgid ${msgid}: want lmos or default`)
  if (gossipOnly) {
    // A subscriber that never joins a mesh: it prunes every graft, so
    // what it gets, it gets through IHAVE/IWANT.
    Object.assign(gs, { D: 0, Dlo: 0, Dhi: 0, Dout: 0, Dscore: 0 })
  }
  const node = await createLibp2p({
    privateKey,
    addresses: { listen: ['/ip4/127.0.0.1/tcp/0'] },
    transports: [tcp()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    services: {
      identify: identify(),
      ping: ping(),
      pubsub: gossipsub(gs),
      ...(dht
        ? {
            dht: kadDHT({
              protocol: wire.KadProtocol,
              clientMode: true,
              // The private DHT lives on whatever addresses its nodes
              // have (here 127.0.0.1); js kad-dht drops private ones by
              // default.
              peerInfoMapper: passthroughMapper,
              validators: { 'lmos-td': tdValidator },
              selectors: { 'lmos-td': tdSelector }
            })
          }
        : {})
    }
  })
  return { node, privateKey }
}

async function dialAll (node, peers) {
  for (const a of peers) await node.dial(multiaddr(a))
}

async function read () {
  const { node } = await newPeer()
  try {
    await dialAll(node, req.peers)
    const key = new TextEncoder().encode(wire.thingKey(req.publisher, req.id))
    let raw = null
    let lastErr = 'no value'
    while (raw == null && Date.now() < deadline) {
      try {
        for await (const ev of node.services.dht.get(key, { signal: AbortSignal.timeout(5000) })) {
          if (ev.name === 'VALUE') { raw = ev.value; break }
        }
      } catch (e) { lastErr = e.message }
      if (raw == null) await sleep(200)
    }
    if (raw == null) fail(`DHT get ${wire.thingKey(req.publisher, req.id)}: ${lastErr}`)
    // Verify it here, apart from the DHT's validator.
    const rec = wire.verifyRecord(raw, req.publisher, req.id)
    const cid = await wire.providerCID('capability', req.capability)
    const providers = new Set()
    while (!providers.has(req.publisher) && Date.now() < deadline) {
      try {
        for await (const ev of node.services.dht.findProviders(cid, { signal: AbortSignal.timeout(5000) })) {
          if (ev.name === 'PROVIDER') for (const p of ev.providers) providers.add(p.id.toString())
        }
      } catch (e) { lastErr = e.message }
      if (!providers.has(req.publisher)) await sleep(200)
    }
    out({ record: Buffer.from(raw).toString('base64'), seq: rec.seq, title: rec.doc.title, cid: cid.toString(), providers: [...providers] })
  } finally {
    await node.stop()
  }
}

function stdinLines () {
  const rl = createInterface({ input: process.stdin })
  const it = rl[Symbol.asyncIterator]()
  return { next: async () => (await it.next()).value, closed: new Promise((resolve) => rl.on('close', resolve)) }
}

async function publish () {
  const { node, privateKey } = await newPeer()
  const lines = stdinLines()
  try {
    const ps = node.services.pubsub
    ps.subscribe(wire.TopicAnnounce)
    await dialAll(node, req.peers)
    while (ps.getSubscribers(wire.TopicAnnounce).length === 0) {
      if (Date.now() > deadline) fail('no Go peer on the announce topic')
      await sleep(50)
    }
    const td = {
      '@context': ['https://www.w3.org/2022/wot/td/v1.1', { lmos: wire.ContextLMOS }],
      '@type': ['lmos:Agent'],
      id: req.id,
      title: req.title,
      securityDefinitions: { nosec_sc: { scheme: 'nosec' } },
      security: 'nosec_sc',
      'lmos:capabilities': [{ 'lmos:id': req.capability, 'lmos:version': '1.0.0' }],
      'lmos:seq': 1
    }
    const raw = privateKey.raw // 64 bytes: the seed, then the public key
    const record = wire.signRecord(td, raw.subarray(0, 32), raw.subarray(32))
    wire.verifyRecord(record, node.peerId.toString(), req.id)
    const res = await ps.publish(wire.TopicAnnounce, record)
    // Once more a second later, as a node republishes when a peer joins:
    // the same bytes are the same message ID, so a peer that has the
    // first drops the second, and one that lost the first (sent as its
    // gossipsub was still setting up the peer) gets it.
    await sleep(1000)
    const again = await ps.publish(wire.TopicAnnounce, record).catch((err) => ({ recipients: [], err: String(err) }))
    // And into the DHT, under its /lmos-td/ key, at the closest Go nodes.
    const key = new TextEncoder().encode(wire.thingKey(node.peerId.toString(), req.id))
    const putTo = new Set()
    for await (const ev of node.services.dht.put(key, record, { signal: AbortSignal.timeout(10000) })) {
      if (ev.name === 'PEER_RESPONSE' && ev.messageName === 'PUT_VALUE') putTo.add(ev.from.toString())
    }
    out({ peer: node.peerId.toString(), record: record.toString('base64'), sentTo: res.recipients.map(String), sentAgainTo: again.recipients.map(String), putTo: [...putTo] })
    await lines.closed
  } finally {
    await node.stop()
  }
}

async function late () {
  // No DHT: its queries would dial the publisher, which must stay a
  // stranger to this peer.
  const { node } = await newPeer({ msgid: req.msgid, gossipOnly: true, dht: false })
  const lines = stdinLines()
  try {
    const ps = node.services.pubsub
    // Record the message IDs the relay advertises (IHAVE) before the
    // router handles them.
    const advertised = new Set()
    const handleIHave = ps.handleIHave.bind(ps)
    ps.handleIHave = (id, ihave) => {
      for (const { topicID, messageIDs } of ihave) {
        if (topicID === wire.TopicAnnounce) for (const m of messageIDs ?? []) advertised.add(Buffer.from(m).toString('hex'))
      }
      return handleIHave(id, ihave)
    }
    const received = []
    ps.addEventListener('gossipsub:message', (ev) => {
      const { msg, msgId } = ev.detail
      received.push({ data: Buffer.from(msg.data), from: msg.from?.toString(), id: Buffer.from(msgId, 'base64').toString('hex'), msgId })
    })
    out({ peer: node.peerId.toString() })
    const { relay } = JSON.parse(await lines.next())
    await node.dial(multiaddr(relay))
    ps.subscribe(wire.TopicAnnounce)
    while (received.length === 0 && Date.now() < deadline) await sleep(20)
    if (received.length === 0) fail(`nothing arrived on ${wire.TopicAnnounce}; the relay advertised ${advertised.size} message IDs`)
    const m = received[0]
    // The ID this peer derives for what arrived must be one the relay
    // advertised: that is how both sides name a message in IHAVE, IWANT
    // and IDONTWANT, and what keeps a peer from asking again for what it
    // holds.
    const contentID = Buffer.from(wire.messageID({ topic: wire.TopicAnnounce, data: m.data })).toString('hex')
    out({ record: m.data.toString('base64'), from: m.from, routerID: m.id, contentID, advertised: [...advertised], connected: node.getConnections().map((c) => c.remotePeer.toString()) })
    if (!advertised.has(m.id)) fail(`the message arrived, but this peer names it ${m.id}, which the relay never advertised (it advertised ${[...advertised].join(', ')})`)
  } finally {
    await node.stop()
  }
}

async function examples () {
  const raw = Buffer.from(req.record, 'base64')
  let verified = null
  try {
    wire.verifyRecord(raw, req.publisher, null, Date.parse(req.at))
    verified = true
  } catch (e) {
    verified = e.message
  }
  const hex = (b) => Buffer.from(b).toString('hex')
  out({
    announceID: hex(wire.messageID({ topic: wire.TopicAnnounce, data: raw })),
    verified,
    groupID: hex(wire.messageID({ topic: '/lmos/1/group/bafkreiexample', data: Buffer.from('{"post":{"body":"hi","sent":"2026-11-21T10:00:00Z"}}') })),
    capabilityCID: (await wire.providerCID('capability', 'weather-forecast')).toString(),
    typeCID: (await wire.providerCID('type', 'lmos:Agent')).toString(),
    keys: [wire.thingKey(req.publisher, 'urn:uuid:6f1d3c9e-2b4a-4c1e-9f0a-5d7e8b2c4a10'), wire.thingKey(req.publisher, 'https://x.example/a b'), wire.thingKey(req.publisher, 'urn:é$&+=@~')]
  })
}

const modes = { read, publish, examples, late }
if (modes[req.mode] == null) fail(`mode ${req.mode}: want read, publish, examples or late`)
try {
  await modes[req.mode]()
  process.exit(0)
} catch (e) {
  fail(`${req.mode}: ${e.stack ?? e}`)
}
