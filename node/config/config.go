package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/lmosnode/lmosnode/node/anp"
	"github.com/lmosnode/lmosnode/node/atomicfile"
	"github.com/lmosnode/lmosnode/node/datastore"
	"github.com/lmosnode/lmosnode/node/did"
	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/httpapi"
	"github.com/lmosnode/lmosnode/node/mqttgw"
	"github.com/lmosnode/lmosnode/node/trust"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Config is the serialisable configuration of a node, kept as config.json in
// the node's home directory. Start from Default: a config file is
// merged over it (fields absent from the file keep their defaults), and
// command-line flags override both.
//
// The zero value is not usable; New fills only the fields whose zero value
// has no meaning (DHTMode, ConnMgr, Datastore.CacheMB, ThingTTL) and
// rejects the rest through Validate. Booleans keep their zero value: a
// Config built by hand without Default runs without gossip and
// without sync on connect.
type Config struct {
	// Home is the node's home directory: identity key, config file,
	// datastore and api file live there. It is where the config was loaded
	// from, so it is not itself stored in config.json.
	Home string `json:"-"`

	// Listen are the libp2p multiaddrs the host listens on (TCP, QUIC v1
	// and WebSocket are supported).
	Listen []string `json:"listen"`
	// API is the host:port of the local HTTP API. Port 0 picks a free port;
	// the address actually bound is written to the home dir's api file. A
	// loopback address needs no token; any other address requires
	// APIToken.
	API string `json:"api"`
	// APIToken, if set, is the bearer token every request to the API must
	// carry (Authorization: Bearer <token>); the TDs the API serves then
	// declare the bearer security scheme. Required, and at least
	// MinAPITokenLen characters of the RFC 6750 token alphabet, when API is
	// not a loopback address; empty by default (loopback, no token).
	// $LMOS_API_TOKEN, when set, overrides it (see Load), so the
	// secret can stay out of config.json.
	APIToken string `json:"apiToken,omitempty"`
	// APIAuth says which requests must carry the API's token (Config.APIToken,
	// else <home>/api-token): those that act as the node always; reads and
	// invocations by its RequireTokenFor (docs/api.md#access).
	APIAuth APIAuth `json:"apiAuth,omitzero"`
	// APICORS lets web pages of the origins it lists call the API from a
	// browser (CORS; docs/api.md#access). Empty, the default: none.
	APICORS httpapi.CORSConfig `json:"apiCORS"`
	// APILimits bounds what one client may hold of the API: timeouts,
	// header and body sizes, connections per client address
	// (docs/api.md#limits). A zero field is its default.
	APILimits APILimits `json:"apiLimits"`
	// Trust is the operator's trust list: publishers allowed, preferred
	// and denied (docs/api.md#trust). Empty by default; 'lmosnode trust'
	// and the API's /api/v1/trust change it live and write it back here.
	Trust trust.Config `json:"trust,omitzero"`
	// Organization is the DID (did:web or did:wba) of the organisation
	// this node belongs to: every TD it publishes claims it
	// (lmos:organization, under the TD's proof), and receivers show the
	// organisation's domain beside this node once its DID document lists
	// this node's key ('lmosnode org doc' writes that document;
	// docs/identity.md). Empty, the default: no claim.
	Organization string `json:"organization,omitempty"`
	// Bootstrap are multiaddrs, each ending in /p2p/<peer ID>, of peers the
	// node connects to on start to join the DHT (and, through them, the
	// federation's gossip). The DHT also falls back to them whenever its
	// routing table runs empty.
	Bootstrap []string `json:"bootstrap"`
	// MDNS turns on discovery of LMOS nodes on the local network (service
	// proto.MDNSServiceName).
	MDNS bool `json:"mdns"`
	// DHTMode is "auto", "server" or "client" (see the DHTMode* constants).
	DHTMode string `json:"dhtMode"`
	// ConnMgr bounds the number of connections the host keeps open.
	ConnMgr ConnMgrConfig `json:"connMgr"`
	// Resources caps what the libp2p stack may use (libp2p resource
	// manager, system scope).
	Resources ResourcesConfig `json:"resources"`
	// AutoNAT turns on AutoNAT v2: peers probe which of our addresses are
	// reachable and we answer their probes. (libp2p's AutoNAT v1 client
	// always runs; it only ever probes public addresses.)
	AutoNAT bool `json:"autoNAT"`
	// HolePunching turns on DCUtR hole punching through NATs. It needs
	// RelayClient, over whose relayed connection it coordinates. The node
	// punches again while a connection stays relayed (p2p.Punch).
	HolePunching bool `json:"holePunching"`
	// RelayClient lets the host dial and accept connections through
	// circuit-relay v2 relays, and turns on AutoRelay: while the node is
	// not publicly reachable it reserves a slot on up to two relays (from
	// Relays first, then connected peers that serve as relays) and
	// announces the relayed addresses (docs/nat.md).
	RelayClient bool `json:"relayClient"`
	// Relays are multiaddrs, each ending in /p2p/<peer ID>, of circuit
	// relay v2 relays AutoRelay tries first, e.g. the relay an
	// organisation runs for its nodes (docs/nat.md). Needs RelayClient.
	// Empty, the default: relays are found among connected peers only.
	Relays []string `json:"relays"`
	// RelayService makes the node a circuit relay v2 relay for other nodes
	// while it is publicly reachable (AutoNAT says so), within RelayLimits.
	// Off by default: a relay carries other nodes' traffic.
	RelayService bool `json:"relayService"`
	// Reachability pins what the node takes itself to be: "public" or
	// "private"; empty, the default, leaves it to AutoNAT. A relay on a
	// public address sets "public", so that its relay service (and the
	// reservations it holds for others) does not stop while AutoNAT's
	// verdict wavers (docs/nat.md).
	Reachability string `json:"reachability"`
	// RelayLimits bounds what the relay service (RelayService) gives to
	// others. A zero field is its default (see RelayLimits).
	RelayLimits RelayLimits `json:"relayLimits"`
	// Announce are multiaddrs the node announces in addition to those it
	// finds itself (listen, observed and relay addresses), e.g. the public
	// address or DNS name of a forwarded port: /dns4/node.example.org/tcp/4001.
	// They carry no /p2p part.
	Announce []string `json:"announce"`
	// NoAnnounce are addresses the node never announces: a multiaddr
	// hides that address, an /ip4/…/ipcidr/N or /ip6/…/ipcidr/N one every
	// address in that network (/ip4/10.0.0.0/ipcidr/8). It applies after
	// Announce.
	NoAnnounce []string `json:"noAnnounce"`
	// Datastore tunes the embedded pebble datastore.
	Datastore DatastoreConfig `json:"datastore"`

	// Gossip announces the node's Things on the gossipsub topic
	// /lmos/1/announce and learns other nodes' Things from it. Off, the
	// node learns only by sync with the peers it connects to and by DHT
	// lookups, and announces nothing (its Things are still in the DHT).
	Gossip bool `json:"gossip"`
	// SyncOnConnect asks every peer the node connects to for the Things it
	// publishes (protocol /lmos/sync/1.0.0), so that a node that missed
	// gossip converges. The node answers such requests either way.
	SyncOnConnect bool `json:"syncOnConnect"`
	// Role says which Things the node holds (docs/wire.md, "Announce
	// shards"): "directory" every Thing announced, on every announce
	// shard and, during the transition, on /lmos/1/announce; "light" only
	// the Things of the capabilities it publishes and looked up in the
	// last 30 minutes, learning the rest on demand (it does not sync with
	// every peer it connects to); "auto" (the default) "directory" until
	// the records it learned pass half of quota.maxLearnedBytes, then
	// "light" for the rest of its run; "v1" only /lmos/1/announce, as
	// nodes before the shards.
	Role string `json:"role"`
	// NoLegacyAnnounce ends the transition to the shards: the node no
	// longer publishes on (or relays) /lmos/1/announce and
	// /lmos/1/presence. Set it on every node once none runs "v1" or an
	// older release.
	NoLegacyAnnounce bool `json:"noLegacyAnnounce,omitempty"`
	// ThingTTL is how long a Thing learned from another node is kept after
	// its record was last seen (announced, synced, fetched), however alive
	// its publisher is. 0 means the default. Liveness.OfflineTTL, much
	// shorter by default, drops the Things of a publisher that is gone.
	ThingTTL Duration `json:"thingTTL"`
	// Quota bounds what another publisher may hold in this node's
	// directory (docs/api.md#quotas). A zero field is its default.
	Quota QuotaConfig `json:"quota"`
	// Liveness says when another publisher's Things count as offline and
	// when they are dropped (docs/api.md#liveness). A zero field is its
	// default.
	Liveness LivenessConfig `json:"liveness"`
	// MQTT is the URL of an MQTT broker ("mqtt://127.0.0.1:1883") on which
	// the node exposes its own public Things' events, properties and
	// actions (package mqttgw). Empty, the default, means no MQTT.
	MQTT string `json:"mqtt,omitempty"`

	// LogFormat is the format of the daemon's log lines: "text" (the
	// default, key=value) or "json" (one JSON object per line, for log
	// collectors). lmosnode up --log-format overrides it.
	LogFormat string `json:"logFormat,omitempty"`
	// Libp2pMetrics adds go-libp2p's own metrics (connections, streams,
	// resource manager scopes, identify, AutoNAT, relays) to /metrics. On
	// by default; the resource manager's part costs a few percent of CPU
	// on a busy node.
	Libp2pMetrics bool `json:"libp2pMetrics"`
	// Pprof serves Go's profiler at /debug/pprof/ on the API, under the
	// API's access rules (the token, or loopback only). Off by default.
	Pprof bool `json:"pprof,omitempty"`
	// MCPTools is the most Things of other publishers whose actions the
	// node's MCP server offers as tools (mcpbridge.Config.MaxThings): those
	// find_things returned lately, and while there is room those learned
	// first; the node's own are always tools. 0 means 1000.
	MCPTools int `json:"mcpTools"`
	// ANP configures the Agent Network Protocol (package anp): the node's
	// did:wba identity and DID-WBA authentication (docs/identity.md#anp).
	ANP ANPConfig `json:"anp,omitzero"`
}

