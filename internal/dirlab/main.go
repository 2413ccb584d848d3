// Command dirlab is the measuring half of the directory lab (scripts/lab.sh
// directory), which builds it; it is never part of lmosnode. The lab asks
// what a whole node costs that holds a large directory: not the
// directory's own heap (node/directory BenchmarkTable), but the process,
// with its caches, libp2p host, DHT and API.
//
//	dirlab fill -home H -n N [-td FILE]   writes N Things of the synthetic
//	                                      federation (internal/dircorpus),
//	                                      each signed by its publisher, into
//	                                      the datastore of the node home H
//	                                      (the node not running)
//	dirlab measure -home H [-queries Q]   asks the node running in H for its
//	                                      heap after a GC, its resident
//	                                      memory and the Things it holds,
//	                                      then times Q capability queries,
//	                                      Q/10 free-text ones, Q/10 by title
//	                                      and Q/100 pages of every Thing,
//	                                      newest first, through its HTTP API
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: dirlab fill|measure [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "fill":
		err = runFill(os.Args[2:])
	case "measure":
		err = runMeasure(os.Args[2:])
	default:
		err = fmt.Errorf("unknown mode %q: want fill or measure", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "dirlab:", err)
		os.Exit(1)
	}
}
