package federation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	msmux "github.com/multiformats/go-multistream"

	lmosdht "github.com/lmosnode/lmosnode/dht"
	"github.com/lmosnode/lmosnode/node/directory"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Limits of the sync protocol (see the package documentation).
const (
	// SyncTimeout bounds one sync exchange, from opening the stream to the
	// last record.
	SyncTimeout = 30 * time.Second
	// MaxSyncRecords is the most records one response carries.
	MaxSyncRecords = 1024
	// MaxSyncBytes bounds the records of one response together.
	MaxSyncBytes = 32 << 20
	// SyncEvery is the sustained rate at which a node answers one peer's
	// sync requests (one every SyncEvery), and the least time between two
	// syncs a node starts with one peer on connect.
	SyncEvery = 10 * time.Second
	// SyncBurst is how many sync requests a peer may make at once before
	// SyncEvery applies: a cold lookup asks the same provider once per
	// capability, type or vendor it looks for.
	SyncBurst = 10

	// maxControlFrame bounds a request and a response header.
	maxControlFrame = 4 << 10
	// maxConcurrentSyncs bounds the on-connect syncs in flight.
	maxConcurrentSyncs = 4
)

// wantOwn is the only value of a request's "want": the answering peer's own
// records.
const wantOwn = "own"

// Filter selects the records a sync asks for. Its fields combine with AND;
// a zero field does not filter, and a zero Filter asks for every record the
// peer publishes, tombstones included.
type Filter struct {
	// Capability is a capability id ("lmos:id"), exactly as written.
	Capability string
	// Type is an @type, exactly as written (e.g. "lmos:Agent").
	Type string
	// Vendor is a vendor name, compared in its dht.NormalizeVendor form.
	Vendor string
}

// IsZero reports whether the filter selects everything.
func (flt Filter) IsZero() bool { return flt == Filter{} }

// matches reports whether a live TD with these fields passes the filter.
func (flt Filter) matches(caps []string, types []string, vendor string) bool {
	if flt.Capability != "" && !slices.Contains(caps, flt.Capability) {
		return false
	}
	if flt.Type != "" && !slices.Contains(types, flt.Type) {
		return false
	}
	if flt.Vendor != "" && lmosdht.NormalizeVendor(vendor) != lmosdht.NormalizeVendor(flt.Vendor) {
		return false
	}
	return true
}

func (flt Filter) matchesEntry(e directory.Entry) bool {
	caps := make([]string, len(e.Capabilities))
	for i, c := range e.Capabilities {
		caps[i] = c.ID
	}
	return flt.matches(caps, e.Types, e.Vendor)
}

func (flt Filter) matchesRecord(rec *lmosproto.Record) bool {
	if rec.TD == nil {
		return flt.IsZero()
	}
	caps := make([]string, 0, len(rec.TD.Capabilities))
	for _, c := range rec.TD.Capabilities {
		caps = append(caps, c.ID)
	}
	return flt.matches(caps, rec.TD.Types, rec.TD.Vendor())
}

// syncRequest is the request frame.
type syncRequest struct {
	Want       string `json:"want"`
	Capability string `json:"capability,omitempty"`
	Type       string `json:"type,omitempty"`
	Vendor     string `json:"vendor,omitempty"`
}

// syncHeader is the first frame of a response.
type syncHeader struct {
	Count     int    `json:"count"`
	Truncated bool   `json:"truncated,omitempty"`
	Error     string `json:"error,omitempty"`
}

func toWire(flt Filter) syncRequest {
	return syncRequest{Want: wantOwn, Capability: flt.Capability, Type: flt.Type, Vendor: flt.Vendor}
}

// parseSyncRequest decodes and checks a request frame.
func parseSyncRequest(p []byte) (Filter, error) {
	var req syncRequest
	if err := json.Unmarshal(p, &req); err != nil {
		return Filter{}, fmt.Errorf("sync request: %w", err)
	}
	if req.Want != wantOwn {
		return Filter{}, fmt.Errorf("sync request: want: %q: must be %q", req.Want, wantOwn)
	}
	return Filter{Capability: req.Capability, Type: req.Type, Vendor: req.Vendor}, nil
}

