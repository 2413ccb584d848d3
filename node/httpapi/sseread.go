package httpapi

import (
	"io"
	"iter"

	sse "github.com/tmaxmax/go-sse"
)

// ReadEvents reads a text/event-stream from r with the parser of
// tmaxmax/go-sse and yields each event until the stream ends (no error),
// the loop stops, or reading fails (the error, once, as the last pair).
// Data fields are joined with LF, comments and retry fields are skipped,
// an incomplete last event is dropped; an event's ID is the last id the
// stream set. An event with neither data nor type (an id alone) is not
// yielded, as an EventSource would not dispatch it. maxEvent bounds the
// bytes of one event (larger is an error); 0 means go-sse's default of
// 64 KiB.
func ReadEvents(r io.Reader, maxEvent int) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		for ev, err := range sse.Read(r, &sse.ReadConfig{MaxEventSize: maxEvent}) {
			if err != nil {
				yield(Event{}, err)
				return
			}
			if ev.Data == "" && ev.Type == "" {
				continue
			}
			if !yield(Event{ID: ev.LastEventID, Type: ev.Type, Data: ev.Data}, nil) {
				return
			}
		}
	}
}
