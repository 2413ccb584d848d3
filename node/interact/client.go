package interact

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-libp2p/core/routing"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/lmosnode/lmosnode/proto"
)

// ErrClientClosed is returned by Do after Close.
var ErrClientClosed = errors.New("interact: client closed")

// Client opens interactions with Things owned by other nodes over libp2p
// streams: of proto.ProtocolInteractSession when the owner speaks it, one
// interaction after another on a stream, a stream whose interaction ended
// cleanly kept idle for the next one (at most MaxIdleStreams per owner,
// for IdleTimeout); of proto.ProtocolInteract, one stream per interaction,
// with an owner that does not.
//
// A Client is safe for concurrent use. Each open session owns one reader
// goroutine, which ends with the session; Close closes every open session
// and idle stream and waits for them.
type Client struct {
	h     host.Host
	rt    routing.PeerRouting // nil: no second dial with fresh addresses
	asked func(peer.ID)
	cfg   TransportConfig
	codec proto.Codec
	log   *slog.Logger

	wg     sync.WaitGroup
	mu     sync.Mutex
	closed bool
	open   map[*remoteSession]struct{}
	idle   map[peer.ID][]*idleStream // newest last
	sweep  *time.Timer               // armed while idle streams exist
	// cleared is when a call last cleared an owner's dial backoff.
	cleared *lru.Cache[peer.ID, time.Time]
}

// idleStream is a session stream between two interactions.
type idleStream struct {
	str   network.Stream
	br    *bufio.Reader
	since time.Time
}

// NewClient returns a Client that opens streams from deps.Host. It uses
// the options WithLogger and WithCodec.
func NewClient(deps ClientDeps, cfg TransportConfig, opts ...Option) (*Client, error) {
	if deps.Host == nil {
		return nil, errors.New("interact: ClientDeps.Host is nil")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := newOptions(opts)
	cleared, err := lru.New[peer.ID, time.Time](1024)
	if err != nil {
		return nil, err
	}
	return &Client{
		h: deps.Host, rt: deps.Routing, asked: deps.Asked, cfg: cfg.withDefaults(), codec: o.codec, log: o.log,
		open: map[*remoteSession]struct{}{}, idle: map[peer.ID][]*idleStream{}, cleared: cleared,
	}, nil
}

// Close closes every open session (cancelling its interaction at the
// owner) and every idle stream, and waits for the sessions' readers.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	open := make([]*remoteSession, 0, len(c.open))
	for s := range c.open {
		open = append(open, s)
	}
	var idle []*idleStream
	for p, list := range c.idle {
		idle = append(idle, list...)
		delete(c.idle, p)
	}
	if c.sweep != nil {
		c.sweep.Stop()
	}
	c.mu.Unlock()
	for _, s := range open {
		_ = s.Close()
	}
	for _, is := range idle {
		is.close()
	}
	c.wg.Wait()
	return nil
}

func (is *idleStream) close() {
	_ = is.str.Close()
	putReader(is.br)
}

// takeIdle returns the most recently used idle stream to owner that is
// still usable, or nil.
func (c *Client) takeIdle(owner peer.ID) *idleStream {
	var stale []*idleStream
	defer func() {
		for _, is := range stale {
			is.close()
		}
	}()
	c.mu.Lock()
	defer c.mu.Unlock()
	list := c.idle[owner]
	for len(list) > 0 {
		is := list[len(list)-1]
		list = list[:len(list)-1]
		if is.str.Conn().IsClosed() || time.Since(is.since) > c.cfg.IdleTimeout {
			stale = append(stale, is)
			continue
		}
		c.setIdle(owner, list)
		return is
	}
	c.setIdle(owner, list)
	return nil
}

func (c *Client) setIdle(owner peer.ID, list []*idleStream) {
	if len(list) == 0 {
		delete(c.idle, owner)
	} else {
		c.idle[owner] = list
	}
}

// putIdle keeps a session stream whose interaction ended cleanly for the
// next interaction with owner.
func (c *Client) putIdle(owner peer.ID, is *idleStream) {
	c.mu.Lock()
	if c.closed || len(c.idle[owner]) >= c.cfg.MaxIdleStreams || is.str.Conn().IsClosed() {
		c.mu.Unlock()
		is.close()
		return
	}
	is.since = time.Now()
	c.idle[owner] = append(c.idle[owner], is)
	if c.sweep == nil {
		c.sweep = time.AfterFunc(c.cfg.IdleTimeout, c.sweepIdle)
	} else if len(c.idle) == 1 && len(c.idle[owner]) == 1 {
		c.sweep.Reset(c.cfg.IdleTimeout)
	}
	c.mu.Unlock()
}