// parseSyncHeader decodes and checks a response header.
func parseSyncHeader(p []byte) (syncHeader, error) {
	var h syncHeader
	if err := json.Unmarshal(p, &h); err != nil {
		return h, fmt.Errorf("sync response header: %w", err)
	}
	if h.Error != "" {
		return h, fmt.Errorf("sync refused: %q", truncate(h.Error, 200))
	}
	if h.Count < 0 || h.Count > MaxSyncRecords {
		return h, fmt.Errorf("sync response header: count: %d: must be between 0 and %d", h.Count, MaxSyncRecords)
	}
	return h, nil
}

// handleSync answers a sync request on s.
func (f *Federation) handleSync(s network.Stream) {
	f.serveRecords(s, "sync", SyncTimeout, func(p []byte, remote peer.ID) ([][]byte, bool, error) {
		flt, err := parseSyncRequest(p)
		if err == nil {
			err = f.allowRequest(remote)
		}
		if err != nil {
			return nil, false, err
		}
		recs, truncated := f.ownRecords(flt, remote)
		return recs, truncated, nil
	})
}

// allowRequest spends one of remote's sync and find requests, or says
// that it has none left.
func (f *Federation) allowRequest(remote peer.ID) error {
	if !f.serveLimit.Allow(remote) {
		return fmt.Errorf("rate limited: at most %d requests, then one every %s", SyncBurst, SyncEvery)
	}
	return nil
}

// serveRecords answers one request of a records protocol (sync, find) on
// s within timeout: it reads the request frame and writes what answer
// returns for it, a header and the records, or, if answer refuses the
// request, a header with the error and nothing else.
func (f *Federation) serveRecords(s network.Stream, what string, timeout time.Duration, answer func(req []byte, remote peer.ID) ([][]byte, bool, error)) {
	remote := s.Conn().RemotePeer()
	err := func() error {
		if err := s.SetDeadline(time.Now().Add(timeout)); err != nil {
			return fmt.Errorf("deadline: %w", err)
		}
		p, err := lmosproto.ReadFrame(s, maxControlFrame)
		if err != nil {
			return fmt.Errorf("read request: %w", err)
		}
		recs, truncated, err := answer(p, remote)
		if err != nil {
			// Refused: say why, then close the stream cleanly.
			f.log.Debug("request refused", "protocol", what, "peer", remote, "err", err)
			return writeHeader(s, syncHeader{Error: err.Error()})
		}
		if err := writeHeader(s, syncHeader{Count: len(recs), Truncated: truncated}); err != nil {
			return err
		}
		for _, raw := range recs {
			if err := lmosproto.WriteFrame(s, raw); err != nil {
				return fmt.Errorf("write record: %w", err)
			}
		}
		f.log.Debug("answered request", "protocol", what, "peer", remote, "records", len(recs), "truncated", truncated)
		return nil
	}()
	if err != nil {
		f.log.Debug("request failed", "protocol", what, "peer", remote, "err", err)
		_ = s.Reset()
		return
	}
	_ = s.Close()
}

// writeHeader writes the response header h.
func writeHeader(s network.Stream, h syncHeader) error {
	p, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("encode header: %w", err)
	}
	if err := lmosproto.WriteFrame(s, p); err != nil {
		return fmt.Errorf("write header: %w", err)
	}
	return nil
}

// ownRecords returns the signed own records flt selects that remote may
// see (group-scoped ones only if Deps.Allowed allows it), within the
// response limits, and whether some were left out.
func (f *Federation) ownRecords(flt Filter, remote peer.ID) ([][]byte, bool) {
	var entries []directory.Entry
	if flt.IsZero() {
		entries = f.dir.OwnRecords()
	} else {
		for _, e := range f.dir.Own() {
			if flt.matchesEntry(e) {
				entries = append(entries, e)
			}
		}
	}
	var out [][]byte
	size := 0
	for _, e := range entries {
		if e.Groups != nil && !f.allowed(e.Groups, e.ThingID, remote) {
			continue
		}
		raw, err := e.Raw()
		if err != nil {
			f.log.Error("read own record", "thing", e.ThingID, "err", err)
			continue
		}
		if len(out) == MaxSyncRecords || size+len(raw) > MaxSyncBytes {
			return out, true
		}
		out = append(out, raw)
		size += len(raw)
	}
	return out, false
}

