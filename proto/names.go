package proto

// Names that appear on the wire. Other nodes depend on them: change one and
// this node no longer talks to the rest of the federation.

// JSON-LD contexts and vocabulary.
const (
	// ContextTD10 is the TD 1.0 context URI. node-wot 0.9.2 expects it
	// first when @context is an array, so TDs we write lead with it.
	ContextTD10 = "https://www.w3.org/2019/wot/td/v1"
	// ContextTD11 is the TD 1.1 context URI.
	ContextTD11 = "https://www.w3.org/2022/wot/td/v1.1"
	// ContextLMOS is the LMOS protocol vocabulary, bound to the prefix
	// "lmos" in a TD's @context.
	ContextLMOS = "https://eclipse.dev/lmos/protocol/v1"
	// PrefixLMOS is the compact IRI prefix of the LMOS vocabulary.
	PrefixLMOS = "lmos"

	TypeAgent = "lmos:Agent"
	TypeTool  = "lmos:Tool"
)

// libp2p protocol IDs. Kademlia runs under ProtocolPrefix, so its protocol
// is "/lmos/kad/1.0.0" and it never meets the public IPFS DHT.
const (
	ProtocolPrefix = "/lmos"
	// ProtocolSync exchanges the Things two peers publish when they connect,
	// so a node that missed gossip still converges.
	ProtocolSync = "/lmos/sync/1.0.0"
	// ProtocolFind asks a peer for the public, live records it holds
	// (its own and learned) of the Things that offer one capability, so
	// that a cold lookup gets TDs from the peers it is connected to
	// without a new connection per provider.
	ProtocolFind = "/lmos/find/1.0.0"
	// ProtocolFetch asks a publisher for the newest signed record of one
	// of its Things, by id: what a short announcement names.
	ProtocolFetch = "/lmos/fetch/1.0.0"
	// ProtocolInteract carries LMOS envelopes for one interaction (or one
	// subscription or session) per stream.
	ProtocolInteract = "/lmos/interact/1.0.0"
	// ProtocolInteractSession carries one interaction after another on
	// one stream: the same frames as ProtocolInteract, each direction
	// ending an interaction with an empty frame instead of closing, so that
	// a stream is used again once an interaction has ended cleanly. A
	// consumer offers it first and falls back to ProtocolInteract.
	ProtocolInteractSession = "/lmos/interact/1.1.0"
)

// Gossipsub topics.
const (
	// TopicAnnounce carries signed TDs and tombstones.
	TopicAnnounce = "/lmos/1/announce"
	// TopicPresence carries the presence beats of publishers: that the
	// author is alive (docs/wire.md).
	TopicPresence = "/lmos/1/presence"
	// TopicShardPrefix + shard number (0 … ShardCount-1, decimal) is an
	// announce shard: the signed records, short announcements and presence
	// beats of the Things whose capabilities fall in that shard
	// (ShardOf; docs/wire.md, "Announce shards").
	TopicShardPrefix = "/lmos/2/announce/"
	// TopicGroupPrefix + group ID is a group's topic.
	TopicGroupPrefix = "/lmos/1/group/"
	// TopicEventsPrefix + publisher peer ID + "/" + thing ID is the
	// publish-subscribe topic of one Thing's events.
	TopicEventsPrefix = "/lmos/1/events/"
)

// DHT record namespaces. A value record key is "/" + namespace + "/" + rest.
const (
	// NamespaceThing: key "/lmos-td/<publisher peer ID>/<url-escaped thing id>",
	// value a signed TD or tombstone.
	NamespaceThing = "lmos-td"
	// NamespaceGroup: key "/lmos-group/<group ID>", value the group's signed
	// operation log.
	NamespaceGroup = "lmos-group"
)

// Provider record keys: the content ID of sha256 over one of these string
// forms followed by the name, e.g. "lmos:capability:weather-forecast".
const (
	ProvideCapability = "lmos:capability:"
	ProvideType       = "lmos:type:"
	ProvideVendor     = "lmos:vendor:"
)

// MDNSServiceName is the DNS-SD service LMOS nodes advertise and browse, so
// they find each other and nothing else on the LAN.
const MDNSServiceName = "_lmos-p2p._udp"

// WebSocketSubprotocol is the LMOS WebSocket sub-protocol name.
const WebSocketSubprotocol = "lmosprotocol"
