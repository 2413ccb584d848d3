package main

import (
	"slices"
	"testing"

	"github.com/lmosnode/lmosnode/node/config"
)

// TestUpNATFlags checks that the NAT flags of up replace the config's
// fields, and that flags not given keep them.
func TestUpNATFlags(t *testing.T) {
	const relay = "/ip4/198.51.100.1/tcp/4001/p2p/12D3KooWQkq67sSjdEMzqEJgYX9s7791PkDj6gPZKDbH6d8xeGmQ"
	cmd := newUpCmd()
	if err := cmd.ParseFlags([]string{
		"--relay", relay, "--relay-service",
		"--announce", "/dns4/node.example.org/tcp/4001", "--announce", "/dns4/node.example.org/udp/4001/quic-v1",
	}); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.NoAnnounce = []string{"/ip4/10.0.0.0/ipcidr/8"}
	if err := applyUpFlags(cmd, &cfg); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Relays, []string{relay}) || !cfg.RelayService {
		t.Errorf("relays %v, relayService %v; want [%s], true", cfg.Relays, cfg.RelayService, relay)
	}
	if want := []string{"/dns4/node.example.org/tcp/4001", "/dns4/node.example.org/udp/4001/quic-v1"}; !slices.Equal(cfg.Announce, want) {
		t.Errorf("announce %v, want %v", cfg.Announce, want)
	}
	if want := []string{"/ip4/10.0.0.0/ipcidr/8"}; !slices.Equal(cfg.NoAnnounce, want) {
		t.Errorf("noAnnounce %v changed without --no-announce; want %v", cfg.NoAnnounce, want)
	}
}
