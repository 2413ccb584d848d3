// Command lmosnode runs an lmosnode daemon and talks to it: it puts an
// organisation's AI agents and tools, described as signed W3C WoT Thing
// Descriptions, on a federated libp2p network following the Eclipse LMOS
// protocol.
//
// The command is thin: everything it does is implemented in package node.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// run executes the command line args and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(stderr, "lmosnode: %v\n", err)
		return 1
	}
	return 0
}
