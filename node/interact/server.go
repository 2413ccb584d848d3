package interact

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/lmosnode/lmosnode/proto"
)

// Server serves proto.ProtocolInteract streams on a libp2p host with an
// Invoker (the node's Engine, or its router). See the package
// documentation for the wire format.
//
// A Server is safe for concurrent use. Each stream is handled on the
// goroutine libp2p starts for it plus one reader goroutine the Server
// owns; Close resets nothing in flight but cancels every interaction and
// waits for the handlers to return.
type Server struct {
	h   host.Host
	inv Invoker
	cfg TransportConfig
	log *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	idle     map[network.Stream]struct{} // session streams between interactions
	inFlight map[peer.ID]int             // interactions being served, per remote peer
}

// NewServer registers the stream handlers of proto.ProtocolInteractSession
// and proto.ProtocolInteract on deps.Host. It uses the option WithLogger.
func NewServer(deps ServerDeps, cfg TransportConfig, opts ...Option) (*Server, error) {
	switch {
	case deps.Host == nil:
		return nil, errors.New("interact: ServerDeps.Host is nil")
	case deps.Invoker == nil:
		return nil, errors.New("interact: ServerDeps.Invoker is nil")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := newOptions(opts)
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{h: deps.Host, inv: deps.Invoker, cfg: cfg.withDefaults(), log: o.log, ctx: ctx, cancel: cancel, idle: map[network.Stream]struct{}{}, inFlight: map[peer.ID]int{}}
	s.h.SetStreamHandler(protocol.ID(proto.ProtocolInteractSession), s.handleSession)
	s.h.SetStreamHandler(protocol.ID(proto.ProtocolInteract), s.handle)
	return s, nil
}

// Close removes the stream handlers, cancels the interactions in flight,
// resets the streams waiting for a next interaction and waits for the
// handlers.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	idle := make([]network.Stream, 0, len(s.idle))
	for str := range s.idle {
		idle = append(idle, str)
	}
	s.mu.Unlock()
	s.h.RemoveStreamHandler(protocol.ID(proto.ProtocolInteractSession))
	s.h.RemoveStreamHandler(protocol.ID(proto.ProtocolInteract))
	s.cancel()
	for _, str := range idle {
		// the consumer reads a clean end; the handler, woken, closes
		_ = str.CloseWrite()
		_ = str.SetReadDeadline(time.Now())
	}
	s.wg.Wait()
	return nil
}

// enter registers a handler; false once the Server is closed.
func (s *Server) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Add(1)
	return true
}

// setIdle marks str as waiting for its next interaction (Close resets
// such streams) or as busy; false once the Server is closed.
func (s *Server) setIdle(str network.Stream, idle bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if idle {
		if s.closed {
			return false
		}
		s.idle[str] = struct{}{}
	} else {
		delete(s.idle, str)
	}
	return true
}

// admit counts an interaction of remote in, unless it has
// MaxPeerInteractions in flight already; release counts it out.
func (s *Server) admit(remote peer.ID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if limit := s.cfg.MaxPeerInteractions; limit > 0 && s.inFlight[remote] >= limit {
		return false
	}
	s.inFlight[remote]++
	return true
}

func (s *Server) release(remote peer.ID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inFlight[remote]--; s.inFlight[remote] <= 0 {
		delete(s.inFlight, remote)
	}
}

// tooMany is the answer to a request of a peer that has
// MaxPeerInteractions in flight (none for a one-way request).
func (s *Server) tooMany(req *proto.Message, remote peer.ID) Session {
	s.log.Debug("interaction refused: too many in flight", "peer", remote, "limit", s.cfg.MaxPeerInteractions)
	if !req.ExpectsReply() {
		return newClosedSession(req, nil)
	}
	return newClosedSession(req, newErrorMessage(req, http.StatusTooManyRequests, TitleTooManyRequests,
		"node %s has %d interactions in flight with this node, the most it may; retry when one has ended", remote, s.cfg.MaxPeerInteractions))
}

