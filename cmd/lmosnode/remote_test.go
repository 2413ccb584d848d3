package main

import (
	"strings"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/internal/testnet"
)

// TestRemoteFailureWording: a consumer reading a Thing whose owner has no
// backend is told that the publishing node lacks one, not given the
// owner's "on this node" advice; the exit code says unavailable.
func TestRemoteFailureWording(t *testing.T) {
	net := testnet.New(t, 2, testnet.Options{})
	net.Link(1, 0)
	owner, consumer := net.Nodes[0], net.Nodes[1]
	mustRun(t, "--home", owner.Config().Home, "things", "publish", weatherFile)
	testnet.WaitFor(t, "the consumer learns the Thing", 30*time.Second, func() (bool, string) {
		out, errOut, _ := lmosnode(t, "", "--home", consumer.Config().Home, "find", "--type", "agent")
		return strings.Contains(out, weatherID), errOut
	})
	_, errOut, code := lmosnode(t, "", "--home", consumer.Config().Home, "read", weatherID, "modelConfiguration")
	if code != exitUnavailable || !strings.Contains(errOut, "has no backend on the node that publishes it") || strings.Contains(errOut, "on this node") {
		t.Errorf("consumer's read of a Thing without backend: exit %d, %q", code, errOut)
	}
}
