package dht

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine outlives them: every
// host and DHT a test starts must be closed by it.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
