package gateway

import (
	"net/http"
	"time"

	"github.com/lmosnode/lmosnode/node/httpapi"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// errorGrace is how long a subscription waits for an immediate refusal
// (e.g. 405 on a property that is not observable) before it commits to
// 200 and the event stream: a refusal within it is an ordinary problem
// response.
const errorGrace = 250 * time.Millisecond

// stream serves a subscription or observation as server-sent events;
// payload picks each notification's data out of a reply.
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, t target, req *lmosproto.Message, payload func(*lmosproto.Message) (lmosproto.Value, bool)) {
	ctx, cancel := h.requestContext(r)
	defer cancel()
	sess, err := h.invoker(t).Invoke(ctx, req)
	if err != nil {
		httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusServiceUnavailable, "%s of %q on Thing %q: %v", req.Type, req.Name, req.ThingID, err))
		return
	}
	defer func() { _ = sess.Close() }()

	var first *lmosproto.Message
	grace := time.NewTimer(errorGrace)
	select {
	case m, ok := <-sess.Replies():
		grace.Stop()
		switch {
		case !ok:
			httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusBadGateway, "%s of %q on Thing %q ended at once", req.Type, req.Name, req.ThingID))
			return
		case m.Type == lmosproto.MsgError:
			httpapi.WriteProblem(w, r, problemOf(m))
			return
		}
		first = m
	case <-grace.C:
	case <-ctx.Done():
		grace.Stop()
		return
	}

	s, err := httpapi.StartStream(w, httpapi.StreamConfig{KeepAlive: h.cfg.KeepAlive, WriteTimeout: h.cfg.WriteTimeout})
	if err != nil {
		return
	}
	defer s.Close()
	send := func(m *lmosproto.Message) bool {
		if m.Type == lmosproto.MsgError {
			p := problemOf(m)
			p.Instance = r.URL.Path
			_ = s.Send(httpapi.ProblemEvent(r, "error", p))
			return false
		}
		v, ok := payload(m)
		if !ok {
			return true // not a notification (nothing else is expected)
		}
		return s.Send(httpapi.Event{ID: m.MessageID, Data: string(valueJSON(v))}) == nil
	}
	if first != nil && !send(first) {
		return
	}
	for {
		select {
		case m, ok := <-sess.Replies():
			if !ok || !send(m) {
				return
			}
		case <-s.KeepAlive():
			if s.Ping() != nil {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}
