package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/lmosnode/lmosnode/node/api"
	"github.com/lmosnode/lmosnode/node/config"
	"github.com/lmosnode/lmosnode/node/homedir"
	"github.com/lmosnode/lmosnode/node/tdd"
	"github.com/lmosnode/lmosnode/node/tdd/tddtest"
	"github.com/lmosnode/lmosnode/node/version"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// TestRemoteAPI drives a node through --api and $LMOS_API, with no api
// file in the home, and sends --token.
func TestRemoteAPI(t *testing.T) {
	t.Setenv(APIEnv, "")
	_, home := daemonEnv(t)
	apiURL, err := homedir.ReadAPIFile(home)
	if err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir() // no api file: only --api or $LMOS_API can lead to the node

	mustRun(t, "things", "publish", weatherFile, "--api", apiURL, "--home", empty)
	if out := mustRun(t, "things", "ls", "--api", apiURL, "--home", empty); !strings.Contains(out, weatherID) {
		t.Errorf("things ls --api:\n%s", out)
	}
	hostPort := strings.TrimPrefix(apiURL, "http://")
	if out := mustRun(t, "find", "--api", hostPort, "--home", empty); !strings.Contains(out, weatherID) {
		t.Errorf("find --api host:port:\n%s", out)
	}
	t.Setenv(APIEnv, apiURL)
	if out := mustRun(t, "find", "weather", "--home", empty); !strings.Contains(out, weatherID) {
		t.Errorf("find with $%s:\n%s", APIEnv, out)
	}
	var info api.NodeInfo
	if err := json.Unmarshal([]byte(mustRun(t, "id", "--json", "--home", empty)), &info); err != nil || !strings.HasPrefix(info.PeerID, "12D3KooW") {
		t.Errorf("id --json with $%s: %v %+v", APIEnv, err, info)
	}
	// --api wins over $LMOS_API; a node that does not answer is exit 5,
	// also for id, which has no key file to fall back to for a remote node.
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	for _, args := range [][]string{{"things", "ls"}, {"id"}} {
		_, errOut, code := lmosnode(t, "", append(args, "--api", closed.URL, "--home", empty)...)
		if code != exitUnavailable || !strings.Contains(errOut, "no node answers at "+closed.URL) {
			t.Errorf("%v --api <closed>: exit %d, %q; want 5", args, code, errOut)
		}
	}
	if _, errOut, code := lmosnode(t, "", "find", "--api", "ftp://x", "--home", empty); code != exitUsage || !strings.Contains(errOut, "--api") {
		t.Errorf("--api ftp://x: exit %d, %q; want 2", code, errOut)
	}

	// --token is sent as a bearer token.
	const token = "remote-token-0123456789abcdef0123456789"
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("[]"))
	}))
	defer srv.Close()
	t.Setenv(config.APITokenEnv, "")
	mustRun(t, "peers", "--api", srv.URL, "--token", token, "--home", empty)
	if got != "Bearer "+token {
		t.Errorf("--token: Authorization %q", got)
	}
	t.Setenv(config.APITokenEnv, token+"x")
	mustRun(t, "peers", "--api", srv.URL, "--home", empty)
	if got != "Bearer "+token+"x" {
		t.Errorf("$%s with --api: Authorization %q", config.APITokenEnv, got)
	}
}

