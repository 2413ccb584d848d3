package tdd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/lmosnode/lmosnode/node/directory"
)

// eventTypes are the event types a stream can be narrowed to.
var eventTypes = map[string]directory.EventType{
	string(directory.EventCreated): directory.EventCreated,
	string(directory.EventUpdated): directory.EventUpdated,
	string(directory.EventDeleted): directory.EventDeleted,
}

// events serves GET /events and /events/{type} as server-sent events.
func (h *Handler) events(w http.ResponseWriter, r *http.Request) {
	var only directory.EventType
	if s := r.PathValue("type"); s != "" {
		t, ok := eventTypes[s]
		if !ok {
			writeProblem(w, r, &Problem{Status: http.StatusNotFound,
				Detail: fmt.Sprintf("no event type %q: want thing_created, thing_updated or thing_deleted", s)})
			return
		}
		only = t
	}
	diff := false
	if s, ok := single(r.URL.Query(), "diff"); ok {
		b, err := strconv.ParseBool(s)
		if err != nil {
			writeProblem(w, r, badRequest("query parameter diff: %q: want true or false", s))
			return
		}
		diff = b
	}
	last := r.Header.Get("Last-Event-ID")
	ch, cancel, err := h.deps.Directory.Subscribe(last)
	switch {
	case errors.Is(err, directory.ErrEventsLost):
		writeProblem(w, r, &Problem{Status: http.StatusGone,
			Detail: fmt.Sprintf("header Last-Event-ID: the events after %q are no longer held: read the directory again, then subscribe without Last-Event-ID", last)})
		return
	case errors.Is(err, directory.ErrEventID):
		writeProblem(w, r, badRequest("header Last-Event-ID: %q is not an event id of this directory", last))
		return
	case errors.Is(err, directory.ErrClosed):
		writeProblem(w, r, &Problem{Status: http.StatusServiceUnavailable, Detail: "the directory is closed (the node is stopping)"})
		return
	case err != nil:
		h.writeInternal(w, r, "subscribe", "", err)
		return
	}
	defer cancel()

	if !h.startStream() {
		writeProblem(w, r, &Problem{Status: http.StatusServiceUnavailable, Detail: "the API is shutting down"})
		return
	}
	defer h.streams.Done()

	rc := http.NewResponseController(w)
	hdr := w.Header()
	hdr.Set("Content-Type", ContentTypeEventStream)
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("X-Accel-Buffering", "no") // no buffering in a reverse proxy
	w.WriteHeader(http.StatusOK)
	vis := h.visible(r)
	send := func(b []byte) bool {
		// A client that stops reading must not hold the stream forever.
		_ = rc.SetWriteDeadline(time.Now().Add(2 * h.cfg.Heartbeat))
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	// retry: how long an EventSource waits before it reconnects.
	if !send([]byte("retry: 2000\n\n")) {
		return
	}
	tick := time.NewTicker(h.cfg.Heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-h.done:
			return
		case <-tick.C:
			if !send([]byte(": heartbeat\n\n")) {
				return
			}
		case ev, ok := <-ch:
			if !ok || ev.Type == directory.EventOverflow {
				// Too far behind, or the directory closed: end the stream;
				// the client resumes with Last-Event-ID.
				return
			}
			if only != "" && ev.Type != only {
				continue
			}
			if vis != nil && !vis(ev.Entry) {
				continue
			}
			msg, err := formatEvent(ev, diff)
			if err != nil {
				h.log.Warn("event not sent", "event", ev.ID, "thing", ev.ThingID, "err", err)
				continue
			}
			if !send(msg) {
				return
			}
		}
	}
}

// eventData is the data of an event without diff.
type eventData struct {
	ID        string `json:"id"`
	Publisher string `json:"publisher"`
}

// formatEvent writes ev as an SSE message.
func formatEvent(ev directory.Event, diff bool) ([]byte, error) {
	var data []byte
	if diff && ev.Type != directory.EventDeleted {
		rec, err := ev.Entry.Record()
		if err != nil {
			return nil, err
		}
		if rec.Tombstone() {
			return nil, fmt.Errorf("thing %q of %s: %s event carries a tombstone", ev.ThingID, ev.Publisher, ev.Type)
		}
		// SSE data lines end at a newline; compact JSON has none.
		var buf bytes.Buffer
		if err := json.Compact(&buf, rec.Raw); err != nil {
			return nil, err
		}
		data = buf.Bytes()
	} else {
		var err error
		if data, err = json.Marshal(eventData{ID: ev.ThingID, Publisher: ev.Publisher.String()}); err != nil {
			return nil, err
		}
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "event: %s\nid: %s\ndata: %s\n\n", ev.Type, ev.ID, data)
	return b.Bytes(), nil
}
