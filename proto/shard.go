package proto

import (
	"crypto/sha256"
	"strconv"
)

// ShardCount is the number of announce shards (TopicShardPrefix). It is
// part of the wire: every node must derive the same shard of a key, so it
// changes only with a new topic version.
const ShardCount = 16

// ShardOf returns the shard of a provider key's string form (ProvideCapability
// + id, ProvideType + type, ProvideVendor + normalised vendor): the first
// byte of the SHA-256 digest of the form, modulo ShardCount. The digest is
// the one the DHT provider key (a CID) is made of.
func ShardOf(form string) int {
	digest := sha256.Sum256([]byte(form))
	return int(digest[0]) % ShardCount
}

// ShardTopic returns the announce topic of shard n: TopicShardPrefix
// followed by n in decimal, e.g. "/lmos/2/announce/7".
func ShardTopic(n int) string { return TopicShardPrefix + strconv.Itoa(n) }
