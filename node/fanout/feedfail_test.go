package fanout

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// recordLog keeps the records of the messages it is asked about.
type recordLog struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *recordLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordLog) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r)
	return nil
}
func (h *recordLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordLog) WithGroup(string) slog.Handler      { return h }

// count returns how many records of msg were logged at level or above.
func (h *recordLog) count(msg string, level slog.Level) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, r := range h.records {
		if r.Message == msg && r.Level >= level {
			n++
		}
	}
	return n
}

// brokenOwner is an owner's engine whose Thing's backend answers every
// event subscription with 404.
func brokenOwner(t *testing.T, td *lmosproto.TD) *interact.Engine {
	t.Helper()
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no such feed", http.StatusNotFound)
	}))
	t.Cleanup(backend.Close)
	b, err := interact.NewHTTPBackend(interact.HTTPBackendConfig{URL: backend.URL})
	if err != nil {
		t.Fatal(err)
	}
	engine, err := interact.NewEngine(interact.EngineDeps{Things: interact.ThingsFunc(func(id string) (*lmosproto.TD, bool) { return td, id == td.ID })}, interact.EngineConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = engine.Close() })
	engine.SetBackend(td.ID, b)
	return engine
}

// The publisher of a Thing whose event feed keeps failing the same way
// logs it once, not at every retry.
func TestFeedEndWarningRateLimited(t *testing.T) {
	nodes := newTestNet(t, 1)
	td := parseTD(t, sensorTD)
	engine := brokenOwner(t, td)
	logs := &recordLog{}
	f, err := New(Deps{PubSub: nodes[0].ps, Self: nodes[0].h.ID(), Local: engine}, Config{Retry: time.Millisecond}, WithLogger(slog.New(logs)))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	if err := f.Publish(td); err != nil {
		t.Fatal(err)
	}
	const msg, ends = "own thing's event feed ended", 5
	for deadline := time.Now().Add(20 * time.Second); logs.count(msg, slog.LevelDebug) < ends; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the feed ended %d times, want %d", logs.count(msg, slog.LevelDebug), ends)
		}
	}
	// A new version of the Thing publishes it again: its feed ending the
	// same way is no news either.
	if err := f.Unpublish(td.ID); err != nil {
		t.Fatal(err)
	}
	if err := f.Publish(td); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); logs.count(msg, slog.LevelDebug) < 2*ends; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the feed ended %d times, want %d", logs.count(msg, slog.LevelDebug), 2*ends)
		}
	}
	if err := f.Unpublish(td.ID); err != nil {
		t.Fatal(err)
	}
	if n, all := logs.count(msg, slog.LevelInfo), logs.count(msg, slog.LevelDebug); n != 1 {
		t.Errorf("%q logged %d times at info level after %d identical ends, want once", msg, n, all)
	}
}

// A subscriber on another node, served from the Thing's topic, gets the
// owner's error when the owner's backend refuses the event feed, instead
// of a silent topic.
func TestRemoteSubscriberGetsOwnersError(t *testing.T) {
	nodes := newTestNet(t, 2)
	td := parseTD(t, sensorTD)
	engine := brokenOwner(t, td)
	owner := nodes[0].h.ID()
	pub := newFanout(t, Deps{PubSub: nodes[0].ps, Self: owner, Local: engine}, Config{})
	if err := pub.Publish(td); err != nil {
		t.Fatal(err)
	}
	lookup := func(p peer.ID, id string) (*lmosproto.TD, bool) { return td, p == owner && id == td.ID }
	sub := newFanout(t, Deps{PubSub: nodes[1].ps, Self: nodes[1].h.ID(), TD: lookup}, Config{})
	// the engine stands for the libp2p stream to the owner
	iv := &Invoker{Owner: owner, Remote: engine, Fanout: sub}
	req := lmosproto.NewMessage(td.ID, lmosproto.MsgSubscribeEvent)
	req.Name = "tick"
	s, err := iv.Invoke(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	m := recv(t, s.Replies(), "the owner's error")
	if m.Type != lmosproto.MsgError || m.Status != "404" || m.CorrelationID != req.Correlation() {
		t.Fatalf("got %+v, want the owner's 404 error for the subscription", m)
	}
	if _, ok := <-s.Replies(); ok {
		t.Error("the subscription goes on after the owner's error")
	}
}
