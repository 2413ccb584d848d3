package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// thermostat registers a Go SDK Thing on n and returns it.
func thermostat(t *testing.T, n *node.Node, id string) *interact.Thing {
	t.Helper()
	doc := map[string]any{
		"@context":            json.RawMessage(lmosproto.LMOSContext()),
		"@type":               []string{lmosproto.TypeTool},
		"id":                  id,
		"title":               "Thermostat in the lab",
		"securityDefinitions": map[string]any{"nosec_sc": map[string]string{"scheme": "nosec"}},
		"security":            "nosec_sc",
		"properties": map[string]any{"target": map[string]any{"type": "number", "observable": true,
			"forms": []any{map[string]any{"href": "https://backend.example/target"}}}},
		"actions": map[string]any{
			"double": map[string]any{"input": map[string]any{"type": "number"},
				"forms": []any{map[string]any{"href": "https://backend.example/double"}}},
			"warmup": map[string]any{"forms": []any{map[string]any{"href": "https://backend.example/warmup"}}},
			"shout": map[string]any{"input": map[string]any{"type": "string"},
				"forms": []any{map[string]any{"href": "https://backend.example/shout"}}},
		},
		"events": map[string]any{"alarm": map[string]any{"forms": []any{map[string]any{"href": "https://backend.example/alarm"}}}},
	}
	raw, _ := json.Marshal(doc)
	td, err := lmosproto.ParseTD(raw)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	target := lmosproto.StringValue("unset")
	th := interact.NewThing().
		OnProperty("target",
			func(context.Context) (lmosproto.Value, error) { mu.Lock(); defer mu.Unlock(); return target, nil },
			func(_ context.Context, v lmosproto.Value) error { mu.Lock(); defer mu.Unlock(); target = v; return nil }).
		OnAction("double", func(_ context.Context, in lmosproto.Value, _ func(lmosproto.Value)) (lmosproto.Value, error) {
			var x float64
			if err := in.Decode(&x); err != nil {
				return lmosproto.Value{}, err
			}
			return lmosproto.ValueOf(2 * x)
		}).
		OnAction("warmup", func(ctx context.Context, _ lmosproto.Value, progress func(lmosproto.Value)) (lmosproto.Value, error) {
			for i := range 3 {
				v, _ := lmosproto.ValueOf(i)
				progress(v)
				select {
				case <-time.After(100 * time.Millisecond):
				case <-ctx.Done():
					return lmosproto.Value{}, ctx.Err()
				}
			}
			return lmosproto.StringValue("warm"), nil
		}).
		OnStream("shout", func(_ context.Context, in <-chan lmosproto.Value, out func(lmosproto.Value) error) error {
			for v := range in {
				var s string
				if err := v.Decode(&s); err != nil {
					return err
				}
				if err := out(lmosproto.StringValue(strings.ToUpper(s))); err != nil {
					return err
				}
			}
			return nil
		})
	if _, err := n.Register(td, th); err != nil {
		t.Fatal(err)
	}
	return th
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// read, write, invoke and subscribe against a running node, with the
// Thing on another node, named by title prefix.
func TestInteractCommands(t *testing.T) {
	net := testnet.New(t, 2, testnet.Options{})
	owner, local := net.Nodes[0], net.Nodes[1]
	id := testnet.UniqueID(t)
	th := thermostat(t, owner, id)
	net.Link(1, 0)
	testnet.WaitFor(t, "the local node learns the Thing", 10*time.Second, func() (bool, string) {
		return len(local.Directory().Lookup(id)) > 0, "not yet"
	})
	home := local.Config().Home

	mustRun(t, "--home", home, "write", "thermostat", "target", "21.5")
	if out := mustRun(t, "--home", home, "read", "Thermostat in", "target"); strings.TrimSpace(out) != "21.5" {
		t.Errorf("read = %q", out)
	}
	if out := mustRun(t, "--home", home, "invoke", id, "double", "21"); strings.TrimSpace(out) != "42" {
		t.Errorf("invoke double = %q", out)
	}
	if out := mustRun(t, "--home", home, "invoke", id, "warmup"); strings.TrimSpace(out) != `"warm"` {
		t.Errorf("invoke warmup = %q", out)
	}
	if out := mustRun(t, "--home", home, "invoke", id, "warmup", "--stream"); out != "0\n1\n2\n\"warm\"\n" {
		t.Errorf("invoke warmup --stream = %q", out)
	}
	out, errOut, code := lmosnode(t, "\"a\"\n\"b\"\n", "--home", home, "invoke", id, "shout", `"x"`, "--stream", "--stdin")
	if code != 0 || out != "\"X\"\n\"A\"\n\"B\"\n" {
		t.Errorf("invoke shout --stream --stdin = %q, exit %d, stderr %s", out, code, errOut)
	}

	for _, tc := range []struct{ args, want string }{
		{"read nosuchthing target", "no Thing with id or title prefix"},
		{"read thermostat nope", `no property "nope"`},
		{"invoke thermostat double \"x\"", "Invalid input"},
		{"write thermostat target notjson", "not JSON"},
	} {
		_, errOut, code := lmosnode(t, "", append([]string{"--home", home}, strings.Fields(tc.args)...)...)
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("lmosnode %s: exit %d, stderr %q; want %q", tc.args, code, errOut, tc.want)
		}
	}

	// subscribe runs until interrupted.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		root := newRootCmd()
		root.SetArgs([]string{"--home", home, "subscribe", "thermostat", "alarm"})
		root.SetOut(&stdout)
		root.SetErr(&stderr)
		done <- root.ExecuteContext(ctx)
	}()
	// Events are not replayed: the owner emits until the subscription is in
	// place (a direct stream, or the Thing's gossip topic) and one arrives.
	testnet.WaitFor(t, "subscribe prints the event", 10*time.Second, func() (bool, string) {
		th.Emit("alarm", lmosproto.StringValue("hot"))
		return strings.Contains(stdout.String(), `"hot"`), stdout.String()
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("subscribe: %v (stderr %s)", err, stderr.String())
	}

	// --property observes a property instead.
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	var observed syncBuffer
	go func() {
		root := newRootCmd()
		root.SetArgs([]string{"--home", home, "subscribe", "thermostat", "target", "--property"})
		root.SetOut(&observed)
		root.SetErr(&stderr)
		done <- root.ExecuteContext(ctx2)
	}()
	testnet.WaitFor(t, "the observation reaches the owner", 10*time.Second, func() (bool, string) {
		return th.Changed("target", lmosproto.StringValue("cool")) > 0, "no observer"
	})
	testnet.WaitFor(t, "subscribe --property prints the value", 10*time.Second, func() (bool, string) {
		return strings.Contains(observed.String(), `"cool"`), observed.String()
	})
	cancel2()
	if err := <-done; err != nil {
		t.Errorf("subscribe --property: %v (stderr %s)", err, stderr.String())
	}
}

// readSSE hands over whole events: a problem whose JSON spans several
// data lines arrives as one, and the events after a done one are not
// read.
func TestReadSSEWholeEvents(t *testing.T) {
	in := ": keep-alive\n\n" +
		"data: \"a\"\n\n" +
		"event: failed\ndata: {\"title\": \"Bad Request\",\ndata:  \"status\": 400, \"detail\": \"bad chunk\"}\n\n" +
		"data: \"never\"\n\n"
	var got []string
	done, err := readSSE(strings.NewReader(in), func(event, data string) (bool, error) {
		got = append(got, event+"|"+data)
		if event == "failed" {
			return true, problemError(502, []byte(data))
		}
		return false, nil
	})
	if !done || err == nil || err.Error() != "400 Bad Request: bad chunk" {
		t.Errorf("done %v, err %v; want the failed event's problem", done, err)
	}
	if len(got) != 2 || got[0] != `|"a"` {
		t.Errorf("events %q", got)
	}
}