// handle serves a stream of proto.ProtocolInteract: one interaction.
func (s *Server) handle(str network.Stream) {
	if !s.enter() {
		_ = str.Reset()
		return
	}
	defer s.wg.Done()
	_ = str.SetReadDeadline(time.Now().Add(s.cfg.FirstFrameTimeout))
	br := getReader(str)
	defer putReader(br)
	payload, err := proto.ReadFrame(br, s.cfg.MaxMessageSize)
	if err != nil {
		s.log.Debug("no request on stream", "peer", str.Conn().RemotePeer(), "err", err)
		_ = str.Reset()
		return
	}
	fc := proto.FrameCodec{Codec: sniff(payload), Max: s.cfg.MaxMessageSize}
	s.serve(s.streamContext(str), str, br, fc, payload, false)
}

// handleSession serves a stream of proto.ProtocolInteractSession: one
// interaction after another, for as long as each ends cleanly (both sides
// wrote their end-of-interaction frame). The codec is the first
// request's.
func (s *Server) handleSession(str network.Stream) {
	if !s.enter() {
		_ = str.Reset()
		return
	}
	defer s.wg.Done()
	br := getReader(str)
	defer putReader(br)
	var fc proto.FrameCodec
	var base *streamCtx
	wait := s.cfg.FirstFrameTimeout
	for {
		if !s.setIdle(str, true) {
			_ = str.Close()
			return
		}
		_ = str.SetReadDeadline(time.Now().Add(wait))
		payload, err := proto.ReadFrame(br, s.cfg.MaxMessageSize)
		s.setIdle(str, false)
		switch {
		case err == io.EOF || (err != nil && errors.Is(err, os.ErrDeadlineExceeded) && br.Buffered() == 0 && fc.Codec != nil):
			// the consumer closed an idle stream, or left it idle for
			// SessionIdleTimeout: end it cleanly, nothing was asked
			_ = str.Close()
			return
		case err != nil || len(payload) == 0:
			s.log.Debug("no request on stream", "peer", str.Conn().RemotePeer(), "err", err)
			_ = str.Reset()
			return
		}
		if fc.Codec == nil {
			fc = proto.FrameCodec{Codec: sniff(payload), Max: s.cfg.MaxMessageSize}
		}
		if base == nil {
			base = s.streamContext(str)
		}
		if !s.serve(base, str, br, fc, payload, true) {
			return
		}
		wait = SessionIdleTimeout
	}
}

// streamCtx is the context of the interactions on a stream: the Server's,
// with the authenticated remote peer as the caller (WithCaller,
// WithRemotePeer).
type streamCtx struct {
	base context.Context
}

func (s *Server) streamContext(str network.Stream) *streamCtx {
	remote := str.Conn().RemotePeer()
	return &streamCtx{base: WithRemotePeer(WithCaller(s.ctx, remote.String()), remote)}
}

func sniff(payload []byte) proto.Codec {
	if codec, ok := proto.SniffCodec(payload); ok {
		return codec
	}
	return proto.JSON
}

// endFrame is the empty frame that ends an interaction in one direction
// on a proto.ProtocolInteractSession stream.
var endFrame = []byte{0}

