package gateway

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lmosnode/lmosnode/node/httpapi"
	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// invokeStream serves POST /things/{id}/actions/{name} with Content-Type
// application/x-ndjson: a streaming session (request-stream/response-
// stream), in the shape of the interact HTTP backend contract. The body
// is one JSON value per line, the input and then every input chunk; the
// end of the body ends the input (streamEnd). The answer, sent as soon as
// the Thing accepts the session, is an event stream: events without a
// type carry one output chunk each, event "completed" (data: the final
// output, if any) or "failed" (data: an RFC 7807 object) ends it.
func (h *Handler) invokeStream(w http.ResponseWriter, r *http.Request, t target, req *lmosproto.Message) {
	// The input arrives for as long as the session lasts: no body
	// deadline nor total size (httpapi.Limit), each chunk is bounded.
	httpapi.StreamBody(r)
	if p := httpapi.CheckJSONCharset(r); p != nil {
		httpapi.WriteProblem(w, r, p)
		return
	}
	input := newChunkReader(r.Body)
	in, ok, err := input.next()
	if err != nil {
		httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusBadRequest, "streaming action %q of Thing %q: %v", req.Name, req.ThingID, err))
		return
	}
	if ok {
		req.Input = in
	}
	req.Stream = true

	ctx, cancel := h.requestContext(r)
	defer cancel()
	sess, err := h.invoker(t).Invoke(ctx, req)
	if err != nil {
		httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusServiceUnavailable, "invoking action %q of Thing %q: %v", req.Name, req.ThingID, err))
		return
	}
	defer func() { _ = sess.Close() }()
	first, ok := acceptance(ctx, w, r, sess, req)
	if !ok {
		return
	}

	rc := http.NewResponseController(w)
	_ = rc.EnableFullDuplex() // HTTP/2 is always full duplex
	s, err := httpapi.StartStream(w, httpapi.StreamConfig{WriteTimeout: h.cfg.WriteTimeout})
	if err != nil {
		return
	}
	defer s.Close()

	// The consumer's further chunks, while the outputs flow back. The
	// reader ends at the end of the body, on a bad chunk, or when the
	// session no longer takes input; the handler waits for it.
	var wg sync.WaitGroup
	defer func() {
		cancel() // unblocks a Send held by back-pressure
		if !input.ended() {
			// Unblocks a read of a body the consumer keeps open after the
			// session ended (and makes the server close the connection
			// rather than wait for the rest of the body). Only then: once
			// the body has ended, the server reads the connection in the
			// background to notice a consumer that leaves, and a read
			// deadline would end that read as if the consumer had left,
			// cancelling the context of every later request on the
			// kept-alive connection. A body that ends in the instant
			// between the check and the deadline is the one case left.
			_ = rc.SetReadDeadline(time.Now())
		}
		wg.Wait()
	}()
	if first.Stream {
		wg.Go(func() { h.sendInput(ctx, input, sess, req) })
	}
	relayOutput(ctx, s, r, sess, req, first)
}

