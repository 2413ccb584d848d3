package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

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
		Use:   "publish FILE",
		Short: "Publish a TD as one of this node's Things",
		Long: `publish sends the Thing Description in FILE ("-" for stdin) to the running
node, which validates it, sets lmos:seq to the next version, signs it with
the node's key and announces it to the federation. A TD without "id" gets a
urn:uuid id. Publishing a TD with the id of one of the node's Things
updates it.

--backend is the URL of the HTTP service that implements the Thing; the
node forwards calls to it. It stays on this node and is never published.
Without --backend, an update keeps the backend set before; --backend ""
clears it.`,
		Example: `  lmosnode things publish weather-agent.json --backend http://127.0.0.1:9000
  cat tool.json | lmosnode things publish -`,
		Args: cobra.ExactArgs(1),
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return []string{"json", "jsonld"}, cobra.ShellCompDirectiveFilterFileExt
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			file := args[0]
			var doc []byte
			var err error
			if file == "-" {
				doc, err = io.ReadAll(io.LimitReader(cmd.InOrStdin(), lmosproto.MaxTDSize+1))
			} else {
				doc, err = os.ReadFile(file)
			}
			if err != nil {
				return err
			}
			if !json.Valid(doc) {
				return fmt.Errorf("%s: not JSON", file)
			}
			var backend *string
			if cmd.Flags().Changed("backend") {
				b, _ := cmd.Flags().GetString("backend")
				backend = &b
			}
			d, err := connectDaemon(cmd)
			if err != nil {
				return err
			}
			ctx, cancel := d.ctx(cmd)
			defer cancel()
			res, err := d.client.Publish(ctx, doc, backend)
			if err != nil {
				return fmt.Errorf("%s: %w", file, tdProblem(d.explain(err)))
			}
			title := ""
			if td, err := lmosproto.ParseTD(res.TD); err == nil {
				title = td.Title
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "%s %s %q (seq %d)\n", res.Change, res.ID, title, res.Seq)
			if res.Backend != "" {
				fmt.Fprintf(out, "backend: %s\n", res.Backend)
			}
			return nil
		},
	}
	cmd.Flags().String("backend", "", "URL of the HTTP service implementing the Thing (node-local, not published)")
	_ = cmd.RegisterFlagCompletionFunc("backend", cobra.NoFileCompletions)
	return cmd
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
			d, err := connectDaemon(cmd)
			if err != nil {
				return err
			}
			ctx, cancel := d.ctx(cmd)
			defer cancel()
			own, err := d.client.Own(ctx)
			if err != nil {
				return d.explain(err)
			}
			out := cmd.OutOrStdout()
			if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
				return printJSON(out, own)
			}
			if len(own) == 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), "this node publishes no Things yet: see 'lmosnode things publish'")
				return nil
			}
			names := groupNames(ctx, d)
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "TITLE\tTYPE\tCAPABILITIES\tGROUPS\tSEQ\tBACKEND\tID")
			for _, t := range own {
				td, err := lmosproto.ParseTD(t.TD)
				if err != nil {
					return fmt.Errorf("thing %q: %w", t.ID, err)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", cell(td.Title), typeName(td), capabilities(td), groupList(td.Groups, names), t.Seq, cell(t.Backend), t.ID)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().Bool("json", false, "print JSON")
	return cmd
}

func newThingsRmCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "rm ID...",
		Aliases: []string{"remove"},
		Short:   "Remove Things of this node",
		Long: `rm removes Things this node publishes: the node signs and announces a
tombstone, so every peer drops them too. Only the node's own Things can be
removed.`,
		Example: `  lmosnode things rm urn:uuid:6f1d3a7a-1f97-4e6b-b45f-f3c2e1c84c77`,
		Args:    cobra.MinimumNArgs(1),
		ValidArgsFunction: func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			d, err := connectDaemon(cmd)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			ctx, cancel := d.ctx(cmd)
			defer cancel()
			own, err := d.client.Own(ctx)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var ids []string
			for _, t := range own {
				ids = append(ids, t.ID)
			}
			return ids, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, ids []string) error {
			d, err := connectDaemon(cmd)
			if err != nil {
				return err
			}
			var errs []error
			for _, id := range ids {
				ctx, cancel := d.ctx(cmd)
				err := d.client.Remove(ctx, id)
				cancel()
				if err != nil {
					errs = append(errs, fmt.Errorf("remove %s: %w", id, d.explain(err)))
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "removed %s\n", id)
			}
			return errors.Join(errs...)
		},
	}
}

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
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
