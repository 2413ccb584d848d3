package config

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/node/trust"
)

func TestDefaultConfigValidates(t *testing.T) {
	cfg := Default()
	cfg.Home = t.TempDir()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Bootstrap) != 0 {
		t.Errorf("default bootstrap peers %v: none may be built in", cfg.Bootstrap)
	}
}

func TestConfigValidateNamesField(t *testing.T) {
	const peerAddr = "/ip4/127.0.0.1/tcp/4001/p2p/12D3KooWQkq67sSjdEMzqEJgYX9s7791PkDj6gPZKDbH6d8xeGmQ"
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
		field  string // must appear in the error
	}{
		{"no home", func(c *Config) { c.Home = "" }, "home"},
		{"no listen", func(c *Config) { c.Listen = nil }, "listen"},
		{"listen garbage", func(c *Config) { c.Listen = []string{"/ip4/127.0.0.1/tcp/0", "tcp://x"} }, "listen[1]"},
		{"listen udp without quic", func(c *Config) { c.Listen = []string{"/ip4/127.0.0.1/udp/4001"} }, "listen[0]"},
		{"listen dns", func(c *Config) { c.Listen = []string{"/dns4/example.com/tcp/1"} }, "listen[0]"},
		{"listen with peer id", func(c *Config) { c.Listen = []string{peerAddr} }, "listen[0]"},
		{"api no port", func(c *Config) { c.API = "127.0.0.1" }, "api"},
		{"api public without token", func(c *Config) { c.API = "0.0.0.0:5080" }, "apiToken"},
		{"api hostname", func(c *Config) { c.API = "example.com:5080" }, "api"},
		{"api bad port", func(c *Config) { c.API = "127.0.0.1:99999" }, "api"},
		{"cors origin with path", func(c *Config) { c.APICORS.AllowOrigins = []string{"https://console.example/"} }, "apiCORS.allowOrigins[0]"},
		{"cors star and origin", func(c *Config) { c.APICORS.AllowOrigins = []string{"*", "https://console.example"} }, "apiCORS.allowOrigins"},
		{"api body timeout negative", func(c *Config) { c.APILimits.BodyTimeout = Duration(-time.Second) }, "apiLimits.bodyTimeout"},
		{"api conns per client negative", func(c *Config) { c.APILimits.MaxConnsPerClient = -1 }, "apiLimits.maxConnsPerClient"},
		{"bootstrap without peer id", func(c *Config) { c.Bootstrap = []string{"/ip4/127.0.0.1/tcp/4001"} }, "bootstrap[0]"},
		{"dht mode", func(c *Config) { c.DHTMode = "both" }, "dhtMode"},
		{"log format", func(c *Config) { c.LogFormat = "xml" }, "logFormat"},
		{"mcp tools", func(c *Config) { c.MCPTools = -1 }, "mcpTools"},
		{"connmgr low negative", func(c *Config) { c.ConnMgr.Low = -1 }, "connMgr.low"},
		{"connmgr high zero", func(c *Config) { c.ConnMgr.High = 0 }, "connMgr.high"},
		{"connmgr low above high", func(c *Config) { c.ConnMgr.Low = 500 }, "connMgr.low"},
		{"connmgr grace negative", func(c *Config) { c.ConnMgr.Grace = Duration(-time.Second) }, "connMgr.grace"},
		{"memory negative", func(c *Config) { c.Resources.MaxMemoryMB = -1 }, "resources.maxMemoryMB"},
		{"fds negative", func(c *Config) { c.Resources.MaxFDs = -1 }, "resources.maxFDs"},
		{"conns below connmgr", func(c *Config) { c.Resources.MaxConns = 10 }, "resources.maxConns"},
		{"streams negative", func(c *Config) { c.Resources.MaxStreams = -5 }, "resources.maxStreams"},
		{"peer interactions negative", func(c *Config) { c.Resources.MaxPeerInteractions = -1 }, "resources.maxPeerInteractions"},
		{"cache negative", func(c *Config) { c.Datastore.CacheMB = -1 }, "datastore.cacheMB"},
		{"hole punching without relay", func(c *Config) { c.RelayClient = false }, "holePunching"},
		{"relay without peer id", func(c *Config) { c.Relays = []string{"/ip4/127.0.0.1/tcp/4001"} }, "relays[0]"},
		{"relays without relay client", func(c *Config) {
			c.HolePunching, c.RelayClient, c.Relays = false, false, []string{peerAddr}
		}, "relays"},
		{"relay limit negative", func(c *Config) { c.RelayLimits.MaxCircuits = -1 }, "relayLimits.maxCircuits"},
		{"relay conn duration negative", func(c *Config) { c.RelayLimits.ConnDuration = Duration(-time.Second) }, "relayLimits.connDuration"},
		{"relay data negative", func(c *Config) { c.RelayLimits.ConnDataBytes = -1 }, "relayLimits.connDataBytes"},
		{"announce garbage", func(c *Config) { c.Announce = []string{"203.0.113.7:4001"} }, "announce[0]"},
		{"announce without transport", func(c *Config) { c.Announce = []string{"/dns4/node.example.org"} }, "announce[0]"},
		{"announce with peer id", func(c *Config) { c.Announce = []string{"/ip4/127.0.0.1/tcp/4001", peerAddr} }, "announce[1]"},
		{"announce network", func(c *Config) { c.Announce = []string{"/ip4/10.0.0.0/ipcidr/8"} }, "announce[0]"},
		{"announce starts with tcp", func(c *Config) { c.Announce = []string{"/tcp/4001"} }, "announce[0]"},
		{"no-announce garbage", func(c *Config) { c.NoAnnounce = []string{"10.0.0.0/8"} }, "noAnnounce[0]"},
		{"no-announce cidr misplaced", func(c *Config) { c.NoAnnounce = []string{"/ip4/10.0.0.0/ipcidr/8/tcp/1"} }, "noAnnounce[0]"},
		{"thing ttl negative", func(c *Config) { c.ThingTTL = Duration(-time.Hour) }, "thingTTL"},
		{"thing ttl too short", func(c *Config) { c.ThingTTL = Duration(time.Second) }, "thingTTL"},
		{"quota things negative", func(c *Config) { c.Quota.MaxThings = -1 }, "quota.maxThings"},
		{"quota bytes negative", func(c *Config) { c.Quota.MaxBytes = -1 }, "quota.maxBytes"},
		{"quota bytes below one record", func(c *Config) { c.Quota.MaxBytes = 1000 }, "quota.maxBytes"},
		{"learned bytes negative", func(c *Config) { c.Quota.MaxLearnedBytes = -1 }, "quota.maxLearnedBytes"},
		{"learned bytes below one record", func(c *Config) { c.Quota.MaxLearnedBytes = 1000 }, "quota.maxLearnedBytes"},
		{"offline after negative", func(c *Config) { c.Liveness.OfflineAfter = Duration(-time.Second) }, "liveness.offlineAfter"},
		{"offline after too short", func(c *Config) { c.Liveness.OfflineAfter = Duration(time.Millisecond) }, "liveness.offlineAfter"},
		{"offline ttl negative", func(c *Config) { c.Liveness.OfflineTTL = Duration(-time.Second) }, "liveness.offlineTTL"},
		{"offline ttl below offline after", func(c *Config) { c.Liveness.OfflineTTL = Duration(time.Minute) }, "liveness.offlineTTL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Default()
			cfg.Home = "/tmp/x"
			tc.mutate(&cfg)
			err := cfg.Validate()
			if err == nil {
				t.Fatal("Validate succeeded, want an error")
			}
			if !strings.HasPrefix(err.Error(), "config: "+tc.field+":") {
				t.Errorf("error %q does not start with %q", err, "config: "+tc.field+":")
			}
		})
	}
}

