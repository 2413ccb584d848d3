package httpapi_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/node/httpapi"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// The writer's bytes: headers, then each event with its fields, the
// first with the retry field (no block of retry alone, which naive
// readers take for an event); multi-line data becomes one data line per
// line.
func TestStreamWrites(t *testing.T) {
	rec := httptest.NewRecorder()
	s, err := httpapi.StartStream(rec, httpapi.StreamConfig{Retry: 2 * time.Second, WriteTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !rec.Flushed || rec.Body.Len() != 0 {
		t.Errorf("the stream's start: flushed %v, %q; want the headers alone", rec.Flushed, rec.Body)
	}
	if err := s.Ping(); err != nil { // a comment before the first event
		t.Fatal(err)
	}
	if !rec.Flushed || rec.Body.String() != ": keep-alive\n\n" {
		t.Errorf("the stream's start: flushed %v, %q; want the headers and the comment only", rec.Flushed, rec.Body)
	}
	rec.Body.Reset()
	for _, ev := range []httpapi.Event{
		{Type: "thing_created", ID: "7", Data: `{"id":"urn:ex:lamp"}`},
		{Data: "line one\nline two\r\nline three\rline four"},
		{Type: "completed"},
		{Data: "\n"},
	} {
		if err := s.Send(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Ping(); err != nil {
		t.Fatal(err)
	}
	if err := s.Send(httpapi.Event{Type: "a\nb"}); err == nil {
		t.Error("an event type with a line break was sent")
	}
	if err := s.Send(httpapi.Event{ID: "1\r2"}); err == nil {
		t.Error("an id with a line break was sent")
	}
	want := "event: thing_created\nid: 7\ndata: {\"id\":\"urn:ex:lamp\"}\nretry: 2000\n\n" +
		"data: line one\ndata: line two\ndata: line three\ndata: line four\n\n" +
		"event: completed\ndata:\n\n" +
		"data:\ndata:\n\n" +
		": keep-alive\n\n"
	if got := rec.Body.String(); got != want {
		t.Errorf("stream:\n%q\nwant\n%q", got, want)
	}
	for k, v := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"} {
		if got := rec.Header().Get(k); got != v {
			t.Errorf("%s: %q, want %q", k, got, v)
		}
	}
	if rec.Code != http.StatusOK {
		t.Errorf("status %d", rec.Code)
	}
}

// The reader reads what the writer writes: every event comes back as it
// was sent, multi-line data included; ids carry over to later events.
func TestReadEventsRoundTrip(t *testing.T) {
	sent := []httpapi.Event{
		{Type: "thing_created", ID: "1", Data: `{"id":"a"}`},
		{Data: "multi\nline\n\ndata"},
		{Type: "completed", Data: ""},
		{Type: "post", ID: "2", Data: "  two leading spaces"},
		{Data: "after the id"},
	}
	rec := httptest.NewRecorder()
	s, err := httpapi.StartStream(rec, httpapi.StreamConfig{Retry: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i, ev := range sent {
		if i == 2 {
			if err := s.Ping(); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Send(ev); err != nil {
			t.Fatal(err)
		}
	}
	var got []httpapi.Event
	for ev, err := range httpapi.ReadEvents(rec.Body, 0) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev)
	}
	want := slices.Clone(sent)
	want[1].ID, want[2].ID, want[4].ID = "1", "1", "2" // the last id seen
	if !slices.Equal(got, want) {
		t.Errorf("read\n%+v\nwant\n%+v", got, want)
	}
}

// The reader on streams other servers write (and this node's older
// ones): a block of retry alone, comments, CRLF line ends, fields without
// a space, retry within an event, an id alone, a last event cut off.
func TestReadEventsForeign(t *testing.T) {
	in := "retry: 2000\n\n" + ": hello\r\n\r\n" +
		"event:output\r\ndata:1\r\ndata:2\r\nretry: 3000\r\n\r\n" +
		"id: 9\n\n" + // nothing to dispatch
		"data: {\"a\":\n" + "data: 1}\n\n" +
		"data: cut off"
	var got []httpapi.Event
	for ev, err := range httpapi.ReadEvents(strings.NewReader(in), 0) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev)
	}
	want := []httpapi.Event{{Type: "output", Data: "1\n2"}, {ID: "9", Data: "{\"a\":\n1}"}}
	if !slices.Equal(got, want) {
		t.Errorf("read %+v, want %+v", got, want)
	}
}

// An event larger than the bound is an error, and a read error ends the
// events with it; stopping the loop stops reading.
func TestReadEventsErrors(t *testing.T) {
	big := "data: " + strings.Repeat("x", 200) + "\n\n"
	var errs int
	for _, err := range httpapi.ReadEvents(strings.NewReader(big), 100) {
		if err == nil {
			t.Fatal("an event over the bound was read")
		}
		errs++
	}
	if errs != 1 {
		t.Errorf("%d errors, want 1", errs)
	}
	broken := io.MultiReader(strings.NewReader("data: 1\n\n"), iotestErr{})
	var got []string
	var last error
	for ev, err := range httpapi.ReadEvents(broken, 0) {
		if err != nil {
			last = err
			continue
		}
		got = append(got, ev.Data)
	}
	if !slices.Equal(got, []string{"1"}) || !errors.Is(last, errBroken) {
		t.Errorf("read %q, error %v; want [1] and %v", got, last, errBroken)
	}
	n := 0
	for _, err := range httpapi.ReadEvents(strings.NewReader("data: 1\n\ndata: 2\n\n"), 0) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		break
	}
	if n != 1 {
		t.Errorf("%d events after break", n)
	}
}

var errBroken = errors.New("connection reset")

type iotestErr struct{}

func (iotestErr) Read([]byte) (int, error) { return 0, errBroken }

// Over a real connection: the client reads each event as it is sent (the
// writer flushes), keep-alive comments come on an idle stream, and the
// server sees Last-Event-ID.
func TestStreamLive(t *testing.T) {
	sendNext := make(chan httpapi.Event)
	lastID := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lastID <- httpapi.LastEventID(r)
		s, err := httpapi.StartStream(w, httpapi.StreamConfig{KeepAlive: 20 * time.Millisecond, WriteTimeout: time.Second})
		if err != nil {
			return
		}
		defer s.Close()
		for {
			select {
			case ev, ok := <-sendNext:
				if !ok || s.Send(ev) != nil {
					return
				}
			case <-s.KeepAlive():
				if s.Ping() != nil {
					return
				}
			case <-r.Context().Done():
				return
			}
		}
	}))
	defer srv.Close()
	defer close(sendNext)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	req.Header.Set("Last-Event-ID", "41")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if got := <-lastID; got != "41" {
		t.Errorf("LastEventID %q, want 41", got)
	}
	br := bufio.NewReader(resp.Body)
	line := func() string {
		t.Helper()
		l, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSuffix(l, "\n")
	}
	// Idle: keep-alive comments.
	for range 2 {
		if l := line(); l != ": keep-alive" {
			t.Fatalf("idle stream sent %q, want a keep-alive comment", l)
		}
		if l := line(); l != "" {
			t.Fatalf("after the comment %q", l)
		}
	}
	sendNext <- httpapi.Event{ID: "42", Data: "a\nb"}
	var ev []string
	for l := line(); l != ""; l = line() {
		if l != ": keep-alive" {
			ev = append(ev, l)
		}
	}
	if !slices.Equal(ev, []string{"id: 42", "data: a", "data: b"}) {
		t.Errorf("event lines %q", ev)
	}
	// No keep-alive without KeepAlive.
	s, err := httpapi.StartStream(httptest.NewRecorder(), httpapi.StreamConfig{})
	if err != nil || s.KeepAlive() != nil {
		t.Errorf("a stream without KeepAlive ticks (%v)", err)
	}
	s.Close()
}

// A stream that has begun reports a failure as an event whose data is the
// problem, filled in as a problem response would be.
func TestProblemEvent(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "/things/urn:ex:lamp/events/overheat", nil)
	ev := httpapi.ProblemEvent(r, "error", &lmosproto.Problem{Type: lmosproto.ProblemTypeBlank, Status: http.StatusBadGateway, Detail: "owner gone"})
	want := `{"title":"Bad Gateway","status":502,"detail":"owner gone","instance":"/things/urn:ex:lamp/events/overheat"}`
	if ev.Type != "error" || ev.Data != want || ev.ID != "" {
		t.Errorf("ProblemEvent = %+v, want data %s", ev, want)
	}
	if ev := httpapi.ProblemEvent(r, "failed", errors.New("boom")); !strings.Contains(ev.Data, `"status":500,"detail":"boom"`) {
		t.Errorf("ProblemEvent of a plain error = %+v", ev)
	}
}
