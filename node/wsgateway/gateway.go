package wsgateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"

	"github.com/coder/websocket"

	"github.com/lmosnode/lmosnode/node/interact"
	"github.com/lmosnode/lmosnode/proto"
)

// Gateway serves consumers over WebSocket: every socket carries any number
// of concurrent interactions with the Things an Invoker reaches (see the
// package documentation for the wire protocol). Mount it at the node's
// consumer endpoint (e.g. /ws). It is safe for concurrent use.
type Gateway struct {
	inv    interact.Invoker
	caller CallerFunc
	cfg    Config
	log    *slog.Logger
	conns  conns
}

// NewGateway returns a consumer gateway that opens interactions with
// deps.Invoker (the node's router).
func NewGateway(deps GatewayDeps, cfg Config, opts ...Option) (*Gateway, error) {
	if deps.Invoker == nil {
		return nil, errors.New("wsgateway: GatewayDeps.Invoker is nil")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Caller == nil {
		deps.Caller = newCaller
	}
	o := newOptions(opts)
	return &Gateway{inv: deps.Invoker, caller: deps.Caller, cfg: cfg.withDefaults(), log: o.log.With("gateway", "ws-consumer")}, nil
}

// Close closes every socket (which ends all their interactions) and waits
// for their handlers. Later connections are refused with 503.
func (g *Gateway) Close() error {
	g.conns.closeAll()
	return nil
}

// ServeHTTP upgrades the request to a WebSocket speaking lmosprotocol and
// serves it until it closes.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ws := accept(w, r, g.cfg, g.log, &g.conns)
	if ws == nil {
		return
	}
	caller := g.caller(r)
	log := g.log.With("caller", caller, "remote", r.RemoteAddr)
	s := newSocket(context.Background(), ws, g.cfg, log)
	if !g.conns.add(s) {
		s.close(websocket.StatusGoingAway, "node shutting down")
		return
	}
	defer g.conns.remove(s)
	c := &consumerConn{
		g:        g,
		sock:     s,
		ctx:      interact.WithCaller(s.ctx, caller),
		log:      log,
		sessions: map[string]*wsSession{},
	}
	c.serve()
}

// consumerConn is one consumer socket.
type consumerConn struct {
	g    *Gateway
	sock *socket
	ctx  context.Context // the socket's lifetime, carrying the caller
	log  *slog.Logger
	wg   sync.WaitGroup // pumps and senders

	mu       sync.Mutex
	sessions map[string]*wsSession // open interactions by correlation
}

// wsSession is one open interaction of a socket.
type wsSession struct {
	req  *proto.Message
	s    interact.Session
	typ  websocket.MessageType // frame type (codec) of the request, used for its replies
	in   chan inbound          // follow-ups for Send
	done chan struct{}         // closed when the interaction is over

	space      chan struct{} // the sender took a follow-up (capacity 1)
	senderDone chan struct{} // closed when the sender has returned; nil without one
	ended      bool          // guarded by consumerConn.mu; set before done is closed
}

type inbound struct {
	m   *proto.Message
	typ websocket.MessageType
}

func (c *consumerConn) serve() {
	defer func() {
		c.sock.cancel()
		c.mu.Lock()
		for _, ws := range c.sessions {
			if ws.s != nil {
				_ = ws.s.Close()
			}
		}
		c.mu.Unlock()
		c.wg.Wait()
		c.sock.close(websocket.StatusNormalClosure, "")
	}()
	for {
		typ, data, err := c.sock.read()
		if err != nil {
			c.log.Debug("websocket read ended", "err", err)
			return
		}
		m, bad := decode(typ, data)
		if bad != nil {
			c.reply(bad, typ)
			continue
		}
		c.handle(m, typ)
	}
}

// reply sends m from the reader goroutine (bad envelopes, conflicts): it
// waits for room, so a consumer that floods errors and reads nothing is
// slowed down.
func (c *consumerConn) reply(m *proto.Message, typ websocket.MessageType) {
	if err := c.sock.send(c.ctx, m, typ); err != nil && !errors.Is(err, errSocketClosed) && c.ctx.Err() == nil {
		c.log.Warn("cannot send reply", "message", m, "err", err)
	}
}