// Sync asks peer p for the records it publishes that flt selects, checks
// each (signature, freshness, publisher = p, filter) and stores the good
// ones in the directory. It returns how many records changed the
// directory. The node must be able to reach p (connected, or its addresses
// in the peerstore).
func (f *Federation) Sync(ctx context.Context, p peer.ID, flt Filter) (int, error) {
	if p == f.self {
		return 0, errors.New("federation: sync: with self")
	}
	recs, err := f.fetchOwn(ctx, p, flt)
	if err != nil {
		return 0, fmt.Errorf("federation: sync with %s: %w", p, err)
	}
	var opts []directory.PutOption
	if !flt.IsZero() {
		opts = append(opts, directory.Used()) // a lookup's (askProvider)
	}
	n, err := f.intake.StoreMany(recs, opts...)
	if err != nil {
		return 0, fmt.Errorf("federation: sync with %s: %w", p, err)
	}
	f.intake.Seen(p) // it answered: alive
	return n, nil
}

// fetchOwn runs one sync exchange with p and returns the records that
// check.
func (f *Federation) fetchOwn(ctx context.Context, p peer.ID, flt Filter) ([]*lmosproto.Record, error) {
	ctx, cancel := context.WithTimeout(ctx, SyncTimeout)
	defer cancel()
	s, err := f.openSync(network.WithAllowLimitedConn(ctx, "lmos-sync"), p)
	if err != nil {
		return nil, fmt.Errorf("open stream: %w", err)
	}
	recs, err := f.exchange(ctx, s, p, flt)
	if err != nil {
		_ = s.Reset()
		return nil, err
	}
	_ = s.Close()
	return recs, nil
}

// openSync opens a sync stream to p (dialling it if needed) without
// waiting for identify: the host's NewStream waits, on a new connection,
// for identify to finish (a round trip and the check of the peer's signed
// record) before it sends anything. The stream names the sync protocol
// with the request, as the host does for a peer known to speak it (lazy
// multistream-select); a peer that does not speak it answers the first
// read with an error. Identify runs on the connection all the same.
func (f *Federation) openSync(ctx context.Context, p peer.ID) (network.Stream, error) {
	if err := f.p.Host.Connect(ctx, peer.AddrInfo{ID: p}); err != nil {
		return nil, err
	}
	s, err := f.p.Host.Network().NewStream(network.WithNoDial(ctx, "already connected"), p)
	if err != nil {
		return nil, err
	}
	if err := s.SetProtocol(lmosproto.ProtocolSync); err != nil {
		_ = s.Reset()
		return nil, err
	}
	return &lazyStream{Stream: s, rw: msmux.NewMSSelect(s, lmosproto.ProtocolSync)}, nil
}

// lazyStream is a stream whose protocol is negotiated with its first write
// and first read (what the host's NewStream returns for a protocol the
// peer is known to speak).
type lazyStream struct {
	network.Stream
	rw msmux.LazyConn
}

func (s *lazyStream) Read(b []byte) (int, error)  { return s.rw.Read(b) }
func (s *lazyStream) Write(b []byte) (int, error) { return s.rw.Write(b) }
func (s *lazyStream) Close() error                { return s.rw.Close() }

// CloseWrite sends the negotiation if nothing was written yet; an error
// shows on the next read.
func (s *lazyStream) CloseWrite() error {
	_ = s.rw.Flush()
	return s.Stream.CloseWrite()
}

func (f *Federation) exchange(ctx context.Context, s network.Stream, p peer.ID, flt Filter) ([]*lmosproto.Record, error) {
	return f.request(ctx, s, p, toWire(flt), MaxSyncRecords, MaxSyncBytes, func(raw []byte) (*lmosproto.Record, error) {
		rec, err := f.intake.Check(p, raw)
		if err == nil && !flt.matchesRecord(rec) {
			err = fmt.Errorf("thing %q does not match the filter asked for", rec.ThingID)
		}
		return rec, err
	})
}

