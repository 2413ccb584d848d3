package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/config"
	"github.com/lmosnode/lmosnode/node/homedir"
	"github.com/lmosnode/lmosnode/node/version"
)

// startTimeout bounds how long binding the listeners may take.
const startTimeout = 30 * time.Second

func newUpCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Run the node in the foreground",
		Long: `up runs the node in the foreground until SIGINT (Ctrl-C) or SIGTERM, then
shuts it down cleanly and exits 0. It initialises the home directory first
if needed (see 'lmosnode init').

The configuration is home/config.json merged over the defaults, then the
environment (one LMOS_… variable per setting); the flags below override both
for this run only (config.json is not changed). docs/config.md lists every
setting; --set SETTING=VALUE sets any of them.

While it runs, the node writes the URL of its HTTP API to home/api, where
other lmosnode commands find it.

Peers are found three ways: mDNS on the local network (--mdns, on by
default), the bootstrap peers given with --bootstrap, and the private LMOS
DHT, which the bootstrap peers lead into. No public bootstrap peers are
built in.`,
		Example: `  # Run with the defaults (listen on all interfaces, TCP/QUIC 4001, WebSocket 4002)
  lmosnode up

  # Loopback only, any free ports, no local discovery
  lmosnode up --listen /ip4/127.0.0.1/tcp/0 --listen /ip4/127.0.0.1/udp/0/quic-v1 \
    --api 127.0.0.1:0 --mdns=false

  # Join a federation through a known peer
  lmosnode up --bootstrap /dns4/node.example.org/tcp/4001/p2p/12D3KooW...

  # Behind NAT: reachable through the organisation's relay (docs/nat.md)
  lmosnode up --relay /dns4/relay.example.org/tcp/4001/p2p/12D3KooW...

  # Be that relay (a host with a public address)
  lmosnode up --relay-service --announce /dns4/relay.example.org/tcp/4001`,
		Args: cobra.NoArgs,
		RunE: runUp,
	}
	f := cmd.Flags()
	f.StringArray("listen", nil, "libp2p listen multiaddr; repeat for several (replaces config listen)")
	f.String("api", "", "HTTP API host:port; port 0 picks a free port; a non-loopback address needs apiToken in config.json or $"+config.APITokenEnv)
	f.Bool("mdns", true, "discover LMOS nodes on the local network by mDNS")
	f.StringArray("api-cors-origin", nil, "origin (scheme://host[:port], or *) whose web pages may call the HTTP API from a browser (CORS); repeat for several (replaces config apiCORS.allowOrigins)")
	f.StringArray("bootstrap", nil, "bootstrap peer multiaddr ending in /p2p/<peer ID>; repeat for several (replaces config bootstrap)")
	f.String("log-format", "", "log line format: text (key=value, the default) or json (one object per line); overrides config logFormat")
	f.StringArray("relay", nil, "circuit relay multiaddr ending in /p2p/<peer ID> to reserve a slot on when behind NAT; repeat for several (replaces config relays)")
	f.Bool("relay-service", false, "serve as a circuit relay for nodes behind NAT while publicly reachable, within config relayLimits (config relayService)")
	f.StringArray("announce", nil, "extra multiaddr to announce, e.g. a forwarded port's public address; repeat for several (replaces config announce)")
	f.StringArray("no-announce", nil, "multiaddr, or /ip4/…/ipcidr/N network, never to announce; repeat for several (replaces config noAnnounce)")
	f.String("mqtt", "", "MQTT broker URL (mqtt://host:port) on which to expose this node's public Things' events, properties and actions")
	addSettingFlags(cmd)
	return cmd
}

