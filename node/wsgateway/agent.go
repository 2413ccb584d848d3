package wsgateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"

	"github.com/coder/websocket"
	"github.com/google/uuid"

	"github.com/lmosnode/lmosnode/node/interact"
	"github.com/lmosnode/lmosnode/proto"
)

// Message types of lmosnode's agent registration extension (see the
// package documentation). They travel only on agent sockets, as JSON text
// frames, and are not proto.MessageTypes: a relay never sees them.
const (
	MsgRegisterThing     = "registerThing"     // agent → node: data is the TD
	MsgThingRegistered   = "thingRegistered"   // node → agent: the registration took effect
	MsgUnregisterThing   = "unregisterThing"   // agent → node: withdraw thingID
	MsgThingUnregistered = "thingUnregistered" // node → agent: the Thing is withdrawn
)

// Registrar is what the node does for an AgentGateway: publish a Thing an
// agent registers, with the backend that forwards its interactions to the
// agent, and withdraw it. The node implements it with its directory and
// its interact.Engine (SetBackend). Implementations are safe for
// concurrent use.
type Registrar interface {
	// Register publishes td (validating and signing it as the node does
	// for any Thing it owns) and makes backend serve its interactions. ctx
	// lasts as long as the agent's socket and carries the agent's identity
	// (interact.CallerFrom, see CallerFunc). A
	// second Register of the same id replaces the first. An error refuses
	// the registration; a *proto.Problem keeps its status and title for
	// the agent.
	Register(ctx context.Context, td *proto.TD, backend interact.Backend) error
	// Unregister withdraws the Thing thingID and detaches its backend.
	Unregister(ctx context.Context, thingID string) error
}

// AgentGateway lets agents serve Things over WebSocket: an agent connects
// (sub-protocol lmosprotocol), registers Things with registerThing, and
// answers the requests the node forwards to it. Mount it at the node's
// agent endpoint (e.g. /ws/agent). It is safe for concurrent use.
type AgentGateway struct {
	reg    Registrar
	caller CallerFunc
	cfg    Config
	log    *slog.Logger
	conns  conns

	mu     sync.Mutex
	owners map[string]*agentConn // thingID → the socket that registered it last
}

