package mcpbridge

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// registered records what Imports registers.
type registered struct {
	mu  sync.Mutex
	ids []string
}

func (r *registered) Register(_ context.Context, td *lmosproto.TD, _ interact.Backend) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ids = append(r.ids, td.ID)
	return nil
}

func (r *registered) Unregister(context.Context, string) error { return nil }

// TestAddReturnsWhenConnected: Add answers as soon as the server's tools
// are published, not at the end of FirstSync (it did wait all of it for a
// server that answered: `lmosnode mcp import` took 30 s).
func TestAddReturnsWhenConnected(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "one", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "ping"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, struct{}, error) {
		return nil, struct{}{}, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	defer srv.Close()
	var reg registered
	im, err := NewImports(&reg, ImportsConfig{FirstSync: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	info, err := im.Add(ctx, Source{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatal("Add waited until its context ended, with the server connected")
	}
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if info.State != StateConnected || len(info.Things) != 1 || len(reg.ids) != 1 {
		t.Errorf("Add: %+v, registered %v", info, reg.ids)
	}
}
