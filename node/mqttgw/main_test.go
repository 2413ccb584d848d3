package mqttgw

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine outlives them: the
// gateway's and paho's (Close disconnects and waits).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
