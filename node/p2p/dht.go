package p2p

import (
	"context"
	"errors"

	"github.com/ipfs/go-cid"
	kaddht "github.com/libp2p/go-libp2p-kad-dht"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/routing"
)

// fwdRoom is how many providers CountingDHT.FindProvidersAsync holds for
// its caller.
const fwdRoom = 32

// CountingDHT is the node's DHT as the federation and the group service
// use it, counting each query's outcome (lmos_dht_queries_total).
type CountingDHT struct {
	*kaddht.IpfsDHT
	// Count is told each query's operation and outcome (ok, not_found,
	// error).
	Count func(op, outcome string)
}

func (d CountingDHT) count(op string, err error) {
	outcome := "ok"
	switch {
	case errors.Is(err, routing.ErrNotFound):
		outcome = "not_found"
	case err != nil:
		outcome = "error"
	}
	d.Count(op, outcome)
}

func (d CountingDHT) GetValue(ctx context.Context, key string, opts ...routing.Option) ([]byte, error) {
	v, err := d.IpfsDHT.GetValue(ctx, key, opts...)
	d.count("get", err)
	return v, err
}

func (d CountingDHT) PutValue(ctx context.Context, key string, value []byte, opts ...routing.Option) error {
	err := d.IpfsDHT.PutValue(ctx, key, value, opts...)
	d.count("put", err)
	return err
}

func (d CountingDHT) FindPeer(ctx context.Context, id peer.ID) (peer.AddrInfo, error) {
	ai, err := d.IpfsDHT.FindPeer(ctx, id)
	d.count("find_peer", err)
	return ai, err
}

func (d CountingDHT) Provide(ctx context.Context, key cid.Cid, broadcast bool) error {
	err := d.IpfsDHT.Provide(ctx, key, broadcast)
	d.count("provide", err)
	return err
}

// FindProvidersAsync counts the query when its results end: ok when it
// found a provider, not_found otherwise. The forwarding goroutine ends
// with the DHT's channel, which kad-dht closes at the end of the query or
// of ctx.
//
// A provider kad-dht handed over before ctx ended still reaches a caller
// that reads on until the channel closes (one that stops the lookup when
// kad-dht's lookup events say it completed, as the federation does: kad-dht
// hands a response's providers over before it publishes the events that
// response brings): the forwarder has room for fwdRoom of them and
// delivers first. It drops one only when that room is full and ctx ended.
func (d CountingDHT) FindProvidersAsync(ctx context.Context, key cid.Cid, count int) <-chan peer.AddrInfo {
	in := d.IpfsDHT.FindProvidersAsync(ctx, key, count)
	out := make(chan peer.AddrInfo, fwdRoom)
	go func() {
		defer close(out)
		found := false
		for ai := range in {
			found = true
			select {
			case out <- ai:
				continue
			default:
			}
			select {
			case out <- ai:
			case <-ctx.Done():
			}
		}
		if found {
			d.count("find_providers", nil)
		} else {
			d.count("find_providers", routing.ErrNotFound)
		}
	}()
	return out
}