// sweepIdle closes the streams idle for IdleTimeout.
func (c *Client) sweepIdle() {
	var stale []*idleStream
	c.mu.Lock()
	for owner, list := range c.idle {
		keep := list[:0]
		for _, is := range list {
			if time.Since(is.since) >= c.cfg.IdleTimeout || is.str.Conn().IsClosed() {
				stale = append(stale, is)
			} else {
				keep = append(keep, is)
			}
		}
		clear(list[len(keep):])
		c.setIdle(owner, keep)
	}
	if len(c.idle) > 0 && !c.closed {
		c.sweep.Reset(c.cfg.IdleTimeout / 2)
	}
	c.mu.Unlock()
	for _, is := range stale {
		is.close()
	}
}

// idleStreams returns the number of idle streams to owner.
func (c *Client) idleStreams(owner peer.ID) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.idle[owner])
}

// Invoker returns the Invoker of the Things owned by owner.
func (c *Client) Invoker(owner peer.ID) Invoker { return ownerInvoker{c: c, owner: owner} }

type ownerInvoker struct {
	c     *Client
	owner peer.ID
}

func (o ownerInvoker) Invoke(ctx context.Context, req *proto.Message) (Session, error) {
	return o.c.Do(ctx, o.owner, req)
}

// takesFollowUps reports whether the consumer may send further messages
// within the interaction req opens (see allowedInSession).
func takesFollowUps(req *proto.Message) bool {
	return req.Type == proto.MsgInvokeAction || req.Type.Subscribes()
}

// Do opens the interaction req starts with the Thing owned by the node
// owner: it takes an idle stream to owner or opens one, writes req and
// returns the session reading the owner's replies. When the owner cannot
// be reached the session delivers a 502 error message; Do itself fails
// only after Close or for a request it cannot encode. Cancelling ctx ends
// the interaction as Session.Close does: a running action is cancelled
// (cancelAction), the stream is reset.
//
// A one-way request is written on a stream of its own, which is then
// closed; its session has no replies.
func (c *Client) Do(ctx context.Context, owner peer.ID, req *proto.Message) (Session, error) {
	req = req.Clone()
	fc := proto.FrameCodec{Codec: c.codec, Max: c.cfg.MaxMessageSize}
	payload, err := fc.Codec.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("interact: encode request: %w", err)
	}
	if len(payload) > c.cfg.MaxMessageSize {
		return nil, fmt.Errorf("interact: encode request: %w", proto.ErrFrameTooLarge)
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClientClosed
	}
	c.wg.Add(1) // the session's reader, or released below
	c.mu.Unlock()

	unreachable := func(err error) (Session, error) {
		c.wg.Done()
		c.log.Debug("owner unreachable", "owner", owner, "request", req, "err", err)
		if !req.ExpectsReply() {
			return newClosedSession(req, nil), nil
		}
		if errors.Is(err, network.ErrResourceLimitExceeded) {
			return newClosedSession(req, newErrorMessage(req, http.StatusServiceUnavailable, TitleUnavailable, "too many interactions in flight with node %s: %v", owner, err)), nil
		}
		return newClosedSession(req, newErrorMessage(req, http.StatusBadGateway, TitleBadGateway, "the Thing's node %s cannot be reached: %v", owner, err)), nil
	}
	if !req.ExpectsReply() {
		// one-way: a stream of its own, which the owner reads to the
		// end even after our close
		str, err := c.openStream(ctx, owner, protocol.ID(proto.ProtocolInteract))
		if err != nil {
			return unreachable(err)
		}
		_ = str.SetWriteDeadline(time.Now().Add(c.cfg.DialTimeout))
		if err := proto.WriteFrame(str, payload); err != nil {
			_ = str.Reset()
			return unreachable(err)
		}
		_ = str.CloseWrite()
		_ = str.Close()
		c.wg.Done()
		return newClosedSession(req, nil), nil
	}

	queue := c.cfg.QueueSize
	if singleReply(req.Type) {
		queue = 1 // room for the one reply
	}
	s := &remoteSession{
		c:     c,
		owner: owner,
		req:   req,
		fc:    fc,
		out:   make(chan *proto.Message, queue),
		done:  make(chan struct{}),
		read:  make(chan struct{}),
	}
	s.payload = payload
	if err := s.start(ctx); err != nil {
		return unreachable(err)
	}
	c.mu.Lock()
	c.open[s] = struct{}{}
	c.mu.Unlock()
	if ctx.Done() != nil {
		s.stop = context.AfterFunc(ctx, func() { _ = s.Close() })
	} else {
		s.stop = neverCancelled // nothing to watch
	}
	go s.readLoop()
	return s, nil
}

