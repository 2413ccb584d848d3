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
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run executes the command line args and returns the process exit code
// (exitcode.go).
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCmd()
	var tracker runTracker
	tracker.track(root)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "lmosnode: %v\n", err)
	}
	return tracker.code(err)
}
