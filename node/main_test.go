package node

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine outlives them. The
// ignores name goroutines that go-libp2p's dependencies start once per
// process and never stop; each is ours to keep out of the list, so none of
// them matches code in this module.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
