package gateway

import (
	"bufio"
	"bytes"
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
	end := &bodyEnd{r: r.Body}
	body := bufio.NewReaderSize(end, 64<<10)
	next := func() (lmosproto.Value, bool, error) {
		for {
			line, err := body.ReadBytes('\n')
			if len(line) > maxBody {
				return lmosproto.Value{}, false, fmt.Errorf("input chunk larger than %d bytes", maxBody)
			}
			if line = bytes.TrimSpace(line); len(line) > 0 {
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
	in, ok, err := next()
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

	var first *lmosproto.Message
	select {
	case m, ok := <-sess.Replies():
		switch {
		case !ok:
			httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusBadGateway, "action %q of Thing %q ended without an answer", req.Name, req.ThingID))
			return
		case m.Type == lmosproto.MsgError:
			httpapi.WriteProblem(w, r, problemOf(m))
			return
		}
		first = m
	case <-ctx.Done():
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
		if !end.ended.Load() {
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
		wg.Go(func() {
			for {
				v, ok, err := next()
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
		})
	}

	write := func(m *lmosproto.Message) bool {
		var ev httpapi.Event
		switch {
		case m.Type == lmosproto.MsgError:
			p := problemOf(m)
			p.Instance = r.URL.Path
			ev = httpapi.ProblemEvent(r, "failed", p)
		case m.Type != lmosproto.MsgActionStatus:
			return true
		case m.Status == lmosproto.ActionCompleted:
			ev = httpapi.Event{Type: "completed"}
			if m.Output.Present() {
				ev.Data = string(m.Output.JSON())
			}
		case m.Status == lmosproto.ActionFailed || m.Status == lmosproto.ActionCancelled:
			p := &lmosproto.Problem{Status: http.StatusInternalServerError, Title: interact.TitleInternal,
				Detail: fmt.Sprintf("action %q of Thing %q %s", req.Name, req.ThingID, m.Status)}
			if m.Status == lmosproto.ActionCancelled {
				p.Status, p.Title = interact.StatusClientClosed, interact.TitleCancelled
			}
			ev = httpapi.ProblemEvent(r, "failed", p)
		case m.Output.Present():
			ev = httpapi.Event{Data: string(m.Output.JSON())}
		default:
			return true // an accept or a status without output
		}
		return s.Send(ev) == nil
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