// TestExitCodes checks each documented exit code against a failure of its
// kind.
func TestExitCodes(t *testing.T) {
	t.Setenv(APIEnv, "")
	_, home := daemonEnv(t)
	status := func(code int) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", lmosproto.ContentTypeProblemJSON)
			w.WriteHeader(code)
			_ = json.NewEncoder(w).Encode(lmosproto.Problem{Title: http.StatusText(code), Status: code})
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer hang.Close()
	down := t.TempDir()

	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"unknown command", []string{"frobnicate"}, exitUsage},
		{"unknown flag", []string{"find", "--no-such-flag", "--home", home}, exitUsage},
		{"missing argument", []string{"things", "rm", "--home", home}, exitUsage},
		{"too many arguments", []string{"connect", "a", "b", "--home", home}, exitUsage},
		{"bad flag value", []string{"find", "--limit", "x", "--home", home}, exitUsage},
		{"flag out of range", []string{"find", "--limit", "0", "--home", home}, exitUsage},
		{"find, no match", []string{"find", "--type", "nothing-here", "--home", home}, exitNotFound},
		{"rm of an unknown Thing", []string{"things", "rm", "urn:nope", "--home", home}, exitNotFound},
		{"read of an unknown Thing", []string{"read", "urn:nope", "p", "--home", home}, exitNotFound},
		{"404", []string{"things", "ls", "--api", status(http.StatusNotFound)}, exitNotFound},
		{"401", []string{"things", "ls", "--api", status(http.StatusUnauthorized)}, exitForbidden},
		{"403", []string{"peers", "--api", status(http.StatusForbidden)}, exitForbidden},
		{"no node running", []string{"things", "ls", "--home", down}, exitUnavailable},
		{"503", []string{"things", "ls", "--api", status(http.StatusServiceUnavailable)}, exitUnavailable},
		{"502", []string{"things", "ls", "--api", status(http.StatusBadGateway)}, exitUnavailable},
		{"504", []string{"things", "ls", "--api", status(http.StatusGatewayTimeout)}, exitTimeout},
		{"409", []string{"things", "ls", "--api", status(http.StatusConflict)}, exitFailure},
		{"invalid TD", []string{"td", "validate", "../../proto/testdata/conformance/invalid/noTitle.json"}, exitFailure},
	} {
		_, errOut, code := lmosnode(t, "", tc.args...)
		if code != tc.want {
			t.Errorf("%s: lmosnode %v: exit %d, want %d (stderr %q)", tc.name, tc.args, code, tc.want, errOut)
		}
	}

	// The command's deadline: a node that never answers.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	var out strings.Builder
	if code := run(ctx, []string{"things", "ls", "--api", hang.URL}, strings.NewReader(""), &out, &out); code != exitTimeout {
		t.Errorf("a node that never answers: exit %d, want %d: %s", code, exitTimeout, &out)
	}
}

// TestVersionFlag: --version prints what the version command prints.
func TestVersionFlag(t *testing.T) {
	out := mustRun(t, "--version")
	if out != versionLine() || !strings.HasPrefix(out, "lmosnode "+version.Version+" (go") {
		t.Errorf("--version = %q, want %q", out, versionLine())
	}
	if v := mustRun(t, "version"); v != out {
		t.Errorf("version = %q, --version = %q", v, out)
	}
	var v versionInfo
	if err := json.Unmarshal([]byte(mustRun(t, "version", "--json")), &v); err != nil || v.Version != version.Version || v.Go == "" {
		t.Errorf("version --json: %v %+v", err, v)
	}
}

