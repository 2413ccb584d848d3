package wsgateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/lmosnode/lmosnode/node/httpapi"
	"github.com/lmosnode/lmosnode/node/interact"
	"github.com/lmosnode/lmosnode/proto"
)

// offersSubprotocol reports whether the handshake request offers the LMOS
// sub-protocol.
func offersSubprotocol(r *http.Request) bool {
	for _, v := range r.Header.Values("Sec-WebSocket-Protocol") {
		for p := range strings.SplitSeq(v, ",") {
			if strings.TrimSpace(p) == proto.WebSocketSubprotocol {
				return true
			}
		}
	}
	return false
}

// accept upgrades r to a WebSocket speaking lmosprotocol, or answers it
// with an HTTP error and returns nil.
func accept(w http.ResponseWriter, r *http.Request, opts Config, log *slog.Logger, cs *conns) *websocket.Conn {
	if cs.isClosed() {
		httpapi.WriteProblem(w, r, &proto.Problem{Status: http.StatusServiceUnavailable, Title: interact.TitleUnavailable, Detail: "the node is shutting down"})
		return nil
	}
	if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") && !offersSubprotocol(r) {
		httpapi.WriteProblem(w, r, &proto.Problem{Status: http.StatusBadRequest, Title: interact.TitleBadRequest,
			Detail: fmt.Sprintf("this endpoint speaks only the WebSocket sub-protocol %q; offer it in Sec-WebSocket-Protocol", proto.WebSocketSubprotocol)})
		return nil
	}
	var ws *websocket.Conn
	var err error
	// Accept answers a refused handshake (426, 403, …) with plain text:
	// AsProblems makes it a problem.
	httpapi.AsProblems(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err = websocket.Accept(limitedHijack{w, proto.MaxMessageSize}, r, &websocket.AcceptOptions{
			Subprotocols:   []string{proto.WebSocketSubprotocol},
			OriginPatterns: opts.OriginPatterns,
		})
	})).ServeHTTP(w, r)
	if err != nil { // answered already
		log.Debug("websocket handshake refused", "remote", r.RemoteAddr, "err", err)
		return nil
	}
	if ws.Subprotocol() != proto.WebSocketSubprotocol { // impossible: checked above
		_ = ws.Close(websocket.StatusPolicyViolation, "sub-protocol lmosprotocol required")
		return nil
	}
	ws.SetReadLimit(proto.MaxMessageSize)
	return ws
}

// frame is one encoded message waiting for the writer.
type frame struct {
	typ  websocket.MessageType
	data []byte
}

// socket is the plumbing shared by both gateways: one WebSocket, its
// bounded write queue and the goroutine that drains it. Its context ends
// when the socket does (read or write failure, close, gateway closed).
type socket struct {
	ws     *websocket.Conn
	out    chan frame
	ctx    context.Context
	cancel context.CancelFunc
	opts   Config
	log    *slog.Logger
	wg     sync.WaitGroup // the writer and the pinger
	tooBig atomic.Bool    // a frame header declared more than the read limit
}

func newSocket(parent context.Context, ws *websocket.Conn, opts Config, log *slog.Logger) *socket {
	ctx, cancel := context.WithCancel(parent)
	s := &socket{ws: ws, out: make(chan frame, opts.QueueSize), ctx: ctx, cancel: cancel, opts: opts, log: log}
	s.wg.Go(s.writeLoop)
	if opts.PingInterval > 0 {
		s.wg.Go(s.pingLoop)
	}
	return s
}

// pingLoop pings the peer every PingInterval and closes the socket when no
// pong comes back within WriteTimeout: a peer that vanished without
// closing (a NAT or firewall dropped the connection, the host died) is
// noticed, its interactions end, and the Things of a vanished agent
// answer 503.
func (s *socket) pingLoop() {
	t := time.NewTicker(s.opts.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(s.ctx, s.opts.WriteTimeout)
			err := s.ws.Ping(ctx)
			cancel()
			if err != nil {
				if s.ctx.Err() == nil {
					s.log.Info("websocket peer does not answer pings; closing the socket", "err", err)
				}
				s.cancel()
				return
			}
		}
	}
}

func (s *socket) writeLoop() {
	for {
		select {
		case <-s.ctx.Done():
			return
		case f := <-s.out:
			ctx, cancel := context.WithTimeout(s.ctx, s.opts.WriteTimeout)
			err := s.ws.Write(ctx, f.typ, f.data)
			cancel()
			if err != nil {
				s.log.Debug("websocket write failed; closing the socket", "err", err)
				s.cancel()
				return
			}
		}
	}
}

