package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node/config"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// The CLI against a node whose API requires a token: refused with a hint
// without it, working with it from config.json or $LMOS_API_TOKEN.
func TestCommandsWithAPIToken(t *testing.T) {
	const token = "cli-test-token-0123456789abcdef0123"
	t.Setenv(config.APITokenEnv, "") // restored after the test
	if err := os.Unsetenv(config.APITokenEnv); err != nil {
		t.Fatal(err)
	}
	n := testnet.New(t, 1, testnet.Options{Configure: func(_ int, cfg *config.Config) { cfg.APIToken = token }}).Nodes[0]
	id := testnet.UniqueID(t)
	th := thermostat(t, n, id)
	home := n.Config().Home

	// No config.json, no env: no token.
	for _, args := range [][]string{{"things", "ls"}, {"find"}, {"read", id, "target"}} {
		out, errOut, code := lmosnode(t, "", append([]string{"--home", home}, args...)...)
		if code == 0 || !strings.Contains(errOut, "401") || !strings.Contains(errOut, "apiToken") || !strings.Contains(errOut, config.APITokenEnv) {
			t.Errorf("%s without token: exit %d, stdout %q, stderr %q; want a 401 naming apiToken and $%s", args, code, out, errOut, config.APITokenEnv)
		}
	}
	// id falls back to the key file without the daemon's addresses.
	if out := mustRun(t, "--home", home, "id"); strings.Contains(out, "127.0.0.1") {
		t.Errorf("id without token shows the daemon's info:\n%s", out)
	}

	check := func(how string) {
		t.Helper()
		if out := mustRun(t, "--home", home, "things", "ls"); !strings.Contains(out, id) {
			t.Errorf("%s: things ls lacks %s:\n%s", how, id, out)
		}
		if out := mustRun(t, "--home", home, "find", "Thermostat"); !strings.Contains(out, id) {
			t.Errorf("%s: find lacks %s:\n%s", how, id, out)
		}
		mustRun(t, "--home", home, "write", id, "target", "19")
		if out := mustRun(t, "--home", home, "read", id, "target"); strings.TrimSpace(out) != "19" {
			t.Errorf("%s: read = %q", how, out)
		}
		if out := mustRun(t, "--home", home, "invoke", id, "warmup"); strings.TrimSpace(out) != `"warm"` {
			t.Errorf("%s: invoke warmup = %q", how, out)
		}
		if out := mustRun(t, "--home", home, "invoke", id, "warmup", "--stream"); out != "0\n1\n2\n\"warm\"\n" {
			t.Errorf("%s: invoke --stream = %q", how, out)
		}
		if out := mustRun(t, "--home", home, "id"); !strings.Contains(out, n.APIAddr()) {
			t.Errorf("%s: id does not show the daemon's API:\n%s", how, out)
		}
	}

	t.Setenv(config.APITokenEnv, token)
	check("$" + config.APITokenEnv)
	if err := os.Unsetenv(config.APITokenEnv); err != nil {
		t.Fatal(err)
	}

	cfg := n.Config()
	if err := config.Write(home, cfg); err != nil {
		t.Fatal(err)
	}
	check("config.json")

	// A subscription (SSE) with the token gets the changes.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var observed, stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		root := newRootCmd()
		root.SetArgs([]string{"--home", home, "subscribe", id, "target", "--property"})
		root.SetOut(&observed)
		root.SetErr(&stderr)
		done <- root.ExecuteContext(ctx)
	}()
	testnet.WaitFor(t, "the observation reaches the node", 10*time.Second, func() (bool, string) {
		return th.Changed("target", lmosproto.StringValue("cool")) > 0, "no observer; subscribe stderr: " + stderr.String()
	})
	testnet.WaitFor(t, "subscribe --property prints the value", 10*time.Second, func() (bool, string) {
		return strings.Contains(observed.String(), `"cool"`), observed.String()
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("subscribe --property: %v (stderr %s)", err, stderr.String())
	}
}

// TestBinaryAPIToken runs the real binary with apiToken in config.json:
// the API refuses a client without the token, the commands send it.
func TestBinaryAPIToken(t *testing.T) {
	const token = "binary-test-token-0123456789abcdef"
	bin := buildBinary(t)
	home := filepath.Join(t.TempDir(), "home")
	runOK(t, bin, "init", "--home", home)
	cfg, err := config.Load(home)
	if err != nil {
		t.Fatal(err)
	}
	// All traffic stays on this machine (see TestBinary).
	cfg.AutoNAT, cfg.HolePunching, cfg.RelayClient = false, false, false
	cfg.APIToken = token
	if err := config.Write(home, cfg); err != nil {
		t.Fatal(err)
	}
	up := command(t, bin, "up", "--home", home, "--listen", "/ip4/127.0.0.1/tcp/0",
		"--api", "127.0.0.1:0", "--mdns=false")
	var stderr bytes.Buffer
	up.Stderr = &stderr
	if err := up.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = up.Wait(); close(exited) }()
	defer func() {
		_ = up.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = up.Process.Kill()
			<-exited
		}
		if waitErr != nil {
			t.Errorf("up: %v", waitErr)
		}
		if t.Failed() {
			t.Logf("daemon stderr:\n%s", &stderr)
		}
	}()
	apiURL := waitForAPIFile(t, home, exited, &waitErr)

	resp, err := http.Get(apiURL + "/things")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || len(body) != 0 || resp.Header.Get("WWW-Authenticate") == "" {
		t.Errorf("GET /things without the token: %s %q", resp.Status, body)
	}
	if out := runOK(t, bin, "id", "--home", home); !strings.Contains(out, apiURL) {
		t.Errorf("id does not show the daemon's API %s:\n%s", apiURL, out)
	}
	runOK(t, bin, "things", "ls", "--home", home)

	wrong := command(t, bin, "things", "ls", "--home", home)
	wrong.Env = append(wrong.Env, config.APITokenEnv+"="+strings.Repeat("w", 40))
	out, err := wrong.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !strings.Contains(string(out), "401") {
		t.Errorf("things ls with a wrong $%s: %v\n%s", config.APITokenEnv, err, out)
	}
}
