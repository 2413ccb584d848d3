// Command wanlab is the measuring half of the WAN lab (scripts/lab.sh wan),
// which builds it; it is never part of lmosnode. The lab gives every one
// of N network namespaces a link with 20–120 ms RTT and 0.5 % loss to the
// others (cmd/wandelay in a router namespace) and runs in each an lmosnode
// node and one `wanlab peer`:
//
//	wanlab peer -index K -n N [-cold]   in namespace K: the raw baseline
//	                                    host and the node's local observer
//	wanlab drive -n N ...               in the router namespace: runs the
//	                                    rows and prints benchtab lines
//	wanlab links -n N                   the lab's topology, "i j" per line
//
// A peer runs a raw libp2p host (TCP, Noise, yamux) with kad-dht (the
// node's /lmos protocol, server mode) and gossipsub (the node's message ID
// function, flood publishing), joined to one topic and linked to the same
// peers as its node: the raw stack lmosnode is compared against, on the
// same links. It also serves an HTTP echo backend for the node's Thing,
// watches the local node's /events stream, and answers the driver's
// requests on a control port of its namespace address. Every peer stamps
// arrivals with the shared machine clock, so the driver compares stamps
// taken in different processes.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: wanlab peer|drive|links [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "peer":
		err = runPeer(os.Args[2:])
	case "drive":
		err = runDrive(os.Args[2:])
	case "links":
		err = runLinks(os.Args[2:])
	default:
		err = fmt.Errorf("unknown mode %q: want peer, drive or links", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "wanlab:", err)
		os.Exit(1)
	}
}
