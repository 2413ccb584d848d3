// Package datastore is the node's persistent datastore: one pebble
// database (go-ds-pebble) under home/datastore, used through the
// go-datastore interface, with the node's durability rule. Open opens it;
// the *Store it returns is a ds.Batching that every component of the node
// shares.
//
// # Layout
//
// Components keep their data under their own key prefix:
//
//	/meta/schema   layout version of this datastore (written on first open)
//	/dht/…         DHT records this node stores for the network (kad-dht)
//	/directory/…   the directory of Things (node/directory); the Things
//	               of each publisher under /directory/things/<peer ID>/
//	/groups/…      group operation logs (node/groupsvc)
//
// # Durability
//
// Writes fall into two classes. Soft state, which the network gives back
// when it is lost, is written without an fsync: the Things learned from
// other publishers (directory keys /directory/things/<peer ID>/… of any
// peer but the node itself, Deps.Self; they expire unless seen again, and
// sync on connect, gossip and the DHT bring them back) and the DHT's
// records (/dht/…; their publishers republish them, and each is held by
// several peers). Everything else (the node's own Things, the layout
// version, whatever another component writes) is durable: the write is
// fsynced before it returns (one pebble commit with pebble.Sync, whose
// write-ahead log shares an fsync among the commits waiting together), so
// a node killed with SIGKILL right after acknowledging it still has it on
// restart. An fsync costs milliseconds on most disks, and a gossiped Thing
// is stored on every hop (right after the gossipsub validator accepts
// it), so soft writes keep that work small.
//
// A writer that wants to act on a durable write while its fsync runs
// makes it under DeferSync and calls Sync before it acknowledges it (the
// node's Publish: it announces a new version of an own Thing during the
// fsync, node/federation). Durability is not a knob: Config tunes only
// pebble's cache.
//
// # Logging
//
// pebble's own log and the disk-health checker (an operation slower than
// five seconds) write to the logger given with WithLogger.
package datastore
