package main

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lmosnode/lmosnode/node/config"
	"github.com/lmosnode/lmosnode/node/homedir"
)

func TestConfigCommand(t *testing.T) {
	t.Setenv("LMOS_DHT_MODE", "")
	t.Setenv(config.APITokenEnv, "")
	home := t.TempDir()
	mustRun(t, "init", "--home", home)

	var shown config.Config
	if err := json.Unmarshal([]byte(mustRun(t, "config", "show", "--home", home)), &shown); err != nil {
		t.Fatal(err)
	}
	if shown.DHTMode != config.DHTModeAuto || shown.API != "127.0.0.1:5080" {
		t.Errorf("config show: %+v", shown)
	}
	if out := mustRun(t, "config", "get", "dhtMode", "--home", home); out != "\"auto\"\n" {
		t.Errorf("config get dhtMode = %q", out)
	}

	mustRun(t, "config", "set", "dhtMode", "server", "--home", home)
	mustRun(t, "config", "set", "connMgr.high", "400", "--home", home)
	mustRun(t, "config", "set", "apiLimits.bodyTimeout", "1m", "--home", home)
	cfg, err := config.LoadFile(home)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DHTMode != config.DHTModeServer || cfg.ConnMgr.High != 400 || cfg.APILimits.BodyTimeout.String() != "1m0s" {
		t.Errorf("config.json after set: dhtMode %q, connMgr.high %d, bodyTimeout %s", cfg.DHTMode, cfg.ConnMgr.High, cfg.APILimits.BodyTimeout)
	}

	// Invalid values are usage errors and leave the file as it was.
	for _, args := range [][]string{
		{"dhtMode", "sometimes"},                 // Validate
		{"connMgr.high", "many"},                 // type
		{"api", "0.0.0.0:5080"},                  // needs a token
		{"bootstrap", "/ip4/127.0.0.1/tcp/4001"}, // no /p2p/
	} {
		_, errOut, code := lmosnode(t, "", append([]string{"config", "set", "--home", home}, args...)...)
		if code != exitUsage || !strings.Contains(errOut, args[0]) {
			t.Errorf("config set %v: exit %d, %q; want 2 naming the setting", args, code, errOut)
		}
	}
	if after, _ := config.LoadFile(home); after.DHTMode != config.DHTModeServer || after.API != "127.0.0.1:5080" || len(after.Bootstrap) != 0 {
		t.Errorf("config.json changed by a refused set: %+v", after)
	}
	if _, _, code := lmosnode(t, "", "config", "get", "noSuchSetting", "--home", home); code != exitNotFound {
		t.Errorf("config get of an unknown setting: exit %d, want 3", code)
	}

	// The environment shows in the effective config, not in the file.
	t.Setenv("LMOS_DHT_MODE", "client")
	if out := mustRun(t, "config", "get", "dhtMode", "--home", home); out != "\"client\"\n" {
		t.Errorf("config get with $LMOS_DHT_MODE = %q", out)
	}
	if out := mustRun(t, "config", "get", "dhtMode", "--file", "--home", home); out != "\"server\"\n" {
		t.Errorf("config get --file = %q", out)
	}
	mustRun(t, "config", "set", "mdns", "false", "--home", home)
	if after, _ := config.LoadFile(home); after.DHTMode != config.DHTModeServer || after.MDNS {
		t.Errorf("config set wrote the environment into the file: %+v", after)
	}
	const token = "config-test-token-0123456789abcdef0123"
	t.Setenv(config.APITokenEnv, token)
	if out := mustRun(t, "config", "show", "--home", home); strings.Contains(out, token) || !strings.Contains(out, maskedToken) {
		t.Errorf("config show reveals the token:\n%s", out)
	}
	if out := mustRun(t, "config", "show", "--env", "--home", home); !strings.Contains(out, "LMOS_API_LIMITS_BODY_TIMEOUT\tapiLimits.bodyTimeout") {
		t.Errorf("config show --env:\n%s", out)
	}
}

// TestUpFlags: up's setting flags and --set override the config; an empty
// --bootstrap is refused.
func TestUpFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want func(*config.Config)
		err  string
	}{
		{[]string{"--dht-mode", "client", "--auto-nat=false", "--hole-punching=false", "--relay-client=false"}, func(c *config.Config) {
			c.DHTMode, c.AutoNAT, c.HolePunching, c.RelayClient = config.DHTModeClient, false, false, false
		}, ""},
		{[]string{"--set", "apiLimits.bodyTimeout=1m", "--set", "gossip=false"}, func(c *config.Config) {
			c.APILimits.BodyTimeout = config.Duration(60e9)
			c.Gossip = false
		}, ""},
		{[]string{"--set", "nope=1"}, nil, `no setting "nope"`},
		{[]string{"--set", "gossip"}, nil, "SETTING=VALUE"},
		{[]string{"--bootstrap", ""}, nil, `--bootstrap ""`},
	} {
		cmd := newUpCmd()
		cmd.Flags().AddFlagSet(newRootCmd().PersistentFlags())
		if err := cmd.ParseFlags(tc.args); err != nil {
			t.Fatal(err)
		}
		cfg := config.Default()
		err := applyUpFlags(cmd, &cfg)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || exitCode(err) != exitUsage {
				t.Errorf("up %v: %v, want a usage error with %q", tc.args, err, tc.err)
			}
			continue
		}
		want := config.Default()
		tc.want(&want)
		if err != nil {
			t.Errorf("up %v: %v", tc.args, err)
			continue
		}
		got, _ := json.Marshal(cfg)
		exp, _ := json.Marshal(want)
		if string(got) != string(exp) {
			t.Errorf("up %v:\n got %s\nwant %s", tc.args, got, exp)
		}
	}
}

// TestConfigFreshHome: on a home with no config.json, show and get print
// the defaults (saying so on stderr), set writes config.json only (no
// identity key behind the user's back), and a misspelt setting names the
// one meant.
func TestConfigFreshHome(t *testing.T) {
	t.Setenv("LMOS_DHT_MODE", "")
	t.Setenv(config.APITokenEnv, "")
	home := filepath.Join(t.TempDir(), "fresh")

	out, errOut, code := lmosnode(t, "", "config", "show", "--home", home)
	var shown config.Config
	if code != exitOK || json.Unmarshal([]byte(out), &shown) != nil || shown.DHTMode != config.DHTModeAuto {
		t.Fatalf("config show on a fresh home: exit %d, %q, stderr %q", code, out, errOut)
	}
	if !strings.Contains(errOut, "the defaults") {
		t.Errorf("config show on a fresh home does not say these are the defaults: %q", errOut)
	}
	if out, _, code := lmosnode(t, "", "config", "get", "dhtMode", "--home", home); code != exitOK || out != "\"auto\"\n" {
		t.Errorf("config get on a fresh home: exit %d, %q", code, out)
	}
	if _, err := os.Stat(home); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("show and get created the home: %v", err)
	}

	mustRun(t, "config", "set", "dhtMode", "client", "--home", home)
	if cfg, err := config.LoadFile(home); err != nil || cfg.DHTMode != config.DHTModeClient {
		t.Errorf("config.json after set on a fresh home: %v %q", err, cfg.DHTMode)
	}
	if _, err := os.Stat(filepath.Join(home, homedir.IdentityFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("config set made an identity key: %v", err)
	}

	_, errOut, code = lmosnode(t, "", "config", "set", "dht.mode", "banana", "--home", home)
	if code != exitNotFound || !strings.Contains(errOut, `did you mean "dhtMode"?`) {
		t.Errorf("config set dht.mode: exit %d, %q; want 3 suggesting dhtMode", code, errOut)
	}
}
