package federation

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	ds "github.com/ipfs/go-datastore"
	dssync "github.com/ipfs/go-datastore/sync"
	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"go.uber.org/goleak"

	"github.com/lmosnode/lmosnode/node/directory"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// clock is a settable clock for tests.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Now()} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// member is a Federation on a bare loopback host, without DHT or gossip.
type member struct {
	*Federation
	host  host.Host
	key   ed25519.PrivateKey
	id    peer.ID
	dir   *directory.Directory
	clock *clock
}

// newMember starts a Federation on a fresh host listening on 127.0.0.1,
// with an in-memory directory; everything is closed when the test ends.
func newMember(t testing.TB, configure func(*Deps, *Config)) *member {
	t.Helper()
	return newMemberWith(t, directory.Config{}, configure)
}

// newMemberWith is newMember with a directory configured by dcfg.
func newMemberWith(t testing.TB, dcfg directory.Config, configure func(*Deps, *Config), opts ...Option) *member {
	t.Helper()
	h, key := newHost(t)
	clk := newClock()
	dir, err := directory.Open(directory.Deps{Datastore: dssync.MutexWrap(ds.NewMapDatastore()), Self: h.ID()}, dcfg, directory.WithClock(clk.Now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dir.Close() })
	d := Deps{Host: h, Key: key, Directory: dir}
	var c Config
	if configure != nil {
		configure(&d, &c)
	}
	f, err := New(d, c, append([]Option{WithClock(clk.Now)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	if err := f.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return &member{Federation: f, host: h, key: key, id: h.ID(), dir: dir, clock: clk}
}

// newHost returns a fresh host listening on 127.0.0.1, closed when the
// test ends, and its identity key.
func newHost(t testing.TB) (host.Host, ed25519.PrivateKey) {
	t.Helper()
	priv, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	h, err := libp2p.New(libp2p.Identity(priv), libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"),
		libp2p.DisableRelay(), libp2p.DisableMetrics())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	raw, err := priv.Raw()
	if err != nil {
		t.Fatal(err)
	}
	return h, ed25519.PrivateKey(raw)
}

func connect(t *testing.T, a, b *member) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.host.Connect(ctx, peer.AddrInfo{ID: b.id, Addrs: b.host.Addrs()}); err != nil {
		t.Fatal(err)
	}
}

var thingCounter struct {
	mu sync.Mutex
	n  int
}

func uniqueID() string {
	thingCounter.mu.Lock()
	defer thingCounter.mu.Unlock()
	thingCounter.n++
	return fmt.Sprintf("urn:lmos:federation-test:%d:%d", time.Now().UnixNano(), thingCounter.n)
}

// testTD is a valid lmos:Agent TD with the given capabilities.
func testTD(t testing.TB, id string, seq uint64, caps ...string) *lmosproto.TD {
	t.Helper()
	cs := make([]map[string]string, len(caps))
	for i, c := range caps {
		cs[i] = map[string]string{"lmos:id": c}
	}
	doc := map[string]any{
		"@context":            json.RawMessage(lmosproto.LMOSContext()),
		"@type":               []string{lmosproto.TypeAgent},
		"id":                  id,
		"title":               "Test " + id,
		"securityDefinitions": map[string]any{"nosec_sc": map[string]string{"scheme": "nosec"}},
		"security":            "nosec_sc",
		"lmos:metadata":       map[string]any{"lmos:vendor": map[string]string{"lmos:name": "Example  GmbH"}},
		"lmos:capabilities":   cs,
		"lmos:seq":            seq,
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	td, err := lmosproto.ParseTD(raw)
	if err != nil {
		t.Fatal(err)
	}
	return td
}

func sign(t testing.TB, key ed25519.PrivateKey, td *lmosproto.TD, at time.Time) *lmosproto.Record {
	t.Helper()
	rec, err := lmosproto.SignThing(td, key, at)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}