// ANPConfig configures ANP. The zero value serves no DID document (the
// agent descriptions then name no DID, and imported agents are called
// unsigned) and checks DID-WBA signatures with the defaults.
type ANPConfig struct {
	// DID is the node's did:wba DID: its domain and path
	// ("did:wba:agents.example.com:node:alpha"). A path DID gets the e1_
	// segment of the node key appended (ANP-03 §2.2.2); the document is
	// served at the path the method maps the DID to, for an HTTPS front
	// on the domain.
	DID string `json:"did,omitempty"`
	// SignatureWindow is how old a DID-WBA signature's created may be
	// (default 5m).
	SignatureWindow Duration `json:"signatureWindow,omitzero"`
	// TokenTTL is the lifetime of the access token a verified request
	// gets (default 1h).
	TokenTTL Duration `json:"tokenTTL,omitzero"`
}

// Log formats accepted in Config.LogFormat.
const (
	LogFormatText = "text"
	LogFormatJSON = "json"
)

// ConnMgrConfig configures libp2p's basic connection manager: when the
// number of connections exceeds High, it trims down to Low, sparing
// connections younger than Grace.
type ConnMgrConfig struct {
	// Low is the connection count the manager trims down to.
	Low int `json:"low"`
	// High is the connection count above which trimming starts.
	High int `json:"high"`
	// Grace is how long a new connection is exempt from trimming.
	Grace Duration `json:"grace"`
	// DialTimeout bounds one dial, handshakes included; zero keeps
	// go-libp2p's: 5 s to a private address, 15 s to a public one. Raise
	// it where peers are slow to answer: a lab of a hundred nodes on a
	// few cores, long links.
	DialTimeout Duration `json:"dialTimeout,omitzero"`
}