func neverCancelled() bool { return true }

// openStream opens a stream to owner of the first of protos it speaks.
// A failed dial asks the routing for the owner's addresses and, if it
// knows new ones, dials once more (refreshAddrs).
func (c *Client) openStream(ctx context.Context, owner peer.ID, protos ...protocol.ID) (network.Stream, error) {
	dialCtx, cancel := context.WithTimeout(ctx, c.cfg.DialTimeout)
	defer cancel()
	dialCtx = network.WithAllowLimitedConn(dialCtx, "lmos-interact")
	str, err := c.h.NewStream(dialCtx, owner, protos...)
	if err != nil && (c.refreshAddrs(dialCtx, owner, err) || c.clearBackoff(owner, err)) {
		str, err = c.h.NewStream(dialCtx, owner, protos...)
	}
	if err == nil && c.asked != nil {
		c.asked(owner)
	}
	return str, err
}

// backoffRetry is how often a call may clear the dial backoff of an owner
// whose every address is in it (clearBackoff).
const backoffRetry = 5 * time.Second

// clearBackoff lets a call dial an owner whose every address the host
// had given up on for a while: after a few failed dials the swarm's
// backoff grows to minutes (5 s + 1 s × tries²), so an owner that became
// reachable again on a known address — a NATed node that moved to its
// other relay, say — would stay unreachable long after. At most once per
// backoffRetry per owner, so calls do not turn into a dial storm. It
// reports whether it cleared anything.
func (c *Client) clearBackoff(owner peer.ID, dialErr error) bool {
	sw, ok := c.h.Network().(interface{ Backoff() *swarm.DialBackoff })
	if !ok || !errors.Is(dialErr, swarm.ErrDialBackoff) {
		return false
	}
	now := time.Now()
	c.mu.Lock()
	last, seen := c.cleared.Get(owner)
	ok = !seen || now.Sub(last) >= backoffRetry
	if ok {
		c.cleared.Add(owner, now)
	}
	c.mu.Unlock()
	if ok {
		sw.Backoff().Clear(owner)
		c.log.Debug("owner's addresses all in dial backoff; cleared it to dial again", "owner", owner)
	}
	return ok
}

// start writes the request on an idle stream to the owner or, failing
// that, on a new one.
func (s *remoteSession) start(ctx context.Context) error {
	if is := s.c.takeIdle(s.owner); is != nil {
		s.str, s.br, s.session, s.reused = is.str, is.br, true, true
		if err := s.writeRequest(); err == nil {
			return nil
		}
		// the owner let the stream go: a new one is as good
		_ = is.str.Reset()
		putReader(is.br)
	}
	return s.startNew(ctx)
}

// startNew writes the request on a new stream.
func (s *remoteSession) startNew(ctx context.Context) error {
	str, err := s.c.openStream(ctx, s.owner, protocol.ID(proto.ProtocolInteractSession), protocol.ID(proto.ProtocolInteract))
	if err != nil {
		return err
	}
	s.str, s.br, s.reused = str, getReader(str), false
	s.session = str.Protocol() == protocol.ID(proto.ProtocolInteractSession)
	if err := s.writeRequest(); err != nil {
		_ = str.Reset()
		putReader(s.br)
		return err
	}
	return nil
}

// writeRequest writes the request, on a session stream followed by the
// end of the consumer's side when the interaction takes no further
// messages.
func (s *remoteSession) writeRequest() error {
	end := s.session && !takesFollowUps(s.req)
	s.finOut = end
	_ = s.str.SetWriteDeadline(time.Now().Add(s.c.cfg.DialTimeout))
	return writeFrame(s.str, s.payload, end)
}