func TestConfigValidateAccepts(t *testing.T) {
	cfg := Default()
	cfg.Home = "/tmp/x"
	cfg.Listen = []string{"/ip6/::1/tcp/0", "/ip6/::1/udp/0/quic-v1", "/ip4/127.0.0.1/tcp/0/ws"}
	cfg.API = "[::1]:0"
	cfg.Bootstrap = []string{"/ip4/127.0.0.1/tcp/4001/p2p/12D3KooWQkq67sSjdEMzqEJgYX9s7791PkDj6gPZKDbH6d8xeGmQ"}
	cfg.Resources = ResourcesConfig{MaxMemoryMB: 256, MaxFDs: 512, MaxConns: 192, MaxStreams: 1000}
	cfg.Relays = []string{"/dns4/relay.example.org/tcp/4001/p2p/12D3KooWQkq67sSjdEMzqEJgYX9s7791PkDj6gPZKDbH6d8xeGmQ"}
	cfg.RelayService = true
	cfg.RelayLimits = RelayLimits{MaxReservations: 1024, MaxCircuits: 64, ConnDuration: Duration(10 * time.Minute), ConnDataBytes: 1 << 24}
	cfg.Announce = []string{"/dns4/node.example.org/tcp/4001", "/ip4/203.0.113.7/udp/4001/quic-v1", "/ip6/2001:db8::7/tcp/4001"}
	cfg.NoAnnounce = []string{"/ip4/10.0.0.0/ipcidr/8", "/ip6/fd00::/ipcidr/8", "/ip4/192.168.1.2/tcp/4001"}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg.API = "localhost:5080"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg.APICORS.AllowOrigins = []string{"https://console.example", "http://localhost:3000"}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestLoadConfigMergesOverDefaults(t *testing.T) {
	home := t.TempDir()
	file := `{"mdns": false, "connMgr": {"high": 300}, "listen": ["/ip4/127.0.0.1/tcp/0"]}`
	if err := os.WriteFile(filepath.Join(home, File), []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Load(home)
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	want.Home = home
	want.MDNS = false
	want.ConnMgr.High = 300
	want.Listen = []string{"/ip4/127.0.0.1/tcp/0"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Load =\n%+v\nwant\n%+v", got, want)
	}
}

func TestLoadConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name, file, want string
	}{
		{"unknown field", `{"mdsn": false}`, `unknown field "mdsn"`},
		{"wrong type", `{"mdns": "no"}`, "mdns"},
		{"bad duration", `{"connMgr": {"grace": "soon"}}`, "duration"},
		{"numeric duration", `{"connMgr": {"grace": 30}}`, "duration"},
		{"trailing", `{} {}`, "trailing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			if err := os.WriteFile(filepath.Join(home, File), []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Load(home)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
	if _, err := Load(t.TempDir()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: err = %v, want fs.ErrNotExist", err)
	}
}

func TestConfigRoundTrip(t *testing.T) {
	home := t.TempDir()
	cfg := Default()
	cfg.ConnMgr.Grace = Duration(90 * time.Second)
	if err := Write(home, cfg); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(home, File))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("config mode %#o, want 0600", fi.Mode().Perm())
	}
	raw, _ := os.ReadFile(filepath.Join(home, File))
	if !strings.Contains(string(raw), `"grace": "1m30s"`) {
		t.Errorf("grace not written as a duration string:\n%s", raw)
	}
	got, err := Load(home)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Home = home
	if !reflect.DeepEqual(got, cfg) {
		t.Errorf("round trip =\n%+v\nwant\n%+v", got, cfg)
	}
}