// ResourcesConfig caps the libp2p resource manager's system scope. Zero
// means "scale from the machine" exactly as libp2p's AutoScale does (1/8 of
// physical memory, half of the process's file descriptor limit, and the
// connection and stream counts libp2p derives from those).
type ResourcesConfig struct {
	// MaxMemoryMB caps the memory libp2p may reserve, in MiB.
	MaxMemoryMB int `json:"maxMemoryMB"`
	// MaxFDs caps the file descriptors libp2p may use.
	MaxFDs int `json:"maxFDs"`
	// MaxConns caps open connections (inbound plus outbound). When set,
	// it must be at least ConnMgr.High.
	MaxConns int `json:"maxConns"`
	// MaxStreams caps open streams across all connections.
	MaxStreams int `json:"maxStreams"`
	// MaxPeerInteractions caps the interactions one remote peer may have
	// in flight on this node (the owner's side of /lmos/interact); the
	// next is refused with a 429 error message. 0 is
	// interact.DefaultMaxPeerInteractions (1024, the node's libp2p stream
	// limits for one peer on the two interact protocols: a consumer node
	// within them never reaches it).
	MaxPeerInteractions int `json:"maxPeerInteractions"`
}

// DatastoreConfig tunes the embedded pebble datastore. Durability is not a
// knob: every write the node acknowledges is synced to disk, except the
// soft state the network gives back (learned Things, DHT records; see
// package node/datastore).
type DatastoreConfig struct {
	// CacheMB is pebble's block cache size in MiB.
	CacheMB int `json:"cacheMB"`
}

// QuotaConfig bounds what one other publisher may hold in the node's
// directory, whichever way its records arrive (gossip, sync, a DHT lookup,
// a group topic: federation.Intake). A record over the quota is refused
// (on gossip, rejected: it counts against the peer that sent it) and what
// the publisher holds stays; an update of a held Thing counts only the
// bytes it adds. The node's own Things count against neither. The size of
// one TD is bounded by the protocol (proto.MaxTDSize, 64 KiB), the same
// for every node.
type QuotaConfig struct {
	// MaxThings is the most Things (tombstones included) held per
	// publisher. Default DefaultMaxThingsPerPublisher.
	MaxThings int `json:"maxThings"`
	// MaxBytes is the most bytes of signed records held per publisher.
	// Default DefaultMaxBytesPerPublisher.
	MaxBytes int64 `json:"maxBytes"`
	// MaxLearnedBytes is the most bytes of signed records held of all
	// other publishers together (sybils multiply MaxBytes): over it a
	// learned record evicts less valuable learned Things — of publishers
	// neither trusted, nor in a group with this node, nor used lately,
	// nor connected first — or is refused; evicted Things are fetched
	// again on demand (directory.Config.MaxLearnedBytes). Default
	// DefaultMaxLearnedBytes.
	MaxLearnedBytes int64 `json:"maxLearnedBytes"`
}

// Defaults of QuotaConfig.
const (
	// DefaultMaxThingsPerPublisher: a node hosting a thousand agents and
	// tools is a large one; beyond that, run several identities.
	DefaultMaxThingsPerPublisher = 1000
	// DefaultMaxBytesPerPublisher: a thousand TDs of 16 KiB, more than
	// three times the largest TD of the W3C conformance corpus (10 KiB).
	DefaultMaxBytesPerPublisher = 16 << 20
	// DefaultMaxLearnedBytes: 256 MiB of learned records, about 100,000
	// typical TDs (2–3 KB) or sixteen publishers at their full quota.
	// Held records cost at most about twice their bytes in heap
	// (node/directory BenchmarkHeapPerByte), so a desk machine spends at
	// most about half a GiB on other publishers' Things.
	DefaultMaxLearnedBytes = 256 << 20
)

