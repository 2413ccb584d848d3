package discovery

import (
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/lmosnode/lmosnode/internal/loopback"
)

func TestDefaultConfigValid(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestConfigValidate(t *testing.T) {
	id := randomPeer(t)
	addr := ma.StringCast("/ip4/127.0.0.1/tcp/4001")
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"bootstrap without id", func(c *Config) {
			c.Bootstrap = []peer.AddrInfo{{ID: id, Addrs: []ma.Multiaddr{addr}}, {Addrs: []ma.Multiaddr{addr}}}
		}, "bootstrap[1]: peer ID"},
		{"bootstrap without address", func(c *Config) { c.Bootstrap = []peer.AddrInfo{{ID: id}} },
			"bootstrap[0]: peer " + id.String() + ": no address"},
		{"maxPeers zero", func(c *Config) { c.MaxPeers = 0 }, "maxPeers: 0: must be positive"},
		{"dialTimeout zero", func(c *Config) { c.DialTimeout = 0 }, "dialTimeout: 0s: must be positive"},
		{"dialBackoff min zero", func(c *Config) { c.DialBackoff.Min = 0 }, "dialBackoff: min: 0s: must be positive"},
		{"findBackoff max below min", func(c *Config) { c.FindBackoff = Backoff{Min: time.Minute, Max: time.Second} },
			"findBackoff: max: 1s: must not be less than min (1m0s)"},
		{"advertiseBackoff negative", func(c *Config) { c.AdvertiseBackoff.Min = -time.Second }, "advertiseBackoff: min: -1s"},
		{"bootstrapBackoff zero", func(c *Config) { c.BootstrapBackoff = Backoff{} }, "bootstrapBackoff: min: 0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.edit(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want an error containing %q", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "discovery config: ") {
				t.Errorf("error %q does not say it is about the discovery config", err)
			}
		})
	}
}

func TestConfigValidateReportsEveryField(t *testing.T) {
	c := DefaultConfig()
	c.MaxPeers = 0
	c.DialTimeout = -time.Second
	c.FindBackoff = Backoff{}
	err := c.Validate()
	for _, want := range []string{"maxPeers: 0", "dialTimeout: -1s", "findBackoff: min: 0s"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want an error containing %q", err, want)
		}
	}
}

func TestNewRejects(t *testing.T) {
	h := newHost(t, loopback.NewGater(t), nil)
	bad := DefaultConfig()
	bad.MaxPeers = -1
	for _, tc := range []struct {
		name string
		err  func() error
		want string
	}{
		{"nil host", func() error { _, err := New(Deps{}, DefaultConfig()); return err }, "discovery: Deps.Host is nil"},
		{"nil logger", func() error { _, err := New(Deps{Host: h}, DefaultConfig(), WithLogger(nil)); return err }, "WithLogger: logger is nil"},
		{"bad config", func() error { _, err := New(Deps{Host: h}, bad); return err }, "maxPeers: -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.err(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
