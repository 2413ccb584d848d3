package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lmosnode/lmosnode/node/config"
)

func newConfigCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show, read and change the node's configuration",
		Long: `config works on the configuration of the node in --home: config.json merged
over the defaults, then overridden by the environment (one LMOS_… variable
per setting). docs/config.md lists every setting with its default, its
variable and its meaning. A running node reads a change on its next start.`,
		Example: `  lmosnode config show
  lmosnode config get apiLimits.bodyTimeout
  lmosnode config set dhtMode server
  lmosnode config set bootstrap /ip4/192.0.2.7/tcp/4001/p2p/12D3KooW...`,
	}
	cmd.AddCommand(newConfigShowCmd(), newConfigGetCmd(), newConfigSetCmd())
	return cmd
}

// maskedToken stands for a set apiToken in 'config show'.
const maskedToken = "(set)"

func newConfigShowCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "show",
		Short: "Print the effective configuration as JSON",
		Long: `show prints the configuration the node would run with: the defaults, what
config.json sets and what the environment overrides, as JSON in the form of
config.json. A set apiToken is shown as "` + maskedToken + `" ('config get
apiToken' prints it). --file shows config.json over the defaults only,
without the environment. --env lists each setting's environment variable
instead.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			if env, _ := cmd.Flags().GetBool("env"); env {
				for _, s := range config.Settings() {
					fmt.Fprintf(out, "%s\t%s\n", s.Env, s.Path)
				}
				return nil
			}
			cfg, err := loadConfigFor(cmd)
			if err != nil {
				return err
			}
			if cfg.APIToken != "" {
				cfg.APIToken = maskedToken
			}
			return printJSON(out, cfg)
		},
	}
	cmd.Flags().Bool("file", false, "config.json over the defaults, without the environment")
	cmd.Flags().Bool("env", false, "list the environment variable of each setting")
	return cmd
}

func newConfigGetCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "get SETTING",
		Short: "Print one setting's effective value as JSON",
		Long: `get prints the effective value of the setting at its JSON path
(dhtMode, apiLimits.bodyTimeout; see 'config show' and docs/config.md).`,
		Args: cobra.ExactArgs(1),
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return settingPaths(), cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := config.LookupSetting(args[0])
			if err != nil {
				return notFound(err)
			}
			cfg, err := loadConfigFor(cmd)
			if err != nil {
				return err
			}
			v, err := s.Get(cfg)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), string(v))
			return err
		},
	}
	cmd.Flags().Bool("file", false, "config.json over the defaults, without the environment")
	return cmd
}

func newConfigSetCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "set SETTING VALUE",
		Short: "Change one setting in config.json",
		Long: `set writes VALUE for the setting at its JSON path into the home's
