// Command benchtab reads `go test -bench` output (any number of runs,
// concatenated) on standard input and prints the rows that benchmarks
// reported with benchtab.Print as one Markdown table.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/lmosnode/lmosnode/internal/benchtab"
)

func main() {
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtab:", err)
		os.Exit(1)
	}
	rows, err := benchtab.Parse(string(in))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if len(rows) == 0 {
		fmt.Fprintln(os.Stderr, "benchtab: no BENCHTAB lines in the input")
		os.Exit(1)
	}
	if err := benchtab.Write(os.Stdout, rows); err != nil {
		fmt.Fprintln(os.Stderr, "benchtab:", err)
		os.Exit(1)
	}
}