// LivenessConfig says how the node judges whether another publisher is
// alive. A publisher is seen by its presence beats (sent every
// OfflineAfter/5 by each node that publishes Things), the records it
// republishes, the syncs it answers and connections to it.
type LivenessConfig struct {
	// OfflineAfter is how long after it was last seen a publisher's
	// Things count as offline (online=false in the directory API).
	// Default directory.DefaultOfflineAfter (5 min); the node sends its
	// own presence beats every OfflineAfter/5.
	OfflineAfter Duration `json:"offlineAfter"`
	// OfflineTTL is how long a publisher may stay unseen before its
	// learned Things are dropped, independent of their records' validity
	// (ThingTTL). Default DefaultOfflineTTL; at least OfflineAfter.
	OfflineTTL Duration `json:"offlineTTL"`
	// BeatRate is the presence beats a second of other nodes the node
	// aims to hear: while it hears more, it beats less often (as do the
	// others), at most ten times less often, and says so in its beats,
	// which keep it online for as many missed beats as usual. Default
	// federation.DefaultBeatRate (1).
	BeatRate float64 `json:"beatRate"`
}

// DefaultOfflineTTL is LivenessConfig.OfflineTTL's default: a publisher
// restarting or briefly cut off keeps its Things listed (as offline); one
// gone for an hour is taken out of every directory.
const DefaultOfflineTTL = time.Hour

// WithDefaults fills q's zero fields.
func (q QuotaConfig) WithDefaults() QuotaConfig {
	if q.MaxThings == 0 {
		q.MaxThings = DefaultMaxThingsPerPublisher
	}
	if q.MaxBytes == 0 {
		q.MaxBytes = DefaultMaxBytesPerPublisher
	}
	if q.MaxLearnedBytes == 0 {
		q.MaxLearnedBytes = DefaultMaxLearnedBytes
	}
	return q
}

func (q QuotaConfig) validate() error {
	if q.MaxThings < 0 {
		return fmt.Errorf("maxThings: %d: must not be negative (0 means the default, %d)", q.MaxThings, DefaultMaxThingsPerPublisher)
	}
	if q.MaxBytes < 0 {
		return fmt.Errorf("maxBytes: %d: must not be negative (0 means the default, %d)", q.MaxBytes, DefaultMaxBytesPerPublisher)
	}
	if q.MaxBytes > 0 && q.MaxBytes < lmosproto.MaxRecordSize {
		return fmt.Errorf("maxBytes: %d: must admit one record of the largest size (%d)", q.MaxBytes, lmosproto.MaxRecordSize)
	}
	if q.MaxLearnedBytes < 0 {
		return fmt.Errorf("maxLearnedBytes: %d: must not be negative (0 means the default, %d)", q.MaxLearnedBytes, DefaultMaxLearnedBytes)
	}
	if q.MaxLearnedBytes > 0 && q.MaxLearnedBytes < lmosproto.MaxRecordSize {
		return fmt.Errorf("maxLearnedBytes: %d: must admit one record of the largest size (%d)", q.MaxLearnedBytes, lmosproto.MaxRecordSize)
	}
	return nil
}

// WithDefaults fills l's zero fields.
func (l LivenessConfig) WithDefaults() LivenessConfig {
	if l.OfflineAfter == 0 {
		l.OfflineAfter = Duration(directory.DefaultOfflineAfter)
	}
	if l.OfflineTTL == 0 {
		l.OfflineTTL = Duration(DefaultOfflineTTL)
	}
	return l
}

// minOfflineAfter is the shortest LivenessConfig.OfflineAfter: presence
// beats go out every fifth of it, and gossip needs a moment to carry one.
const minOfflineAfter = time.Second

func (l LivenessConfig) validate() error {
	if l.OfflineAfter < 0 {
		return fmt.Errorf("offlineAfter: %s: must not be negative (0 means the default, %s)", l.OfflineAfter, directory.DefaultOfflineAfter)
	}
	if l.OfflineTTL < 0 {
		return fmt.Errorf("offlineTTL: %s: must not be negative (0 means the default, %s)", l.OfflineTTL, DefaultOfflineTTL)
	}
	if l.BeatRate < 0 {
		return fmt.Errorf("beatRate: %g: must not be negative (0 means the default, 1)", l.BeatRate)
	}
	d := l.WithDefaults()
	if d.OfflineAfter < Duration(minOfflineAfter) {
		return fmt.Errorf("offlineAfter: %s: must be at least %s", d.OfflineAfter, minOfflineAfter)
	}
	if d.OfflineTTL < d.OfflineAfter {
		return fmt.Errorf("offlineTTL: %s: must be at least offlineAfter (%s)", d.OfflineTTL, d.OfflineAfter)
	}
	return nil
}

// RelayLimits bounds the relay service (Config.RelayService). Each zero
// field means libp2p's default, given in brackets; the defaults keep a
// relay cheap: it carries short exchanges (a call, a hole-punch
// handshake), not bulk traffic.
type RelayLimits struct {
	// MaxReservations caps the peers holding a reservation at once [128].
	MaxReservations int `json:"maxReservations,omitzero"`
	// MaxReservationsPerIP caps the reservations of peers behind one IP
	// address [8].
	MaxReservationsPerIP int `json:"maxReservationsPerIP,omitzero"`
	// MaxCircuits caps the relayed connections open at once per peer [16].
	MaxCircuits int `json:"maxCircuits,omitzero"`
	// ReservationTTL is how long a reservation lasts before the peer must
	// renew it [1h].
	ReservationTTL Duration `json:"reservationTTL,omitzero"`
	// ConnDuration ends a relayed connection after this long [2m]; hole
	// punching replaces it by a direct one where the NATs allow.
	ConnDuration Duration `json:"connDuration,omitzero"`
	// ConnDataBytes ends a relayed connection after this many bytes in
	// each direction [131072, 128 KiB].
	ConnDataBytes int64 `json:"connDataBytes,omitzero"`
}