// TestJSONOnEveryCommand: every command that prints something a script
// reads has --json; the exceptions print JSON anyway or only a stream.
func TestJSONOnEveryCommand(t *testing.T) {
	jsonAnyway := map[string]string{
		"lmosnode read":            "prints the property's JSON value",
		"lmosnode write":           "prints the JSON answer, if any",
		"lmosnode invoke":          "prints the action's JSON output (--stream: JSON lines)",
		"lmosnode subscribe":       "prints one JSON value per line",
		"lmosnode up":              "runs the node; its banner is for people, 'id --json' is the data",
		"lmosnode demo":            "a narrated walk-through for people",
		"lmosnode group publish":   "prints nothing",
		"lmosnode config get":      "prints the setting's JSON value",
		"lmosnode config show":     "prints the config as JSON",
		"lmosnode config set":      "prints nothing",
		"lmosnode key export":      "writes the key file's bytes",
		"lmosnode key import":      "prints nothing",
		"lmosnode completion bash": "a shell script",
		"lmosnode mcp":             "relays MCP's JSON-RPC on stdio",
		"lmosnode mcp remove":      "prints nothing",
		"lmosnode org doc":         "prints the DID document (JSON)",
		"lmosnode org set":         "prints nothing",
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Runnable() && c.Annotations[groupsOnly] == "" && !strings.HasPrefix(c.CommandPath(), "lmosnode completion") && c.Name() != "help" {
			if _, ok := jsonAnyway[c.CommandPath()]; !ok && c.Flags().Lookup("json") == nil {
				t.Errorf("%s has no --json", c.CommandPath())
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())
}

// TestManyFiles: publish, sign and verify take several files.
func TestManyFiles(t *testing.T) {
	t.Setenv(APIEnv, "")
	env, home := daemonEnv(t)
	out := mustRun(t, "things", "publish", weatherFile, geocoderFile, "--home", home)
	if !strings.Contains(out, "created "+weatherID) || !strings.Contains(out, "created "+geocoderID) || env.Publisher.Published != 2 {
		t.Fatalf("publish two files: %q, %d published", out, env.Publisher.Published)
	}
	var res []tdd.PublishResult
	if err := json.Unmarshal([]byte(mustRun(t, "things", "publish", "--json", weatherFile, geocoderFile, "--home", home)), &res); err != nil ||
		len(res) != 2 || res[0].Change != "updated" || res[1].ID != geocoderID {
		t.Fatalf("publish --json: %v %+v", err, res)
	}
	// A bad file in the middle: the others are published, exit 1.
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := lmosnode(t, "", "things", "publish", weatherFile, bad, geocoderFile, "--home", home)
	if code != exitFailure || strings.Count(out, "updated ") != 2 || !strings.Contains(errOut, bad+": not JSON") {
		t.Errorf("publish with a bad file: exit %d, %q, %q", code, out, errOut)
	}
	if _, _, code := lmosnode(t, "", "things", "publish", "-", "-", "--home", home); code != exitUsage {
		t.Errorf("publish - -: exit %d, want 2", code)
	}
	var removed []string
	if err := json.Unmarshal([]byte(mustRun(t, "things", "rm", "--json", weatherID, geocoderID, "--home", home)), &removed); err != nil || len(removed) != 2 {
		t.Errorf("rm --json: %v %v", err, removed)
	}

	keyHome := t.TempDir()
	mustRun(t, "init", "--home", keyHome)
	var signed []json.RawMessage
	if err := json.Unmarshal([]byte(mustRun(t, "td", "sign", "--json", "--home", keyHome, weatherFile, geocoderFile)), &signed); err != nil || len(signed) != 2 {
		t.Fatalf("td sign --json two files: %v %d", err, len(signed))
	}
	dir := t.TempDir()
	var files []string
	for i, s := range signed {
		f := filepath.Join(dir, []string{"a.json", "b.json"}[i])
		if err := os.WriteFile(f, s, 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	var checks []fileCheck
	if err := json.Unmarshal([]byte(mustRun(t, append([]string{"td", "verify", "--json"}, files...)...)), &checks); err != nil || len(checks) != 2 || !checks[0].OK || !checks[1].OK || checks[0].PeerID == "" {
		t.Errorf("td verify --json: %v %+v", err, checks)
	}
	out, _, code = lmosnode(t, "", "td", "verify", files[0], weatherFile)
	if code != exitFailure || !strings.Contains(out, files[0]+": proof verifies") {
		t.Errorf("td verify signed + unsigned: exit %d, %q", code, out)
	}
	if err := json.Unmarshal([]byte(mustRun(t, "td", "validate", "--json", weatherFile, geocoderFile)), &checks); err != nil || len(checks) != 2 || !checks[1].OK {
		t.Errorf("td validate --json: %v %+v", err, checks)
	}
}

// TestIDJSON: id --json from the key file and from the daemon.
func TestIDJSON(t *testing.T) {
	t.Setenv(APIEnv, "")
	home := t.TempDir()
	var ini initResult
	if err := json.Unmarshal([]byte(mustRun(t, "init", "--json", "--home", home)), &ini); err != nil || len(ini.Created) == 0 || ini.PeerID == "" {
		t.Fatalf("init --json: %v %+v", err, ini)
	}
	var info api.NodeInfo
	if err := json.Unmarshal([]byte(mustRun(t, "id", "--json", "--home", home)), &info); err != nil || info.PeerID != ini.PeerID || info.DIDKey != ini.DIDKey || info.APIURL != "" {
		t.Errorf("id --json from the key: %v %+v, init said %+v", err, info, ini)
	}
	if _, _, code := lmosnode(t, "", "id", "--home", t.TempDir()); code != exitNotFound {
		t.Errorf("id without key: exit %d, want 3", code)
	}
	_, dHome := daemonEnv(t)
	if err := json.Unmarshal([]byte(mustRun(t, "id", "--json", "--home", dHome)), &info); err != nil || !strings.HasPrefix(info.PeerID, "12D3KooW") {
		t.Errorf("id --json from the daemon: %v %+v", err, info)
	}
}

// TestPublisherShortForm: --publisher takes the abbreviation the
// PUBLISHER column prints.
func TestPublisherShortForm(t *testing.T) {
	t.Setenv(APIEnv, "")
	env, home := daemonEnv(t)
	other := tddtest.NewIdentity(2)
	td, err := lmosproto.ParseTD(mustRead(t, geocoderFile))
	if err != nil {
		t.Fatal(err)
	}
	env.Learn(t, other, td, 1)
	mustRun(t, "things", "publish", weatherFile, "--home", home)

	out := mustRun(t, "find", "--type", "tool", "--home", home)
	row := strings.Fields(strings.Split(strings.TrimSpace(out), "\n")[1])
	short := row[len(row)-4] // the PUBLISHER cell, before TRUST, ONLINE and ID
	if !strings.HasPrefix(short, "…") {
		t.Fatalf("PUBLISHER cell %q", short)
	}
	for _, form := range []string{short, "..." + strings.TrimPrefix(short, "…")} {
		out := mustRun(t, "find", "--publisher", form, "--home", home)
		if !strings.Contains(out, geocoderID) || strings.Contains(out, weatherID) {
			t.Errorf("find --publisher %s:\n%s", form, out)
		}
	}
	if _, errOut, code := lmosnode(t, "", "find", "--publisher", "…nomatch1", "--home", home); code != exitNotFound || !strings.Contains(errOut, "nomatch1") {
		t.Errorf("find --publisher of no known publisher: exit %d, %q", code, errOut)
	}
}

// freePort returns a TCP port on 127.0.0.1 that is free now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
}

// TestUnknownFlagSuggests: a misspelt flag is a usage error that names
// the flag meant.
func TestUnknownFlagSuggests(t *testing.T) {
	_, errOut, code := lmosnode(t, "", "up", "--mdsn=false", "--home", t.TempDir())
	if code != exitUsage || !strings.Contains(errOut, "unknown flag: --mdsn (did you mean --mdns?)") {
		t.Errorf("up --mdsn=false: exit %d, %q; want 2 suggesting --mdns", code, errOut)
	}
	_, errOut, code = lmosnode(t, "", "find", "--frobnicate")
	if code != exitUsage || strings.Contains(errOut, "did you mean") {
		t.Errorf("find --frobnicate: exit %d, %q; want 2 without a guess", code, errOut)
	}
}

// TestUnknownSubcommand: a word that is no subcommand of a command that
// groups others is a usage error (cobra printed the help and exited 0),
// with a guess when one is close.
func TestUnknownSubcommand(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"things", "pubish", "x.json"}, `unknown command "pubish" for "lmosnode things" (did you mean "publish"?)`},
		{[]string{"things", "add", "x.json"}, `unknown command "add" for "lmosnode things"; see 'lmosnode things --help'`},
		{[]string{"group", "lst"}, `(did you mean "ls"?)`},
	} {
		_, errOut, code := lmosnode(t, "", c.args...)
		if code != exitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d, %q; want 2 and %q", c.args, code, errOut, c.want)
		}
	}
	if out, _, code := lmosnode(t, "", "things"); code != 0 || !strings.Contains(out, "Available Commands") {
		t.Errorf("things alone: exit %d, want its help:\n%s", code, out)
	}
}
