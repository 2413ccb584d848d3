package httpapi

import (
	"bytes"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ContentTypeEventStream is the media type of a server-sent event stream.
const ContentTypeEventStream = "text/event-stream"

// Event is one server-sent event.
type Event struct {
	// ID is the event's id field: an EventSource sends the last one back
	// in Last-Event-ID when it reconnects. Empty: no id field. Reading,
	// it is the last id the stream set, perhaps by an earlier event.
	ID string
	// Type is the event field; empty is the default type ("message").
	Type string
	// Data is the payload. Its lines (split at CR, LF or CRLF) are sent as
	// one data field each, which the reader joins with LF again; empty
	// data is one empty data field.
	Data string
}

// errLineBreak refuses an id or event type with a line break, which
// would end the field early.
var errLineBreak = errors.New("sse: id and event type must not contain a line break")

// StreamConfig configures a Stream. A zero field turns its feature off.
type StreamConfig struct {
	// Retry is how long an EventSource waits before it reconnects, sent
	// as a field of the first event (not in a block of its own, which
	// naive readers take for an event without type or id).
	Retry time.Duration
	// KeepAlive is the period of Stream.KeepAlive, on which the handler
	// sends a comment line, below the 30–60 s after which proxies drop
	// idle connections.
	KeepAlive time.Duration
	// WriteTimeout bounds each write, so that a client that stops reading
	// does not hold the stream forever.
	WriteTimeout time.Duration
}

// Stream writes a text/event-stream response. It is not safe for
// concurrent use: the handler that started it sends from its own loop.
type Stream struct {
	w     http.ResponseWriter
	rc    *http.ResponseController
	cfg   StreamConfig
	tick  *time.Ticker
	buf   bytes.Buffer
	retry string // the retry field, until the first event carries it
}

// StartStream answers with 200 and the headers of an event stream and
// flushes them, so that the client sees the stream open at once; the
// body begins with the first event (or keep-alive comment). The caller
// sets any other header before, and calls Close when done. An error means
// the client is gone.
func StartStream(w http.ResponseWriter, cfg StreamConfig) (*Stream, error) {
	s := &Stream{w: w, rc: http.NewResponseController(w), cfg: cfg}
	h := w.Header()
	h.Set("Content-Type", ContentTypeEventStream)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // no buffering in a reverse proxy
	h.Del("Content-Length")
	w.WriteHeader(http.StatusOK)
	if ms := cfg.Retry.Milliseconds(); ms > 0 {
		s.retry = "retry: " + strconv.FormatInt(ms, 10) + "\n"
	}
	if err := s.flush(); err != nil {
		return nil, err
	}
	if cfg.KeepAlive > 0 {
		s.tick = time.NewTicker(cfg.KeepAlive)
	}
	return s, nil
}

// Send writes ev and flushes it. The first event carries the retry
// field, after its data.
func (s *Stream) Send(ev Event) error {
	if strings.ContainsAny(ev.ID, "\r\n") || strings.ContainsAny(ev.Type, "\r\n") {
		return errLineBreak
	}
	if ev.Type != "" {
		s.buf.WriteString("event: " + ev.Type + "\n")
	}
	if ev.ID != "" {
		s.buf.WriteString("id: " + ev.ID + "\n")
	}
	data := strings.ReplaceAll(strings.ReplaceAll(ev.Data, "\r\n", "\n"), "\r", "\n")
	for line := range strings.SplitSeq(data, "\n") {
		if line == "" {
			s.buf.WriteString("data:\n")
		} else {
			s.buf.WriteString("data: " + line + "\n")
		}
	}
	s.buf.WriteString(s.retry)
	s.retry = ""
	s.buf.WriteByte('\n')
	return s.flush()
}

// KeepAlive ticks every StreamConfig.KeepAlive; the handler answers a
// tick with Ping. It never ticks without KeepAlive.
func (s *Stream) KeepAlive() <-chan time.Time {
	if s.tick == nil {
		return nil
	}
	return s.tick.C
}

// Ping sends the keep-alive comment line.
func (s *Stream) Ping() error {
	s.buf.WriteString(": keep-alive\n\n")
	return s.flush()
}

// Close stops the keep-alive ticker. It does not end the response: the
// handler's return does.
func (s *Stream) Close() {
	if s.tick != nil {
		s.tick.Stop()
	}
}

// flush writes what is buffered under the write deadline and flushes it.
func (s *Stream) flush() error {
	if s.cfg.WriteTimeout > 0 {
		_ = s.rc.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout)) // not every ResponseWriter has deadlines
	}
	_, err := s.w.Write(s.buf.Bytes())
	s.buf.Reset()
	if err != nil {
		return err
	}
	return s.rc.Flush()
}

// LastEventID is the id r resumes a stream after (the Last-Event-ID
// header an EventSource sends when it reconnects), "" for a new stream.
func LastEventID(r *http.Request) string {
	return r.Header.Get("Last-Event-ID")
}
