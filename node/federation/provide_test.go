package federation

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	kaddht "github.com/libp2p/go-libp2p-kad-dht"
	"github.com/libp2p/go-libp2p/core/routing"

	lmosdht "github.com/lmosnode/lmosnode/dht"
)

// countingDHT is a real kad-dht that counts the puts and provides the
// federation asks of it.
type countingDHT struct {
	*kaddht.IpfsDHT
	mu       sync.Mutex
	puts     int
	provides map[cid.Cid]int
}

func (c *countingDHT) PutValue(ctx context.Context, key string, value []byte, opts ...routing.Option) error {
	err := c.IpfsDHT.PutValue(ctx, key, value, opts...)
	if err == nil {
		c.mu.Lock()
		c.puts++
		c.mu.Unlock()
	}
	return err
}

func (c *countingDHT) Provide(ctx context.Context, key cid.Cid, broadcast bool) error {
	c.mu.Lock()
	c.provides[key]++
	c.mu.Unlock()
	return c.IpfsDHT.Provide(ctx, key, broadcast)
}

func (c *countingDHT) counts() (int, map[cid.Cid]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := make(map[cid.Cid]int, len(c.provides))
	for k, v := range c.provides {
		m[k] = v
	}
	return c.puts, m
}

func newTestDHT(t *testing.T, p *Deps, extra ...kaddht.Option) *countingDHT {
	t.Helper()
	opts, err := lmosdht.Options(lmosdht.Params{Mode: lmosdht.ModeServer})
	if err != nil {
		t.Fatal(err)
	}
	d, err := kaddht.New(context.Background(), p.Host, append(opts, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	c := &countingDHT{IpfsDHT: d, provides: make(map[cid.Cid]int)}
	p.DHT = c
	return c
}

// TestProvideOncePerKey: a provider record names the node, not the Thing,
// so a second Thing with the same capability, type and vendor is put in
// the DHT but provides nothing again; a new capability is provided.
func TestProvideOncePerKey(t *testing.T) {
	var dht *countingDHT
	alice := newMember(t, func(p *Deps, _ *Config) { dht = newTestDHT(t, p) })
	bob := newMember(t, func(p *Deps, _ *Config) { newTestDHT(t, p) })
	connect(t, alice, bob)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	waitPuts := func(want int) {
		t.Helper()
		for {
			if puts, _ := dht.counts(); puts >= want {
				return
			}
			select {
			case <-ctx.Done():
				t.Fatalf("fewer than %d DHT puts", want)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	// A put before bob is in alice's routing table fails and waits for
	// the retry backoff (15 s and more); publish once he is.
	for dht.RoutingTable().Size() == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("bob never entered alice's routing table")
		case <-time.After(20 * time.Millisecond):
		}
	}
	first := testTD(t, uniqueID(), 0, "weather")
	if _, _, err := alice.Publish(ctx, first, nil); err != nil {
		t.Fatal(err)
	}
	waitPuts(1)
	if _, _, err := alice.Publish(ctx, testTD(t, uniqueID(), 0, "weather"), nil); err != nil {
		t.Fatal(err)
	}
	waitPuts(2)
	if _, _, err := alice.Publish(ctx, testTD(t, uniqueID(), 0, "weather", "alerts"), nil); err != nil {
		t.Fatal(err)
	}
	waitPuts(3)
	_, provides := dht.counts()
	keys := lmosdht.ProviderKeys(first)
	keys = append(keys, lmosdht.CapabilityCID("alerts"))
	for _, k := range keys {
		if provides[k] != 1 {
			t.Errorf("key %s provided %d times, want once", k, provides[k])
		}
	}
	if len(provides) != len(keys) {
		t.Errorf("%d keys provided, want %d", len(provides), len(keys))
	}
}