// serve runs the interaction the request payload opens on str and writes
// its replies. On a session stream (session) each side ends the
// interaction with an empty frame; serve reports whether both did, so
// that the stream can carry the next interaction. Otherwise it ends the
// stream itself (closed or reset) and returns false.
func (s *Server) serve(sc *streamCtx, str network.Stream, br *bufio.Reader, fc proto.FrameCodec, payload []byte, session bool) bool {
	remote := str.Conn().RemotePeer()
	var req proto.Message
	if err := fc.Codec.Unmarshal(payload, &req); err != nil {
		s.log.Debug("undecodable request", "peer", remote, "err", err)
		s.writeFinal(str, fc, undecodable(err))
		return false
	}

	// The consumer's further messages. On a session stream an empty frame
	// ends them (ended); anything else that ends them before the terminal
	// message (EOF, a reset, a broken frame) is the consumer gone, and
	// cancels the interaction.
	endedWithRequest := session && readEndFrame(br)
	ended := endedWithRequest // the reader's from here on
	gone := false             // the watcher's: the consumer left
	readerDone := make(chan struct{})
	ctx, cancel := context.WithCancel(sc.base)
	defer cancel()
	if endedWithRequest {
		// Nothing more to read, so the Engine may answer on this
		// goroutine; a watcher notices meanwhile the consumer leaving.
		ctx = withInline(ctx)
	}
	// the consumer's further messages may take their time (the Server's
	// idle or first-frame deadline was for the request)
	_ = str.SetReadDeadline(time.Time{})
	if endedWithRequest {
		go func() {
			defer close(readerDone)
			gone = s.watchGone(ctx, cancel, br, remote)
		}()
	}
	var sess Session
	if s.admit(remote) {
		defer s.release(remote)
		var err error
		if sess, err = s.inv.Invoke(ctx, &req); err != nil {
			sess = newClosedSession(&req, newErrorMessage(&req, http.StatusServiceUnavailable, TitleUnavailable, "%v", err))
		}
	} else {
		sess = s.tooMany(&req, remote)
	}
	defer func() { _ = sess.Close() }()
	if !endedWithRequest {
		go func() {
			defer close(readerDone)
			ended = s.readFollowUps(ctx, cancel, br, fc, session, sess, remote)
		}()
	}

	drop := func(err error) bool {
		s.log.Debug("stream write failed; dropping the consumer", "peer", remote, "err", err)
		cancel()
		_ = sess.Close()
		_ = str.Reset()
		<-readerDone
		return false
	}
	wroteEnd, err := s.writeReplies(str, fc, &req, sess, session)
	if err != nil {
		return drop(err)
	}
	if !session {
		// All sent: half-close, give the consumer CloseGrace to close its
		// side, then free the stream.
		_ = str.CloseWrite()
		_ = str.SetReadDeadline(time.Now().Add(s.cfg.CloseGrace))
		<-readerDone
		_ = str.Close()
		return false
	}
	if !wroteEnd {
		_ = str.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
		if _, err := str.Write(endFrame); err != nil {
			return drop(err)
		}
	}
	// All sent: give the consumer CloseGrace to end its side. One that has
	// not (still reading, slowly) gets the stream closed, not reset: what
	// was written stays readable, as on a 1.0.0 stream; the stream is not
	// used again.
	if endedWithRequest {
		_ = str.SetReadDeadline(time.Now()) // stops the watcher
	} else {
		_ = str.SetReadDeadline(time.Now().Add(s.cfg.CloseGrace))
	}
	<-readerDone
	if !ended || gone {
		_ = str.Close()
		return false
	}
	_ = str.SetWriteDeadline(time.Time{})
	return true
}

// readEndFrame reads the empty frame a consumer sends right behind a
// request that takes no further messages, if it came with the request;
// it reports whether it did.
func readEndFrame(br *bufio.Reader) bool {
	if br.Buffered() == 0 {
		return false
	}
	if b, _ := br.Peek(1); b[0] != 0 {
		return false
	}
	_, _ = br.ReadByte()
	return true
}

// watchGone waits, while an interaction whose request came with the
// consumer's end frame runs, for the consumer to leave: EOF or a reset
// cancels the interaction and reports true. It returns false when the
// Server stops it (a read deadline) or when the consumer wrote more (it
// stays buffered in br, for the next read).
func (s *Server) watchGone(ctx context.Context, cancel context.CancelFunc, br *bufio.Reader, remote peer.ID) bool {
	_, err := br.Peek(1)
	if err == nil || isTimeout(err) {
		return false
	}
	if ctx.Err() == nil {
		s.log.Debug("consumer left", "peer", remote, "err", err)
	}
	cancel()
	return true
}

