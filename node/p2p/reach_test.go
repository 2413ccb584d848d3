package p2p

import (
	"crypto/rand"
	"log/slog"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/lmosnode/lmosnode/node/config"
)

// TestPinnedReachability: Config.Reachability pins the host's verdict
// (a relay on a public address keeps its relay service), and a value
// other than public, private or empty is refused.
func TestPinnedReachability(t *testing.T) {
	key, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		setting string
		want    network.Reachability
	}{{"public", network.ReachabilityPublic}, {"private", network.ReachabilityPrivate}} {
		cfg := config.Default()
		cfg.Reachability = tc.setting
		h, err := NewHost(cfg, key, HostOptions{Registerer: prometheus.NewRegistry(), Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		sub, err := h.EventBus().Subscribe(new(event.EvtLocalReachabilityChanged))
		if err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-sub.Out():
			if got := ev.(event.EvtLocalReachabilityChanged).Reachability; got != tc.want {
				t.Errorf("reachability %q: the host says %s, want %s", tc.setting, got, tc.want)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("reachability %q: the host said nothing of its reachability", tc.setting)
		}
		_ = sub.Close()
		_ = h.Close()
	}
	cfg := config.Default()
	cfg.Reachability = "maybe"
	if h, err := NewHost(cfg, key, HostOptions{Registerer: prometheus.NewRegistry(), Logger: slog.New(slog.DiscardHandler)}); err == nil {
		_ = h.Close()
		t.Error(`reachability "maybe": NewHost accepted it`)
	}
}
