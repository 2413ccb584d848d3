package interact

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/proto"
)

// testService is the test Thing as an HTTP service speaking the HTTP
// backend contract (the same behaviour as newSDKThing):
//
//	GET  /properties/{name}          temperature, config; broken → 500 problem
//	PUT  /properties/{name}          config → 204
//	GET  /properties/{name}/observe  SSE of config changes
//	GET  /events/{name}              SSE of alert, tick
//	POST /actions/getWeather         200 "Sunny in <city>"
//	POST /actions/count              201 + Location; each poll advances one step
//	POST /actions/block              201 + Location; running until DELETE
//	POST /actions/crash              500 text/plain
//	POST /actions/chat               NDJSON in, SSE out (a session); JSON → 200
type testService struct {
	t      testing.TB
	st     *testThingState
	server *httptest.Server

	mu    sync.Mutex
	feeds map[string]map[chan proto.Value]struct{} // "events/alert", "properties/config"
	jobs  map[string]*testJob
	next  int
}

type testJob struct {
	action    string
	n, i      int
	cancelled bool
}

func newTestService(t testing.TB, st *testThingState) *testService {
	s := &testService{t: t, st: st, feeds: map[string]map[chan proto.Value]struct{}{}, jobs: map[string]*testJob{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /properties/{name}", s.readProperty)
	mux.HandleFunc("PUT /properties/{name}", s.writeProperty)
	mux.HandleFunc("GET /properties/{name}/observe", func(w http.ResponseWriter, r *http.Request) {
		s.sse(w, r, "properties/"+r.PathValue("name"))
	})
	mux.HandleFunc("GET /events/{name}", func(w http.ResponseWriter, r *http.Request) {
		s.sse(w, r, "events/"+r.PathValue("name"))
	})
	mux.HandleFunc("POST /actions/{name}", s.invoke)
	mux.HandleFunc("GET /jobs/{id}", s.jobStatus)
	mux.HandleFunc("DELETE /jobs/{id}", s.cancelJob)
	s.server = httptest.NewServer(mux)
	t.Cleanup(s.server.Close)
	return s
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeProblem(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", proto.ContentTypeProblemJSON)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(proto.Problem{Title: http.StatusText(status), Status: status, Detail: detail})
}

func (s *testService) readProperty(w http.ResponseWriter, r *http.Request) {
	switch r.PathValue("name") {
	case "temperature":
		writeJSON(w, 200, json.RawMessage(s.st.temperature.Load().(proto.Value).JSON()))
	case "config":
		writeJSON(w, 200, json.RawMessage(s.st.config.Load().(proto.Value).JSON()))
	case "broken":
		writeProblem(w, 500, "sensor unplugged")
	default:
		writeProblem(w, 404, "no such property")
	}
}

func (s *testService) writeProperty(w http.ResponseWriter, r *http.Request) {
	if r.PathValue("name") != "config" {
		writeProblem(w, 405, "read-only")
		return
	}
	body, _ := io.ReadAll(r.Body)
	v, err := proto.ParseValue(body)
	if err != nil {
		writeProblem(w, 400, err.Error())
		return
	}
	s.st.config.Store(v)
	s.notify("properties/config", v)
	w.WriteHeader(http.StatusNoContent)
}

// notify sends v to the SSE clients of a feed; returns how many.
func (s *testService) notify(feed string, v proto.Value) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ch := range s.feeds[feed] {
		ch <- v
	}
	return len(s.feeds[feed])
}

func (s *testService) emit(event string, data proto.Value) int {
	return s.notify("events/"+event, data)
}
func (s *testService) change(p string, v proto.Value) int { return s.notify("properties/"+p, v) }

func (s *testService) sse(w http.ResponseWriter, r *http.Request, feed string) {
	ch := make(chan proto.Value, 1024)
	s.mu.Lock()
	if s.feeds[feed] == nil {
		s.feeds[feed] = map[chan proto.Value]struct{}{}
	}
	s.feeds[feed][ch] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.feeds[feed], ch)
		s.mu.Unlock()
	}()
	w.Header().Set("Content-Type", ContentTypeEventStream)
	w.WriteHeader(200)
	fl := w.(http.Flusher)
	fmt.Fprint(w, ": hello\n\n")
	fl.Flush()
	for {
		select {
		case v := <-ch:
			fmt.Fprintf(w, "event: message\ndata: %s\n\n", v.JSON())
			fl.Flush()
		case <-r.Context().Done():
			return
		}
	}
}

