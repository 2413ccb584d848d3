package p2p

import (
	"slices"
	"testing"

	ma "github.com/multiformats/go-multiaddr"

	"github.com/lmosnode/lmosnode/node/config"
)

func TestAddrsFactoryAnnounceAndHide(t *testing.T) {
	const relay = "12D3KooWQkq67sSjdEMzqEJgYX9s7791PkDj6gPZKDbH6d8xeGmQ"
	cfg := config.Default()
	cfg.Announce = []string{"/dns4/node.example.org/tcp/4001", "/ip4/192.168.1.2/tcp/4001"}
	cfg.NoAnnounce = []string{"/ip4/192.168.0.0/ipcidr/16", "/ip4/203.0.113.9/udp/4001/quic-v1"}
	f, err := addrsFactory(cfg)
	if err != nil {
		t.Fatal(err)
	}
	found := []string{
		"/ip4/192.168.1.2/tcp/4001",                               // hidden by the network, although announced
		"/ip4/203.0.113.9/tcp/4001",                               // kept
		"/ip4/203.0.113.9/udp/4001/quic-v1",                       // hidden exactly
		"/ip4/192.168.7.1/tcp/4001/p2p/" + relay + "/p2p-circuit", // relayed: the relay's IP does not count
	}
	var in []ma.Multiaddr
	for _, s := range found {
		in = append(in, ma.StringCast(s))
	}
	var got []string
	for _, a := range f(in) {
		got = append(got, a.String())
	}
	want := []string{
		"/ip4/203.0.113.9/tcp/4001",
		"/ip4/192.168.7.1/tcp/4001/p2p/" + relay + "/p2p-circuit",
		"/dns4/node.example.org/tcp/4001",
	}
	if !slices.Equal(got, want) {
		t.Errorf("announced %v, want %v", got, want)
	}
}

func TestRelayInfo(t *testing.T) {
	const relay = "12D3KooWQkq67sSjdEMzqEJgYX9s7791PkDj6gPZKDbH6d8xeGmQ"
	addrs := []ma.Multiaddr{
		ma.StringCast("/ip4/203.0.113.9/tcp/4001"),
		ma.StringCast("/ip4/203.0.113.1/tcp/4001/p2p/" + relay + "/p2p-circuit"),
		ma.StringCast("/ip4/203.0.113.1/udp/4001/quic-v1/p2p/" + relay + "/p2p-circuit"),
	}
	relayed, relays := RelayInfo(addrs)
	if len(relayed) != 2 || !slices.Equal(relays, []string{relay}) {
		t.Errorf("RelayInfo = %v, %v; want the two circuit addresses and relay %s", relayed, relays, relay)
	}
	if _, err := relayPeer(ma.StringCast("/ip4/203.0.113.9/tcp/4001/p2p-circuit")); err == nil {
		t.Error("relayPeer accepted a circuit address without a relay peer")
	}
}