func (l RelayLimits) validate() error {
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"maxReservations", int64(l.MaxReservations)},
		{"maxReservationsPerIP", int64(l.MaxReservationsPerIP)},
		{"maxCircuits", int64(l.MaxCircuits)},
		{"reservationTTL", int64(l.ReservationTTL)},
		{"connDuration", int64(l.ConnDuration)},
		{"connDataBytes", l.ConnDataBytes},
	} {
		if f.v < 0 {
			return fmt.Errorf("%s: %d: must not be negative (0 means the default)", f.name, f.v)
		}
	}
	return nil
}

// DHT modes accepted in Config.DHTMode.
const (
	// DHTModeAuto serves the DHT while the node is publicly reachable and
	// acts as a client otherwise.
	DHTModeAuto = "auto"
	// DHTModeServer always serves the DHT.
	DHTModeServer = "server"
	// DHTModeClient only queries the DHT and never stores records for
	// others.
	DHTModeClient = "client"
)

// minThingTTL is the shortest Config.ThingTTL: a learned Thing must
// outlive the time it takes to be announced again (a republication, a
// sync).
const minThingTTL = time.Minute

// Roles of a node (Config.Role).
const (
	RoleAuto      = "auto"
	RoleDirectory = "directory"
	RoleLight     = "light"
	RoleV1        = "v1"
)

// Default returns the configuration a node runs with when config.json
// says nothing else. Home is left empty: the caller sets it.
func Default() Config {
	return Config{
		// Users expect a node to be reachable from their LAN out of the
		// box, over every transport we speak: TCP and QUIC share the
		// well-known port 4001 (as IPFS nodes do, so firewall rules carry
		// over), WebSocket needs its own TCP port for browsers and proxies.
		Listen: []string{
			"/ip4/0.0.0.0/tcp/4001",
			"/ip4/0.0.0.0/udp/4001/quic-v1",
			"/ip4/0.0.0.0/tcp/4002/ws",
		},
		// Only this machine may reach the API without a token; binding it
		// elsewhere requires APIToken.
		API: "127.0.0.1:5080",
		// See APILimits' fields.
		APILimits: DefaultAPILimits(),
		// No public bootstrap peers are built in: an organisation chooses
		// which federation it joins; a LAN needs none (mDNS).
		Bootstrap: []string{},
		// Two nodes on one LAN must find each other with no configuration.
		MDNS: true,
		// Serve the DHT only when others can reach us, so that nodes behind
		// NAT do not poison routing tables with unreachable entries.
		DHTMode: DHTModeAuto,
		ConnMgr: ConnMgrConfig{
			// Enough to keep a healthy Kademlia routing table (k=20 in
			// several buckets) plus gossipsub meshes (D≈6 per topic) and
			// the peers we are calling.
			Low: 64,
			// Three times Low leaves room for bursts of discovery and
			// invocation without constant trimming.
			High: 192,
			// Long enough for identify, the DHT handshake and a first
			// request to complete before a new connection can be trimmed.
			Grace: Duration(30 * time.Second),
		},
		// Scale from the machine, like libp2p's defaults: a node shares its
		// machine with the agents it hosts, and 1/8 of memory leaves them
		// the rest.
		Resources: ResourcesConfig{},
		// Knowing our reachability decides the DHT mode and whether relays
		// are needed; on by default as in libp2p deployments.
		AutoNAT: true,
		// Organisations run nodes behind NAT; hole punching lets two of them
		// talk directly instead of through a relay.
		HolePunching: true,
		// Without a relay a node behind a strict NAT is unreachable.
		RelayClient: true,
		// No relay is built in (as with bootstrap peers); AutoRelay uses
		// connected peers that serve as relays.
		Relays: []string{},
		// A laptop must not carry other nodes' traffic unasked.
		RelayService: false,
		Announce:     []string{},
		NoAnnounce:   []string{},
		Datastore: DatastoreConfig{
			// pebble's own default (see datastore.DefaultCacheMB).
			CacheMB: datastore.DefaultCacheMB,
		},
		// Gossip is how a publication reaches every node within seconds.
		Gossip: true,
		// Without it a node that was down misses what was announced
		// meanwhile until each publisher republishes (12 h).
		SyncOnConnect: true,
		// Every Thing while the federation is small, as before the
		// shards; what the node serves and uses once it is large. An
		// organisation's directory runs "directory", a node that serves
		// a few agents "light".
		Role: RoleAuto,
		// The longest a DHT record lives (dht.MaxRecordAge): a publisher
		// that is alive republishes well within it (every 12 h), so a
		// Thing unseen for that long is gone.
		ThingTTL: Duration(directory.DefaultTTL),
		// Operators scrape /metrics; a node not watched pays little.
		Libp2pMetrics: true,
		// See QuotaConfig and LivenessConfig.
		Quota:    QuotaConfig{}.WithDefaults(),
		Liveness: LivenessConfig{}.WithDefaults(),
	}
}

