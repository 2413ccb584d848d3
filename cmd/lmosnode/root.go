package main

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lmosnode/lmosnode/node/config"
	"github.com/lmosnode/lmosnode/node/homedir"
	"github.com/lmosnode/lmosnode/node/suggest"
	"github.com/lmosnode/lmosnode/node/version"
)

// newRootCmd builds the command tree. Each command lives in its own file
// as a newXxxCmd constructor (no init() registration); to add a command,
// write its file and add its constructor to the list below.
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "lmosnode",
		Short: "Run a node of the LMOS federated Internet of Agents",
		Long: `lmosnode is the daemon an organisation runs to put its AI agents and tools
on a federated peer-to-peer network following the Eclipse LMOS protocol.

A node keeps its identity key, configuration and data in a home directory:
--home if given, else $LMOS_HOME, else ~/.lmosnode. 'lmosnode up' creates it
on first run, so nothing needs to be set up beforehand.

Commands that talk to a node find it through the api file the daemon writes
in its home, or at --api URL ($LMOS_API) for a node elsewhere (in a
container, on another host), with --token ($LMOS_API_TOKEN) if its API
requires one. Exit codes: 0 success, 1 failure, 2 usage error, 3 not found,
4 forbidden (401/403), 5 node unavailable, 6 timeout.`,
		Example: `  # Run a node with everything in ~/.lmosnode
  lmosnode up

  # Show this node's peer ID and did:key
  lmosnode id`,
		SilenceUsage:  true, // a failed run is not a usage error
		SilenceErrors: true, // run prints the error once
		Version:       version.Version,
	}
	root.SetVersionTemplate(versionLine())
	root.PersistentFlags().String("home", "", "node home directory (default $"+config.HomeEnv+" or ~/"+homedir.DefaultName+")")
	root.PersistentFlags().String("log-level", "info", "log level: debug, info, warn or error")
	root.PersistentFlags().String("api", "", "URL (http://host:port) of the API of the node to talk to (default $"+APIEnv+", else the api file of the home); 'up' takes host:port to listen on")
	root.PersistentFlags().String("token", "", "bearer token for the node's API (default $"+config.APITokenEnv+", else the home's)")
	_ = root.MarkPersistentFlagDirname("home")
	_ = root.RegisterFlagCompletionFunc("log-level", cobra.FixedCompletions(
		[]string{"debug", "info", "warn", "error"}, cobra.ShellCompDirectiveNoFileComp))

	root.AddCommand(
		newInitCmd(),
		newUpCmd(),
		newIDCmd(),
		newConfigCmd(),
		newKeyCmd(),
		newVersionCmd(),
		newTDCmd(),
		newThingsCmd(),
		newFindCmd(),
		newTrustCmd(),
		newPeersCmd(),
		newConnectCmd(),
		newReadCmd(),
		newWriteCmd(),
		newInvokeCmd(),
		newSubscribeCmd(),
		newGroupCmd(),
		newA2ACmd(),
		newDemoCmd(),
		newMCPCmd(),
		newImportCmd(),
	)
	root.SetFlagErrorFunc(suggestFlag)
	refuseUnknownSubcommands(root)
	return root
}

// groupsOnly is the annotation of a command that only groups others.
const groupsOnly = "lmosnode/groupsOnly"

// refuseUnknownSubcommands makes every command that only groups others
// (things, group, trust, …) refuse a word that is none of them, as the
// root does, with cobra's "did you mean": left to cobra, `lmosnode things
// add` printed the help and exited 0.
func refuseUnknownSubcommands(cmd *cobra.Command) {
	for _, c := range cmd.Commands() {
		refuseUnknownSubcommands(c)
	}
	if cmd.Runnable() || !cmd.HasSubCommands() || !cmd.HasParent() {
		return
	}
	cmd.Args = cobra.ArbitraryArgs
	cmd.Annotations = map[string]string{groupsOnly: "true"}
	cmd.SuggestionsMinimumDistance = 2 // cobra's default, set only on the root
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		if near := cmd.SuggestionsFor(args[0]); len(near) > 0 {
			msg += fmt.Sprintf(" (did you mean %q?)", near[0])
		}
		return usageErrorf("%s; see '%s --help'", msg, cmd.CommandPath())
	}
}

// suggestFlag adds "did you mean --mdns?" to cobra's error for an
// unknown flag (up --mdsn=false) when one of cmd's flags is close.
func suggestFlag(cmd *cobra.Command, err error) error {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return err
	}
	var names []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	if near := suggest.Nearest(name, names); near != "" {
		return fmt.Errorf("%w (did you mean --%s?)", err, near)
	}
	return err
}

// homeDir resolves the --home flag, $LMOS_HOME and the default.
func homeDir(cmd *cobra.Command) (string, error) {
	flag, err := cmd.Flags().GetString("home")
	if err != nil {
		return "", err
	}
	return homedir.Resolve(flag)
}

// logger builds the logger of this invocation from --log-level; logs go to
// stderr, output meant for the user to stdout.
func logger(cmd *cobra.Command) (*slog.Logger, error) {
	return loggerFormat(cmd, config.LogFormatText)
}

// loggerFormat is logger writing format: node.LogFormatText (also for "")
// or node.LogFormatJSON (slog's JSON handler, one object per line).
func loggerFormat(cmd *cobra.Command, format string) (*slog.Logger, error) {
	s, err := cmd.Flags().GetString("log-level")
	if err != nil {
		return nil, err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(strings.ToUpper(s))); err != nil {
		return nil, fmt.Errorf("--log-level: %q: want debug, info, warn or error", s)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch format {
	case "", config.LogFormatText:
		return slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), opts)), nil
	case config.LogFormatJSON:
		return slog.New(slog.NewJSONHandler(cmd.ErrOrStderr(), opts)), nil
	}
	return nil, fmt.Errorf("--log-format: %q: want %s or %s", format, config.LogFormatText, config.LogFormatJSON)
}
