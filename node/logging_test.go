package node

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"

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
