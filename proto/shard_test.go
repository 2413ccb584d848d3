package proto

import "testing"

// TestShardOf: the shard function is part of the wire (docs/wire.md,
// "Announce shards"); these values were computed independently with
// `printf %s FORM | sha256sum` (first byte, modulo 16).
func TestShardOf(t *testing.T) {
	for form, want := range map[string]int{
		"lmos:capability:weather-forecast": 12,
		"lmos:capability:a":                14,
		"lmos:capability:b":                11,
		"lmos:type:lmos:Agent":             10,
		"lmos:vendor:example gmbh":         4,
	} {
		if got := ShardOf(form); got != want {
			t.Errorf("ShardOf(%q) = %d, want %d", form, got, want)
		}
	}
	if got := ShardTopic(7); got != "/lmos/2/announce/7" {
		t.Errorf("ShardTopic(7) = %q", got)
	}
}
