package wsgateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/coder/websocket"
	"github.com/google/uuid"

	"github.com/lmosnode/lmosnode/node/interact"
	"github.com/lmosnode/lmosnode/proto"
)

// agentBackend is the interact.Backend of a Thing registered by an agent
// socket: it forwards each request to the agent and relays the agent's
// replies.
type agentBackend struct {
	conn    *agentConn
	thingID string
}

func (b *agentBackend) problem(status int, title, format string, args ...any) *proto.Problem {
	return &proto.Problem{Type: proto.ProblemTypeBlank, Status: status, Title: title, Detail: fmt.Sprintf(format, args...)}
}

// Handle implements interact.Backend.
func (b *agentBackend) Handle(ctx context.Context, x *interact.Exchange) error {
	c := b.conn
	req := x.Request()
	if c.sock.ctx.Err() != nil {
		return b.problem(http.StatusServiceUnavailable, interact.TitleUnavailable,
			"the agent serving Thing %q is not connected", b.thingID)
	}
	// the agent sees the consumer's correlationID unless another call of
	// this socket uses it (the engine's shared feeds, writeMultipleProperties)
	fwd := req.Clone()
	corr := req.Correlation()
	p := &pendingCall{ch: make(chan *proto.Message, c.g.cfg.InputQueueSize), done: make(chan struct{})}
	c.mu.Lock()
	if _, busy := c.pending[corr]; busy || corr == "" {
		corr = uuid.NewString()
	}
	c.pending[corr] = p
	c.mu.Unlock()
	fwd.CorrelationID = corr
	var wg sync.WaitGroup
	defer func() {
		close(p.done)
		wg.Wait()
		c.mu.Lock()
		delete(c.pending, corr)
		c.mu.Unlock()
	}()
	if err := c.sock.send(ctx, fwd, websocket.MessageText); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return b.problem(http.StatusBadGateway, interact.TitleBadGateway,
			"forwarding %s to the agent of Thing %q (correlationID %q): %v", req.Type, b.thingID, req.Correlation(), err)
	}
	if req.Type == proto.MsgInvokeAction && req.Stream && x.Inputs() != nil {
		wg.Go(func() { b.relayInputs(ctx, p.done, req, corr, x.Inputs()) })
	}
	for {
		select {
		case m := <-p.ch:
			m.CorrelationID, m.ThingID = req.Correlation(), req.ThingID
			if m.Type == proto.MsgError {
				pr := m.Problem()
				if pr.Status < 400 || pr.Status > 599 {
					pr.Status = http.StatusBadGateway
				}
				return pr
			}
			if err := x.Reply(m); err != nil {
				b.cancelAtAgent(req, corr)
				if errors.Is(err, interact.ErrSessionClosed) {
					return err
				}
				return b.problem(http.StatusBadGateway, interact.TitleBadGateway,
					"the agent of Thing %q answered %s (correlationID %q) wrongly: %v", b.thingID, req.Type, req.Correlation(), err)
			}
			if m.Ends(req) {
				return nil
			}
		case <-ctx.Done():
			b.cancelAtAgent(req, corr)
			return ctx.Err()
		case <-c.sock.ctx.Done():
			return b.problem(http.StatusBadGateway, interact.TitleBadGateway,
				"the agent serving Thing %q disconnected during %s (correlationID %q)", b.thingID, req.Type, req.Correlation())
		}
	}
}

// relayInputs forwards the input chunks of a streaming session to the
// agent, then streamEnd.
func (b *agentBackend) relayInputs(ctx context.Context, done <-chan struct{}, req *proto.Message, corr string, in <-chan proto.Value) {
	for {
		select {
		case v, ok := <-in:
			m := proto.NewMessage(req.ThingID, proto.MsgStreamInput)
			if !ok {
				m.Type = proto.MsgStreamEnd
			}
			m.Name, m.CorrelationID, m.Input = req.Name, corr, v
			if err := b.conn.sock.send(ctx, m, websocket.MessageText); err != nil || !ok {
				return
			}
		case <-done:
			return
		case <-ctx.Done():
			return
		}
	}
}

// cancelAtAgent tells the agent that an interaction it serves is over on
// the node's side with the message that cancels it
// (proto.MessageType.CancelledBy): cancelAction for an invocation,
// unsubscribeEvent or unobserveProperty for a feed. Reads and writes have
// nothing to cancel.
// It does not wait for room in a full write queue.
func (b *agentBackend) cancelAtAgent(req *proto.Message, corr string) {
	typ := req.Type.CancelledBy()
	if typ == "" {
		return
	}
	m := proto.NewMessage(req.ThingID, typ)
	m.Name, m.CorrelationID = req.Name, corr
	if ok, err := b.conn.sock.trySend(m, websocket.MessageText); !ok || err != nil {
		b.conn.log.Debug("cannot tell the agent an interaction ended", "message", m, "err", err)
	}
}
