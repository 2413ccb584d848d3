package config

import (
	"bufio"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestConfigReference keeps docs/config.md in sync with Config: every
// setting has a row naming its environment variable and its default, and
// no row names a setting that does not exist.
func TestConfigReference(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "..", "docs", "config.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type row struct{ env, def string }
	doc := map[string]row{}
	inTable := false
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			inTable = line == "## Settings"
			continue
		}
		if !inTable || !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(line, " | ")
		if len(cells) < 4 {
			t.Errorf("docs/config.md: row %q: want | setting | environment | default | meaning |", line)
			continue
		}
		unquote := func(s string) string { return strings.Trim(strings.TrimSpace(s), "`") }
		doc[unquote(strings.TrimPrefix(cells[0], "|"))] = row{env: unquote(cells[1]), def: unquote(cells[2])}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}

	def := Default()
	var missing, extra []string
	known := map[string]bool{}
	for _, s := range Settings() {
		known[s.Path] = true
		r, ok := doc[s.Path]
		if !ok {
			missing = append(missing, s.Path)
			continue
		}
		if r.env != s.Env {
			t.Errorf("docs/config.md: %s: environment %q, want %q", s.Path, r.env, s.Env)
		}
		v, err := s.Get(def)
		if err != nil {
			t.Fatal(err)
		}
		if r.def != string(v) {
			t.Errorf("docs/config.md: %s: default %s, want %s (Default)", s.Path, r.def, v)
		}
	}
	for path := range doc {
		if !known[path] {
			extra = append(extra, path)
		}
	}
	slices.Sort(extra)
	if len(missing) > 0 {
		t.Errorf("docs/config.md lacks a row for these settings of config.Config (add | `path` | `LMOS_…` | `default` | meaning |): %s", strings.Join(missing, ", "))
	}
	if len(extra) > 0 {
		t.Errorf("docs/config.md documents settings config.Config does not have (remove or rename them): %s", strings.Join(extra, ", "))
	}
}

func TestEnvName(t *testing.T) {
	for path, want := range map[string]string{
		"apiLimits.bodyTimeout": "LMOS_API_LIMITS_BODY_TIMEOUT",
		"apiToken":              "LMOS_API_TOKEN",
		"autoNAT":               "LMOS_AUTO_NAT",
		"resources.maxFDs":      "LMOS_RESOURCES_MAX_FDS",
		"resources.maxMemoryMB": "LMOS_RESOURCES_MAX_MEMORY_MB",
		"apiCORS.allowOrigins":  "LMOS_API_CORS_ALLOW_ORIGINS",
		"mdns":                  "LMOS_MDNS",
	} {
		if got := EnvName(path); got != want {
			t.Errorf("EnvName(%q) = %q, want %q", path, got, want)
		}
	}
	seen := map[string]string{HomeEnv: "the home directory"}
	for _, s := range Settings() {
		if other, ok := seen[s.Env]; ok {
			t.Errorf("%s and %s share the variable %s", s.Path, other, s.Env)
		}
		seen[s.Env] = s.Path
	}
	if seen[APITokenEnv] != "apiToken" {
		t.Errorf("$%s is the variable of %q, want apiToken", APITokenEnv, seen[APITokenEnv])
	}
}