// remoteSession is the consumer's end of one interaction on a stream.
type remoteSession struct {
	c       *Client
	owner   peer.ID
	req     *proto.Message
	payload []byte // the encoded request
	fc      proto.FrameCodec
	out     chan *proto.Message
	stop    func() bool

	// set by start, then changed only by readLoop (a reused stream that
	// the owner had let go is replaced once), under writeMu
	str     network.Stream
	br      *bufio.Reader
	session bool // the stream is of proto.ProtocolInteractSession
	reused  bool // the stream carried earlier interactions

	hook      endHook       // ends when out is closed
	outClosed bool          // out is closed (readLoop only)
	done      chan struct{} // closed by Close
	read      chan struct{} // closed when readLoop has returned
	closeOnce sync.Once

	writeMu sync.Mutex
	finOut  bool // the consumer's end-of-interaction frame is written (writeMu)
	sent    bool // a message followed the request (writeMu)

	mu      sync.Mutex
	ending  bool // the consumer ended the interaction (unsubscribe, Close)
	over    bool // the owner's side is read to its end (terminal message or end frame)
	closing bool // Close was called
}

func (s *remoteSession) stream() network.Stream {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	return s.str
}

func (s *remoteSession) readLoop() {
	defer s.c.wg.Done()
	defer close(s.read)
	clean := s.readReplies()
	defer func() {
		if !s.outClosed {
			s.closeOut()
		}
	}()
	s.mu.Lock()
	s.ending = true
	s.mu.Unlock()
	s.stop()
	str := s.stream()
	switch {
	case !s.session:
		_ = str.Close()
		putReader(s.br)
	case clean && s.endOut():
		s.c.putIdle(s.owner, &idleStream{str: str, br: s.br})
	default:
		_ = str.Reset()
		putReader(s.br)
	}
	s.c.mu.Lock()
	delete(s.c.open, s)
	s.c.mu.Unlock()
}

// endOut writes the consumer's end-of-interaction frame if it has not
// been written; nothing can be sent after it.
func (s *remoteSession) endOut() bool {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if s.finOut {
		return true
	}
	s.finOut = true
	_ = s.str.SetWriteDeadline(time.Now().Add(s.c.cfg.WriteTimeout))
	_, err := s.str.Write(endFrame)
	return err == nil
}

// markOver records that the owner's side is read to its end, unless the
// consumer abandoned the interaction first (Close resets the stream then).
func (s *remoteSession) markOver() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.over = true
	return true
}

// readReplies delivers the owner's messages and closes s.out. It reports
// whether the owner ended its side cleanly on a session stream (the end
// frame read, after a terminal message or not).
func (s *remoteSession) readReplies() bool {
	first := true
	for {
		p, err := proto.ReadFrame(s.br, s.fc.Max)
		if err == io.EOF && first && s.reused && s.retry() {
			continue // the owner had closed the idle stream: the request is on a new one
		}
		first = false
		end := err == nil && s.session && len(p) == 0
		var m proto.Message
		if err == nil && !end {
			err = s.fc.Codec.Unmarshal(p, &m)
		}
		if err != nil || end {
			// A clean end of a subscription without an error is the owner
			// ending it at the consumer's request (a standalone
			// unsubscribe); every other end before the terminal message is
			// a failure.
			s.mu.Lock()
			quiet := s.ending || s.over || ((end || err == io.EOF) && s.req.Type.Subscribes())
			s.mu.Unlock()
			if !quiet {
				msg := "the stream ended before the final message"
				if err != nil && err != io.EOF {
					msg = "the stream broke: " + err.Error()
				}
				s.deliver(newErrorMessage(s.req, http.StatusBadGateway, TitleBadGateway, "%s", msg))
			}
			return end && s.markOver()
		}
		terminal := m.Ends(s.req)
		if terminal && !s.markOver() {
			return false
		}
		if !s.deliver(&m) {
			return false
		}
		if !terminal {
			continue
		}
		if !s.session {
			return false
		}
		// Nothing follows the terminal message but the owner's end frame.
		// It usually came with it (one write): then the stream is back in
		// the pool before the consumer sees the end of the replies, ready
		// for its next call; otherwise the consumer need not wait for it.
		if s.br.Buffered() == 0 {
			s.closeOut()
		}
		if !s.endOut() {
			return false
		}
		if s.br.Buffered() > 0 {
			// it came with the terminal message: no wait, no deadline
			b, _ := s.br.ReadByte()
			return b == 0
		}
		_ = s.str.SetReadDeadline(time.Now().Add(s.c.cfg.CloseGrace))
		p, err = proto.ReadFrame(s.br, s.fc.Max)
		_ = s.str.SetReadDeadline(time.Time{})
		return err == nil && len(p) == 0
	}
}