config.json, after checking that the configuration as a whole is valid
(the file is left unchanged otherwise). Strings and durations are written as
they are (30s, 2m); booleans true or false; numbers as digits; lists
comma-separated (empty: the empty list) or as a JSON array. The environment
is not written into the file.`,
		Example: `  lmosnode config set dhtMode server
  lmosnode config set connMgr.high 400
  lmosnode config set bootstrap ""`,
		Args: cobra.ExactArgs(2),
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) == 0 {
				return settingPaths(), cobra.ShellCompDirectiveNoFileComp
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := config.LookupSetting(args[0])
			if err != nil {
				return notFound(err)
			}
			home, err := homeDir(cmd)
			if err != nil {
				return err
			}
			cfg, err := loadFileOrDefault(home)
			if err != nil {
				return err
			}
			if err := s.Set(&cfg, args[1]); err != nil {
				return usageErrorf("%w", err)
			}
			if err := cfg.Validate(); err != nil {
				return usageErrorf("%w (config.json unchanged)", err)
			}
			return config.Write(home, cfg)
		},
	}
}

// loadFileOrDefault loads the home's config.json to change it; a fresh
// home gets its config.json only (the identity key and the rest are made
// by init or the first up), so the defaults, with the home created.
func loadFileOrDefault(home string) (config.Config, error) {
	cfg, err := config.LoadFile(home)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(home, 0o700); err != nil {
			return config.Config{}, err
		}
		cfg, err = config.Default(), nil
		cfg.Home = home
	}
	return cfg, err
}

// loadConfigFor loads the configuration of the command's home, with the
// environment unless --file. A home without config.json has the defaults
// (what init would write), said on stderr.
func loadConfigFor(cmd *cobra.Command) (config.Config, error) {
	home, err := homeDir(cmd)
	if err != nil {
		return config.Config{}, err
	}
	fileOnly, _ := cmd.Flags().GetBool("file")
	cfg, err := config.LoadFile(home)
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(cmd.ErrOrStderr(), "no %s in %s: the defaults ('lmosnode init' or the first 'up' writes them)\n", config.File, home)
		cfg, err = config.Default(), nil
		cfg.Home = home
	}
	if err != nil || fileOnly {
		return cfg, err
	}
	if err := config.ApplyEnv(&cfg, os.LookupEnv); err != nil {
		return config.Config{}, fmt.Errorf("config: %w", err)
	}
	return cfg, nil
}

func settingPaths() []string {
	var paths []string
	for _, s := range config.Settings() {
		paths = append(paths, s.Path)
	}
	return paths
}

// applySettingFlags applies up's --set PATH=VALUE flags and the flags
// named after settings (settingFlags) to cfg.
func applySettingFlags(cmd *cobra.Command, cfg *config.Config) error {
	f := cmd.Flags()
	for _, sf := range settingFlags {
		if !f.Changed(sf.flag) {
			continue
		}
		s, err := config.LookupSetting(sf.path)
		if err != nil {
			return err
		}
		if err := s.Set(cfg, f.Lookup(sf.flag).Value.String()); err != nil {
			return usageErrorf("--%s: %w", sf.flag, err)
		}
	}
	sets, err := f.GetStringArray("set")
	if err != nil {
		return err
	}
	for _, kv := range sets {
		path, value, ok := strings.Cut(kv, "=")
		if !ok {
			return usageErrorf("--set %q: want SETTING=VALUE", kv)
		}
		s, err := config.LookupSetting(path)
		if err != nil {
			return usageErrorf("--set: %w", err)
		}
		if err := s.Set(cfg, value); err != nil {
			return usageErrorf("--set: %w", err)
		}
	}
	return nil
}

// settingFlags are up's flags for common settings, named after the
// setting's path in kebab case.
var settingFlags = []struct {
	flag, path, usage string
	isBool            bool
}{
	{"dht-mode", "dhtMode", "DHT mode: auto (serve while publicly reachable), server or client", false},
	{"auto-nat", "autoNAT", "AutoNAT v2: learn which of our addresses are reachable", true},
	{"hole-punching", "holePunching", "DCUtR hole punching through NATs (needs --relay-client)", true},
	{"relay-client", "relayClient", "dial and accept connections through circuit-relay v2 relays", true},
}

// addSettingFlags registers settingFlags and --set on up.
func addSettingFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	def := config.Default()
	for _, sf := range settingFlags {
		s, err := config.LookupSetting(sf.path)
		if err != nil {
			panic(err) // a typo in settingFlags; TestSettingFlags catches it
		}
		v, _ := s.Get(def)
		if sf.isBool {
			var b bool
			_ = json.Unmarshal(v, &b)
			f.Bool(sf.flag, b, sf.usage+" (setting "+sf.path+")")
			continue
		}
		var str string
		_ = json.Unmarshal(v, &str)
		f.String(sf.flag, str, sf.usage+" (setting "+sf.path+")")
	}
	_ = cmd.RegisterFlagCompletionFunc("dht-mode", cobra.FixedCompletions([]string{config.DHTModeAuto, config.DHTModeServer, config.DHTModeClient}, cobra.ShellCompDirectiveNoFileComp))
	f.StringArray("set", nil, "SETTING=VALUE for any setting of docs/config.md (e.g. apiLimits.bodyTimeout=1m); repeat for several")
}