// TestApplyEnv sets one variable of each kind and checks the result and
// the errors.
func TestApplyEnv(t *testing.T) {
	env := map[string]string{
		"LMOS_DHT_MODE":                  "server",
		"LMOS_MDNS":                      "false",
		"LMOS_CONN_MGR_HIGH":             "300",
		"LMOS_API_LIMITS_BODY_TIMEOUT":   "1m",
		"LMOS_API_LIMITS_MAX_BODY_BYTES": "1024",
		"LMOS_BOOTSTRAP":                 "/ip4/127.0.0.1/tcp/1/p2p/12D3KooWQkq67sSjdEMzqEJgYX9s7791PkDj6gPZKDbH6d8xeGmQ, /ip4/127.0.0.1/tcp/2/p2p/12D3KooWQkq67sSjdEMzqEJgYX9s7791PkDj6gPZKDbH6d8xeGmQ",
		"LMOS_API_CORS_ALLOW_ORIGINS":    `["http://localhost:3000"]`,
		"LMOS_LISTEN":                    "[]",
		"LMOS_MQTT":                      "", // empty: unset
	}
	cfg := Default()
	if err := ApplyEnv(&cfg, func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err != nil {
		t.Fatal(err)
	}
	want := Default()
	want.DHTMode, want.MDNS, want.ConnMgr.High = DHTModeServer, false, 300
	want.APILimits.BodyTimeout, want.APILimits.MaxBodyBytes = Duration(time.Minute), 1024
	want.Bootstrap = []string{
		"/ip4/127.0.0.1/tcp/1/p2p/12D3KooWQkq67sSjdEMzqEJgYX9s7791PkDj6gPZKDbH6d8xeGmQ",
		"/ip4/127.0.0.1/tcp/2/p2p/12D3KooWQkq67sSjdEMzqEJgYX9s7791PkDj6gPZKDbH6d8xeGmQ",
	}
	want.APICORS.AllowOrigins = []string{"http://localhost:3000"}
	want.Listen = []string{}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("ApplyEnv:\n got %+v\nwant %+v", cfg, want)
	}
	for k, v := range map[string]string{
		"LMOS_MDNS":          "maybe",
		"LMOS_CONN_MGR_HIGH": "many",
		"LMOS_THING_TTL":     "forever",
		"LMOS_LISTEN":        "[1,2]",
	} {
		cfg := Default()
		err := ApplyEnv(&cfg, func(key string) (string, bool) { return v, key == k })
		if err == nil || !strings.Contains(err.Error(), "$"+k) {
			t.Errorf("%s=%s: %v, want an error naming the variable", k, v, err)
		}
	}
}

// TestLoadConfigEnv: the environment overrides config.json in Load,
// not in LoadFile.
func TestLoadConfigEnv(t *testing.T) {
	home := t.TempDir()
	if err := Write(home, Default()); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadFile(home)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DHTMode = DHTModeClient
	if err := Write(home, cfg); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LMOS_DHT_MODE", "server")
	if cfg, err := Load(home); err != nil || cfg.DHTMode != DHTModeServer {
		t.Errorf("Load with $LMOS_DHT_MODE: %v %q", err, cfg.DHTMode)
	}
	if cfg, err := LoadFile(home); err != nil || cfg.DHTMode != DHTModeClient {
		t.Errorf("LoadFile: %v %q", err, cfg.DHTMode)
	}
	t.Setenv("LMOS_CONN_MGR_LOW", "x")
	if _, err := Load(home); err == nil || !strings.Contains(err.Error(), "$LMOS_CONN_MGR_LOW") {
		t.Errorf("Load with a bad variable: %v", err)
	}
}

// TestAPIURLHint: an api written as a URL (as commands take $LMOS_API)
// says how the node wants it.
func TestAPIURLHint(t *testing.T) {
	cfg := Default()
	cfg.Home = t.TempDir()
	cfg.API = "http://127.0.0.1:5080"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "host:port, e.g. 127.0.0.1:5080") || !strings.Contains(err.Error(), "$LMOS_API") {
		t.Errorf("api as a URL: %v", err)
	}
}

// TestLookupSettingSuggests: an unknown setting close to a real one names
// it; one close to none does not guess.
func TestLookupSettingSuggests(t *testing.T) {
	for path, want := range map[string]string{
		"dht.mode":              `did you mean "dhtMode"?`,
		"DHT_MODE":              `did you mean "dhtMode"?`,
		"apiLimits.bodyTimout":  `did you mean "apiLimits.bodyTimeout"?`,
		"conMgr.high":           `did you mean "connMgr.high"?`,
		"frobnicate":            "docs/config.md lists every setting",
		"liveness.offlineAfte":  `did you mean "liveness.offlineAfter"?`,
		"relayLimits.maxCircut": `did you mean "relayLimits.maxCircuits"?`,
	} {
		_, err := LookupSetting(path)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("LookupSetting(%q) = %v, want it to say %s", path, err, want)
		}
		if want == "docs/config.md lists every setting" && strings.Contains(err.Error(), "did you mean") {
			t.Errorf("LookupSetting(%q) guessed: %v", path, err)
		}
	}
}
