package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ma "github.com/multiformats/go-multiaddr"

	"github.com/lmosnode/lmosnode/node/api"
	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/homedir"
	"github.com/lmosnode/lmosnode/node/tdd"
	"github.com/lmosnode/lmosnode/node/tdd/tddtest"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// daemonEnv serves a tdd API over a real directory, mounted at "/" of a mux
// that also answers GET /api/v1/node as the node's API does, and writes its
// URL into a temporary home's api file, as a running node does.
func daemonEnv(t *testing.T) (*tddtest.Env, string) {
	t.Helper()
	env := tddtest.NewEnv(t)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/node", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(api.NodeInfo{PeerID: env.Self.ID.String(), DIDKey: env.Self.DID()})
	})
	mux.Handle("/", env.Handler)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		_ = env.Handler.Close()
		srv.Close()
	})
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, homedir.APIFile), []byte(srv.URL+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return env, home
}

// lmosnode runs the command in-process, as main does, and returns stdout,
// stderr and the exit code.
func lmosnode(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(stdin), &stdout, &stderr)
	return stdout.String(), stderr.String(), code
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, code := lmosnode(t, "", args...)
	if code != 0 {
		t.Fatalf("lmosnode %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

const (
	weatherFile  = "../../examples/things/weather-agent.json"
	geocoderFile = "../../examples/things/geocoder-tool.json"
	weatherID    = "urn:uuid:6f1d3a7a-1f97-4e6b-b45f-f3c2e1c84c77"
	geocoderID   = "urn:uuid:0b7e3f0e-5c1a-4c7e-9a57-3f7e0c2d9b11"
)

func TestThingsCommands(t *testing.T) {
	env, home := daemonEnv(t)

	out := mustRun(t, "things", "publish", weatherFile, "--backend", "http://127.0.0.1:9000", "--home", home)
	if want := "created " + weatherID + ` "WeatherAgent" (seq 1)` + "\nbackend: http://127.0.0.1:9000\n"; out != want {
		t.Errorf("publish output %q, want %q", out, want)
	}
	if e, ok := env.Dir.Get(env.Self.ID, weatherID); !ok || e.Local.Backend != "http://127.0.0.1:9000" {
		t.Fatalf("not in the directory with its backend: %+v", e)
	}
	out = mustRun(t, "things", "publish", weatherFile, "--home", home)
	if !strings.HasPrefix(out, "updated "+weatherID) || !strings.Contains(out, "(seq 2)") || !strings.Contains(out, "backend: http://127.0.0.1:9000") {
		t.Errorf("republish output %q", out)
	}
	geocoder, err := os.ReadFile(geocoderFile)
	if err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := lmosnode(t, string(geocoder), "things", "publish", "-", "--home", home); code != 0 || !strings.HasPrefix(out, "created "+geocoderID) {
		t.Errorf("publish from stdin: %d %q %q", code, out, errOut)
	}

	out = mustRun(t, "things", "ls", "--home", home)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "TITLE") {
		t.Fatalf("ls:\n%s", out)
	}
	for _, want := range [][]string{
		{"Geocoder", "tool", "geocode@2.0.0", "-", "1", "-", geocoderID},
		{"WeatherAgent", "agent", "weather-forecast@1.2.0,weather-alerts@0.3.1", "-", "2", "http://127.0.0.1:9000", weatherID},
	} {
		found := false
		for _, l := range lines[1:] {
			if strings.Join(strings.Fields(l), " ") == strings.Join(want, " ") {
				found = true
			}
		}
		if !found {
			t.Errorf("ls lacks row %v:\n%s", want, out)
		}
	}
	var infos []tdd.ThingInfo
	if err := json.Unmarshal([]byte(mustRun(t, "things", "ls", "--json", "--home", home)), &infos); err != nil || len(infos) != 2 {
		t.Fatalf("ls --json: %v, %d things", err, len(infos))
	}
	if _, err := lmosproto.VerifyDocument(infos[0].TD); err != nil {
		t.Errorf("ls --json TD does not verify: %v", err)
	}

	out = mustRun(t, "things", "rm", weatherID, "--home", home)
	if out != "removed "+weatherID+"\n" {
		t.Errorf("rm output %q", out)
	}
	_, errOut, code := lmosnode(t, "", "things", "rm", weatherID, "--home", home)
	if code != exitNotFound || !strings.Contains(errOut, "404") || !strings.Contains(errOut, weatherID) {
		t.Errorf("second rm: %d %q", code, errOut)
	}
}

func TestThingsPublishInvalid(t *testing.T) {
	env, home := daemonEnv(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"@context":"https://www.w3.org/2022/wot/td/v1.1","title":5,"security":"s","securityDefinitions":{"s":{"scheme":"nosec"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := lmosnode(t, "", "things", "publish", bad, "--home", home)
	if code != 1 || !strings.Contains(errOut, bad+": not published:\n  /title: ") {
		t.Errorf("invalid TD: exit %d, stderr %q", code, errOut)
	}
	_, errOut, code = lmosnode(t, "", "things", "publish", weatherFile, "--backend", "ftp://x", "--home", home)
	if code != 1 || !strings.Contains(errOut, "request /backend: ") {
		t.Errorf("bad backend: exit %d, stderr %q", code, errOut)
	}
	notJSON := filepath.Join(dir, "x.json")
	_ = os.WriteFile(notJSON, []byte("{"), 0o644)
	if _, errOut, code = lmosnode(t, "", "things", "publish", notJSON, "--home", home); code != 1 || !strings.Contains(errOut, "not JSON") {
		t.Errorf("not JSON: %d %q", code, errOut)
	}
	if env.Publisher.Published != 0 {
		t.Errorf("%d publications", env.Publisher.Published)
	}
}

func TestFindCommand(t *testing.T) {
	env, home := daemonEnv(t)
	mustRun(t, "things", "publish", weatherFile, "--home", home)
	other := tddtest.NewIdentity(2)
	td, err := lmosproto.ParseTD(mustRead(t, geocoderFile))
	if err != nil {
		t.Fatal(err)
	}
	env.Learn(t, other, td, 1)

	out := mustRun(t, "find", "--home", home)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || strings.Join(strings.Fields(lines[0]), " ") != "TITLE TYPE CAPABILITIES VENDOR GROUPS ORGANIZATION PUBLISHER TRUST ONLINE ID" {
		t.Fatalf("find:\n%s", out)
	}
	short := "…" + other.ID.String()[len(other.ID.String())-8:]
	if row := strings.Join(strings.Fields(lines[1]), " "); row != "Geocoder tool geocode@2.0.0 Example Maps AG - - "+short+" unknown yes "+geocoderID {
		t.Errorf("row %q", row)
	}
	if row := strings.Join(strings.Fields(lines[2]), " "); row != "WeatherAgent agent weather-forecast@1.2.0,weather-alerts@0.3.1 Example Weather GmbH - - self own yes "+weatherID {
		t.Errorf("row %q", row)
	}

	// The geocoder's publisher not seen for longer than the directory's
	// OfflineAfter: offline, listed after the online Things, left out by
	// --online.
	env.Clock.Advance(directory.DefaultOfflineAfter + time.Second)
	out = mustRun(t, "find", "--home", home)
	lines = strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "WeatherAgent") ||
		!strings.Contains(strings.Join(strings.Fields(lines[2]), " "), short+" unknown no "+geocoderID) {
		t.Errorf("find with the geocoder offline:\n%s", out)
	}
	out = mustRun(t, "find", "--online", "--home", home)
	if lines = strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[1], "WeatherAgent") {
		t.Errorf("find --online:\n%s", out)
	}

	for _, tc := range []struct {
		args []string
		want []string // titles
	}{
		{[]string{"--type", "agent"}, []string{"WeatherAgent"}},
		{[]string{"--type", "tool"}, []string{"Geocoder"}},
		{[]string{"--capability", "weather-forecast@^1.2"}, []string{"WeatherAgent"}},
		{[]string{"--capability", "weather-forecast@^2"}, nil},
		{[]string{"--vendor", "example maps ag"}, []string{"Geocoder"}},
		{[]string{"--publisher", other.ID.String()}, []string{"Geocoder"}},
		{[]string{"--publisher", short}, []string{"Geocoder"}},
		{[]string{"rain", "tomorrow"}, []string{"WeatherAgent"}},
		{[]string{"coordinates"}, []string{"Geocoder"}},
	} {
		args := append(append([]string{"find"}, tc.args...), "--home", home)
		out, errOut, code := lmosnode(t, "", args...)
		if wantCode := map[bool]int{true: exitNotFound, false: exitOK}[tc.want == nil]; code != wantCode {
			t.Errorf("find %v: exit %d, want %d: %s", tc.args, code, wantCode, errOut)
			continue
		}
		if tc.want == nil {
			if out != "" || !strings.Contains(errOut, "no matching Things") {
				t.Errorf("find %v: stdout %q, stderr %q", tc.args, out, errOut)
			}
			continue
		}
		var titles []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
			titles = append(titles, strings.Fields(l)[0])
		}
		if strings.Join(titles, ",") != strings.Join(tc.want, ",") {
			t.Errorf("find %v: %v, want %v", tc.args, titles, tc.want)
		}
	}
	var raws []json.RawMessage
	if err := json.Unmarshal([]byte(mustRun(t, "find", "--json", "--type", "tool", "--home", home)), &raws); err != nil || len(raws) != 1 {
		t.Fatalf("find --json: %v %d", err, len(raws))
	}
	if s, err := lmosproto.VerifyDocument(raws[0]); err != nil || s.PeerID != other.ID {
		t.Errorf("find --json TD: %v", err)
	}

	out, errOut, _ := lmosnode(t, "", "find", "--limit", "1", "--home", home)
	_, cursor, _ := strings.Cut(strings.TrimSpace(errOut), "more results: --cursor ")
	if len(strings.Split(strings.TrimSpace(out), "\n")) != 2 || cursor == "" {
		t.Errorf("find --limit 1: %q %q", out, errOut)
	}
	// The cursor continues after the first Thing, as --offset 1 does.
	next, _, _ := lmosnode(t, "", "find", "--limit", "1", "--cursor", cursor, "--home", home)
	if atOffset, _, _ := lmosnode(t, "", "find", "--limit", "1", "--offset", "1", "--home", home); next != atOffset || next == out {
		t.Errorf("find --cursor: %q, --offset 1: %q, first page %q", next, atOffset, out)
	}
	_, errOut, _ = lmosnode(t, "", "find", "weather", "--limit", "1", "--home", home)
	if strings.Contains(errOut, "more results") && !strings.Contains(errOut, "more results: --offset 1") {
		t.Errorf("find text --limit 1 (relevance order, paged by offset): %q", errOut)
	}
	_, errOut, code := lmosnode(t, "", "find", "--capability", "x@not a range", "--home", home)
	if code != 1 || !strings.Contains(errOut, "capability") || !strings.Contains(errOut, "400") {
		t.Errorf("bad range: %d %q", code, errOut)
	}
	if out, _, code := lmosnode(t, "", "find", "--json", "--type", "nothing-of-this-type", "--home", home); code != exitNotFound || strings.TrimSpace(out) != "[]" {
		t.Errorf("find --json, no match: exit %d, stdout %q; want 3 and []", code, out)
	}
	if _, errOut, code := lmosnode(t, "", "find", "--limit", "0", "--home", home); code != exitUsage || !strings.Contains(errOut, "--limit") {
		t.Errorf("--limit 0: %d %q", code, errOut)
	}
}

func TestPeersCommands(t *testing.T) {
	env, home := daemonEnv(t)
	if _, errOut, code := lmosnode(t, "", "peers", "--home", home); code != 0 || !strings.Contains(errOut, "no peers yet") {
		t.Errorf("no peers: %d %q", code, errOut)
	}
	a := tddtest.NewIdentity(2)
	addr4001 := ma.StringCast("/ip4/127.0.0.1/tcp/4001")
	env.Peers.List = []tdd.PeerInfo{{ID: a.ID, Addrs: []ma.Multiaddr{addr4001, addr4001}, Source: "mdns", Conn: tdd.PeerConn{
		State: "connected", Direction: "inbound", Latency: 1500 * time.Microsecond, AgentVersion: "lmosnode/v1.2.3",
	}}}
	out := mustRun(t, "peers", "--home", home)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "PEER ID STATE DIR LINK LATENCY AGENT SOURCE ADDRESSES" ||
		strings.Join(strings.Fields(lines[1]), " ") != a.ID.String()+" connected in direct 1.5ms lmosnode/v1.2.3 mdns /ip4/127.0.0.1/tcp/4001" {
		t.Errorf("peers (one address once):\n%s", out)
	}
	b := tddtest.NewIdentity(3)
	addr := "/ip4/127.0.0.1/tcp/4002/p2p/" + b.ID.String()
	if out := mustRun(t, "connect", addr, "--home", home); out != "connected to "+b.ID.String()+"\n" {
		t.Errorf("connect: %q", out)
	}
	var peers []tdd.Peer
	if err := json.Unmarshal([]byte(mustRun(t, "peers", "--json", "--home", home)), &peers); err != nil || len(peers) != 2 {
		t.Fatalf("peers --json: %v %+v", err, peers)
	}
	_, errOut, code := lmosnode(t, "", "connect", "/ip4/127.0.0.1/tcp/4002", "--home", home)
	if code != 1 || !strings.Contains(errOut, "/p2p/") {
		t.Errorf("connect without peer ID: %d %q", code, errOut)
	}
}

func TestNoRunningNode(t *testing.T) {
	home := t.TempDir()
	for _, args := range [][]string{
		{"things", "ls"}, {"things", "publish", weatherFile}, {"things", "rm", "urn:x"},
		{"find", "x"}, {"peers"}, {"connect", "/ip4/127.0.0.1/tcp/1/p2p/" + tddtest.NewIdentity(2).ID.String()},
	} {
		_, errOut, code := lmosnode(t, "", append(args, "--home", home)...)
		want := "no running node in " + home + ": start it with 'lmosnode up'"
		if code != exitUnavailable || !strings.Contains(errOut, want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", args, code, errOut, want)
		}
	}
	// A stale api file (the daemon was killed): nothing listens there.
	env := tddtest.NewEnv(t)
	stale := env.URL
	env.Server.Close()
	if err := os.WriteFile(filepath.Join(home, homedir.APIFile), []byte(stale+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := lmosnode(t, "", "things", "ls", "--home", home)
	if code != exitUnavailable || !strings.Contains(errOut, "no running node in "+home+" (its api file names "+stale) {
		t.Errorf("stale api file: %d %q", code, errOut)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