// encode encodes m with the codec of the frame type: JSON in text
// frames, CBOR in binary frames.
func encode(m *proto.Message, typ websocket.MessageType) (frame, error) {
	c := proto.JSON
	if typ == websocket.MessageBinary {
		c = proto.CBOR
	}
	data, err := c.Marshal(m)
	if err != nil {
		return frame{}, fmt.Errorf("encode %s of Thing %q (correlationID %q): %w", m.Type, m.ThingID, m.CorrelationID, err)
	}
	return frame{typ: typ, data: data}, nil
}

// errSocketClosed: the socket is gone.
var errSocketClosed = errors.New("wsgateway: socket closed")

// send queues m, waiting while the queue is full until ctx or the socket
// ends.
func (s *socket) send(ctx context.Context, m *proto.Message, typ websocket.MessageType) error {
	f, err := encode(m, typ)
	if err != nil {
		return err
	}
	select {
	case s.out <- f:
		return nil
	case <-s.ctx.Done():
		return errSocketClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// trySend queues m if there is room and reports whether it did.
func (s *socket) trySend(m *proto.Message, typ websocket.MessageType) (bool, error) {
	f, err := encode(m, typ)
	if err != nil {
		return false, err
	}
	select {
	case s.out <- f:
		return true, nil
	default:
		return false, nil
	}
}

// read reads the next frame.
func (s *socket) read() (websocket.MessageType, []byte, error) {
	typ, data, err := s.ws.Read(s.ctx)
	if errors.Is(err, errFrameTooBig) {
		s.tooBig.Store(true)
	}
	return typ, data, err
}

// close ends the socket and waits for the writer. After a read that
// brought a frame header over the read limit, the code is 1009.
func (s *socket) close(code websocket.StatusCode, reason string) {
	s.cancel()
	s.wg.Wait()
	if s.tooBig.Load() {
		code, reason = websocket.StatusMessageTooBig, "message larger than the read limit"
	}
	_ = s.ws.Close(code, reason)
}

// decode decodes one frame into a message. On failure it returns an error
// message that names what it could recover of the envelope (thingID,
// correlationID), ready to send back.
func decode(typ websocket.MessageType, data []byte) (*proto.Message, *proto.Message) {
	c := proto.JSON
	if typ == websocket.MessageBinary {
		c = proto.CBOR
	}
	m := new(proto.Message)
	var err error
	if msg := proto.CheckJSONText(data); typ == websocket.MessageText && msg != "" {
		err = errors.New(msg) // the decoder would rewrite it to U+FFFD
	} else if err = c.Unmarshal(data, m); err == nil {
		return m, nil
	}
	thingID, corr := lenientIDs(typ, data)
	// The decoder's error may quote bytes of the frame: the reply must be
	// valid UTF-8 whatever the frame held, or it would not encode at all
	// and the client would get no answer.
	detail := strings.ToValidUTF8(fmt.Sprintf("bad LMOS envelope (thingID %q, correlationID %q): %v", thingID, corr, err), "\uFFFD")
	e := proto.NewError(nil, http.StatusBadRequest, interact.TitleBadRequest, detail)
	e.ThingID, e.CorrelationID = thingID, corr
	return nil, e
}

// lenientIDs recovers thingID and the correlation (correlationID, else
// messageID) of a JSON envelope that does not decode as a message.
func lenientIDs(typ websocket.MessageType, data []byte) (thingID, corr string) {
	if typ != websocket.MessageText {
		return "", ""
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(data, &obj) != nil {
		return "", ""
	}
	str := func(keys ...string) string {
		for _, k := range keys {
			var s string
			if json.Unmarshal(obj[k], &s) == nil && s != "" {
				return s
			}
		}
		return ""
	}
	thingID = str("thingID", "thingId")
	corr = str("correlationID", "correlationId", "messageID", "messageId")
	return thingID, corr
}

// conns tracks the live sockets of a gateway so that Close can end them.
type conns struct {
	mu     sync.Mutex
	closed bool
	live   map[*socket]struct{}
	wg     sync.WaitGroup
}

// isClosed reports whether the gateway is closed.
func (c *conns) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// add registers s; false when the gateway is closed.
func (c *conns) add(s *socket) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	if c.live == nil {
		c.live = map[*socket]struct{}{}
	}
	c.live[s] = struct{}{}
	c.wg.Add(1)
	return true
}

func (c *conns) remove(s *socket) {
	c.mu.Lock()
	delete(c.live, s)
	c.mu.Unlock()
	c.wg.Done()
}

// closeAll cancels every socket and waits for their handlers to return.
func (c *conns) closeAll() {
	c.mu.Lock()
	c.closed = true
	for s := range c.live {
		s.cancel()
	}
	c.mu.Unlock()
	c.wg.Wait()
}
