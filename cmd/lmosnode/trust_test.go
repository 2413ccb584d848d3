package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/config"
	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// TestTrustCommands: find shows each publisher's short form and trust
// mark; the short form goes back into find --publisher and trust add; a
// preferred publisher is listed first and marked trusted. The commands
// find the node's API token in the home by themselves.
func TestTrustCommands(t *testing.T) {
	t.Setenv(config.APITokenEnv, "") // restored after the test
	if err := os.Unsetenv(config.APITokenEnv); err != nil {
		t.Fatal(err)
	}
	net := testnet.New(t, 3, testnet.Options{})
	real, fake, consumer := net.Nodes[0], net.Nodes[1], net.Nodes[2]
	net.Link(2, 0)
	net.Link(2, 1)
	id := testnet.UniqueID(t)
	for _, n := range []*node.Node{real, fake} {
		if _, err := n.Register(testnet.TD(t, id, "Weather", "weather-forecast"), interact.NewThing()); err != nil {
			t.Fatal(err)
		}
	}
	testnet.WaitFor(t, "the consumer learns both Things", 30*time.Second, func() (bool, string) {
		return len(consumer.Directory().Lookup(id)) == 2, "not yet"
	})
	home := consumer.Config().Home
	realShort, fakeShort := lmosproto.ShortPublisher(real.PeerID()), lmosproto.ShortPublisher(fake.PeerID())

	rows := func(args ...string) []string {
		t.Helper()
		out := mustRun(t, append([]string{"--home", home, "find"}, args...)...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) < 2 || !strings.Contains(lines[0], "PUBLISHER") || !strings.Contains(lines[0], "TRUST") {
			t.Fatalf("find %s:\n%s", args, out)
		}
		return lines[1:]
	}
	for _, r := range rows("--capability", "weather-forecast") {
		if !strings.Contains(r, " unknown ") || (!strings.Contains(r, realShort) && !strings.Contains(r, fakeShort)) {
			t.Errorf("find row without a trust list: %q", r)
		}
	}
	if r := rows("--publisher", fakeShort); len(r) != 1 || !strings.Contains(r[0], fakeShort) {
		t.Errorf("find --publisher %s: %q", fakeShort, r)
	}

	out := mustRun(t, "--home", home, "trust", "add", "prefer", realShort)
	if !strings.Contains(out, "prefer") || !strings.Contains(out, real.PeerID().String()) {
		t.Errorf("trust add prefer:\n%s", out)
	}
	r := rows("--capability", "weather-forecast")
	if len(r) != 2 || !strings.Contains(r[0], realShort) || !strings.Contains(r[0], " trusted ") || !strings.Contains(r[1], " unknown ") {
		t.Errorf("find with the real publisher preferred:\n%s", strings.Join(r, "\n"))
	}
	if out := mustRun(t, "--home", home, "trust", "ls"); !strings.Contains(out, realShort) {
		t.Errorf("trust ls:\n%s", out)
	}
	if _, errOut, code := lmosnode(t, "", "--home", home, "trust", "add", "deny", "…zzzzzzzz"); code == 0 || !strings.Contains(errOut, "no publisher known") {
		t.Errorf("trust add deny of an unknown short form: exit %d, %s", code, errOut)
	}
	mustRun(t, "--home", home, "trust", "rm", realShort)
	if _, errOut, _ := lmosnode(t, "", "--home", home, "trust", "ls"); !strings.Contains(errOut, "empty") {
		t.Errorf("trust ls after rm: %s", errOut)
	}
}
