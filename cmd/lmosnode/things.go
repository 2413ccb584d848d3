package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/lmosnode/lmosnode/node/tdd"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

func newThingsCmd() *cobra.Command {
	things := &cobra.Command{
		Use:   "things",
		Short: "Publish, list and remove this node's Things",
		Long: `things manages the agents and tools this node publishes: their W3C WoT
Thing Descriptions, signed with the node's key and announced to the
federation. Every subcommand talks to the running node ('lmosnode up').`,
		Example: `  lmosnode things publish examples/things/weather-agent.json --backend http://127.0.0.1:9000
  lmosnode things ls
  lmosnode things rm urn:uuid:6f1d3a7a-1f97-4e6b-b45f-f3c2e1c84c77`,
	}
	things.AddCommand(newThingsPublishCmd(), newThingsLsCmd(), newThingsRmCmd())
	return things
}

func newThingsPublishCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "publish FILE...",
		Short: "Publish TDs as this node's Things",
		Long: `publish sends each Thing Description FILE ("-" for stdin) to the running
node, which validates it, sets lmos:seq to the next version, signs it with
the node's key and announces it to the federation. A TD without "id" gets a
urn:uuid id. Publishing a TD with the id of one of the node's Things
updates it. A file that fails does not stop the others; the exit status is
that of the first failure.

--backend is the URL of the HTTP service that implements the Things; the
node forwards calls to it. It stays on this node and is never published.
Without --backend, an update keeps the backend set before; --backend ""
clears it. --json prints the API's answers as a JSON array.`,
		Example: `  lmosnode things publish weather-agent.json --backend http://127.0.0.1:9000
  lmosnode things publish examples/things/*.json
  cat tool.json | lmosnode things publish -`,
		Args: cobra.MinimumNArgs(1),
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return []string{"json", "jsonld"}, cobra.ShellCompDirectiveFilterFileExt
		},
		RunE: runThingsPublish,
	}
	cmd.Flags().String("backend", "", "URL of the HTTP service implementing the Things (node-local, not published)")
	cmd.Flags().Bool("json", false, "print the API's answers as a JSON array")
	_ = cmd.RegisterFlagCompletionFunc("backend", cobra.NoFileCompletions)
	return cmd
}

func runThingsPublish(cmd *cobra.Command, files []string) error {
	if i := slices.Index(files, "-"); i >= 0 && slices.Contains(files[i+1:], "-") {
		return usageErrorf("stdin (-) given more than once")
	}
	var backend *string
	if cmd.Flags().Changed("backend") {
		b, _ := cmd.Flags().GetString("backend")
		backend = &b
	}
	asJSON, _ := cmd.Flags().GetBool("json")
	return withDaemon(cmd, func(d *daemon) error {
		// Each file is a request of its own. With --json the answers are
		// printed together at the end, else each as it comes.
		out := cmd.OutOrStdout()
		var errs []error
		results := []tdd.PublishResult{}
		for _, file := range files {
			res, err := publishFile(cmd, d, file, backend)
			if err != nil {
				if exitCode(err) == exitUnavailable {
					return err // the node is gone: the other files fail alike
				}
				errs = append(errs, err)
				continue
			}
			if asJSON {
				results = append(results, res)
				continue
			}
			title := ""
			if td, err := lmosproto.ParseTD(res.TD); err == nil {
				title = td.Title
			}
			fmt.Fprintf(out, "%s %s %q (seq %d)\n", res.Change, res.ID, title, res.Seq)
			if res.Backend != "" {
				fmt.Fprintf(out, "backend: %s\n", res.Backend)
			}
		}
		if asJSON {
			if err := printJSON(out, results); err != nil {
				return err
			}
		}
		return errors.Join(errs...)
	})
}

// publishFile publishes the TD in file ("-": stdin).
func publishFile(cmd *cobra.Command, d *daemon, file string, backend *string) (tdd.PublishResult, error) {
	var doc []byte
	var err error
	if file == "-" {
		doc, err = io.ReadAll(io.LimitReader(cmd.InOrStdin(), lmosproto.MaxTDSize+1))
	} else {
		doc, err = os.ReadFile(file)
	}
	if err != nil {
		return tdd.PublishResult{}, err
	}
	if !json.Valid(doc) {
		return tdd.PublishResult{}, fmt.Errorf("%s: not JSON", file)
	}
	var res tdd.PublishResult
	err = d.call(cmd, requestTimeout, func(ctx context.Context) (err error) {
		res, err = d.api.Publish(ctx, doc, backend)
		return err
	})
	if err != nil {
		return tdd.PublishResult{}, fmt.Errorf("%s: %w", file, tdProblem(err))
	}
	return res, nil
}

