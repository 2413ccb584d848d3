// Package federation publishes a node's Things to the federation and learns
// the Things of other nodes: it is the part of a node that keeps its
// directory (node/directory) in step with the rest of the Internet of
// Agents.
//
// Three paths carry records (signed TDs and tombstones, proto.Record):
//
//   - Gossip. A node announces each record it publishes on the gossipsub
//     topic proto.TopicAnnounce ("/lmos/1/announce"), to all its topic
//     peers (the node turns on flood publishing); every node that accepts
//     it stores it and gossipsub relays it on.
//   - Sync. When two nodes connect, each asks the other for the records it
//     publishes, over the stream protocol proto.ProtocolSync
//     ("/lmos/sync/1.0.0"). A node that missed gossip (it was down, or it
//     joined late) converges this way.
//   - DHT. Each record is put under its value key (dht.ThingKey) and the
//     node announces itself as a provider of its Things' capabilities,
//     types and vendor (dht.ProviderKeys). A lookup of a capability
//     (FindCapability; FindType, FindVendor) finds its providers in the
//     DHT and asks them over sync, each as soon as the lookup yields it,
//     and stops the lookup once it has yielded no new provider for half as
//     long as it took to find the first; a node that knows a Thing's
//     publisher and id reads the record from the DHT (FetchThing).
//
// # Shards
//
// Version 2 of the announce topic is split in proto.ShardCount (16)
// shards, proto.ShardTopic(n) = "/lmos/2/announce/<n>", by the provider
// key forms of a Thing's capabilities (proto.ShardOf; a Thing without
// capabilities by all its forms). Config.Role says what a node carries
// (shard.go): RoleV1 the v1 topics only, as before; RoleDirectory every
// shard and the v1 topics, and it fetches every record announced short
// at once; RoleLight the shards of its own Things (while it publishes
// them) and of every key it looks up (FindCapability, FindType,
// FindVendor), left ShardIdle after the last lookup in it; of what they
// bring it stores only the Things with a key form of its own Things or
// looked up within ShardIdle, and relays the rest. A light node
// publishes on the v1 topics but does not subscribe to them, and does not
// sync with every peer it connects to: it learns what it does not carry
// on demand, by the lookups below. RoleAuto is RoleDirectory until the
// records it learned pass Config.LightPast bytes, then RoleLight for good
// (autoLight).
//
// On a shard a publisher sends the signed record if it is at most
// Config.ShortBudget bytes, else a short announcement (shardmsg.go:
// publisher, id, seq, record hash, provider key forms); the receiver
// notes it and fetches the record (fetch.go: proto.ProtocolFetch from the
// publisher, else the DHT) when a lookup of one of its keys needs it,
// checks it as every record and that it is the version announced or a
// later one. Presence beats go on the shards of the publisher's Things
// too. While Config.NoLegacyAnnounce is unset (the transition), every
// node also announces each public record in full on proto.TopicAnnounce
// and beats on proto.TopicPresence, so nodes of older versions keep
// receiving what they received. docs/wire.md, "Announce shards", is the
// wire.
//
// # Lookups and the freshness window
//
// A lookup asks the network (the DHT's providers, and for a capability
// the connected peers over the find protocol) and then answers from the
// directory: what it held merged with what the network sent, every
// record through the Intake. It answers from the directory alone only
// when the directory holds a match and the node asked the network for
// that key (the provider key: dht.CapabilityCID, TypeCID, VendorCID) less
// than LookupFresh (5 min) ago; a miss always asks, and so does the first
// lookup of a key. Holding a match is not enough: the first record of a
// capability to reach a fresh node (by sync or gossip, from a peer it
// happens to be connected to) would otherwise be its only answer, and
// one hostile record would hide every honest provider not connected
// (issue 24, "no eclipse by what is local"). Within the window a
// repeated lookup stays one directory query. The node remembers at most
// maxRecentKeys (1024) keys, and forgets the one asked longest ago first,
// so no caller grows the map without bound; a key forgotten is only
// asked again. A lookup whose context ends before the network answered
// is not remembered, and concurrent lookups of one key each ask.
//
// The directory's budget for learned records (directory.Config
// MaxLearnedBytes) may evict what a lookup found: the federation forgets
// the provider keys of every Thing evicted (directory.OnEvict), so the
// next lookup of them asks the network again and finds the Thing anew.
// The records a lookup learns (its filtered syncs, the find answers, a
// FetchThing) are stored as used (directory.Used), and what it returns
// is marked used (Directory.Use): the budget keeps recently used Things
// before those of unknown publishers. A record the budget refuses is
// valid: gossip forwards it and a group topic ignores it, and the sender
// is not penalised.
//
// # Trust
//
// Nothing a peer sends is stored unchecked. Every record is parsed and its
// proof verified (proto.ParseRecord), checked for size and freshness
// (dht.ThingValidator: not older than dht.MaxRecordAge, not more than
// dht.MaxClockSkew in the future), and its publisher must be the peer that
// vouches for it: the author of the gossipsub message (signed, StrictSign),
// or the peer that answered a sync request. A peer therefore announces only
// its own Things; relaying is gossipsub's job. The directory then keeps, per
// (publisher, id), the newest record only.
//
// Whichever path brought it — gossip, a sync, a DHT lookup, or a group
// topic (package groupsvc) — a record of another publisher enters the
// directory through one Intake (intake.go): Check, then Store, with one
// mapping of what the directory answers (a lower seq than held is a
// replay, the same one a duplicate). The node builds the Intake before the
// group service and the federation, which both hand it records.
//
// The announce topic's validator answers gossipsub with
//
//   - Reject, which counts against the peer that forwarded the message
//     (peer score P4) and stops it, for a message that is larger than
//     proto.MaxRecordSize, not a valid signed record, authored by another
//     peer than the record's publisher, expired or dated in the future, a
//     replay (a lower lmos:seq than the directory holds for the Thing, or
//     than a record accepted and not stored yet), or over its publisher's
//     quota in the directory (a new Thing or more bytes beyond
//     directory.Config.MaxThingsPerPublisher, MaxBytesPerPublisher,
//     counting the accepted records not stored yet; what is held stays);
//   - Ignore, which stops the message without penalty, for a record equal
//     to or older by proof time only than the one held or accepted (a
//     duplicate, or a republication that crossed a newer one);
//   - Accept otherwise. The validator only decides (directory.Classify:
//     a lookup, no write); the accepted record is stored right after, in
//     a batch, by the learn queue's worker (learn.go), while gossipsub
//     forwards it. Nothing but the checks is on the forwarding path.
//
// An honest peer can forward a replay: it relayed version 1 while version 2
// was on its way to us by another path. The penalty of one such message is
// small and decays (see node's gossipsub score parameters); a peer that
// keeps sending replays is pruned and graylisted.
//
// # Liveness
//
// A node that publishes Things sends a presence beat on
// proto.TopicPresence every Config.PresenceInterval (presence.go), or less
// often while it hears more beats of others than Config.BeatRate, stating
// its pace in the beat (directory.Directory.SeenEvery keeps it online as
// many missed beats). The
// Intake and the presence validator tell the directory when each
// publisher was seen (directory.Directory.Seen): the time of its beats,
// the proof time of its records, a sync it answered, a connection to it
// opening or closing. The directory derives Entry.Online from it and drops
// the learned Things of a publisher unseen for its OfflineTTL. A beat
// also carries its author's digest (its live public Things), from which
// a directory or v1 node repairs what gossip lost (repair.go).
//
// # Sync protocol
//
// One request and one response per stream, each a frame as written by
// proto.WriteFrame (an unsigned varint length, then that many bytes):
//
//	request   {"want":"own"}                                JSON, at most 4 KiB
//	          {"want":"own","capability":"weather-forecast"}
//	          {"want":"own","type":"lmos:Agent"}
//	          {"want":"own","vendor":"Example Weather GmbH"}
//	response  {"count":2}                                   JSON header, at most 4 KiB
//	          <record 1>                                    the signed record, as published
//	          <record 2>
//
// "want" must be "own": the answering peer sends the records it publishes
// itself, never what it learned from others (the requester could not tell
// a forgery by the answering peer from a record it merely relayed, and the
// answer stays small). Without a filter it sends all of them: its live TDs
// and the tombstones of the Things it removed (so a peer that cached such a
// Thing drops it). With "capability", "type" or "vendor" it sends only the
// live TDs with that capability id (exactly as written), @type (exactly as
// written) or vendor (compared as dht.NormalizeVendor forms). Unknown
// members are ignored, so a later version can add filters.
//
// The header says how many records follow ("count", at most
// MaxSyncRecords) and whether the answering peer left some out to stay
// within the limits ("truncated": true). A peer that refuses the request
// answers {"error":"…"} and nothing else, e.g. when the requester asks too
// often (each peer may ask a burst of SyncBurst requests, then one every
// SyncEvery). Each record frame is at most proto.MaxRecordSize bytes and
// all of them together at most MaxSyncBytes; the answering peer then closes
// the stream. A requester gives up on an exchange after SyncTimeout and
// resets the stream; it checks every record as above (publisher = the
// answering peer; matching the filter it asked for) and drops those that
// fail.
//
// A node asks a peer for its records when the identify protocol reports
// that the peer speaks proto.ProtocolSync on a new connection, at most once
// per peer every SyncEvery; both sides do, so each learns the other's
// Things.
//
// A lookup of a capability that asks the network (FindCapability) also
// asks up to three peers it is already connected to, over
// proto.ProtocolFind (find.go), for the public, live records they hold
// of the Things that offer it, their own and learned ones, byte for byte
// as signed: at most MaxFindRecords records and MaxFindBytes per answer,
// a capability id of at most MaxFindCapability bytes, on the same
// per-peer budget as sync requests. Every record goes through the intake
// as a record of the publisher its proof names; tombstones, group-scoped
// records and records without the capability are dropped. A provider whose records arrived that way is
// not dialled; every other provider is asked as above, so a peer that
// answers can only withhold records or serve an older version.
//
// # Publishing
//
// Publish and Remove sign the new version (the next lmos:seq of the Thing)
// with the node's key, store it in the directory and announce it on gossip
// (in order of seq); they return once the write is durable and the
// announcement out. The announcement leaves while the write's fsync runs
// (directory.PutUnsynced, then Sync) for the next version of a public
// Thing whose earlier versions are all durable; otherwise (a Thing for
// groups, a caller-chosen seq above the next, the first version of a
// Thing after a crash) the fsync comes first. A crash in that window can
// lose exactly one version, of seq held+1, that others already hold; the
// directory's run marker (directory.BeginRun, cleared when the Federation
// closes with every announced seq durable, not after a failed fsync)
// tells the next run, and its first version of each own Thing
// then takes seq held+2, written before it is announced, so no seq is
// ever signed twice (publishAhead in publish.go). Then a background
// worker puts the record into the DHT and provides its keys, a second
// later; a put that fails is retried with backoff. Every
// dht.RepublishInterval, and when the node starts, the node republishes
// its records: re-signed with a fresh proof "created" and the same seq, so
// that they never expire while the node lives, put and provided again and
// announced again. A record announced while the topic had no peers is
// republished when the first peer joins the topic, as soon as gossipsub can
// send to it.
//
// Things that name lmos:groups are visible to their groups' members only
// (docs/groups.md). Publish refuses a group this node is not a member of
// (Deps.MemberOf). Such Things are never announced on the public topic
// (the validator rejects them there) nor put into the DHT: Publish, Remove
// and republication hand them to Deps.Scoped, which spreads them on the
// groups' topics as {"thing": record}; what arrives there the group service
// passes to Intake.ValidateScoped (AcceptScoped, with the topic verdict),
// which checks it like an announcement and also
// that the sender is the publisher and the Thing names the group. Sync
// serves them only to the peers Deps.Allowed allows, and the lookups
// answer with learned ones only if Deps.Allowed allows this node. The
// tombstone of a group-scoped Thing goes to its groups and, naming nothing
// but the id, also the public way.
//
// # Concurrency
//
// A Federation is safe for concurrent use. It owns its goroutines (the
// DHT worker, the republish loop, the identify watcher and the syncs it
// starts, the topic peer watcher); Close stops them and waits for them.
package federation
