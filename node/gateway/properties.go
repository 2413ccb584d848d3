package gateway

import (
	"context"
	"fmt"
	"net/http"

	"github.com/lmosnode/lmosnode/node/httpapi"
	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// readProperty serves GET /things/{id}/properties/{name}.
func (h *Handler) readProperty(w http.ResponseWriter, r *http.Request) {
	t, req, p := h.request(r, "properties", lmosproto.MsgReadProperty)
	if p != nil {
		httpapi.WriteProblem(w, r, p)
		return
	}
	m, p := h.roundTrip(r, t, req)
	if p != nil {
		httpapi.WriteProblem(w, r, p)
		return
	}
	writeValue(w, r, http.StatusOK, responseFormat(r), m.Value)
}

// writeProperty serves PUT /things/{id}/properties/{name}.
func (h *Handler) writeProperty(w http.ResponseWriter, r *http.Request) {
	t, req, p := h.request(r, "properties", lmosproto.MsgWriteProperty)
	if p != nil {
		httpapi.WriteProblem(w, r, p)
		return
	}
	v, p := readValue(w, r)
	if p != nil {
		httpapi.WriteProblem(w, r, p)
		return
	}
	if !v.Present() {
		httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusBadRequest, "writing property %q of Thing %q: the body must be a value", req.Name, req.ThingID))
		return
	}
	req.Data = v
	if _, p := h.roundTrip(r, t, req); p != nil {
		httpapi.WriteProblem(w, r, p)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// observeProperty serves GET /things/{id}/properties/{name}/observe.
func (h *Handler) observeProperty(w http.ResponseWriter, r *http.Request) {
	t, req, p := h.request(r, "properties", lmosproto.MsgObserveProperty)
	if p != nil {
		httpapi.WriteProblem(w, r, p)
		return
	}
	h.stream(w, r, t, req, func(m *lmosproto.Message) (lmosproto.Value, bool) {
		return m.Value, m.Type == lmosproto.MsgPropertyReading
	})
}

// subscribeEvent serves GET /things/{id}/events/{name}.
func (h *Handler) subscribeEvent(w http.ResponseWriter, r *http.Request) {
	t, req, p := h.request(r, "events", lmosproto.MsgSubscribeEvent)
	if p != nil {
		httpapi.WriteProblem(w, r, p)
		return
	}
	h.stream(w, r, t, req, func(m *lmosproto.Message) (lmosproto.Value, bool) {
		return m.Data, m.Type == lmosproto.MsgEvent
	})
}

// request resolves the Thing of r, checks that its TD has the affordance
// {name} of kind ("properties", "actions", "events") and returns the
// request message of type typ.
func (h *Handler) request(r *http.Request, kind string, typ lmosproto.MessageType) (target, *lmosproto.Message, *lmosproto.Problem) {
	t, p := h.resolve(r, true)
	if p != nil {
		return target{}, nil, p
	}
	name := r.PathValue("name")
	td, err := h.tds.TD(t.entry)
	if err != nil {
		return target{}, nil, httpapi.Problemf(http.StatusNotFound, "Thing %q of %s: %v", t.entry.ThingID, t.entry.Publisher, err)
	}
	var found bool
	switch kind {
	case "properties":
		_, found = td.Properties[name]
	case "actions":
		_, found = td.Actions[name]
	case "events":
		_, found = td.Events[name]
	}
	if !found {
		return target{}, nil, &lmosproto.Problem{Status: http.StatusNotFound, Title: interact.TitleAffordanceNotFound,
			Detail: fmt.Sprintf("Thing %q has no %s %q", t.entry.ThingID, singular[kind], name)}
	}
	req := lmosproto.NewMessage(t.entry.ThingID, typ)
	req.Name = name
	req.Traceparent = r.Header.Get("traceparent")
	req.Tracestate = r.Header.Get("tracestate")
	return t, req, nil
}

var singular = map[string]string{"properties": "property", "actions": "action", "events": "event"}

// roundTrip runs a request that has one answer and returns it, or the
// problem it ended with.
func (h *Handler) roundTrip(r *http.Request, t target, req *lmosproto.Message) (*lmosproto.Message, *lmosproto.Problem) {
	ctx, cancel := h.requestContext(r)
	defer cancel()
	sess, err := h.invoker(t).Invoke(ctx, req)
	if err != nil {
		return nil, httpapi.Problemf(http.StatusServiceUnavailable, "%s of %q on Thing %q: %v", req.Type, req.Name, req.ThingID, err)
	}
	defer func() { _ = sess.Close() }()
	select {
	case m, ok := <-sess.Replies():
		switch {
		case !ok:
			return nil, httpapi.Problemf(http.StatusBadGateway, "%s of %q on Thing %q ended without an answer", req.Type, req.Name, req.ThingID)
		case m.Type == lmosproto.MsgError:
			return nil, problemOf(m)
		}
		return m, nil
	case <-ctx.Done():
		return nil, httpapi.Problemf(http.StatusServiceUnavailable, "%s of %q on Thing %q: %v", req.Type, req.Name, req.ThingID, context.Cause(ctx))
	}
}

// readValue reads a JSON or CBOR body (by its Content-Type); an empty
// body is the zero Value.
func readValue(w http.ResponseWriter, r *http.Request) (lmosproto.Value, *lmosproto.Problem) {
	b, p := readBody(w, r)
	if p != nil || len(b) == 0 {
		return lmosproto.Value{}, p
	}
	f, p := requestFormat(r)
	if p != nil {
		return lmosproto.Value{}, p
	}
	if f == formatCBOR {
		var v lmosproto.Value
		if err := v.UnmarshalCBOR(b); err != nil {
			return lmosproto.Value{}, httpapi.Problemf(http.StatusBadRequest, "body is not a CBOR data item with a JSON form: %v", err)
		}
		return v, nil
	}
	v, err := lmosproto.ParseValue(b)
	if err != nil {
		return lmosproto.Value{}, httpapi.Problemf(http.StatusBadRequest, "body is not a JSON value: %v", err)
	}
	return v, nil
}

// valueJSON is v's JSON text, null when absent.
func valueJSON(v lmosproto.Value) []byte {
	if !v.Present() {
		return []byte("null")
	}
	return v.JSON()
}
