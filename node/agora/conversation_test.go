package agora

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// engineInvokers calls every publisher's Things on one engine.
type engineInvokers struct{ e *interact.Engine }

func (i engineInvokers) For(peer.ID) interact.Invoker { return i.e }

// talkEngine is an engine with the agent of testTD whose action "ask" is
// a session answering each chunk in upper case; open counts its running
// sessions.
func talkEngine(t *testing.T) (*interact.Engine, *atomic.Int64) {
	t.Helper()
	td := testTD(t, `{"type":"string"}`)
	e, err := interact.NewEngine(interact.EngineDeps{Things: interact.ThingsFunc(func(id string) (*lmosproto.TD, bool) { return td, id == td.ID })}, interact.EngineConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	var open atomic.Int64
	e.SetBackend(td.ID, interact.NewThing().OnStream("ask", func(ctx context.Context, in <-chan lmosproto.Value, out func(lmosproto.Value) error) error {
		open.Add(1)
		defer open.Add(-1)
		for v := range in {
			var s string
			_ = v.Decode(&s)
			if err := out(lmosproto.StringValue(strings.ToUpper(s))); err != nil {
				return err
			}
		}
		return nil
	}))
	return e, &open
}

// valuesOf returns a function of a round's results: its output as text.
func valuesOf(t *testing.T) func([]lmosproto.Value, error) string {
	return func(out []lmosproto.Value, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var ss []string
		for _, v := range out {
			ss = append(ss, v.String())
		}
		return strings.Join(ss, ",")
	}
}

// TestConversation: rounds of one session, its end, a new session after
// it, the bound on open conversations, and the end of an expired one's
// session.
func TestConversation(t *testing.T) {
	e, open := talkEngine(t)
	str := valuesOf(t)
	convs := NewConversations(engineInvokers{e}, 300*time.Millisecond, 1)
	defer convs.Close()
	ctx := context.Background()
	target := Target{ThingID: "urn:test:agent", Action: "ask"}
	cv, err := convs.Open(target)
	if err != nil {
		t.Fatal(err)
	}
	if got := str(cv.Round(ctx, lmosproto.StringValue("a"), false)); got != `"A"` {
		t.Fatalf("round 1: %s", got)
	}
	if got := str(cv.Round(ctx, lmosproto.StringValue("b"), false)); got != `"B"` || open.Load() != 1 {
		t.Fatalf("round 2: %s, %d sessions", got, open.Load())
	}
	if got := str(cv.Round(ctx, lmosproto.Value{}, true)); got != "" {
		t.Fatalf("end: %s", got)
	}
	if got := str(cv.Round(ctx, lmosproto.StringValue("c"), false)); got != `"C"` {
		t.Fatalf("a round after the end: %s", got)
	}
	if got := str(cv.Round(ctx, lmosproto.StringValue("e"), true)); got != `"E"` {
		t.Fatalf("a last chunk that ends the session: %s", got)
	}
	if got := str(cv.Round(ctx, lmosproto.StringValue("f"), true)); got != `"F"` || open.Load() != 0 {
		t.Fatalf("a session of one round: %s, %d sessions", got, open.Load())
	}
	if got := str(cv.Round(ctx, lmosproto.StringValue("g"), false)); got != `"G"` {
		t.Fatalf("a new session: %s", got)
	}
	if _, err := convs.Open(target); err == nil {
		t.Fatal("a second conversation beyond the bound of 1")
	}
	if got := str(convs.Call(ctx, target, lmosproto.StringValue("d"))); got != `"D"` {
		t.Fatalf("a single call: %s", got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for open.Load() != 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if open.Load() != 0 {
		t.Fatal("the expired conversation's session still runs")
	}
	if got, expired := convs.Get(cv.ID); got != nil || (!expired && len(convs.byID) != 0) {
		t.Fatalf("an expired conversation: %v %v", got, expired)
	}
	if _, err := convs.Open(target); err != nil {
		t.Fatalf("a new conversation once the old expired: %v", err)
	}
}