func (c *consumerConn) handle(m *proto.Message, typ websocket.MessageType) {
	if m.Type.FollowUp() {
		if ws := c.target(m); ws != nil && c.forward(ws, inbound{m, typ}) {
			return
		}
		// nothing open on this socket, or it ended meanwhile: the invoker
		// answers it on its own
		c.standalone(m, typ)
		return
	}
	corr := m.Correlation()
	if corr == "" || m.OneWay {
		c.standalone(m, typ)
		return
	}
	c.mu.Lock()
	if _, busy := c.sessions[corr]; busy {
		c.mu.Unlock()
		c.reply(proto.NewError(m, http.StatusConflict, interact.TitleConflict,
			fmt.Sprintf("correlationID %q already names an open interaction on this socket (Thing %q)", corr, m.ThingID)), typ)
		return
	}
	ws := &wsSession{req: m, typ: typ, in: make(chan inbound, c.g.cfg.InputQueueSize), done: make(chan struct{}), space: make(chan struct{}, 1)}
	c.sessions[corr] = ws
	c.mu.Unlock()
	c.wg.Add(1)
	go c.run(corr, ws)
}

// target finds the open interaction a follow-up belongs to: by
// correlationID, or, for an unsubscribe/unobserve without one (as in the
// spec's examples), the subscriptions of the same Thing and affordance.
func (c *consumerConn) target(m *proto.Message) *wsSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m.CorrelationID != "" {
		return c.sessions[m.CorrelationID]
	}
	if !m.Type.EndsSubscription() {
		return nil
	}
	for _, ws := range c.sessions {
		r := ws.req
		if r.ThingID == m.ThingID && r.Type.CancelledBy() == m.Type && (!m.Type.Named() || r.Name == m.Name) {
			return ws
		}
	}
	return nil
}

// forward queues a follow-up for the session ws, waiting while its queue
// is full. It returns false when ws has ended before taking f. Pushes
// happen under c.mu and check ws.ended, so that run, which sets ended
// under c.mu and then drains the queue, loses no follow-up.
func (c *consumerConn) forward(ws *wsSession, f inbound) bool {
	for {
		c.mu.Lock()
		if ws.ended {
			c.mu.Unlock()
			return false
		}
		select {
		case ws.in <- f:
			c.mu.Unlock()
			return true
		default:
		}
		c.mu.Unlock()
		select {
		case <-ws.space:
		case <-ws.done:
		case <-c.ctx.Done():
			return true // the socket is over: nothing to answer
		}
	}
}

// standalone opens an interaction that is not tracked by correlation: a
// one-way request, a follow-up for no interaction of this socket (the
// invoker may know it: queryAction of a finished action), a request
// without any id (the invoker refuses it).
func (c *consumerConn) standalone(m *proto.Message, typ websocket.MessageType) {
	ws := &wsSession{req: m, typ: typ, done: make(chan struct{})}
	c.wg.Add(1)
	go c.run("", ws)
}

