package tdd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"time"

	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/httpapi"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// eventTypes are the event types a stream can be narrowed to.
var eventTypes = map[string]directory.EventType{
	string(directory.EventCreated): directory.EventCreated,
	string(directory.EventUpdated): directory.EventUpdated,
	string(directory.EventDeleted): directory.EventDeleted,
}

// events serves GET /events and /events/{type} as server-sent events.
func (h *Handler) events(w http.ResponseWriter, r *http.Request) {
	only, diff, p := parseEventsRequest(r)
	if p != nil {
		httpapi.WriteProblem(w, r, p)
		return
	}
	last := httpapi.LastEventID(r)
	ch, cancel, err := h.deps.Directory.Subscribe(last)
	if err != nil {
		if p := subscribeProblem(err, last); p != nil {
			httpapi.WriteProblem(w, r, p)
		} else {
			h.writeInternal(w, r, "subscribe", "", err)
		}
		return
	}
	defer cancel()

	if !h.startStream() {
		httpapi.WriteProblem(w, r, &lmosproto.Problem{Status: http.StatusServiceUnavailable, Detail: "the API is shutting down"})
		return
	}
	defer h.streams.Done()

	s, err := httpapi.StartStream(w, httpapi.StreamConfig{
		Retry:        2 * time.Second, // how long an EventSource waits before it reconnects
		KeepAlive:    h.cfg.Heartbeat,
		WriteTimeout: 2 * h.cfg.Heartbeat, // a client that stops reading must not hold the stream forever
	})
	if err != nil {
		return
	}
	defer s.Close()
	h.streamEvents(r, s, ch, only, diff)
}

// parseEventsRequest checks an events request: the event type it is
// narrowed to ("" for all) and whether the events carry the TD (diff).
func parseEventsRequest(r *http.Request) (only directory.EventType, diff bool, p *lmosproto.Problem) {
	if s := r.PathValue("type"); s != "" {
		t, ok := eventTypes[s]
		if !ok {
			return "", false, &lmosproto.Problem{Status: http.StatusNotFound,
				Detail: fmt.Sprintf("no event type %q: want thing_created, thing_updated or thing_deleted", s)}
		}
		only = t
	}
	if diff, p = boolParam(r.URL.Query(), "diff"); p != nil {
		return "", false, p
	}
	return only, diff, nil
}

// subscribeProblem is the answer to a subscription after Last-Event-ID
// last that failed with err; nil for an unexpected error.
func subscribeProblem(err error, last string) *lmosproto.Problem {
	switch {
	case errors.Is(err, directory.ErrEventsLost):
		return &lmosproto.Problem{Status: http.StatusGone,
			Detail: fmt.Sprintf("header Last-Event-ID: the events after %q are no longer held: read the directory again, then subscribe without Last-Event-ID", last)}
	case errors.Is(err, directory.ErrEventID):
		return httpapi.Problemf(http.StatusBadRequest, "header Last-Event-ID: %q is not an event id of this directory", last)
	case errors.Is(err, directory.ErrClosed):
		return &lmosproto.Problem{Status: http.StatusServiceUnavailable, Detail: "the directory is closed (the node is stopping)"}
	}
	return nil
}

// streamEvents sends the events of ch that r's caller may see (of type
// only, if set) on s, until the request ends, the handler closes, the
// client stops reading or the subscription ends.
func (h *Handler) streamEvents(r *http.Request, s *httpapi.Stream, ch <-chan directory.Event, only directory.EventType, diff bool) {
	vis := h.visible(r)
	for {
		select {
		case <-r.Context().Done():
			return
		case <-h.done:
			return
		case <-s.KeepAlive():
			if s.Ping() != nil {
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
			if s.Send(msg) != nil {
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

// formatEvent is ev as a server-sent event. Without diff the data is
// {"id", "publisher"}; with diff a thing_created carries the whole signed
// TD, a thing_updated the RFC 7396 merge patch from the replaced record to
// the new one (always with "id"), a thing_deleted still only the id.
func formatEvent(ev directory.Event, diff bool) (httpapi.Event, error) {
	var data []byte
	var err error
	switch {
	case diff && ev.Type == directory.EventUpdated && ev.Previous != nil:
		data, err = updateDiff(ev)
	case diff && ev.Type != directory.EventDeleted:
		// A creation, or an update whose replaced record could not be
		// read: the whole TD, which a client applies by replacing.
		data, err = wholeTD(ev)
	default:
		data, err = json.Marshal(eventData{ID: ev.ThingID, Publisher: ev.Publisher.String()})
	}
	if err != nil {
		return httpapi.Event{}, err
	}
	return httpapi.Event{Type: string(ev.Type), ID: ev.ID, Data: string(data)}, nil
}

// liveRecord is the record of a created or updated event.
func liveRecord(ev directory.Event) (*lmosproto.Record, error) {
	rec, err := ev.Entry.Record()
	if err == nil && rec.Tombstone() {
		err = fmt.Errorf("thing %q of %s: %s event carries a tombstone", ev.ThingID, ev.Publisher, ev.Type)
	}
	return rec, err
}

// wholeTD is the event's signed TD on one line.
func wholeTD(ev directory.Event) ([]byte, error) {
	rec, err := liveRecord(ev)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, rec.Raw); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// updateDiff is the merge patch of a thing_updated event, with "id".
func updateDiff(ev directory.Event) ([]byte, error) {
	rec, err := liveRecord(ev)
	if err != nil {
		return nil, err
	}
	before, err := decodeJSON(ev.Previous)
	if err != nil {
		return nil, fmt.Errorf("thing %q of %s: replaced record: %w", ev.ThingID, ev.Publisher, err)
	}
	after, err := decodeJSON(rec.Raw)
	if err != nil {
		return nil, err
	}
	patch, ok := mergeDiff(before, after).(map[string]any)
	if !ok {
		patch = map[string]any{}
	}
	patch["id"] = ev.ThingID
	return encodeJSON(patch)
}

// mergeDiff returns the RFC 7396 merge patch that turns before into after
// (decoded JSON): members removed become null, changed ones carry their new
// value, objects recursively; arrays and other values are replaced whole.
func mergeDiff(before, after any) any {
	b, bok := before.(map[string]any)
	a, aok := after.(map[string]any)
	if !bok || !aok {
		return after
	}
	patch := make(map[string]any)
	for name := range b {
		if _, kept := a[name]; !kept {
			patch[name] = nil
		}
	}
	for name, av := range a {
		bv, had := b[name]
		switch {
		case !had:
			patch[name] = av
		case reflect.DeepEqual(bv, av):
		default:
			_, bObj := bv.(map[string]any)
			_, aObj := av.(map[string]any)
			if bObj && aObj {
				patch[name] = mergeDiff(bv, av)
			} else {
				patch[name] = av
			}
		}
	}
	return patch
}
