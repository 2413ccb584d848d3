package gateway

import (
	"context"
	"errors"
	"net/http"

	"github.com/lmosnode/lmosnode/node/httpapi"
	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// readProperty serves GET /things/{id}/properties/{name}.
func (h *Handler) readProperty(w http.ResponseWriter, r *http.Request) {
	t, req, p := h.request(r, lmosproto.MsgReadProperty)
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
	t, req, p := h.request(r, lmosproto.MsgWriteProperty)
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
	t, req, p := h.request(r, lmosproto.MsgObserveProperty)
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
	t, req, p := h.request(r, lmosproto.MsgSubscribeEvent)
	if p != nil {
		httpapi.WriteProblem(w, r, p)
		return
	}
	h.stream(w, r, t, req, func(m *lmosproto.Message) (lmosproto.Value, bool) {
		return m.Data, m.Type == lmosproto.MsgEvent
	})
}

// request resolves the Thing of r and returns the request message of type
// typ on its affordance {name}, which the TD must have.
func (h *Handler) request(r *http.Request, typ lmosproto.MessageType) (target, *lmosproto.Message, *lmosproto.Problem) {
	t, p := h.resolve(r, true)
	if p != nil {
		return target{}, nil, p
	}
	td, err := h.tds.TD(t.entry)
	if err != nil {
		return target{}, nil, httpapi.Problemf(http.StatusNotFound, "Thing %q of %s: %v", t.entry.ThingID, t.entry.Publisher, err)
	}
	req := lmosproto.NewMessage(t.entry.ThingID, typ)
	req.Name = r.PathValue("name")
	req.Traceparent = r.Header.Get("traceparent")
	req.Tracestate = r.Header.Get("tracestate")
	// The owner's engine checks again; this answers an unknown affordance
	// of another node's Thing without a round trip.
	if err := interact.CheckAffordance(td, req); err != nil {
		var p *lmosproto.Problem
		errors.As(err, &p)
		return target{}, nil, p
	}
	return t, req, nil
}

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