func TestWithFallbacks(t *testing.T) {
	cfg := Loopback(t.TempDir())
	cfg.DHTMode = ""
	cfg.ConnMgr = ConnMgrConfig{}
	cfg.Datastore = DatastoreConfig{}
	def := Default()
	got := cfg.WithFallbacks()
	if err := got.Validate(); err != nil {
		t.Fatal(err)
	}
	if got.DHTMode != def.DHTMode || got.ConnMgr != def.ConnMgr || got.Datastore != def.Datastore {
		t.Errorf("fallbacks not filled: %+v", got)
	}
}

func TestDefaultConfigJSONKeys(t *testing.T) {
	raw, err := json.Marshal(Default())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["Home"]; ok {
		t.Error("Home is serialised; it must not be (config.json lives in it)")
	}
	for _, k := range []string{"listen", "api", "bootstrap", "mdns", "dhtMode", "connMgr", "resources", "autoNAT", "holePunching", "relayClient", "relays", "relayService", "relayLimits", "announce", "noAnnounce", "datastore", "apiLimits"} {
		if _, ok := m[k]; !ok {
			t.Errorf("config JSON lacks %q", k)
		}
	}
}

// TestWriteKeepsOwner: root rewriting the config of a service that runs
// as another user leaves the file that user's (systemd's DynamicUser).
func TestWriteKeepsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a file to another user")
	}
	home := t.TempDir()
	if err := Write(home, Default()); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(home, File)
	const nobody = 65534
	if err := os.Chown(path, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	cfg := Default()
	cfg.DHTMode = DHTModeServer
	if err := Write(home, cfg); err != nil {
		t.Fatal(err)
	}
	if uid, gid, _ := owner(path); uid != nobody || gid != nobody {
		t.Errorf("config.json owned by %d:%d after Write, want %d:%d", uid, gid, nobody, nobody)
	}
	if err := WriteTrust(home, trust.Config{OnlyTrusted: true}); err != nil {
		t.Fatal(err)
	}
	if uid, _, _ := owner(path); uid != nobody {
		t.Errorf("config.json owned by %d after WriteTrust, want %d", uid, nobody)
	}
}