// Loopback is Default for a node that must send nothing off
// this machine (tests, examples, `lmosnode demo`): home as given, TCP and
// the API on 127.0.0.1 with free ports, and everything that reaches out
// off: no bootstrap peers, no mDNS, no AutoNAT, hole punching or relay.
func Loopback(home string) Config {
	cfg := Default()
	cfg.Home = home
	cfg.Listen = []string{"/ip4/127.0.0.1/tcp/0"}
	cfg.API = "127.0.0.1:0"
	cfg.Bootstrap = nil
	cfg.MDNS = false
	cfg.AutoNAT, cfg.HolePunching, cfg.RelayClient = false, false, false
	return cfg
}

// WithFallbacks fills the fields whose zero value is not meaningful from
// Default.
func (c Config) WithFallbacks() Config {
	def := Default()
	if c.DHTMode == "" {
		c.DHTMode = def.DHTMode
	}
	if c.ConnMgr == (ConnMgrConfig{}) {
		c.ConnMgr = def.ConnMgr
	}
	if c.Datastore.CacheMB == 0 {
		c.Datastore.CacheMB = def.Datastore.CacheMB
	}
	if c.ThingTTL == 0 {
		c.ThingTTL = def.ThingTTL
	}
	if c.Role == "" {
		c.Role = def.Role
	}
	return c
}

// Validate checks the configuration and returns an error naming the first
// bad field, e.g. `config: listen[1]: "/ip4/x": …`.
func (c Config) Validate() error {
	if err := c.validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}