// request runs one exchange of a records protocol (sync, find) on s with
// peer p: it writes req, reads the header and at most maxCount records of
// at most maxBytes together, and returns those that check passes (the
// others are dropped and logged).
func (f *Federation) request(ctx context.Context, s network.Stream, p peer.ID, req any, maxCount, maxBytes int, check func([]byte) (*lmosproto.Record, error)) ([]*lmosproto.Record, error) {
	deadline, _ := ctx.Deadline()
	if err := s.SetDeadline(deadline); err != nil {
		return nil, fmt.Errorf("deadline: %w", err)
	}
	// A cancelled ctx interrupts reads and writes in flight.
	stop := context.AfterFunc(ctx, func() { _ = s.SetDeadline(time.Now()) })
	defer stop()

	rp, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	if err := lmosproto.WriteFrame(s, rp); err != nil {
		return nil, fmt.Errorf("write request: %w", err)
	}
	if err := s.CloseWrite(); err != nil {
		return nil, fmt.Errorf("close write: %w", err)
	}
	hp, err := lmosproto.ReadFrame(s, maxControlFrame)
	if err != nil {
		return nil, fmt.Errorf("read header: %w", ctxErr(ctx, err))
	}
	h, err := parseSyncHeader(hp)
	if err != nil {
		return nil, err
	}
	if h.Count > maxCount {
		return nil, fmt.Errorf("response header: count: %d: at most %d", h.Count, maxCount)
	}
	recs := make([]*lmosproto.Record, 0, h.Count)
	size, dropped := 0, 0
	for i := range h.Count {
		raw, err := lmosproto.ReadFrame(s, lmosproto.MaxRecordSize)
		if err != nil {
			return nil, fmt.Errorf("read record %d of %d: %w", i+1, h.Count, ctxErr(ctx, err))
		}
		if size += len(raw); size > maxBytes {
			return nil, fmt.Errorf("response exceeds %d bytes", maxBytes)
		}
		rec, err := check(raw)
		if err != nil {
			dropped++
			f.log.Debug("record refused", "peer", p, "index", i, "err", err)
			continue
		}
		recs = append(recs, rec)
	}
	if dropped > 0 {
		f.log.Warn("peer sent records that do not check", "peer", p, "refused", dropped, "of", h.Count)
	}
	return recs, nil
}

// ctxErr prefers the context's error to the deadline error it caused.
func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w (%w)", ctx.Err(), err)
	}
	return err
}

// watchIdentify syncs with every peer that identify reports speaking the
// sync protocol, until sub is closed.
func (f *Federation) watchIdentify(sub event.Subscription) {
	for ev := range sub.Out() {
		e, ok := ev.(event.EvtPeerIdentificationCompleted)
		if !ok || !slices.Contains(e.Protocols, lmosproto.ProtocolSync) {
			continue
		}
		f.maybeSync(e.Peer)
	}
}

// maybeSync starts a sync with p unless one was started recently. Callers
// run in a goroutine of f.wg or hold f.mu before Close (so f.wg.Go is not
// racing f.wg.Wait).
func (f *Federation) maybeSync(p peer.ID) {
	if p == f.self || f.ctx.Err() != nil || f.role() == RoleLight {
		return
	}
	if ok, err := f.p.Host.Peerstore().SupportsProtocols(p, lmosproto.ProtocolSync); err != nil || len(ok) == 0 {
		return
	}
	if !f.syncLimit.Allow(p) {
		return
	}
	f.wg.Go(func() {
		select {
		case f.syncSem <- struct{}{}:
		case <-f.ctx.Done():
			return
		}
		defer func() { <-f.syncSem }()
		n, err := f.Sync(f.ctx, p, Filter{})
		if err != nil {
			if f.ctx.Err() == nil {
				f.log.Debug("sync on connect failed", "peer", p, "err", err)
			}
			return
		}
		f.log.Debug("synced with peer", "peer", p, "changed", n)
	})
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
