package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/lmosnode/lmosnode/node/httpapi"
	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// cancelWait bounds how long DELETE on an invocation waits for the Thing
// to confirm the cancellation.
const cancelWait = 10 * time.Second

// action is a long-running invocation the gateway follows for its
// consumer.
type action struct {
	id      string // the invocation (correlationID)
	thingID string
	name    string
	sess    interact.Session
	cancel  context.CancelFunc
	done    chan struct{} // closed when the invocation ended

	mu       sync.Mutex
	status   string
	output   lmosproto.Value
	err      *lmosproto.Problem
	finished time.Time
}

// statusBody is the JSON of an invocation's status.
type statusBody struct {
	Status string             `json:"status"`
	Output json.RawMessage    `json:"output,omitempty"`
	Error  *lmosproto.Problem `json:"error,omitempty"`
	Href   string             `json:"href,omitempty"`
}

// writeStatus answers with the status of a in format f: the JSON object
// statusBody, or the CBOR map of the same members.
func (a *action) writeStatus(w http.ResponseWriter, status int, f format, href string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if f == formatCBOR {
		m := map[string]any{"status": a.status}
		if a.output.Present() {
			m["output"] = a.output
		}
		if a.err != nil {
			m["error"] = a.err
		}
		if href != "" {
			m["href"] = href
		}
		b, _ := statusCBOREnc.Marshal(m) // strings, a Value and a problem always encode
		writeBody(w, status, lmosproto.ContentTypeCBOR, b)
		return
	}
	s := statusBody{Status: a.status, Error: a.err, Href: href}
	if a.output.Present() {
		s.Output = a.output.JSON()
	}
	b, _ := json.Marshal(s) // plain strings and canonical JSON always encode
	writeJSON(w, status, b)
}

// update records a reply; it reports whether the invocation ended.
func (a *action) update(m *lmosproto.Message, now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if m.Type == lmosproto.MsgError {
		a.status, a.err = lmosproto.ActionFailed, problemOf(m)
		a.finished = now
		return true
	}
	if m.Type != lmosproto.MsgActionStatus {
		return false
	}
	a.status = m.Status
	if m.Output.Present() {
		a.output = m.Output
	}
	if m.EndsAction() {
		a.finished = now
		return true
	}
	return false
}

// invokeAction serves POST /things/{id}/actions/{name}.
func (h *Handler) invokeAction(w http.ResponseWriter, r *http.Request) {
	t, req, p := h.request(r, lmosproto.MsgInvokeAction)
	if p != nil {
		httpapi.WriteProblem(w, r, p)
		return
	}
	if isNDJSON(r) {
		h.invokeStream(w, r, t, req)
		return
	}
	in, p := readValue(w, r)
	if p != nil {
		httpapi.WriteProblem(w, r, p)
		return
	}
	req.Input = in
	req.CorrelationID = req.MessageID
	if prefersAsync(r) {
		h.invokeOneWay(w, r, t, req)
		return
	}

	// The invocation may outlive this request: its context is the
	// Handler's, and it is cancelled when the consumer leaves before the
	// invocation turned long-running.
	actx, acancel := context.WithCancel(h.ctx)
	sess, err := h.invoker(t).Invoke(actx, req)
	if err != nil {
		acancel()
		httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusServiceUnavailable, "invoking action %q of Thing %q: %v", req.Name, req.ThingID, err))
		return
	}
	a := &action{id: req.CorrelationID, thingID: req.ThingID, name: req.Name, sess: sess, cancel: acancel,
		done: make(chan struct{}), status: lmosproto.ActionPending}
	abandon := func() { _ = sess.Close(); acancel() }

	wait := time.NewTimer(h.cfg.SyncWait)
	defer wait.Stop()
	select {
	case m, ok := <-sess.Replies():
		if !ok {
			abandon()
			httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusBadGateway, "action %q of Thing %q ended without an answer", req.Name, req.ThingID))
			return
		}
		if a.update(m, time.Now()) {
			abandon()
			h.writeFinal(w, r, a)
			return
		}
	case <-wait.C:
	case <-r.Context().Done():
		abandon()
		return
	case <-h.ctx.Done():
		abandon()
		httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusServiceUnavailable, "node shutting down"))
		return
	}

	// Long-running: follow it and hand out its status URL.
	if p := h.track(a); p != nil {
		abandon()
		httpapi.WriteProblem(w, r, p)
		return
	}
	href := fmt.Sprintf("/things/%s/actions/%s/%s%s", url.PathEscape(a.thingID), url.PathEscape(a.name), url.PathEscape(a.id), t.query())
	w.Header().Set("Location", href)
	a.writeStatus(w, http.StatusCreated, responseFormat(r), href)
}

// writeFinal answers with the final status of an invocation that ended
// within the request.
func (h *Handler) writeFinal(w http.ResponseWriter, r *http.Request, a *action) {
	a.mu.Lock()
	status, output, perr := a.status, a.output, a.err
	a.mu.Unlock()
	switch {
	case perr != nil:
		httpapi.WriteProblem(w, r, perr)
	case status == lmosproto.ActionCompleted && output.Present():
		writeValue(w, r, http.StatusOK, responseFormat(r), output)
	case status == lmosproto.ActionCompleted:
		w.WriteHeader(http.StatusNoContent)
	case status == lmosproto.ActionCancelled:
		httpapi.WriteProblem(w, r, &lmosproto.Problem{Status: interact.StatusClientClosed, Title: interact.TitleCancelled,
			Detail: fmt.Sprintf("action %q of Thing %q was cancelled", a.name, a.thingID)})
	default:
		detail := fmt.Sprintf("action %q of Thing %q failed", a.name, a.thingID)
		if output.Present() {
			detail += ": " + string(output.JSON())
		}
		httpapi.WriteProblem(w, r, &lmosproto.Problem{Status: http.StatusInternalServerError, Title: interact.TitleInternal, Detail: detail})
	}
}

