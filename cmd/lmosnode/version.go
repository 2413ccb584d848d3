package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/lmosnode/lmosnode/node/version"
)

// versionInfo is what 'lmosnode version --json' prints.
type versionInfo struct {
	Version string `json:"version"`
	Go      string `json:"go"`
	OS      string `json:"os"`
	Arch    string `json:"arch"`
}

func currentVersion() versionInfo {
	return versionInfo{Version: version.Version, Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
}

// versionLine is the line 'lmosnode version' and 'lmosnode --version'
// print.
func versionLine() string {
	v := currentVersion()
	return fmt.Sprintf("lmosnode %s (%s %s/%s)\n", v.Version, v.Go, v.OS, v.Arch)
}

func newVersionCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the lmosnode version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return output(cmd, currentVersion(), func(versionInfo) error {
				fmt.Fprint(cmd.OutOrStdout(), versionLine())
				return nil
			})
		},
	}
	cmd.Flags().Bool("json", false, "print JSON")
	return cmd
}