// run opens the interaction of ws (in its own goroutine: the invoker may
// have to find the owner node first, which must not hold up the socket's
// other interactions), then relays its follow-ups and replies. corr is
// the key of ws in the socket's sessions, "" for an untracked one.
func (c *consumerConn) run(corr string, ws *wsSession) {
	defer c.wg.Done()
	defer func() {
		c.mu.Lock()
		ws.ended = true
		if corr != "" && c.sessions[corr] == ws {
			delete(c.sessions, corr)
		}
		c.mu.Unlock()
		close(ws.done)
		if ws.senderDone != nil {
			<-ws.senderDone
		}
		// follow-ups that came too late for the interaction (a
		// queryAction right after the final status) go to the invoker on
		// their own
		for {
			select {
			case f := <-ws.in:
				c.standalone(f.m, f.typ)
				continue
			default:
			}
			break
		}
		if ws.s != nil {
			_ = ws.s.Close()
		}
	}()
	m := ws.req
	s, err := c.g.inv.Invoke(c.ctx, m)
	if err != nil {
		if !m.OneWay && c.ctx.Err() == nil {
			c.reply(proto.NewError(m, http.StatusServiceUnavailable, interact.TitleUnavailable,
				fmt.Sprintf("cannot open %s on Thing %q (correlationID %q): %v", m.Type, m.ThingID, m.Correlation(), err)), ws.typ)
		}
		return
	}
	c.mu.Lock()
	ws.s = s
	c.mu.Unlock()
	if ws.in != nil {
		ws.senderDone = make(chan struct{})
		go c.sender(ws)
	}
	c.pump(ws)
}

// pump relays an interaction's replies to the socket. Replies of
// invocations and reads wait for room in the write queue (back-pressure
// reaches the Thing); notifications of a subscription never wait: when
// the queue is full the subscription is dropped with a 503 error.
func (c *consumerConn) pump(ws *wsSession) {
	sub := ws.req.Type.Subscribes()
	for m := range ws.s.Replies() {
		if sub {
			ok, err := c.sock.trySend(m, ws.typ)
			if err != nil {
				c.log.Warn("cannot encode notification", "message", m, "err", err)
				continue
			}
			if !ok {
				c.log.Info("slow consumer: subscription dropped", "request", ws.req)
				_ = ws.s.Close()
				e := proto.NewError(ws.req, http.StatusServiceUnavailable, interact.TitleUnavailable,
					fmt.Sprintf("subscriber too slow: the socket's write queue is full; %s on Thing %q (correlationID %q) ended, subscribe again",
						ws.req.Type, ws.req.ThingID, ws.req.Correlation()))
				_ = c.sock.send(c.ctx, e, ws.typ)
				return
			}
			continue
		}
		err := c.sock.send(c.ctx, m, ws.typ)
		if err != nil && (errors.Is(err, errSocketClosed) || c.ctx.Err() != nil) {
			return
		}
		if err != nil { // the reply does not encode: end the interaction with an error the consumer can read
			c.log.Warn("cannot send reply", "message", m, "err", err)
			_ = ws.s.Close()
			e := proto.NewError(ws.req, http.StatusBadGateway, interact.TitleBadGateway,
				fmt.Sprintf("a reply of Thing %q for %s (correlationID %q) cannot be encoded: %v", ws.req.ThingID, ws.req.Type, ws.req.Correlation(), err))
			_ = c.sock.send(c.ctx, e, ws.typ)
			return
		}
	}
}

// sender passes the consumer's follow-ups to the session in order. A
// follow-up the session refuses is answered with an error; one that
// arrives after the interaction ended goes to the invoker on its own.
func (c *consumerConn) sender(ws *wsSession) {
	defer close(ws.senderDone)
	for {
		select {
		case <-ws.done:
			return
		case <-c.ctx.Done():
			return
		case f := <-ws.in:
			select {
			case ws.space <- struct{}{}:
			default:
			}
			err := ws.s.Send(c.ctx, f.m)
			switch {
			case err == nil:
			case errors.Is(err, interact.ErrSessionClosed):
				c.standalone(f.m, f.typ)
			case c.ctx.Err() != nil:
				return
			default:
				status, title := http.StatusBadRequest, interact.TitleBadRequest
				if errors.Is(err, interact.ErrNotAccepted) {
					status, title = http.StatusConflict, interact.TitleConflict
				}
				e := proto.NewError(f.m, status, title,
					fmt.Sprintf("%s for %s on Thing %q (correlationID %q): %v", f.m.Type, ws.req.Type, ws.req.ThingID, ws.req.Correlation(), err))
				if e.CorrelationID == "" {
					e.CorrelationID = ws.req.Correlation()
				}
				_ = c.sock.send(c.ctx, e, f.typ)
			}
		}
	}
}
