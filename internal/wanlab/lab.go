package main

import (
	"crypto/ed25519"
	"crypto/sha256"
	"flag"
	"fmt"
	"slices"
	"strconv"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/muxer/yamux"
	"github.com/libp2p/go-libp2p/p2p/security/noise"
	libp2pquic "github.com/libp2p/go-libp2p/p2p/transport/quic"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
)

// The lab's addressing: namespace K (1-based) is 10.78.K.2 behind the
// router's 10.78.K.1; its lmosnode listens on nodePort, its raw host on
// rawPort, its echo backend on backendPort and its peer's control server
// on ctlPort, all on that address. The node's API is 127.0.0.1:5080 inside
// the namespace.
const (
	nodePort    = 4001
	rawPort     = 4101
	backendPort = 9000
	ctlPort     = 4180
	nodeAPI     = "http://127.0.0.1:5080"
	rawTopic    = "bench" // as the loopback benchmark's raw hosts
)

func ipOf(k int) string { return fmt.Sprintf("10.78.%d.2", k) }

// rawKey is raw host K's identity, derived from K so that every peer knows
// every other's peer ID without asking.
func rawKey(k int) crypto.PrivKey {
	seed := sha256.Sum256([]byte("lmosnode wanlab raw host " + strconv.Itoa(k)))
	priv, err := crypto.UnmarshalEd25519PrivateKey(ed25519.NewKeyFromSeed(seed[:]))
	if err != nil {
		panic(err) // impossible: a key of the right length
	}
	return priv
}

func rawID(k int) peer.ID {
	id, err := peer.IDFromPrivateKey(rawKey(k))
	if err != nil {
		panic(err) // impossible for an Ed25519 key
	}
	return id
}

func rawAddr(k int) string {
	return hostAddr(ipOf(k), rawPort) + "/p2p/" + rawID(k).String()
}

// transport is what the lab's nodes and raw hosts listen and dial on:
// "tcp" (TCP with Noise and yamux, the default) or "quic" (QUIC v1), set
// by -transport of peer and drive alike.
var transport = "tcp"

func transportFlag(fs *flag.FlagSet) {
	fs.Func("transport", `"tcp" (default) or "quic": what nodes and raw hosts listen and dial on`, func(s string) error {
		if s != "tcp" && s != "quic" {
			return fmt.Errorf("want tcp or quic, not %q", s)
		}
		transport = s
		return nil
	})
}

// hostAddr is the lab's multiaddr of port on ip.
func hostAddr(ip string, port int) string {
	if transport == "quic" {
		return fmt.Sprintf("/ip4/%s/udp/%d/quic-v1", ip, port)
	}
	return fmt.Sprintf("/ip4/%s/tcp/%d", ip, port)
}

// rawTransport is the libp2p options of a raw host for the lab's
// transport (QUIC brings its own security and muxer).
func rawTransport() libp2p.Option {
	if transport == "quic" {
		return libp2p.Transport(libp2pquic.NewTransport)
	}
	return libp2p.ChainOptions(libp2p.Transport(tcp.NewTCPTransport),
		libp2p.Security(noise.ID, noise.New), libp2p.Muxer(yamux.ID, yamux.DefaultTransport))
}

// links is the lab's topology over nodes 1..n: a ring plus a chord from
// every fifth node a third of the way round (each pair once), as the loopback benchmarks use a ring
// plus n/5 chords. Nodes and raw hosts are linked alike.
func links(n int) [][2]int {
	var l [][2]int
	for i := 1; i <= n; i++ {
		if j := i%n + 1; j != i && (n > 2 || i == 1) {
			l = append(l, [2]int{i, j})
		}
	}
	if n >= 6 {
		for i := 1; i <= n; i += 5 {
			j := (i+n/3-1)%n + 1
			if !slices.ContainsFunc(l, func(e [2]int) bool { return e == [2]int{i, j} || e == [2]int{j, i} }) {
				l = append(l, [2]int{i, j})
			}
		}
	}
	return l
}

func runLinks(args []string) error {
	fs := flag.NewFlagSet("links", flag.ContinueOnError)
	n := fs.Int("n", 30, "nodes")
	if err := fs.Parse(args); err != nil {
		return err
	}
	for _, l := range links(*n) {
		fmt.Println(l[0], l[1])
	}
	return nil
}