// tdProblem rewrites the fields of an invalid "td" member of the publish
// request to pointers into the user's file.
func tdProblem(err error) error {
	var p *lmosproto.Problem
	if !errors.As(err, &p) || len(p.ValidationErrors) == 0 {
		return err
	}
	var b strings.Builder
	b.WriteString("not published:")
	for _, fe := range p.ValidationErrors {
		field, inTD := strings.CutPrefix(fe.Field, "/td")
		if !inTD {
			field = "request " + fe.Field
		}
		if field == "" {
			field = "(root)"
		}
		fmt.Fprintf(&b, "\n  %s: %s", field, fe.Description)
	}
	return errors.New(b.String())
}

func newThingsLsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List this node's Things",
		Long: `ls lists the Things this node publishes, with their sequence number and
backend. --json prints them as the API returns them: each with its signed
TD, registration times and backend.`,
		Example: `  lmosnode things ls
  lmosnode things ls --json | jq '.[].id'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return callDaemon(cmd, requestTimeout, func(ctx context.Context, d *daemon) error {
				own, err := d.api.Own(ctx)
				if err != nil {
					return err
				}
				return output(cmd, own, func(own []tdd.ThingInfo) error { return printOwn(ctx, cmd, d, own) })
			})
		},
	}
	cmd.Flags().Bool("json", false, "print JSON")
	return cmd
}

func newThingsRmCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "rm ID...",
		Aliases: []string{"remove"},
		Short:   "Remove Things of this node",
		Long: `rm removes Things this node publishes: the node signs and announces a
tombstone, so every peer drops them too. Only the node's own Things can be
removed. --json prints the removed ids as a JSON array.`,
		Example: `  lmosnode things rm urn:uuid:6f1d3a7a-1f97-4e6b-b45f-f3c2e1c84c77`,
		Args:    cobra.MinimumNArgs(1),
		ValidArgsFunction: func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			var ids []string
			_ = callDaemon(cmd, requestTimeout, func(ctx context.Context, d *daemon) error {
				own, err := d.api.Own(ctx)
				if err != nil {
					return err
				}
				for _, t := range own {
					ids = append(ids, t.ID)
				}
				return nil
			})
			return ids, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, ids []string) error {
			return withDaemon(cmd, func(d *daemon) error {
				// Each id is a request of its own. With --json the ids
				// removed are printed together at the end.
				asJSON, _ := cmd.Flags().GetBool("json")
				var errs []error
				removed := []string{}
				for _, id := range ids {
					err := d.call(cmd, requestTimeout, func(ctx context.Context) error { return d.api.RemoveThing(ctx, id) })
					if err != nil {
						errs = append(errs, fmt.Errorf("remove %s: %w", id, err))
						continue
					}
					removed = append(removed, id)
					if !asJSON {
						fmt.Fprintf(cmd.OutOrStdout(), "removed %s\n", id)
					}
				}
				if asJSON {
					if err := printJSON(cmd.OutOrStdout(), removed); err != nil {
						return err
					}
				}
				return errors.Join(errs...)
			})
		},
	}
	cmd.Flags().Bool("json", false, "print the removed ids as a JSON array")
	return cmd
}

// printOwn prints the table of the node's own Things.
func printOwn(ctx context.Context, cmd *cobra.Command, d *daemon, own []tdd.ThingInfo) error {
	if len(own) == 0 {
		fmt.Fprintln(cmd.ErrOrStderr(), "this node publishes no Things yet: see 'lmosnode things publish'")
		return nil
	}
	names := groupNames(ctx, d)
	tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TITLE\tTYPE\tCAPABILITIES\tGROUPS\tSEQ\tBACKEND\tID")
	for _, t := range own {
		td, err := lmosproto.ParseTD(t.TD)
		if err != nil {
			return fmt.Errorf("thing %q: %w", t.ID, err)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", cell(td.Title), typeName(td), capabilities(td), groupList(td.Groups, names), t.Seq, cell(t.Backend), t.ID)
	}
	return tw.Flush()
}

// typeName is the LMOS type of a TD for tables: agent, tool, or its @type.
func typeName(td *lmosproto.TD) string {
	switch {
	case td.IsAgent():
		return "agent"
	case td.IsTool():
		return "tool"
	case len(td.Types) > 0:
		return strings.Join(td.Types, ",")
	}
	return "-"
}

// capabilities lists a TD's capabilities as id@version.
func capabilities(td *lmosproto.TD) string {
	if len(td.Capabilities) == 0 {
		return "-"
	}
	parts := make([]string, len(td.Capabilities))
	for i, c := range td.Capabilities {
		parts[i] = c.ID
		if c.Version != "" {
			parts[i] += "@" + c.Version
		}
	}
	return strings.Join(parts, ",")
}

// cell makes s fit a table cell: no tabs or newlines, "-" for empty.
func cell(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return "-"
	}
	return s
}
