package node

import (
	ds "github.com/ipfs/go-datastore"
	kaddht "github.com/libp2p/go-libp2p-kad-dht"

	"github.com/lmosnode/lmosnode/node/federation"
	"github.com/lmosnode/lmosnode/node/trust"
)

// The components the node's tests reach into; a program that embeds a
// node has no use for them (see doc.go for what it has).

// Federation returns the component that publishes the node's Things and
// learns those of other nodes.
func (n *Node) Federation() *federation.Federation { return n.fed }

// DHT returns the node's Kademlia DHT.
func (n *Node) DHT() *kaddht.IpfsDHT { return n.dht }

// Datastore returns the node's persistent datastore.
func (n *Node) Datastore() ds.Batching { return n.store }

// Trust returns the node's trust list.
func (n *Node) Trust() *trust.List { return n.trust }