// retry writes the request again on a new stream, once: an owner closes
// a session stream that stayed idle too long (or when it shuts down)
// cleanly, without reading a request, so none of this interaction
// reached it.
func (s *remoteSession) retry() bool {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.reused = false
	s.mu.Lock()
	closing := s.closing
	s.mu.Unlock()
	if closing || s.sent {
		return false // a later message went to the old stream
	}
	old, oldBR := s.str, s.br
	ctx, cancel := context.WithTimeout(context.Background(), s.c.cfg.DialTimeout)
	defer cancel()
	if err := s.startNew(ctx); err != nil {
		s.str, s.br = old, oldBR
		return false
	}
	_ = old.Close()
	putReader(oldBR)
	return true
}

func (s *remoteSession) closeOut() {
	s.outClosed = true
	close(s.out)
	s.hook.end()
}

func (s *remoteSession) notifyEnd(fn func(last *proto.Message)) bool { return s.hook.notifyEnd(fn) }

func (s *remoteSession) deliver(m *proto.Message) bool {
	s.hook.queued(m)
	select {
	case s.out <- m:
		return true
	case <-s.done:
		return false
	}
}

// Request implements Session.
func (s *remoteSession) Request() *proto.Message { return s.req }

// Replies implements Session.
func (s *remoteSession) Replies() <-chan *proto.Message { return s.out }

// Send implements Session: it writes m on the stream.
func (s *remoteSession) Send(ctx context.Context, m *proto.Message) error {
	m = fillFromRequest(s.req, m)
	if !allowedInSession(s.req, m) {
		return fmt.Errorf("%w: %s in a %s session", ErrNotInSession, m.Type, s.req.Type)
	}
	s.mu.Lock()
	over := s.ending || s.over
	last := m.Type.Unsubscribes(s.req.Type)
	if last {
		s.ending = true
	}
	s.mu.Unlock()
	if over {
		return ErrSessionClosed
	}
	return s.write(ctx, m, last)
}

// write writes m, followed by the consumer's end-of-interaction frame on a
// session stream when m is its last message.
func (s *remoteSession) write(ctx context.Context, m *proto.Message, last bool) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if s.finOut {
		return ErrSessionClosed
	}
	deadline := time.Now().Add(s.c.cfg.WriteTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = s.str.SetWriteDeadline(deadline)
	end := last && s.session
	if err := writeMessage(s.str, s.fc, m, end); err != nil {
		return fmt.Errorf("interact: send %s: %w", m.Type, err)
	}
	s.finOut, s.sent = end, true
	return nil
}

// Close implements Session: a running action is cancelled with a
// cancelAction, then the stream is reset, unless the owner's side was
// already read to its end (the stream then serves the next interaction).
// It waits for the reader.
func (s *remoteSession) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		over := s.over
		cancelAction := s.req.Type == proto.MsgInvokeAction && !s.over && !s.ending
		s.ending = true
		s.closing = true
		s.mu.Unlock()
		if cancelAction {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = s.write(ctx, fillFromRequest(s.req, &proto.Message{Type: proto.MsgCancelAction}), false)
			cancel()
		}
		close(s.done)
		if !over {
			_ = s.stream().Reset()
		}
		<-s.read
	})
	return nil
}

// refreshAddrs asks the routing for owner's current addresses after the
// dial failed with dialErr, and adds those the host did not know. It
// reports whether there is anything new to dial.
func (c *Client) refreshAddrs(ctx context.Context, owner peer.ID, dialErr error) bool {
	if c.rt == nil || ctx.Err() != nil {
		return false
	}
	// Taken before the lookup: a DHT adds what it finds to the peerstore.
	known := c.h.Peerstore().Addrs(owner)
	ai, err := c.rt.FindPeer(ctx, owner)
	if err != nil {
		c.log.Debug("owner unreachable and not found by the routing", "owner", owner, "dialErr", dialErr, "err", err)
		return false
	}
	fresh := slices.DeleteFunc(ai.Addrs, func(a ma.Multiaddr) bool { return slices.ContainsFunc(known, a.Equal) })
	c.log.Debug("owner unreachable; the routing knows it", "owner", owner, "dialErr", dialErr, "addrs", fmt.Sprint(ai.Addrs), "new", len(fresh))
	if len(fresh) == 0 {
		return false
	}
	c.h.Peerstore().AddAddrs(owner, fresh, peerstore.TempAddrTTL)
	return true
}
