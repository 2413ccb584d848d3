package federation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/directory"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Limits of the find protocol (proto.ProtocolFind; docs/wire.md). Its
// requests share the sync server's per-peer rate limit (SyncBurst, then
// one every SyncEvery), its request and header frames the sync protocol's
// bound (4096 bytes).
const (
	// MaxFindCapability bounds the capability id of a find request, in
	// bytes.
	MaxFindCapability = 256
	// MaxFindRecords is the most records one find answer carries.
	MaxFindRecords = 32
	// MaxFindBytes bounds the records of one find answer together.
	MaxFindBytes = 1 << 20
	// FindTimeout bounds one find exchange.
	FindTimeout = 5 * time.Second
	// maxHolders is the most connected peers a cold lookup asks.
	maxHolders = 3
)

// findRequest is the request frame of the find protocol.
type findRequest struct {
	Capability string `json:"capability"`
}

// parseFindRequest decodes and checks a find request frame.
func parseFindRequest(p []byte) (string, error) {
	var req findRequest
	if err := json.Unmarshal(p, &req); err != nil {
		return "", fmt.Errorf("find request: %w", err)
	}
	switch {
	case req.Capability == "":
		return "", errors.New("find request: capability: empty")
	case len(req.Capability) > MaxFindCapability:
		return "", fmt.Errorf("find request: capability: %d bytes, at most %d", len(req.Capability), MaxFindCapability)
	}
	return req.Capability, nil
}

// handleFind answers a find request on s.
func (f *Federation) handleFind(s network.Stream) {
	f.serveRecords(s, "find", FindTimeout, func(p []byte, remote peer.ID) ([][]byte, bool, error) {
		capability, err := parseFindRequest(p)
		if err == nil {
			err = f.allowRequest(remote)
		}
		if err != nil {
			return nil, false, err
		}
		recs, truncated, err := f.publicRecords(capability)
		if err != nil {
			f.log.Error("find: search", "capability", capability, "err", err)
			return nil, false, errors.New("search failed")
		}
		return recs, truncated, nil
	})
}

// publicRecords returns the signed records of the public, live Things
// (own and learned; no tombstone, nothing expired, nothing group-scoped)
// that offer capability, within the find answer's limits, and whether
// some were left out.
func (f *Federation) publicRecords(capability string) ([][]byte, bool, error) {
	res, err := f.dir.Search(directory.Query{
		Capability: capability + "@",
		Visible:    func(e directory.Entry) bool { return e.Groups == nil },
		Limit:      MaxFindRecords + 1,
	})
	if err != nil {
		return nil, false, err
	}
	var out [][]byte
	size := 0
	for _, e := range res.Entries {
		raw, err := e.Raw()
		if err != nil {
			f.log.Error("read record", "thing", e.ThingID, "publisher", e.Publisher, "err", err)
			continue
		}
		if len(out) == MaxFindRecords || size+len(raw) > MaxFindBytes {
			return out, true, nil
		}
		out = append(out, raw)
		size += len(raw)
	}
	return out, false, nil
}

// holders returns up to maxHolders peers this node is connected to that
// speak the find protocol (as identify reported).
func (f *Federation) holders() []peer.ID {
	var out []peer.ID
	for _, p := range f.p.Host.Network().Peers() {
		if p == f.self {
			continue
		}
		if ok, err := f.p.Host.Peerstore().SupportsProtocols(p, lmosproto.ProtocolFind); err != nil || len(ok) == 0 {
			continue
		}
		out = append(out, p)
		if len(out) == maxHolders {
			break
		}
	}
	return out
}

// heldAnswer is what the holders asked by a cold lookup sent: the
// publishers whose records for the capability arrived and checked, and
// how many records changed the directory.
type heldAnswer struct {
	publishers map[peer.ID]bool
	learned    int
}

// askHolders asks peers, in parallel, for the public records they hold of
// the Things that offer capability, checks each with the intake, stores
// the good ones, and returns what arrived.
func (f *Federation) askHolders(ctx context.Context, peers []peer.ID, capability string) heldAnswer {
	var (
		mu  sync.Mutex
		all []*lmosproto.Record
		wg  sync.WaitGroup
	)
	for _, p := range peers {
		wg.Go(func() {
			recs, err := f.findFrom(ctx, p, capability)
			if err != nil {
				f.log.Debug("holder did not answer", "peer", p, "capability", capability, "err", err)
				return
			}
			mu.Lock()
			all = append(all, recs...)
			mu.Unlock()
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return heldAnswer{} // the lookup stopped waiting
	}
	a := heldAnswer{publishers: make(map[peer.ID]bool)}
	for _, rec := range all {
		a.publishers[rec.Publisher()] = true
	}
	n, err := f.intake.StoreMany(all, directory.Used())
	if err != nil {
		f.log.Warn("store records from holders", "capability", capability, "err", err)
		return heldAnswer{}
	}
	a.learned = n
	return a
}

// findFrom runs one find exchange with p, on a connection that exists (it
// never dials), and returns the records that check: every one through the
// intake (size, proof, schema, freshness, signed by the publisher its
// proof names, trust list), public, live, with the capability asked for,
// not this node's own.
func (f *Federation) findFrom(ctx context.Context, p peer.ID, capability string) ([]*lmosproto.Record, error) {
	ctx, cancel := context.WithTimeout(ctx, FindTimeout)
	defer cancel()
	s, err := f.p.Host.NewStream(network.WithNoDial(ctx, "find: connected peers only"), p, lmosproto.ProtocolFind)
	if err != nil {
		return nil, fmt.Errorf("open stream: %w", err)
	}
	recs, err := f.findExchange(ctx, s, p, capability)
	if err != nil {
		_ = s.Reset()
		return nil, err
	}
	_ = s.Close()
	return recs, nil
}

func (f *Federation) findExchange(ctx context.Context, s network.Stream, p peer.ID, capability string) ([]*lmosproto.Record, error) {
	flt := Filter{Capability: capability}
	return f.request(ctx, s, p, findRequest{Capability: capability}, MaxFindRecords, MaxFindBytes, func(raw []byte) (*lmosproto.Record, error) {
		return f.checkHeld(raw, flt)
	})
}

// checkHeld checks raw, a record a third party served, as a record of the
// publisher its proof names (Intake.Check), and that it is a public,
// live TD that flt selects and not this node's own.
func (f *Federation) checkHeld(raw []byte, flt Filter) (*lmosproto.Record, error) {
	var probe struct {
		Proof struct {
			VerificationMethod string `json:"verificationMethod"`
		} `json:"proof"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	publisher, err := lmosproto.ParsePublisher(probe.Proof.VerificationMethod)
	if err != nil {
		return nil, fmt.Errorf("record: proof: verification method: %w", err)
	}
	if publisher == f.self {
		return nil, errors.New("record: this node's own")
	}
	rec, err := f.intake.Check(publisher, raw)
	switch {
	case err != nil:
		return nil, err
	case rec.Tombstone():
		return nil, fmt.Errorf("thing %q: a tombstone", rec.ThingID)
	case len(rec.TD.Groups) > 0:
		return nil, fmt.Errorf("thing %q: group-scoped %v", rec.ThingID, rec.TD.Groups)
	case !flt.matchesRecord(rec):
		return nil, fmt.Errorf("thing %q does not offer the capability asked for", rec.ThingID)
	}
	return rec, nil
}
