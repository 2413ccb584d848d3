package node_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/config"
	"github.com/lmosnode/lmosnode/node/httpapi"
	"github.com/lmosnode/lmosnode/node/interact"
)

// waitAPIConns waits until n's API holds want connections.
func waitAPIConns(t *testing.T, n *node.Node, want int) {
	t.Helper()
	testnet.WaitFor(t, fmt.Sprintf("%d open API connections", want), 10*time.Second, func() (bool, string) {
		return n.APIOpenConns() == want, fmt.Sprintf("%d open", n.APIOpenConns())
	})
}

// TestAPILimits: an event stream outlives the body deadline (the attacks
// the limits stop — slow bodies and headers, big headers and bodies, too
// many connections — are in TestAdversarial).
func TestAPILimits(t *testing.T) {
	const bodyTimeout = 300 * time.Millisecond
	tn := testnet.New(t, 1, testnet.Options{Configure: func(_ int, cfg *config.Config) {
		cfg.APILimits = config.APILimits{BodyTimeout: config.Duration(bodyTimeout), LimitLoopback: true}
	}})
	n := tn.Nodes[0]
	base := "http://" + n.APIAddr()
	http.DefaultClient.CloseIdleConnections()

	t.Run("event stream outlives the body deadline", func(t *testing.T) {
		waitAPIConns(t, n, 0)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/events", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		time.Sleep(3 * bodyTimeout)
		id := testnet.UniqueID(t)
		if _, err := n.Register(testnet.TD(t, id, "Late", "late"), interact.NewThing()); err != nil {
			t.Fatal(err)
		}
		for ev, err := range httpapi.ReadEvents(resp.Body, 1<<20) {
			if err != nil {
				t.Fatalf("stream ended: %v", err)
			}
			if strings.Contains(ev.Data, id) {
				return
			}
		}
		t.Fatalf("stream ended before the event of %s", id)
	})
}

func isNetTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
