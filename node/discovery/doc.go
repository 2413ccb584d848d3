// Package discovery finds other LMOS nodes and connects the node's libp2p
// host to them, in three ways that run side by side:
//
//   - mDNS, on the local network: the host advertises and browses the
//     DNS-SD service proto.MDNSServiceName ("_lmos-p2p._udp"), so LMOS nodes
//     find each other with no configuration and find nothing else. Peers
//     found are dialled at once. Enabled by Config.MDNS.
//   - Bootstrap peers, configured by the operator (Config.Bootstrap): dialled
//     at Start, and again, with a growing delay (Config.BootstrapBackoff),
//     whenever the host has no peer at all.
//   - DHT rendezvous, across networks: given the node's content routing
//     (Deps.Routing; the node passes its Kademlia DHT), the service
//     advertises itself as a provider of RendezvousNamespace and
//     periodically looks for the other providers, dialling those it is not
//     connected to while the host has fewer than Config.MaxPeers peers.
//
// # The WoT directory on the LAN
//
// AdvertiseDirectory, which the node calls once its API listens,
// advertises the node's WoT Thing Description Directory by DNS-SD over
// mDNS as W3C WoT Discovery specifies: service WoTService ("_wot._tcp")
// with subtype WoTDirectorySubtype ("_directory"), instance
// "lmosnode-<peer ID>", the API's port, TXT "td=/.well-known/wot",
// "type=Directory", "scheme=http". It does so only with Config.MDNS on and
// only for an API off loopback (an API on 127.0.0.1 serves this machine
// alone and is not advertised); it uses the zeroconf responder go-libp2p's
// mDNS is built on. Close withdraws it.
//
// # Rendezvous on the wire
//
// The rendezvous key is the string RendezvousNamespace, "lmos/1/nodes",
// turned into a content ID by go-libp2p's routing discovery: CIDv1, codec
// raw, multihash sha2-256 of the UTF-8 bytes of the string. Every LMOS node
// provides that CID in the LMOS DHT (protocol prefix "/lmos"), re-providing
// after 7/8 of the record TTL (3 h), and finds others with FindProviders on
// it. Other implementations that want to be found by lmosnode nodes must
// provide the same CID.
//
// # Limits and backoff
//
// Discovery never dials while the host has Config.MaxPeers peers or more
// (dials in flight count too): the connection manager trims down to its low
// water mark, and discovery must not fight it. A peer whose dial failed is
// not dialled again by mDNS or rendezvous before a per-peer delay
// (Config.DialBackoff) that grows with every failure and is forgotten on
// success. Every dial is bounded by Config.DialTimeout, and at most
// maxConcurrentDials run at once. A rendezvous round that dialled no new
// peer makes the next one wait longer (Config.FindBackoff); a round that
// found new peers brings the interval back to its minimum. Every such delay
// comes from the node's backoff (node/backoff): it doubles with each
// failure, varies at random by ±50 % so that nodes do not retry in step,
// and stays within the configured Min and Max.
//
// # How a peer was found
//
// The service keeps, for every connected peer, the Source it came from:
//
//	mdns       dialled after an mDNS announcement
//	dht        dialled after a DHT rendezvous lookup
//	bootstrap  dialled as a configured bootstrap peer
//	connect    dialled on request through Service.Connect (`lmosnode connect`)
//	inbound    the peer connected to us, before any of our ways found it
//	outbound   this host dialled it for another reason (a DHT query, an
//	           invocation); discovery did not
//
// The first of our ways that connects a peer names it; a peer that
// connected inbound and is then found by one of our ways takes that way's
// name (both ends of an mDNS pair show "mdns", not one "inbound"), except
// that a DHT rendezvous does not rename a peer that dialled us: it was
// here before the lookup found it (a peer that ran `lmosnode connect` or
// named this node as bootstrap stays "inbound"). The
// entry is dropped when the last connection to the peer closes. Peers
// reports the connected peers with their addresses and sources.
//
// # Lifecycle and concurrency
//
// New builds the service and starts tracking connections; Start starts mDNS
// and the loops and must be called after the host listens (mDNS announces
// the host's listen addresses). Close stops everything Start started,
// waits for it and is idempotent. Every goroutine is owned by the Service
// and ended by Close. All methods are safe for concurrent use.
package discovery
