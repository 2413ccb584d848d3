package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lmosnode/lmosnode/node/api"
	"github.com/lmosnode/lmosnode/node/config"
	"github.com/lmosnode/lmosnode/node/homedir"
)

// binDir holds the binary built once for all tests.
var binDir string

// TestMain removes the built binary after the tests and fails them if a
// goroutine leaked.
func TestMain(m *testing.M) {
	if os.Getenv(mcpHelperEnv) == "1" {
		os.Exit(runMCPHelper())
	}
	var err error
	if binDir, err = os.MkdirTemp("", "lmosnode-bin"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(binDir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

const testVersion = "v0.0.0-binarytest"

var buildOnce = sync.OnceValues(func() (string, error) {
	if _, err := exec.LookPath("go"); err != nil {
		return "", err
	}
	bin := filepath.Join(binDir, "lmosnode")
	build := exec.Command("sh", "../../scripts/build-static.sh", bin, testVersion)
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("scripts/build-static.sh: %w\n%s", err, out)
	}
	return bin, nil
})

// buildBinary builds lmosnode once per test run as the container image
// and the systemd unit ship it (scripts/build-static.sh: static, Version
// set through -ldflags).
func buildBinary(t *testing.T) string {
	t.Helper()
	bin, err := buildOnce()
	if errors.Is(err, exec.ErrNotFound) {
		t.Skip("no go tool on PATH")
	}
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// command runs the binary with a clean environment: no LMOS_HOME, HOME in a
// temporary directory, so nothing outside the test's directories is used.
func command(t *testing.T, bin string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
	return cmd
}

func runOK(t *testing.T, bin string, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := command(t, bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("lmosnode %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, &stdout, &stderr)
	}
	return stdout.String()
}

// TestBinary runs the real binary: init, up on loopback, the API, id
// against the daemon, SIGINT, clean exit.
func TestBinary(t *testing.T) {
	bin := buildBinary(t)
	home := filepath.Join(t.TempDir(), "home")

	if out := runOK(t, bin, "version"); !strings.Contains(out, testVersion) {
		t.Errorf("version printed %q, want %s", out, testVersion)
	}

	out := runOK(t, bin, "init", "--home", home)
	for _, f := range []string{config.File, homedir.IdentityFile} {
		if !strings.Contains(out, filepath.Join(home, f)) {
			t.Errorf("init output lacks %s:\n%s", f, out)
		}
	}
	idOut := runOK(t, bin, "id", "--home", home)
	peerLine := firstLine(idOut, "peer ID: ")
	if peerLine == "" || !strings.Contains(idOut, "did:key: did:key:z6Mk") {
		t.Fatalf("id output:\n%s", idOut)
	}
	if out := runOK(t, bin, "init", "--home", home); !strings.Contains(out, "already initialised") {
		t.Errorf("second init output:\n%s", out)
	}

	// Keep all traffic on this machine: the mDNS flag is off and so are
	// AutoNAT, hole punching and the relay client (config file).
	cfg, err := config.Load(home)
	if err != nil {
		t.Fatal(err)
	}
	cfg.AutoNAT, cfg.HolePunching, cfg.RelayClient = false, false, false
	if err := config.Write(home, cfg); err != nil {
		t.Fatal(err)
	}

	up := command(t, bin, "up", "--home", home,
		"--listen", "/ip4/127.0.0.1/tcp/0", "--listen", "/ip4/127.0.0.1/udp/0/quic-v1",
		"--api", "127.0.0.1:0", "--mdns=false", "--log-level", "debug", "--log-format", "json")
	stdout, err := up.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	up.Stderr = &stderr
	if err := up.Start(); err != nil {
		t.Fatal(err)
	}
	var upOut bytes.Buffer
	readDone := make(chan struct{})
	exited := make(chan struct{}) // closed once waitErr is set
	var waitErr error
	go func() {
		_, _ = io.Copy(&upOut, stdout)
		close(readDone)
	}()
	go func() {
		<-readDone // Wait must follow the pipe's last read
		waitErr = up.Wait()
		close(exited)
	}()
	defer func() {
		select {
		case <-exited:
		default:
			_ = up.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("daemon stderr:\n%s", &stderr)
		}
	}()

	apiURL := waitForAPIFile(t, home, exited, &waitErr)
	resp, err := http.Get(apiURL + "/api/v1/node")
	if err != nil {
		t.Fatal(err)
	}
	var info api.NodeInfo
	err = json.NewDecoder(resp.Body).Decode(&info)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	// The default role, auto, plays directory in a federation this small.
	if "peer ID: "+info.PeerID != peerLine || info.Version != testVersion || info.APIURL != apiURL || len(info.Addrs) != 2 || info.Role != "directory" {
		t.Errorf("GET /api/v1/node = %+v (id said %q)", info, peerLine)
	}
	for _, a := range info.Addrs {
		if !strings.HasPrefix(a, "/ip4/127.0.0.1/") || !strings.HasSuffix(a, "/p2p/"+info.PeerID) {
			t.Errorf("address %s: not loopback with /p2p/ suffix", a)
		}
	}
	if out := runOK(t, bin, "id", "--home", home); !strings.Contains(out, "API:     "+apiURL) {
		t.Errorf("id with the daemon running did not ask it:\n%s", out)
	}
	// A second node on the same home: refused, exit 1 (not 6, "timeout":
	// the lock's errno reads as one), naming the cause.
	var second bytes.Buffer
	again := command(t, bin, "up", "--home", home, "--listen", "/ip4/127.0.0.1/tcp/0", "--api", "127.0.0.1:0", "--mdns=false")
	again.Stderr = &second
	var exit *exec.ExitError
	if err := again.Run(); !errors.As(err, &exit) || exit.ExitCode() != exitFailure || !strings.Contains(second.String(), "another lmosnode runs with this home") {
		t.Errorf("second up on the same home: %v, stderr:\n%s\nwant exit %d naming the other node", err, &second, exitFailure)
	}

	if err := up.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		if waitErr != nil {
			t.Fatalf("up after SIGINT: %v, want exit 0", waitErr)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("up did not exit within 30s of SIGINT")
	}
	if _, err := os.Stat(filepath.Join(home, homedir.APIFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("api file after shutdown: %v, want it removed", err)
	}
	// --log-format json: every log line is one JSON object, the libraries'
	// included.
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		var rec struct{ Level, Msg string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil || rec.Level == "" || rec.Msg == "" {
			t.Errorf("log line is not a JSON record (%v): %s", err, line)
		}
	}
	for _, want := range []string{"is up", peerLine, "did:key: did:key:z6Mk", "API:     " + apiURL, "console: " + apiURL + "/", "address: /ip4/127.0.0.1/udp/",
		"next, in another terminal:\n  lmosnode things publish examples/things/weather-agent.json --home " + home,
		"'lmosnode connect MULTIADDR --home " + home + "' links one"} {
		if !strings.Contains(upOut.String(), want) {
			t.Errorf("up output lacks %q:\n%s", want, &upOut)
		}
	}
}

// TestUpRejectsBadFlag checks that a bad flag value fails with a message
// naming the field, before anything listens.
func TestUpRejectsBadFlag(t *testing.T) {
	bin := buildBinary(t)
	home := filepath.Join(t.TempDir(), "home")
	var stderr bytes.Buffer
	cmd := command(t, bin, "up", "--home", home, "--api", "0.0.0.0:5080", "--mdns=false")
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("up with a public API address: %v, want exit 1", err)
	}
	if !strings.Contains(stderr.String(), "config: apiToken: required") {
		t.Errorf("stderr does not name the field:\n%s", &stderr)
	}
}

func waitForAPIFile(t *testing.T, home string, exited <-chan struct{}, waitErr *error) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if u, err := homedir.ReadAPIFile(home); err == nil {
			return u
		}
		select {
		case <-exited:
			t.Fatalf("up exited before writing the api file: %v", *waitErr)
		case <-ctx.Done():
			t.Fatal("no api file after 60s")
		case <-tick.C:
		}
	}
}

func firstLine(s, prefix string) string {
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), prefix) {
			return sc.Text()
		}
	}
	return ""
}