func (c Config) validate() error {
	if c.Home == "" {
		return errors.New("home: must be set")
	}
	if c.Organization != "" {
		if _, err := did.Parse(c.Organization); err != nil {
			return fmt.Errorf("organization: %w", err)
		}
	}
	if c.MQTT != "" {
		if err := (mqttgw.Config{BrokerURL: c.MQTT}).Validate(); err != nil {
			return fmt.Errorf("mqtt: %w", err)
		}
	}
	if len(c.Listen) == 0 {
		return errors.New("listen: at least one multiaddr is required")
	}
	for i, s := range c.Listen {
		if err := validateListenAddr(s); err != nil {
			return fmt.Errorf("listen[%d]: %q: %w", i, s, err)
		}
	}
	if c.ANP.DID != "" {
		if _, err := anp.ParseWBA(c.ANP.DID); err != nil {
			return fmt.Errorf("anp.did: %w", err)
		}
	}
	if c.ANP.SignatureWindow < 0 || c.ANP.TokenTTL < 0 {
		return errors.New("anp: signatureWindow and tokenTTL must not be negative")
	}
	for _, check := range []func() error{c.validateAPI, c.validateNetwork, c.validateFederation} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// validateAPI checks the API's address, token, access rules, CORS, limits
// and the trust list.
func (c Config) validateAPI() error {
	loopback, err := APIAddrIsLoopback(c.API)
	if err != nil && strings.Contains(c.API, "://") {
		// $LMOS_API names the API for commands as a URL; the node takes host:port
		return fmt.Errorf("api: %q: %w (the node listens on host:port, e.g. 127.0.0.1:5080; $%s, if that is where it came from, may be written so for commands too)", c.API, err, EnvName("api"))
	}
	if err != nil {
		return fmt.Errorf("api: %q: %w", c.API, err)
	}
	if err := ValidateAPIToken(c.APIToken, loopback); err != nil {
		return fmt.Errorf("apiToken: %w", err)
	}
	if err := c.APIAuth.validate(loopback); err != nil {
		return fmt.Errorf("apiAuth: %w", err)
	}
	if err := c.Trust.Validate(); err != nil {
		return fmt.Errorf("trust: %w", err)
	}
	if err := c.APICORS.Validate(); err != nil {
		return fmt.Errorf("apiCORS.%w", err)
	}
	if err := c.APILimits.validate(); err != nil {
		return fmt.Errorf("apiLimits.%w", err)
	}
	return nil
}

// validateNetwork checks the bootstrap peers, the DHT mode and what bounds
// the libp2p host.
func (c Config) validateNetwork() error {
	for i, s := range c.Bootstrap {
		if _, err := peer.AddrInfoFromString(s); err != nil {
			return fmt.Errorf("bootstrap[%d]: %q: must be a multiaddr ending in /p2p/<peer ID>: %w", i, s, err)
		}
	}
	if !slices.Contains([]string{DHTModeAuto, DHTModeServer, DHTModeClient}, c.DHTMode) {
		return fmt.Errorf("dhtMode: %q: must be %q, %q or %q", c.DHTMode, DHTModeAuto, DHTModeServer, DHTModeClient)
	}
	if c.ConnMgr.Low < 0 {
		return fmt.Errorf("connMgr.low: %d: must not be negative", c.ConnMgr.Low)
	}
	if c.ConnMgr.High <= 0 {
		return fmt.Errorf("connMgr.high: %d: must be positive", c.ConnMgr.High)
	}
	if c.ConnMgr.Low > c.ConnMgr.High {
		return fmt.Errorf("connMgr.low: %d: must not exceed connMgr.high (%d)", c.ConnMgr.Low, c.ConnMgr.High)
	}
	if c.ConnMgr.DialTimeout < 0 {
		return fmt.Errorf("connMgr.dialTimeout: %s: must not be negative", c.ConnMgr.DialTimeout)
	}
	if c.ConnMgr.Grace < 0 {
		return fmt.Errorf("connMgr.grace: %s: must not be negative", c.ConnMgr.Grace)
	}
	for _, f := range []struct {
		name string
		v    int
	}{
		{"resources.maxMemoryMB", c.Resources.MaxMemoryMB},
		{"resources.maxFDs", c.Resources.MaxFDs},
		{"resources.maxConns", c.Resources.MaxConns},
		{"resources.maxStreams", c.Resources.MaxStreams},
		{"resources.maxPeerInteractions", c.Resources.MaxPeerInteractions},
		{"datastore.cacheMB", c.Datastore.CacheMB},
	} {
		if f.v < 0 {
			return fmt.Errorf("%s: %d: must not be negative (0 means the default)", f.name, f.v)
		}
	}
	if c.Resources.MaxConns > 0 && c.Resources.MaxConns < c.ConnMgr.High {
		return fmt.Errorf("resources.maxConns: %d: must be at least connMgr.high (%d), or the resource manager refuses connections the connection manager still wants", c.Resources.MaxConns, c.ConnMgr.High)
	}
	return nil
}

// validateFederation checks the lifetime of learned Things, the quota and
// liveness, the log format, and the NAT settings (relays, announced
// addresses).
func (c Config) validateFederation() error {
	switch c.Role {
	case "", RoleAuto, RoleDirectory, RoleLight, RoleV1:
	default:
		return fmt.Errorf("role: %q: must be %q, %q, %q or %q", c.Role, RoleAuto, RoleDirectory, RoleLight, RoleV1)
	}
	if c.ThingTTL < Duration(minThingTTL) {
		return fmt.Errorf("thingTTL: %s: must be at least %s (0 means the default, %s)", c.ThingTTL, minThingTTL, directory.DefaultTTL)
	}
	if c.MCPTools < 0 {
		return fmt.Errorf("mcpTools: %d: must not be negative (0 means 1000)", c.MCPTools)
	}
	if c.LogFormat != "" && c.LogFormat != LogFormatText && c.LogFormat != LogFormatJSON {
		return fmt.Errorf("logFormat: %q: must be %q or %q", c.LogFormat, LogFormatText, LogFormatJSON)
	}
	if c.HolePunching && !c.RelayClient {
		return errors.New("holePunching: needs relayClient, over whose relayed connection hole punching is coordinated")
	}
	if err := c.Quota.validate(); err != nil {
		return fmt.Errorf("quota.%w", err)
	}
	if err := c.Liveness.validate(); err != nil {
		return fmt.Errorf("liveness.%w", err)
	}
	for i, s := range c.Relays {
		if _, err := peer.AddrInfoFromString(s); err != nil {
			return fmt.Errorf("relays[%d]: %q: must be a multiaddr ending in /p2p/<peer ID>: %w", i, s, err)
		}
	}
	if len(c.Relays) > 0 && !c.RelayClient {
		return errors.New("relays: needs relayClient, which reserves slots on them")
	}
	if err := c.RelayLimits.validate(); err != nil {
		return fmt.Errorf("relayLimits.%w", err)
	}
	for i, s := range c.Announce {
		if err := validateAnnounceAddr(s); err != nil {
			return fmt.Errorf("announce[%d]: %q: %w", i, s, err)
		}
	}
	for i, s := range c.NoAnnounce {
		if _, err := ParseAddrFilter(s); err != nil {
			return fmt.Errorf("noAnnounce[%d]: %q: %w", i, s, err)
		}
	}
	return nil
}

// validateAnnounceAddr accepts a multiaddr another node can dial: an IP
// address or DNS name, then a transport, without /p2p (the node adds its
// own).
func validateAnnounceAddr(s string) error {
	m, err := ma.NewMultiaddr(s)
	if err != nil {
		return err
	}
	if len(m) < 2 {
		return errors.New("want an address and a transport, e.g. /ip4/203.0.113.7/tcp/4001 or /dns4/node.example.org/tcp/4001")
	}
	switch m[0].Code() {
	case ma.P_IP4, ma.P_IP6, ma.P_DNS, ma.P_DNS4, ma.P_DNS6:
	default:
		return errors.New("must start with /ip4, /ip6, /dns, /dns4 or /dns6")
	}
	for _, c := range m {
		if c.Code() == ma.P_P2P || c.Code() == ma.P_IPCIDR {
			return fmt.Errorf("must not contain /%s", c.Protocol().Name)
		}
	}
	return nil
}

// validateListenAddr accepts the multiaddrs our transports can listen on:
// TCP, QUIC v1 and TCP+WebSocket, on an IP address.
func validateListenAddr(s string) error {
	m, err := ma.NewMultiaddr(s)
	if err != nil {
		return err
	}
	var codes []int
	for _, c := range m {
		codes = append(codes, c.Code())
	}
	if len(codes) == 0 || (codes[0] != ma.P_IP4 && codes[0] != ma.P_IP6) {
		return errors.New("must start with /ip4 or /ip6")
	}
	switch rest := codes[1:]; {
	case slices.Equal(rest, []int{ma.P_TCP}),
		slices.Equal(rest, []int{ma.P_TCP, ma.P_WS}),
		slices.Equal(rest, []int{ma.P_UDP, ma.P_QUIC_V1}):
		return nil
	}
	return errors.New("unsupported transport: want /tcp/<port>, /tcp/<port>/ws or /udp/<port>/quic-v1")
}

// APIAddrIsLoopback checks that s is host:port with an IP address or
// localhost as host, and reports whether that host is loopback.
func APIAddrIsLoopback(s string) (bool, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return false, fmt.Errorf("must be host:port: %w", err)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return false, fmt.Errorf("bad port: %w", err)
	}
	if host == "localhost" {
		return true, nil
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false, errors.New("host must be an IP address or localhost")
	}
	return ip.IsLoopback(), nil
}

