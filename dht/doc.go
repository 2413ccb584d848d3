// Package dht defines how lmosnode uses a Kademlia DHT (go-libp2p-kad-dht):
// the keys under which Thing records are stored, the validator that every
// node runs on them, the content IDs under which capabilities, types and
// vendors are announced as provider records, and the kad-dht options that
// make a private LMOS DHT.
//
// The package holds no state and starts nothing: the node builds its DHT
// with kaddht.New(ctx, host, Options(...)...) and owns it. Everything here
// is safe for concurrent use.
//
// This comment is the wire description; another implementation that follows
// it joins the same DHT and computes the same keys.
//
// # Protocol
//
// Kademlia runs under the protocol prefix "/lmos", i.e. the stream protocol
// "/lmos/kad/1.0.0", so an LMOS DHT never meets the public IPFS (Amino) DHT.
// No bootstrap peers are built in; a node is given its bootstrap peers
// explicitly (or finds peers on its LAN by other means).
//
// # Thing records
//
// A Thing is identified by (publisher, thing id). Its current record lives
// under the value key
//
//	/lmos-td/<publisher>/<escaped thing id>
//
// where <publisher> is the publisher's libp2p peer ID in its canonical
// base58btc form ("12D3KooW…" for an Ed25519 key) and <escaped thing id> is
// the TD's "id" with every byte of its UTF-8 form percent-encoded (upper-case
// hex, "%2F") except the ASCII letters and digits and the characters "-",
// ".", "_", "~", "$", "&", "+", ":", "=" and "@" (Go's url.PathEscape).
// Exactly one key names a Thing: a key whose escape is not in this canonical
// form, or whose peer ID is not canonical, is rejected.
// For example the Thing "urn:uuid:6f1d…" of peer 12D3KooWA… is stored under
// "/lmos-td/12D3KooWA…/urn:uuid:6f1d…" and the Thing "https://x.example/a b"
// under "/lmos-td/12D3KooWA…/https:%2F%2Fx.example%2Fa%20b".
//
// The value is the record exactly as signed (proto.Record.Raw): a TD 1.1
// document, or a tombstone that removes the Thing, with a W3C Data Integrity
// proof (cryptosuite eddsa-jcs-2022) whose verification method is the
// publisher's did:key. Its "lmos:seq" is the publisher's sequence number for
// the Thing.
//
// # Validation
//
// Every node checks a record before it stores it, and again when it receives
// one in answer to a lookup (ThingValidator.Validate). A record is accepted
// only if
//
//   - it is at most proto.MaxRecordSize bytes;
//   - its proof verifies and the document is a valid TD with an id, or a
//     well-formed tombstone (proto.ParseRecord);
//   - the key is in the canonical form above, its publisher is the proof's
//     signer (a peer can never write another peer's Thing) and its thing id
//     is the record's;
//   - the proof has a "created" time, not older than MaxRecordAge (48 h) and
//     not more than MaxClockSkew (5 min) in the future;
//   - the publisher's key is not retired (ThingValidator.Retired: a
//     rotation away from it or a revocation of it is known; docs/wire.md,
//     "Key rotation and revocation"), whatever the record's date.
//
// A publisher republishes each of its records every RepublishInterval
// (12 h), re-signed with a fresh "created" and the same "lmos:seq", so a
// record that is still published never expires, and a record that its
// publisher stopped publishing (a node gone for good) leaves the DHT within
// MaxRecordAge.
//
// Of several valid records under one key, every node keeps and returns the
// one that proto.Record.Newer ranks first (ThingValidator.Select): the
// highest sequence number; at equal sequence numbers a tombstone before a TD,
// then the later proof "created", then the greater bytes. A replayed older
// version therefore never replaces a newer one, and a tombstone removes every
// version with the same or a lower sequence number.
//
// # Provider records
//
// Capabilities, types and vendors are announced as DHT provider records. The
// provider key of a name is the SHA-256 multihash of the UTF-8 bytes of a
// fixed string form:
//
//	capability:  "lmos:capability:" + capability id
//	type:        "lmos:type:" + type
//	vendor:      "lmos:vendor:" + normalised vendor name
//
// written as a CIDv1 with codec raw (0x55), e.g. CapabilityCID
// ("weather-forecast") is the CIDv1 of sha2-256("lmos:capability:weather-forecast").
// Kademlia stores provider records by multihash, so only the hash is on the
// wire; the CID form is what APIs and logs show ("bafkrei…").
//
// The names are normalised as follows, so that every implementation derives
// the same key:
//
//   - a capability id ("lmos:id" of an entry of "lmos:capabilities") is used
//     exactly as written: ids are identifiers, "Weather-Forecast" and
//     "weather-forecast" are two capabilities;
//   - a type is an entry of "@type" exactly as written in the TD, in its
//     compact form (e.g. "lmos:Agent", "lmos:Tool"); it is not expanded to
//     an IRI;
//   - a vendor name ("lmos:name" of "lmos:metadata"/"lmos:vendor") is written
//     by people and compared caselessly: leading and trailing white space is
//     removed, every inner run of white space becomes one U+0020 space
//     (white space as Unicode's White_Space property), the result is case
//     folded with Unicode full case folding (CaseFolding.txt statuses C and
//     F, as Python's str.casefold) and put in Unicode normalisation form NFC.
//     "  Example  Weather GmbH " and "EXAMPLE WEATHER GMBH" name one vendor,
//     and so do "Straße AG" and "STRASSE AG" (see NormalizeVendor).
//
// Empty names are never announced. ProviderKeys lists the keys a TD is
// announced under. A provider record lives 48 h on the peers that store it
// (kad-dht's records.ProvideValidity), so a node announces its keys again
// every RepublishInterval, when it republishes its records.
//
// # Local storage
//
// kad-dht keeps values and provider records in the datastore the node gives
// Options, below the key prefix DatastorePrefix ("/dht"), so they never mix
// with the node's own keys. With Params.MaxRecordsPerPublisher it stores
// at most that many Thing records per publisher: a peer's put of another
// one is refused (ErrRecordQuota), a newer version of one held is not.
package dht