func (s *testService) invoke(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if r.Header.Get(HeaderCorrelationID) == "" || r.Header.Get(HeaderThingID) != testThingID {
		writeProblem(w, 400, "missing LMOS headers")
		return
	}
	if name == "chat" && r.Header.Get("Content-Type") == ContentTypeNDJSON {
		s.chatSession(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	switch name {
	case "getWeather":
		var q struct{ City string }
		_ = json.Unmarshal(body, &q)
		writeJSON(w, 200, "Sunny in "+q.City)
	case "chat":
		var in string
		_ = json.Unmarshal(body, &in)
		writeJSON(w, 200, strings.ToUpper(in))
	case "count", "block":
		var n int
		_ = json.Unmarshal(body, &n)
		s.mu.Lock()
		s.next++
		id := fmt.Sprint(s.next)
		s.jobs[id] = &testJob{action: name, n: n}
		s.mu.Unlock()
		if name == "block" {
			s.st.blocked <- struct{}{}
		}
		w.Header().Set("Location", "/jobs/"+id)
		w.WriteHeader(http.StatusCreated)
	case "crash":
		http.Error(w, "boom", 500)
	default:
		writeProblem(w, 404, "no such action")
	}
}

func (s *testService) jobStatus(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	j := s.jobs[r.PathValue("id")]
	var st actionState
	switch {
	case j == nil:
	case j.cancelled:
		st.Status = proto.ActionCancelled
	case j.action == "block":
		st.Status, st.Output = proto.ActionRunning, json.RawMessage(`"started"`)
	case j.i < j.n:
		j.i++
		st.Status, st.Output = proto.ActionRunning, json.RawMessage(fmt.Sprint(j.i))
	default:
		st.Status, st.Output = proto.ActionCompleted, json.RawMessage(fmt.Sprint(j.n))
	}
	s.mu.Unlock()
	if j == nil {
		writeProblem(w, 404, "no such job")
		return
	}
	writeJSON(w, 200, st)
}

func (s *testService) cancelJob(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if j := s.jobs[r.PathValue("id")]; j != nil {
		j.cancelled = true
	}
	w.WriteHeader(http.StatusNoContent)
}

// chatSession echoes every NDJSON line upper-cased as an SSE output chunk.
func (s *testService) chatSession(w http.ResponseWriter, r *http.Request) {
	if err := http.NewResponseController(w).EnableFullDuplex(); err != nil {
		writeProblem(w, 500, err.Error())
		return
	}
	w.Header().Set("Content-Type", ContentTypeEventStream)
	w.WriteHeader(200)
	fl := w.(http.Flusher)
	fl.Flush()
	sc := bufio.NewScanner(r.Body)
	for sc.Scan() {
		var in string
		if err := json.Unmarshal(sc.Bytes(), &in); err != nil {
			fmt.Fprintf(w, "event: failed\ndata: {\"status\":400,\"title\":\"Bad chunk\",\"detail\":%q}\n\n", err.Error())
			fl.Flush()
			return
		}
		out, _ := json.Marshal(strings.ToUpper(in))
		fmt.Fprintf(w, "data: %s\n\n", out)
		fl.Flush()
	}
	fmt.Fprint(w, "event: completed\ndata:\n\n")
	fl.Flush()
}

func httpEngineFixture(t *testing.T, cfg EngineConfig) *fixture {
	st := newTestState(t)
	svc := newTestService(t, st)
	b, err := NewHTTPBackend(HTTPBackendConfig{URL: svc.server.URL, PollInterval: 2 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEngine(EngineDeps{Things: oneThing(t)}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.SetBackend(testThingID, b)
	t.Cleanup(func() {
		e.Close()
		b.client.CloseIdleConnections()
	})
	return &fixture{inv: e, state: st, emit: svc.emit, change: svc.change}
}

func p2pHTTPFixture(t *testing.T, cfg EngineConfig) *fixture {
	f := httpEngineFixture(t, cfg)
	f.inv, _, _ = overP2P(t, f.inv.(*Engine), TransportConfig{})
	return f
}

func TestPatternsHTTPBackend(t *testing.T)    { runPatterns(t, httpEngineFixture) }
func TestPatternsP2PHTTPBackend(t *testing.T) { runPatterns(t, p2pHTTPFixture) }
