package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/config"
	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// nodeWoTDir holds the node-wot consumer script and its pinned
// dependencies (@node-wot/core and @node-wot/binding-http 0.9.2).
var nodeWoTDir = filepath.Join("..", "..", "scripts", "interop", "nodewot")

// nodeWoT prepares scripts/interop/nodewot (npm ci, once per test binary)
// and returns a function that runs the node-wot consumer with arguments,
// returning its standard output, standard error and exit code. It skips
// the test only when node or npm is not on PATH.
func nodeWoT(t *testing.T) func(ctx context.Context, args ...string) (stdout, stderr []byte, code int) {
	t.Helper()
	testnet.NPM(t, nodeWoTDir)
	return nodeWoTScript(t, "consume.js")
}

// nodeWoTScript returns a function that runs script of
// scripts/interop/nodewot (prepared by nodeWoT) with arguments.
func nodeWoTScript(t *testing.T, script string) func(ctx context.Context, args ...string) (stdout, stderr []byte, code int) {
	return func(ctx context.Context, args ...string) ([]byte, []byte, int) {
		t.Helper()
		cmd := exec.CommandContext(ctx, "node", append([]string{script}, args...)...)
		cmd.Dir = nodeWoTDir
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit):
			return stdout.Bytes(), stderr.Bytes(), exit.ExitCode()
		case err != nil:
			t.Fatalf("node %s: %v\n%s", script, err, stderr.Bytes())
		}
		return stdout.Bytes(), stderr.Bytes(), 0
	}
}

// summary is the JSON line consume.js prints on success.
type nodeWoTSummary struct {
	Title    string          `json:"title"`
	Read     json.RawMessage `json:"read"`
	Written  json.RawMessage `json:"written"`
	ReadBack json.RawMessage `json:"readBack"`
	Output   json.RawMessage `json:"output"`
	Event    json.RawMessage `json:"event"`
}

// An unmodified node-wot 0.9.2 consumer fetches a remote Thing's TD from
// its local node, reads and writes a property, invokes an action and
// receives an event: everything through the consumer view's forms, which
// point at the consumer's node only.
func TestNodeWoTInterop(t *testing.T) {
	run := nodeWoT(t)
	_, consumer, id, th := pair(t)
	tdURL := "http://" + consumer.APIAddr() + thingPath(id) + "/td"
	runNodeWoTFlows(t, run, consumer, id, th, tdURL)
}

// A node whose API requires the token for every request serves consumer
// views that declare the bearer scheme; node-wot, given the token as the
// Thing's credentials (servient.addCredentials), sends it on its reads,
// writes and actions. Not on events: node-wot 0.9.2's SSE subscription
// (binding-http subscription-protocols.js) opens an EventSource without
// the credentials, so it gets 401; the flow skips the event (with the
// default requireTokenFor "admin" node-wot needs no token at all).
func TestNodeWoTBearer(t *testing.T) {
	run := nodeWoT(t)
	id := testnet.UniqueID(t)
	_, consumer, th, err := pairTDWith(t, deviceTD(t, id), testnet.Options{Configure: func(_ int, cfg *config.Config) {
		cfg.APIAuth.RequireTokenFor = config.TokenForAll
	}})
	if err != nil {
		t.Fatal(err)
	}
	tdURL := "http://" + consumer.APIAddr() + thingPath(id) + "/td"
	runNodeWoTFlows(t, run, consumer, id, th, tdURL, "--token", consumer.APIToken(), "--event", "none")
}

// An unmodified node-wot 0.9.2 consumer explores its local node's
// directory (WoT.exploreDirectory on /.well-known/wot, which reads the
// directory TD's things property: the consumer views), finds a Thing
// another node published, consumes the TD it got and reads, writes,
// invokes and subscribes through it. The Thing's TD has no TD 1.0 context,
// only the TD 1.1 one, which node-wot's validator refuses unless the
// consumer view leads with the TD 1.0 URI.
func TestNodeWoTExploreDirectory(t *testing.T) {
	run := nodeWoT(t)
	lmosBinding := map[string]string{lmosproto.PrefixLMOS: lmosproto.ContextLMOS}
	for _, c := range []struct {
		name  string
		ctx   any
		types []string
	}{
		{"td11-and-lmos", []any{lmosproto.ContextTD11, lmosBinding}, []string{lmosproto.TypeTool}},
		// A TD as TD 1.1 authoring tools write it: the context URI alone,
		// no LMOS term. The node adds lmos:seq when it signs.
		{"td11-alone", lmosproto.ContextTD11, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			id := testnet.UniqueID(t)
			_, consumer, th, err := pairTD(t, deviceTDIn(t, id, c.ctx, c.types))
			if err != nil {
				if c.types == nil && strings.Contains(err.Error(), "needs the LMOS context") {
					// Issue 12 item 1 (plain TDs through the publish
					// path) is another change; this case runs once it
					// is in.
					t.Skipf("the node does not yet publish a TD without the LMOS context: %v", err)
				}
				t.Fatal(err)
			}
			dirURL := "http://" + consumer.APIAddr() + "/.well-known/wot"
			runNodeWoTFlows(t, run, consumer, id, th, "--explore", id, dirURL)
		})
	}
}

