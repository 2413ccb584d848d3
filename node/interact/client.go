package interact

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-libp2p/core/routing"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/lmosnode/lmosnode/proto"
)

// ErrClientClosed is returned by Do after Close.
var ErrClientClosed = errors.New("interact: client closed")

// Client opens interactions with Things owned by other nodes, one libp2p
// stream of proto.ProtocolInteract per interaction.
//
// A Client is safe for concurrent use. Each open session owns one reader
// goroutine, which ends with the session; Close closes every open session
// and waits for them.
type Client struct {
	h     host.Host
	rt    routing.PeerRouting // nil: no second dial with fresh addresses
	cfg   TransportConfig
	codec proto.Codec
	log   *slog.Logger

	wg     sync.WaitGroup
	mu     sync.Mutex
	closed bool
	open   map[*remoteSession]struct{}
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
	return &Client{h: deps.Host, rt: deps.Routing, cfg: cfg.withDefaults(), codec: o.codec, log: o.log, open: map[*remoteSession]struct{}{}}, nil
}

// Close closes every open session (cancelling its interaction at the
// owner) and waits for their readers.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	open := make([]*remoteSession, 0, len(c.open))
	for s := range c.open {
		open = append(open, s)
	}
	c.mu.Unlock()
	for _, s := range open {
		_ = s.Close()
	}
	c.wg.Wait()
	return nil
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

// Do opens the interaction req starts with the Thing owned by the node
// owner: it opens a stream, writes req and returns the session reading the
// owner's replies. When the owner cannot be reached the session delivers a
// 502 error message; Do itself fails only after Close or for a request it
// cannot encode. Cancelling ctx ends the interaction as Session.Close does:
// a running action is cancelled (cancelAction), the stream is reset.
//
// A one-way request is written and the stream closed; its session has no
// replies.
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
	dialCtx, cancel := context.WithTimeout(ctx, c.cfg.DialTimeout)
	defer cancel()
	str, err := c.h.NewStream(network.WithAllowLimitedConn(dialCtx, "lmos-interact"), owner, protocol.ID(proto.ProtocolInteract))
	if err != nil && c.refreshAddrs(dialCtx, owner, err) {
		str, err = c.h.NewStream(network.WithAllowLimitedConn(dialCtx, "lmos-interact"), owner, protocol.ID(proto.ProtocolInteract))
	}
	if err != nil {
		return unreachable(err)
	}
	_ = str.SetWriteDeadline(time.Now().Add(c.cfg.DialTimeout))
	if err := proto.WriteFrame(str, payload); err != nil {
		_ = str.Reset()
		return unreachable(err)
	}
	if !req.ExpectsReply() {
		// one-way: the owner reads the request even after our close
		_ = str.CloseWrite()
		_ = str.Close()
		c.wg.Done()
		return newClosedSession(req, nil), nil
	}
	s := &remoteSession{
		c:    c,
		req:  req,
		str:  str,
		fc:   fc,
		out:  make(chan *proto.Message, c.cfg.QueueSize),
		done: make(chan struct{}),
		read: make(chan struct{}),
	}
	c.mu.Lock()
	c.open[s] = struct{}{}
	c.mu.Unlock()
	s.stop = context.AfterFunc(ctx, func() { _ = s.Close() })
	go s.readLoop()
	return s, nil
}

// remoteSession is the consumer's end of one stream.
type remoteSession struct {
	c    *Client
	req  *proto.Message
	str  network.Stream
	fc   proto.FrameCodec
	out  chan *proto.Message
	stop func() bool

	done      chan struct{} // closed by Close
	read      chan struct{} // closed when readLoop has returned
	closeOnce sync.Once

	writeMu sync.Mutex
	mu      sync.Mutex
	ending  bool // the consumer ended the interaction (unsubscribe, Close)
	over    bool // the terminal message was read
}

func (s *remoteSession) readLoop() {
	defer s.c.wg.Done()
	defer close(s.read)
	defer close(s.out)
	br := getReader(s.str)
	defer putReader(br)
	for {
		var m proto.Message
		err := s.fc.ReadMessage(br, &m)
		if err != nil {
			// A clean end of a subscription without an error is the owner
			// ending it at the consumer's request (a standalone
			// unsubscribe); every other end before the terminal message is
			// a failure.
			s.mu.Lock()
			quiet := s.ending || s.over || (err == io.EOF && s.req.Type.Subscribes())
			s.mu.Unlock()
			if !quiet {
				msg := "the stream ended before the final message"
				if err != io.EOF {
					msg = "the stream broke: " + err.Error()
				}
				s.deliver(newErrorMessage(s.req, http.StatusBadGateway, TitleBadGateway, "%s", msg))
			}
			break
		}
		terminal := m.Ends(s.req)
		if terminal {
			s.mu.Lock()
			s.over = true
			s.mu.Unlock()
		}
		if !s.deliver(&m) || terminal {
			break
		}
	}
	s.mu.Lock()
	s.ending = true
	s.mu.Unlock()
	s.stop()
	_ = s.str.Close()
	s.c.mu.Lock()
	delete(s.c.open, s)
	s.c.mu.Unlock()
}

func (s *remoteSession) deliver(m *proto.Message) bool {
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
	if m.Type.Unsubscribes(s.req.Type) {
		s.ending = true
	}
	s.mu.Unlock()
	if over {
		return ErrSessionClosed
	}
	return s.write(ctx, m)
}

func (s *remoteSession) write(ctx context.Context, m *proto.Message) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	deadline := time.Now().Add(s.c.cfg.WriteTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = s.str.SetWriteDeadline(deadline)
	if err := s.fc.WriteMessage(s.str, m); err != nil {
		return fmt.Errorf("interact: send %s: %w", m.Type, err)
	}
	return nil
}

// Close implements Session: a running action is cancelled with a
// cancelAction, then the stream is reset. It waits for the reader.
func (s *remoteSession) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		cancelAction := s.req.Type == proto.MsgInvokeAction && !s.over && !s.ending
		s.ending = true
		s.mu.Unlock()
		if cancelAction {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = s.write(ctx, fillFromRequest(s.req, &proto.Message{Type: proto.MsgCancelAction}))
			cancel()
		}
		close(s.done)
		_ = s.str.Reset()
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
