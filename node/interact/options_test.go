package interact

import (
	"strings"
	"testing"
)

// The constructors refuse missing deps naming the field, and a config
// with every field out of range reported at once.
func TestConstructorsCheck(t *testing.T) {
	wantErr := func(t *testing.T, err error, parts ...string) {
		t.Helper()
		if err == nil {
			t.Fatalf("no error, want one naming %q", parts)
		}
		for _, p := range parts {
			if !strings.Contains(err.Error(), p) {
				t.Errorf("error %q does not name %q", err, p)
			}
		}
	}
	_, err := NewEngine(EngineDeps{}, EngineConfig{})
	wantErr(t, err, "EngineDeps.Things")
	_, err = NewEngine(EngineDeps{Things: oneThing(t)}, EngineConfig{QueueSize: -1, SchemaCacheSize: -1, ActionRetention: -1})
	wantErr(t, err, "QueueSize", "SchemaCacheSize", "ActionRetention")
	_, err = NewServer(ServerDeps{}, TransportConfig{})
	wantErr(t, err, "ServerDeps.Host")
	_, err = NewServer(ServerDeps{Host: newHost(t)}, TransportConfig{})
	wantErr(t, err, "ServerDeps.Invoker")
	_, err = NewClient(ClientDeps{}, TransportConfig{})
	wantErr(t, err, "ClientDeps.Host")
	_, err = NewClient(ClientDeps{Host: newHost(t)}, TransportConfig{MaxMessageSize: -1, DialTimeout: -1, QueueSize: -1})
	wantErr(t, err, "MaxMessageSize", "DialTimeout", "QueueSize")
	_, err = NewHTTPBackend(HTTPBackendConfig{URL: "ftp://example.org", PollInterval: -1})
	wantErr(t, err, "ftp://example.org", "PollInterval")
	_, err = NewHTTPBackend(HTTPBackendConfig{})
	wantErr(t, err, "backend URL")
}
