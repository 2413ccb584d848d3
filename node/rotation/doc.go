// Package rotation keeps the key records a node knows: the rotations
// (proto.TypeKeyRotation: a node key replaced by its successor, signed by
// both) and revocations (proto.TypeKeyRevocation: a key that must no
// longer be believed, signed by the key or by its successor). docs/wire.md
// ("Key rotation and revocation") is the wire description and
// docs/identity.md the operator's.
//
// A Registry keeps the records in the datastore (below DatastorePrefix),
// gossips each new one on Topic, and, whenever identify reports a peer
// that speaks Protocol, asks that peer for every record it holds: a node
// that was offline when a key was revoked learns it from the first peer it
// meets. Nodes that do not know the topic or the protocol never see the
// records: they keep accepting the retired key, and nothing else changes
// for them.
//
// The registry decides nothing about records of other kinds; it answers
// two questions that the checks elsewhere ask: Retired (is this key
// revoked or rotated away from: dht.ThingValidator.Retired refuses every
// Thing record it signed) and RetiredAt (was it retired when it signed
// this: groups.OpCache.SetRetired refuses group operations it created
// after), and Successor (which key replaced it). The node subscribes
// (OnRecord) what follows a new record: the directory drops the retired
// key's Things, the trust list moves its entry to the successor, and the
// group service's admins move its memberships.
package rotation
