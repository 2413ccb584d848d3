// Package p2p is the one translation of a node's Config into the options
// of go-libp2p, kad-dht and go-libp2p-pubsub: the host (transports,
// security, muxer, connection and resource managers, AutoNAT, relays,
// hole punching, the addresses it announces: NewHost), listening with a
// check that no other process holds a fixed port (Listen), the private
// LMOS DHT (NewDHT) and gossipsub (NewPubSub: content-derived message
// IDs, StrictSign, the peer score that penalises invalid messages, the
// maximum message size, and group topics kept to their members by a
// GroupFilter). It also follows what the host learns of its own
// reachability (NAT, RelayInfo), punches holes again for connections
// left relayed (Punch), and counts DHT queries (CountingDHT).
//
// It builds; it does not run: node.New calls it, owns what it returns
// and runs what runs (FollowNAT, Punch.Run).
package p2p