// NewAgentGateway returns an agent gateway that publishes Things with
// deps.Registrar.
func NewAgentGateway(deps AgentDeps, cfg Config, opts ...Option) (*AgentGateway, error) {
	if deps.Registrar == nil {
		return nil, errors.New("wsgateway: AgentDeps.Registrar is nil")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Caller == nil {
		deps.Caller = newCaller
	}
	o := newOptions(opts)
	return &AgentGateway{reg: deps.Registrar, caller: deps.Caller, cfg: cfg.withDefaults(), log: o.log.With("gateway", "ws-agent"),
		owners: map[string]*agentConn{}}, nil
}

// Close closes every agent socket and waits for their handlers. The
// Things stay registered; their backends answer 503 until an agent
// registers them again (on another node instance, after a restart).
func (g *AgentGateway) Close() error {
	g.conns.closeAll()
	return nil
}

// ServeHTTP upgrades the request to a WebSocket speaking lmosprotocol and
// serves the agent until the socket closes.
func (g *AgentGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ws := accept(w, r, g.cfg, g.log, &g.conns)
	if ws == nil {
		return
	}
	caller := g.caller(r)
	log := g.log.With("caller", caller, "remote", r.RemoteAddr)
	s := newSocket(interact.WithCaller(context.Background(), caller), ws, g.cfg, log)
	if !g.conns.add(s) {
		s.close(websocket.StatusGoingAway, "node shutting down")
		return
	}
	defer g.conns.remove(s)
	c := &agentConn{g: g, sock: s, log: log, pending: map[string]*pendingCall{}}
	c.serve()
}

// agentConn is one agent socket.
type agentConn struct {
	g    *AgentGateway
	sock *socket
	log  *slog.Logger

	mu      sync.Mutex
	pending map[string]*pendingCall // forwarded requests by the correlationID the agent sees
}

// pendingCall is one backend call waiting for the agent's replies.
type pendingCall struct {
	ch   chan *proto.Message
	done chan struct{} // closed when the call has returned
}

func (c *agentConn) serve() {
	defer c.sock.close(websocket.StatusNormalClosure, "")
	defer func() {
		c.sock.cancel() // backends see the agent gone
		c.g.mu.Lock()
		for id, owner := range c.g.owners {
			if owner == c {
				delete(c.g.owners, id)
			}
		}
		c.g.mu.Unlock()
	}()
	for {
		typ, data, err := c.sock.read()
		if err != nil {
			c.log.Debug("agent socket read ended", "err", err)
			return
		}
		if typ == websocket.MessageText {
			var head struct {
				MessageType string `json:"messageType"`
			}
			if json.Unmarshal(data, &head) == nil {
				switch head.MessageType {
				case MsgRegisterThing, MsgUnregisterThing:
					c.registration(head.MessageType, data)
					continue
				}
			}
		}
		m, bad := decode(typ, data)
		if bad != nil {
			c.toAgent(bad)
			continue
		}
		c.deliver(m)
	}
}

// toAgent sends m to the agent, waiting for room.
func (c *agentConn) toAgent(m *proto.Message) {
	if err := c.sock.send(c.sock.ctx, m, websocket.MessageText); err != nil && !errors.Is(err, errSocketClosed) {
		c.log.Warn("cannot send to agent", "message", m, "err", err)
	}
}

// deliver hands a reply of the agent to the backend call waiting for it.
// It waits while that call's queue is full: the agent's socket is one
// ordered stream, and a consumer that does not keep up slows it down
// until the consumer gateway's write timeout drops that consumer, which
// ends the call.
func (c *agentConn) deliver(m *proto.Message) {
	if !m.Type.FromThing() {
		e := proto.NewError(m, http.StatusBadRequest, interact.TitleBadRequest,
			fmt.Sprintf("an agent socket carries replies and %s/%s; %s (Thing %q, correlationID %q) is a consumer request: send it to the consumer endpoint",
				MsgRegisterThing, MsgUnregisterThing, m.Type, m.ThingID, m.Correlation()))
		c.toAgent(e)
		return
	}
	c.mu.Lock()
	p := c.pending[m.CorrelationID]
	c.mu.Unlock()
	if p == nil {
		// late replies after a cancel or timeout are normal; nobody waits
		c.log.Debug("agent reply for no pending request dropped", "message", m)
		return
	}
	select {
	case p.ch <- m:
	case <-p.done:
	case <-c.sock.ctx.Done():
	}
}

// registration handles registerThing and unregisterThing.
func (c *agentConn) registration(typ string, data []byte) {
	var msg struct {
		ThingID   string          `json:"thingID"`
		MessageID string          `json:"messageID"`
		Data      json.RawMessage `json:"data"`
	}
	// encoding/json matches names case-insensitively: thingId, messageId
	// are accepted too
	if err := json.Unmarshal(data, &msg); err != nil {
		c.registrationError(msg.ThingID, msg.MessageID, http.StatusBadRequest, interact.TitleBadRequest,
			fmt.Sprintf("bad %s envelope: %v", typ, err))
		return
	}
	if typ == MsgUnregisterThing {
		c.unregister(msg.ThingID, msg.MessageID)
		return
	}
	if len(msg.Data) == 0 {
		c.registrationError(msg.ThingID, msg.MessageID, http.StatusBadRequest, interact.TitleBadRequest,
			"registerThing: data (the Thing Description) is missing")
		return
	}
	td, err := proto.ParseTD(msg.Data)
	switch {
	case err != nil:
		c.registrationError(msg.ThingID, msg.MessageID, http.StatusBadRequest, interact.TitleBadRequest,
			fmt.Sprintf("registerThing: %v", err))
		return
	case td.ID == "":
		c.registrationError(msg.ThingID, msg.MessageID, http.StatusBadRequest, interact.TitleBadRequest,
			"registerThing: the Thing Description has no id")
		return
	case msg.ThingID != "" && msg.ThingID != td.ID:
		c.registrationError(msg.ThingID, msg.MessageID, http.StatusBadRequest, interact.TitleBadRequest,
			fmt.Sprintf("registerThing: thingID %q differs from the TD's id %q", msg.ThingID, td.ID))
		return
	}
	b := &agentBackend{conn: c, thingID: td.ID}
	if err := c.g.reg.Register(c.sock.ctx, td, b); err != nil {
		status, title := http.StatusBadRequest, "Registration refused"
		var p *proto.Problem
		if errors.As(err, &p) {
			status, title = p.Status, p.Title
		}
		c.registrationError(td.ID, msg.MessageID, status, title, fmt.Sprintf("registerThing %q: %v", td.ID, err))
		return
	}
	c.g.mu.Lock()
	c.g.owners[td.ID] = c
	c.g.mu.Unlock()
	c.log.Info("agent registered a Thing", "thingID", td.ID)
	c.sendRegistration(MsgThingRegistered, td.ID, msg.MessageID)
}

func (c *agentConn) unregister(thingID, messageID string) {
	c.g.mu.Lock()
	owner := c.g.owners[thingID]
	if owner == c {
		delete(c.g.owners, thingID)
	}
	c.g.mu.Unlock()
	if owner != c {
		c.registrationError(thingID, messageID, http.StatusNotFound, interact.TitleThingNotFound,
			fmt.Sprintf("unregisterThing: Thing %q is not registered by this socket", thingID))
		return
	}
	if err := c.g.reg.Unregister(c.sock.ctx, thingID); err != nil {
		c.registrationError(thingID, messageID, http.StatusInternalServerError, interact.TitleInternal,
			fmt.Sprintf("unregisterThing %q: %v", thingID, err))
		return
	}
	c.log.Info("agent unregistered a Thing", "thingID", thingID)
	c.sendRegistration(MsgThingUnregistered, thingID, messageID)
}

// sendRegistration sends the acknowledgement of a registration message.
func (c *agentConn) sendRegistration(typ, thingID, correlationID string) {
	ack, err := json.Marshal(map[string]string{
		"thingID":       thingID,
		"messageID":     uuid.NewString(),
		"messageType":   typ,
		"correlationID": correlationID,
	})
	if err != nil { // impossible: strings only
		return
	}
	select {
	case c.sock.out <- frame{typ: websocket.MessageText, data: ack}:
	case <-c.sock.ctx.Done():
	}
}

func (c *agentConn) registrationError(thingID, correlationID string, status int, title, detail string) {
	e := proto.NewError(nil, status, title, detail)
	e.ThingID, e.CorrelationID = thingID, correlationID
	c.toAgent(e)
}