// isTimeout reports whether err is a read deadline passing (yamux's
// error is a net.Error, not os.ErrDeadlineExceeded).
func isTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &te) && te.Timeout())
}

// readFollowUps hands the consumer's further messages of an interaction
// to sess until the consumer's end frame on a session stream (it then
// reports true), EOF or a broken stream. EOF or a broken stream is the
// consumer gone: it cancels the interaction (which ends nothing that has
// ended already).
func (s *Server) readFollowUps(ctx context.Context, cancel context.CancelFunc, br *bufio.Reader, fc proto.FrameCodec, session bool, sess Session, remote peer.ID) bool {
	for {
		p, err := proto.ReadFrame(br, fc.Max)
		if err == nil && session && len(p) == 0 {
			return true
		}
		var m proto.Message
		if err == nil {
			err = fc.Codec.Unmarshal(p, &m)
		}
		if err != nil {
			if ctx.Err() == nil && err != io.EOF {
				s.log.Debug("stream read failed", "peer", remote, "err", err)
			}
			cancel()
			return false
		}
		if err := sess.Send(ctx, &m); err != nil {
			s.log.Debug("consumer message refused", "peer", remote, "message", &m, "err", err)
		}
	}
}

// writeReplies writes the replies of sess to str until its end; on a
// session stream the terminal message carries the end frame (wroteEnd).
func (s *Server) writeReplies(str network.Stream, fc proto.FrameCodec, req *proto.Message, sess Session, session bool) (wroteEnd bool, err error) {
	for m := range sess.Replies() {
		terminal := session && m.Ends(req)
		_ = str.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
		if err := writeMessage(str, fc, m, terminal); err != nil {
			return false, err
		}
		if terminal {
			// nothing follows the terminal message (Session.Replies)
			return true, nil
		}
	}
	return false, nil
}

// frames pools the buffers messages are encoded into before one Write.
var frames = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// writeMessage writes m as one frame, followed by the empty frame that
// ends the interaction when end is set, in a single Write.
func writeMessage(w io.Writer, fc proto.FrameCodec, m *proto.Message, end bool) error {
	p, err := fc.Codec.Marshal(m)
	if err != nil {
		return err
	}
	if len(p) > fc.Max {
		return fmt.Errorf("%w: %d bytes, limit %d", proto.ErrFrameTooLarge, len(p), fc.Max)
	}
	return writeFrame(w, p, end)
}

// writeFrame writes payload as one frame, followed by the empty frame when
// end is set, in a single Write.
func writeFrame(w io.Writer, payload []byte, end bool) error {
	bp := frames.Get().(*[]byte)
	buf := binary.AppendUvarint((*bp)[:0], uint64(len(payload)))
	buf = append(buf, payload...)
	if end {
		buf = append(buf, 0)
	}
	_, err := w.Write(buf)
	if cap(buf) <= 64<<10 {
		*bp = buf[:0]
		frames.Put(bp)
	}
	if err != nil {
		return fmt.Errorf("lmos frame: write: %w", err)
	}
	return nil
}

// writeFinal writes one error message and ends the stream.
func (s *Server) writeFinal(str network.Stream, fc proto.FrameCodec, m *proto.Message) {
	_ = str.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
	if err := fc.WriteMessage(str, m); err != nil {
		_ = str.Reset()
		return
	}
	_ = str.CloseWrite()
	_ = str.SetReadDeadline(time.Now().Add(s.cfg.CloseGrace))
	_, _ = io.Copy(io.Discard, io.LimitReader(str, int64(s.cfg.MaxMessageSize)))
	_ = str.Close()
}

// undecodable is the answer to a request that could not be decoded. It
// has no thingID to copy; it names none.
func undecodable(err error) *proto.Message {
	m := newErrorMessage(nil, http.StatusBadRequest, TitleBadRequest, "%v", err)
	m.ThingID = "urn:lmosnode:unknown"
	return m
}
