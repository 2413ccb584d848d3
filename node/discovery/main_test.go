package discovery

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine outlives them: every
// service, DHT and host a test starts must be closed by it, and a closed
// Service leaves nothing behind. No goroutine is ignored.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
