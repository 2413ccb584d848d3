package api

import "time"

// NodeInfo is the body of GET /api/v1/node.
type NodeInfo struct {
	// PeerID is the node's libp2p peer ID.
	PeerID string `json:"peerID"`
	// DIDKey is the did:key of the same Ed25519 key.
	DIDKey string `json:"didKey"`
	// Addrs are the node's listen multiaddrs, each ending in /p2p/<PeerID>.
	Addrs []string `json:"addrs"`
	// Version is the lmosnode version (package version).
	Version string `json:"version"`
	// APIURL is the base URL of this API.
	APIURL string `json:"apiURL"`
	// Reachability is whether other nodes can dial this one directly:
	// "public", "private" (behind NAT: reached through relays) or
	// "unknown" (no AutoNAT verdict yet, or AutoNAT off). See docs/nat.md.
	Reachability string `json:"reachability"`
	// RelayAddrs are the relayed addresses the node announces (those of
	// Addrs with /p2p-circuit), one per relay reservation it holds.
	RelayAddrs []string `json:"relayAddrs,omitempty"`
	// Relays are the peer IDs of the relays the node holds a reservation
	// with.
	Relays []string `json:"relays,omitempty"`
	// Role is the role the node plays now ("directory", "light" or "v1":
	// docs/wire.md, announce shards); a node configured "auto" reports
	// "directory", then "light" once the federation outgrew it.
	Role string `json:"role,omitempty"`
	// Started is when the node started (its uptime is since then).
	Started time.Time `json:"started,omitzero"`
}
