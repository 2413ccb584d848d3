package interact

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
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

	mu     sync.Mutex
	closed bool
}

// NewServer registers the stream handler of proto.ProtocolInteract on
// deps.Host. It uses the option WithLogger.
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
	s := &Server{h: deps.Host, inv: deps.Invoker, cfg: cfg.withDefaults(), log: o.log, ctx: ctx, cancel: cancel}
	s.h.SetStreamHandler(protocol.ID(proto.ProtocolInteract), s.handle)
	return s, nil
}

// Close removes the stream handler, cancels the interactions in flight and
// waits for their handlers.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.h.RemoveStreamHandler(protocol.ID(proto.ProtocolInteract))
	s.cancel()
	s.wg.Wait()
	return nil
}

func (s *Server) handle(str network.Stream) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = str.Reset()
		return
	}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	remote := str.Conn().RemotePeer()
	log := s.log

	_ = str.SetReadDeadline(time.Now().Add(s.cfg.FirstFrameTimeout))
	br := getReader(str)
	defer putReader(br)
	payload, err := proto.ReadFrame(br, s.cfg.MaxMessageSize)
	if err != nil {
		log.Debug("no request on stream", "peer", remote, "err", err)
		_ = str.Reset()
		return
	}
	codec, ok := proto.SniffCodec(payload)
	if !ok {
		codec = proto.JSON
	}
	fc := proto.FrameCodec{Codec: codec, Max: s.cfg.MaxMessageSize}
	var req proto.Message
	if err := codec.Unmarshal(payload, &req); err != nil {
		log.Debug("undecodable request", "peer", remote, "err", err)
		s.writeFinal(str, fc, undecodable(err))
		return
	}
	_ = str.SetReadDeadline(time.Time{})

	ctx, cancel := context.WithCancel(WithRemotePeer(WithCaller(s.ctx, remote.String()), remote))
	defer cancel()
	sess, err := s.inv.Invoke(ctx, &req)
	if err != nil {
		s.writeFinal(str, fc, newErrorMessage(&req, http.StatusServiceUnavailable, TitleUnavailable, "%v", err))
		return
	}
	defer func() { _ = sess.Close() }()

	// The consumer's further messages. EOF: it sends nothing more (which
	// ends nothing); any other error: the stream is gone, and so is the
	// consumer.
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		for {
			var m proto.Message
			err := fc.ReadMessage(br, &m)
			if err == io.EOF {
				return
			}
			if err != nil {
				if ctx.Err() == nil {
					log.Debug("stream read failed", "peer", remote, "err", err)
				}
				cancel()
				return
			}
			if err := sess.Send(ctx, &m); err != nil {
				log.Debug("consumer message refused", "peer", remote, "message", &m, "err", err)
			}
		}
	}()

	for m := range sess.Replies() {
		_ = str.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
		if err := fc.WriteMessage(str, m); err != nil {
			log.Debug("stream write failed; dropping the consumer", "peer", remote, "err", err)
			cancel()
			_ = sess.Close()
			_ = str.Reset()
			<-readerDone
			return
		}
	}
	// All sent: half-close, give the consumer CloseGrace to close its side,
	// then free the stream.
	_ = str.CloseWrite()
	_ = str.SetReadDeadline(time.Now().Add(s.cfg.CloseGrace))
	<-readerDone
	_ = str.Close()
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