func runUp(cmd *cobra.Command, _ []string) (err error) {
	home, err := homeDir(cmd)
	if err != nil {
		return err
	}
	created, err := homedir.Init(home)
	if err != nil {
		return err
	}
	cfg, err := config.Load(home)
	if err != nil {
		return err
	}
	if err := applyUpFlags(cmd, &cfg); err != nil {
		return err
	}
	// The log format is a setting (logFormat, --log-format).
	log, err := loggerFormat(cmd, cfg.LogFormat)
	if err != nil {
		return err
	}
	for _, p := range created {
		log.Info("created", "path", p)
	}

	// Signals are caught before the node starts, so one arriving during
	// start-up still shuts it down cleanly.
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	n, err := node.New(cfg, node.WithLogger(log))
	if err != nil {
		return err
	}
	defer func() {
		if cerr := n.Close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()
	startCtx, cancel := context.WithTimeout(ctx, startTimeout)
	err = n.Start(startCtx)
	cancel()
	if err != nil {
		return err
	}

	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "lmosnode %s is up\n", version.Version)
	info := n.Info()
	printInfo(out, info)
	fmt.Fprintf(out, "console: %s/ (open it in a browser)\n", info.APIURL)
	printNextSteps(out, home, cfg)

	<-ctx.Done()
	stop() // a second signal now ends the process at once
	log.Info("shutting down")
	return nil
}

// applyUpFlags overrides cfg with the flags given on the command line.
func applyUpFlags(cmd *cobra.Command, cfg *config.Config) error {
	f := cmd.Flags()
	var err error
	if f.Changed("listen") {
		if cfg.Listen, err = f.GetStringArray("listen"); err != nil {
			return err
		}
	}
	if f.Changed("api") {
		if cfg.API, err = f.GetString("api"); err != nil {
			return err
		}
	}
	if f.Changed("log-format") {
		if cfg.LogFormat, err = f.GetString("log-format"); err != nil {
			return err
		}
	}
	if f.Changed("api-cors-origin") {
		if cfg.APICORS.AllowOrigins, err = f.GetStringArray("api-cors-origin"); err != nil {
			return err
		}
	}
	if f.Changed("mdns") {
		if cfg.MDNS, err = f.GetBool("mdns"); err != nil {
			return err
		}
	}
	if f.Changed("bootstrap") {
		// GetStringArray would turn a lone "" into no address at all
		cfg.Bootstrap = f.Lookup("bootstrap").Value.(pflag.SliceValue).GetSlice()
		for _, b := range cfg.Bootstrap {
			if strings.TrimSpace(b) == "" {
				return usageErrorf(`--bootstrap "": an empty address (did the command meant to print one print nothing? 'lmosnode id --home DIR' prints a node's addresses once it runs)`)
			}
		}
	}
	for flag, dst := range map[string]*[]string{"relay": &cfg.Relays, "announce": &cfg.Announce, "no-announce": &cfg.NoAnnounce} {
		if f.Changed(flag) {
			if *dst, err = f.GetStringArray(flag); err != nil {
				return err
			}
		}
	}
	if f.Changed("relay-service") {
		if cfg.RelayService, err = f.GetBool("relay-service"); err != nil {
			return err
		}
	}
	if f.Changed("mqtt") {
		if cfg.MQTT, err = f.GetString("mqtt"); err != nil {
			return err
		}
	}
	return applySettingFlags(cmd, cfg)
}

// printNextSteps ends up's banner with what to do next, as commands to
// paste in another terminal.
func printNextSteps(w io.Writer, home string, cfg config.Config) {
	h := " --home " + shellQuote(home)
	fmt.Fprintf(w, "\nnext, in another terminal:\n")
	fmt.Fprintf(w, "  lmosnode things publish examples/things/weather-agent.json%s   # publish a Thing (a TD file)\n", h)
	fmt.Fprintf(w, "  lmosnode find%s                                                 # the Things this node knows\n", h)
	fmt.Fprintf(w, "  lmosnode peers%s\n", h)
	if len(cfg.Bootstrap) == 0 && !cfg.MDNS {
		fmt.Fprintf(w, "no peers will come by themselves (no --bootstrap, mDNS off): 'lmosnode connect MULTIADDR%s' links one\n", h)
	}
}

// shellQuote quotes s for a POSIX shell if it needs it.
func shellQuote(s string) string {
	plain := func(r rune) bool {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:@%=,", r)
	}
	if s != "" && strings.IndexFunc(s, func(r rune) bool { return !plain(r) }) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
