package node

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine outlives them. It needs
// no ignore list: with the disk-health checker owned by the node, a closed
// Node leaves no goroutine of go-libp2p, quic-go or pebble behind, with
// go-libp2p's metrics on (Config.Libp2pMetrics, collectors without
// goroutines) as with them off. Add an ignore only for a goroutine a library starts once per
// process and never stops, name it by its top function, and say why here.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