// track keeps a and starts following its replies.
func (h *Handler) track(a *action) *lmosproto.Problem {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ctx.Err() != nil {
		return httpapi.Problemf(http.StatusServiceUnavailable, "node shutting down")
	}
	h.pruneLocked(time.Now())
	if len(h.actions) >= h.cfg.MaxActions {
		return httpapi.Problemf(http.StatusServiceUnavailable, "this node follows %d long-running invocations already", len(h.actions))
	}
	h.actions[a.id] = a
	h.wg.Go(func() { h.follow(a) })
	return nil
}

// follow records the replies of a until it ends or the Handler closes.
func (h *Handler) follow(a *action) {
	defer close(a.done)
	defer a.cancel()
	defer func() { _ = a.sess.Close() }()
	for {
		select {
		case m, ok := <-a.sess.Replies():
			if !ok {
				a.mu.Lock()
				if a.finished.IsZero() {
					a.status = lmosproto.ActionFailed
					a.err = httpapi.Problemf(http.StatusBadGateway, "action %q of Thing %q ended without a final status", a.name, a.thingID)
					a.finished = time.Now()
				}
				a.mu.Unlock()
				return
			}
			if a.update(m, time.Now()) {
				return
			}
		case <-h.ctx.Done():
			return
		}
	}
}

// pruneLocked drops invocations finished longer than Retention ago.
func (h *Handler) pruneLocked(now time.Time) {
	for id, a := range h.actions {
		a.mu.Lock()
		old := !a.finished.IsZero() && now.Sub(a.finished) > h.cfg.Retention
		a.mu.Unlock()
		if old {
			delete(h.actions, id)
		}
	}
}

// lookup finds the invocation of r.
func (h *Handler) lookup(r *http.Request) (*action, *lmosproto.Problem) {
	t, p := h.resolve(r, true)
	if p != nil {
		return nil, p
	}
	id, name := r.PathValue("invocation"), r.PathValue("name")
	h.mu.Lock()
	h.pruneLocked(time.Now())
	a, ok := h.actions[id]
	h.mu.Unlock()
	if !ok || a.thingID != t.entry.ThingID || a.name != name {
		return nil, &lmosproto.Problem{Status: http.StatusNotFound, Title: interact.TitleActionNotFound,
			Detail: fmt.Sprintf("no invocation %q of action %q of Thing %q", id, name, t.entry.ThingID)}
	}
	return a, nil
}

// queryAction serves GET /things/{id}/actions/{name}/{invocation}.
func (h *Handler) queryAction(w http.ResponseWriter, r *http.Request) {
	a, p := h.lookup(r)
	if p != nil {
		httpapi.WriteProblem(w, r, p)
		return
	}
	a.writeStatus(w, http.StatusOK, responseFormat(r), "")
}

// cancelAction serves DELETE /things/{id}/actions/{name}/{invocation}: it
// asks the Thing to cancel and answers with the status it ends with.
func (h *Handler) cancelAction(w http.ResponseWriter, r *http.Request) {
	a, p := h.lookup(r)
	if p != nil {
		httpapi.WriteProblem(w, r, p)
		return
	}
	select {
	case <-a.done:
	default:
		ctx, cancel := context.WithTimeout(r.Context(), cancelWait)
		defer cancel()
		msg := &lmosproto.Message{Type: lmosproto.MsgCancelAction, Reason: "cancelled by the HTTP consumer"}
		if err := a.sess.Send(ctx, msg); err != nil {
			h.log.Debug("cancel action", "thing", a.thingID, "action", a.name, "invocation", a.id, "err", err)
		}
		select {
		case <-a.done:
		case <-ctx.Done():
			httpapi.WriteProblem(w, r, &lmosproto.Problem{Status: http.StatusGatewayTimeout, Title: interact.TitleTimeout,
				Detail: fmt.Sprintf("action %q of Thing %q did not confirm the cancellation within %v", a.name, a.thingID, cancelWait)})
			return
		}
	}
	a.writeStatus(w, http.StatusOK, responseFormat(r), "")
}

// prefersAsync reports whether the request carries the RFC 7240
// preference "respond-async": the consumer wants no result, only the
// acknowledgement that the invocation was handed on (one-way).
func prefersAsync(r *http.Request) bool {
	for _, v := range r.Header.Values("Prefer") {
		for pref := range strings.SplitSeq(v, ",") {
			name, _, _ := strings.Cut(strings.TrimSpace(pref), "=")
			if strings.EqualFold(strings.TrimSpace(name), "respond-async") {
				return true
			}
		}
	}
	return false
}

// invokeOneWay hands a one-way invocation (oneWay: no reply expected) to
// the Thing and answers 202 at once; the action runs to completion at its
// owner whatever the consumer does next.
func (h *Handler) invokeOneWay(w http.ResponseWriter, r *http.Request, t target, req *lmosproto.Message) {
	req.OneWay = true
	sess, err := h.invoker(t).Invoke(h.ctx, req)
	if err != nil {
		httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusServiceUnavailable, "invoking action %q of Thing %q: %v", req.Name, req.ThingID, err))
		return
	}
	_ = sess.Close() // nothing will come back; closing does not cancel a one-way action
	w.Header().Set("Preference-Applied", "respond-async")
	w.WriteHeader(http.StatusAccepted)
}