// node-wot's own TD validator (the one exploreDirectory applies, which
// silently drops a TD it refuses) accepts every golden consumer view: with
// a TD 1.1-only context, with WebSocket and MQTT forms, pinned, bearer.
func TestNodeWoTValidatesConsumerViews(t *testing.T) {
	nodeWoT(t)
	views, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, v := range views {
		if !strings.HasSuffix(v, ".td.json") { // the signed inputs
			abs, err := filepath.Abs(v)
			if err != nil {
				t.Fatal(err)
			}
			args = append(args, abs)
		}
	}
	if len(args) < 8 {
		t.Fatalf("golden views: %v", args)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stdout, stderr, code := nodeWoTScript(t, "validate.js")(ctx, args...)
	if code != 0 {
		t.Fatalf("node-wot refuses consumer views (exit %d):\n%s%s", code, stdout, quiet(stderr))
	}
	if n := strings.Count(string(stdout), ": ok\n"); n != len(args) {
		t.Errorf("%d of %d views ok:\n%s", n, len(args), stdout)
	}
}

// runNodeWoTFlows runs consume.js with args (the TD's source) against the
// device id known to consumer: read, write, read back, invoke and an
// event that th raises every 50 ms meanwhile.
func runNodeWoTFlows(t *testing.T, run func(ctx context.Context, args ...string) ([]byte, []byte, int), consumer *node.Node, id string, th *interact.Thing, args ...string) {
	t.Helper()
	// The device starts with a string in its number property; node-wot
	// checks values against the TD, so give it a number first.
	newAPI(t, consumer).expect("PUT", thingPath(id)+"/properties/target", `20`, 204)

	// The Thing raises its event every 50 ms while the script runs, so the
	// script sees one whenever its subscription reaches the owner.
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	emitting := make(chan struct{})
	go func() {
		defer close(emitting)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				th.Emit("alarm", lmosproto.StringValue("too hot"))
			}
		}
	}()
	start := time.Now()
	// args come last: they may override the event ("--event none").
	stdout, stderr, code := run(ctx, append([]string{
		"--property", "target", "--write", "21.5",
		"--action", "add", "--input", `{"a": 2, "b": 40}`,
		"--event", "alarm", "--timeout", "30000"}, args...)...)
	cancel()
	<-emitting
	if code != 0 {
		t.Fatalf("node-wot consumer: exit %d\nstdout: %s\nstderr: %s", code, stdout, quiet(stderr))
	}
	t.Logf("node-wot consumer finished in %v: %s", time.Since(start).Round(time.Millisecond), bytes.TrimSpace(stdout))
	if e := strings.TrimSpace(quiet(stderr)); e != "" {
		t.Logf("node-wot stderr:\n%s", e)
	}

	wantEvent := `"too hot"`
	if slices.Contains(args, "none") {
		wantEvent = "null"
	}
	var got nodeWoTSummary
	lines := strings.Split(strings.TrimSpace(string(stdout)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &got); err != nil {
		t.Fatalf("summary line: %v\nstdout: %s\nstderr: %s", err, stdout, quiet(stderr))
	}
	for _, c := range []struct {
		what string
		got  json.RawMessage
		want string
	}{
		{"read before write", got.Read, `20`},
		{"read back", got.ReadBack, `21.5`},
		{"add output", got.Output, `42`},
		{"alarm event", got.Event, wantEvent},
	} {
		if string(c.got) != c.want {
			t.Errorf("%s = %s, want %s", c.what, c.got, c.want)
		}
	}
	if got.Title != "Thermostat "+id {
		t.Errorf("title = %q", got.Title)
	}
}

// quiet drops node-wot's noise (Ajv's warnings about the TD schema's
// "iri-reference" format, printed once per compiled schema) from stderr.
func quiet(stderr []byte) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(string(stderr), "\n") {
		if !strings.HasPrefix(l, `unknown format "iri-reference" ignored`) {
			b.WriteString(l)
		}
	}
	return b.String()
}
