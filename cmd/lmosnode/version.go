package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/lmosnode/lmosnode/node"
)

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the lmosnode version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(cmd.OutOrStdout(), "lmosnode %s (%s %s/%s)\n", node.Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return nil
		},
	}
}