// relayOutput writes the events of the replies of the streaming session
// req to s, from first on, until the end of the session, of ctx or of the
// stream.
func relayOutput(ctx context.Context, s *httpapi.Stream, r *http.Request, sess interact.Session, req, first *lmosproto.Message) {
	write := func(m *lmosproto.Message) bool {
		ev, ok := streamEvent(r, req, m)
		return !ok || s.Send(ev) == nil
	}
	if !write(first) || first.Ends(req) {
		return
	}
	for {
		select {
		case m, ok := <-sess.Replies():
			if !ok || !write(m) || m.Ends(req) {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// acceptance waits for the Thing's first answer to the streaming session
// req: ok is false when there is none to stream after (the session ended
// without one or refused, answered as a problem; or ctx ended).
func acceptance(ctx context.Context, w http.ResponseWriter, r *http.Request, sess interact.Session, req *lmosproto.Message) (first *lmosproto.Message, ok bool) {
	select {
	case m, open := <-sess.Replies():
		switch {
		case !open:
			httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusBadGateway, "action %q of Thing %q ended without an answer", req.Name, req.ThingID))
			return nil, false
		case m.Type == lmosproto.MsgError:
			httpapi.WriteProblem(w, r, problemOf(m))
			return nil, false
		}
		return m, true
	case <-ctx.Done():
		return nil, false
	}
}

// sendInput hands the consumer's further chunks to sess (streamInput)
// until the end of the body (streamEnd), a bad chunk (the session is
// closed) or a session that takes no more input.
func (h *Handler) sendInput(ctx context.Context, input *chunkReader, sess interact.Session, req *lmosproto.Message) {
	for {
		v, ok, err := input.next()
		if err != nil {
			h.log.Debug("stream input", "thing", req.ThingID, "action", req.Name, "err", err)
			_ = sess.Close()
			return
		}
		if !ok {
			_ = sess.Send(ctx, &lmosproto.Message{Type: lmosproto.MsgStreamEnd})
			return
		}
		if sess.Send(ctx, &lmosproto.Message{Type: lmosproto.MsgStreamInput, Input: v}) != nil {
			return
		}
	}
}

// streamEvent is the event of reply m of the streaming session req: an
// output chunk, "completed" or "failed"; ok is false for a reply that
// has none (an accept or a status without output).
func streamEvent(r *http.Request, req, m *lmosproto.Message) (ev httpapi.Event, ok bool) {
	switch {
	case m.Type == lmosproto.MsgError:
		p := problemOf(m)
		p.Instance = r.URL.Path
		return httpapi.ProblemEvent(r, "failed", p), true
	case m.Type != lmosproto.MsgActionStatus:
		return httpapi.Event{}, false
	case m.Status == lmosproto.ActionCompleted:
		ev = httpapi.Event{Type: "completed"}
		if m.Output.Present() {
			ev.Data = string(m.Output.JSON())
		}
		return ev, true
	case m.Status == lmosproto.ActionFailed || m.Status == lmosproto.ActionCancelled:
		p := &lmosproto.Problem{Status: http.StatusInternalServerError, Title: interact.TitleInternal,
			Detail: fmt.Sprintf("action %q of Thing %q %s", req.Name, req.ThingID, m.Status)}
		if m.Status == lmosproto.ActionCancelled {
			p.Status, p.Title = interact.StatusClientClosed, interact.TitleCancelled
		}
		return httpapi.ProblemEvent(r, "failed", p), true
	case m.Output.Present():
		return httpapi.Event{Data: string(m.Output.JSON())}, true
	}
	return httpapi.Event{}, false
}

// chunkReader reads the values of an application/x-ndjson body, one per
// non-empty line, each at most maxBody bytes.
type chunkReader struct {
	end  *bodyEnd
	body *bufio.Reader
}

func newChunkReader(body io.Reader) *chunkReader {
	end := &bodyEnd{r: body}
	return &chunkReader{end: end, body: bufio.NewReaderSize(end, 64<<10)}
}

// ended reports whether the body has ended (or failed).
func (c *chunkReader) ended() bool { return c.end.ended.Load() }

// next returns the next value, and false at the end of the body.
func (c *chunkReader) next() (lmosproto.Value, bool, error) {
	for {
		line, err := c.body.ReadBytes('\n')
		if len(line) > maxBody {
			return lmosproto.Value{}, false, fmt.Errorf("input chunk larger than %d bytes", maxBody)
		}
		if line = bytes.TrimSpace(line); len(line) > 0 {
			if msg := lmosproto.CheckJSONText(line); msg != "" { // ParseValue would rewrite a lone surrogate
				return lmosproto.Value{}, false, fmt.Errorf("input chunk: %s", msg)
			}
			v, perr := lmosproto.ParseValue(line)
			if perr != nil {
				return lmosproto.Value{}, false, fmt.Errorf("input chunk is not JSON: %w", perr)
			}
			return v, true, nil
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return lmosproto.Value{}, false, nil
			}
			return lmosproto.Value{}, false, err
		}
	}
}

// bodyEnd reads a request body and notes when it has ended (or failed).
type bodyEnd struct {
	r     io.Reader
	ended atomic.Bool
}

func (b *bodyEnd) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil {
		b.ended.Store(true)
	}
	return n, err
}
