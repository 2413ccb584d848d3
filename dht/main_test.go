package dht

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine outlives them: every
// host and DHT a test starts must be closed by it. No goroutine is ignored:
// go-libp2p v0.45 and kad-dht v0.36 stop all of theirs on Close (kad-dht's
// fix-up puts after a GetValue end with the DHT's context; VerifyTestMain
// retries long enough for them).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
