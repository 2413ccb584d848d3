package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/lmosnode/lmosnode/node/interact"
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
		writeProblem(w, r, newProblem(http.StatusServiceUnavailable, "%s of %q on Thing %q: %v", req.Type, req.Name, req.ThingID, err))
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
			writeProblem(w, r, newProblem(http.StatusBadGateway, "%s of %q on Thing %q ended at once", req.Type, req.Name, req.ThingID))
			return
		case m.Type == lmosproto.MsgError:
			writeProblem(w, r, problemOf(m))
			return
		}
		first = m
	case <-grace.C:
	case <-ctx.Done():
		grace.Stop()
		return
	}

	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", interact.ContentTypeEventStream)
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	deadline := func() { _ = rc.SetWriteDeadline(time.Now().Add(h.cfg.WriteTimeout)) }
	send := func(m *lmosproto.Message) bool {
		deadline()
		if m.Type == lmosproto.MsgError {
			p := problemOf(m)
			p.Instance = r.URL.Path
			b, _ := json.Marshal(p) // a problem always encodes
			_, _ = fmt.Fprintf(w, "event: error\ndata: %s\n\n", b)
			_ = rc.Flush()
			return false
		}
		v, ok := payload(m)
		if !ok {
			return true // not a notification (nothing else is expected)
		}
		if _, err := fmt.Fprintf(w, "id: %s\ndata: %s\n\n", m.MessageID, valueJSON(v)); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	deadline()
	if first != nil && !send(first) {
		return
	}
	if err := rc.Flush(); err != nil {
		return
	}
	tick := time.NewTicker(h.cfg.KeepAlive)
	defer tick.Stop()
	for {
		select {
		case m, ok := <-sess.Replies():
			if !ok || !send(m) {
				return
			}
		case <-tick.C:
			deadline()
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
			if rc.Flush() != nil {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}