// MinAPITokenLen is the shortest Config.APIToken: 32 characters of the
// token alphabet carry well over 128 bits when generated at random
// (openssl rand -hex 32 gives 64).
const MinAPITokenLen = 32

// ValidateAPIToken requires a token when the API is reachable from other
// machines, and a token that is long enough and fits in an Authorization
// header whenever one is set.
func ValidateAPIToken(token string, loopback bool) error {
	if token == "" {
		if !loopback {
			return fmt.Errorf("required when api is not a loopback address: set apiToken (or $%s) to a random string of at least %d characters, e.g. the output of 'openssl rand -hex 32'", APITokenEnv, MinAPITokenLen)
		}
		return nil
	}
	if len(token) < MinAPITokenLen {
		return fmt.Errorf("%d characters: must be at least %d (e.g. the output of 'openssl rand -hex 32')", len(token), MinAPITokenLen)
	}
	if !isBearerToken(token) {
		return errors.New("must use only letters, digits and -._~+/ (with trailing =), as a bearer token (RFC 6750)")
	}
	return nil
}

// isBearerToken reports whether s matches RFC 6750's b64token:
// 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=".
func isBearerToken(s string) bool {
	body := strings.TrimRight(s, "=")
	if body == "" {
		return false
	}
	for _, r := range body {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
		case strings.ContainsRune("-._~+/", r):
		default:
			return false
		}
	}
	return true
}

// File is the name of the config file in a node's home directory.
const File = "config.json"

// APITokenEnv is the environment variable that, when set, overrides
// Config.APIToken, for the daemon (Load; it is EnvName("apiToken"))
// and for the CLI commands that call it (LoadAPIToken).
const APITokenEnv = "LMOS_API_TOKEN"

// Load reads home/config.json merged over Default, applies the
// environment (ApplyEnv: $LMOS_API_TOKEN, $LMOS_DHT_MODE, …, one variable
// per setting) and sets Home. Unknown fields are errors (a misspelt field
// would otherwise silently keep its default). It does not validate; New
// does.
func Load(home string) (Config, error) {
	cfg, err := LoadFile(home)
	if err != nil {
		return Config{}, err
	}
	if err := ApplyEnv(&cfg, os.LookupEnv); err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	return cfg, nil
}

// LoadFile is Load without the environment: what config.json
// says, over the defaults ('lmosnode config set' edits this).
func LoadFile(home string) (Config, error) {
	path := filepath.Join(home, File)
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	cfg := Default()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	if dec.More() {
		return Config{}, fmt.Errorf("config %s: trailing data after the JSON object", path)
	}
	cfg.Home = home
	return cfg, nil
}

// Write writes cfg to home/config.json (mode 0600, atomically), keeping
// the file's owner (writeFile).
func Write(home string, cfg Config) error {
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	path := filepath.Join(home, File)
	if err := writeFile(path, append(data, '\n')); err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	return nil
}

// writeFile replaces the file at path with data (mode 0600, atomically)
// and gives it back to the owner the old file had: root running
// 'lmosnode config set' on the home of a service that runs as another
// user (systemd's DynamicUser) must not leave it a file it cannot read.
func writeFile(path string, data []byte) error {
	uid, gid, had := owner(path)
	if err := atomicfile.Write(path, data, 0o600); err != nil {
		return err
	}
	if had && os.Geteuid() == 0 {
		return os.Chown(path, uid, gid)
	}
	return nil
}

// Duration is a time.Duration that reads and writes JSON as a Go duration
// string ("30s", "1m30s").
type Duration time.Duration

// String returns the duration in Go syntax, e.g. "30s".
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON encodes the duration as a string such as "30s".
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(d.String())
}

// UnmarshalJSON decodes a duration string such as "30s".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration: want a string such as \"30s\": %w", err)
	}
	v, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	*d = Duration(v)
	return nil
}

// Exists reports whether home holds a config file.
func Exists(home string) (bool, error) {
	_, err := os.Stat(filepath.Join(home, File))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// Directory is the directory's part of c: the lifetime of learned
// Things, the quota per publisher and liveness. The purge loop runs often
// enough to drop offline Things within a quarter of OfflineTTL.
func (c Config) Directory() directory.Config {
	q, l := c.Quota.WithDefaults(), c.Liveness.WithDefaults()
	return directory.Config{
		TTL:                   time.Duration(c.ThingTTL),
		PurgeInterval:         min(directory.DefaultPurgeInterval, time.Duration(l.OfflineTTL)/4),
		MaxThingsPerPublisher: q.MaxThings,
		MaxBytesPerPublisher:  q.MaxBytes,
		MaxLearnedBytes:       q.MaxLearnedBytes,
		OfflineAfter:          time.Duration(l.OfflineAfter),
		OfflineTTL:            time.Duration(l.OfflineTTL),
	}
}
