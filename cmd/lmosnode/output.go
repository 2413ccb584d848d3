package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// output prints v, the result of a command: as indented JSON with --json,
// else with text.
func output[T any](cmd *cobra.Command, v T, text func(v T) error) error {
	if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
		return printJSON(cmd.OutOrStdout(), v)
	}
	return text(v)
}

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// nonNil is s, or an empty slice for nil: --json prints [], not null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// table prints items as a table on stdout: header (cells separated by
// tabs), then the cells of each item; with no items and an empty hint,
// only the hint on stderr.
func table[T any](cmd *cobra.Command, header string, items []T, empty string, row func(T) []string) error {
	if len(items) == 0 && empty != "" {
		fmt.Fprintln(cmd.ErrOrStderr(), empty)
		return nil
	}
	tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, it := range items {
		fmt.Fprintln(tw, strings.Join(row(it), "\t"))
	}
	return tw.Flush()
}
