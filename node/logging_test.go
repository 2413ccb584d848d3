package node

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	golog "github.com/ipfs/go-log/v2"
	"github.com/libp2p/go-libp2p/gologshim"
)

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a logger.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestLibraryLogsReachNodeLogger checks that go-libp2p (gologshim, slog) and
// go-log (zap: kad-dht, pebble) records reach the node's logger while it is
// open, at or above the libp2p level, and stop when it closes.
func TestLibraryLogsReachNodeLogger(t *testing.T) {
	var out syncBuffer
	logger := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	n, err := New(testConfig(t), WithLogger(logger), WithLibp2pLogLevel(slog.LevelInfo))
	if err != nil {
		t.Fatal(err)
	}

	shim := gologshim.Logger("lmos-test-shim")
	zapLog := golog.Logger("lmos-test-golog")
	shim.Info("shim info", "k", "v1")
	shim.Debug("shim debug below the libp2p level")
	zapLog.Errorw("golog error", "k", "v2")

	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	shim.Warn("shim after close")

	got := out.String()
	for _, want := range []string{
		`msg="shim info" logger=lmos-test-shim k=v1`,
		`msg="golog error" logger=lmos-test-golog k=v2`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("node log lacks %q:\n%s", want, got)
		}
	}
	for _, unwanted := range []string{"below the libp2p level", "after close"} {
		if strings.Contains(got, unwanted) {
			t.Errorf("node log has %q:\n%s", unwanted, got)
		}
	}
}

// TestPublishLogsOneLine publishes a Thing through the API of a node
// logging JSON and checks that the log holds exactly one info line naming
// the Thing, and that every line is one JSON object.
func TestPublishLogsOneLine(t *testing.T) {
	var out syncBuffer
	logger := slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cfg := testConfig(t)
	n, err := New(cfg, WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	const id = "urn:lmos:test:one-log-line"
	td := `{"@context":["https://www.w3.org/2022/wot/td/v1.1"],"id":"` + id + `","title":"One line","securityDefinitions":{"nosec_sc":{"scheme":"nosec"}},"security":"nosec_sc"}`
	req, err := http.NewRequest(http.MethodPost, "http://"+n.APIAddr()+"/api/v1/things", strings.NewReader(`{"td":`+td+`}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+n.APIToken())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("publish: %s: %s", resp.Status, body)
	}
	var lines int
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line is not JSON: %v: %s", err, line)
		}
		if rec["thing"] == id {
			lines++
		}
	}
	if lines != 1 {
		t.Errorf("%d log lines name the Thing, want 1:\n%s", lines, out.String())
	}
}
