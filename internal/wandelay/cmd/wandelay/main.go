// Command wandelay is the WAN lab's link emulator (package wandelay): run
// inside the lab's router namespace, it delays every packet its FORWARD
// chain queues (iptables -j NFQUEUE) by its address pair's one-way delay
// and drops a share of them, until SIGINT or SIGTERM. It prints a line of
// counts every -every and when it stops, with the kernel's own count of
// packets the queue had no room for.
//
// Usage: wandelay [-queue N] [-rtt-min 20ms] [-rtt-max 120ms] [-loss 0.005]
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/lmosnode/lmosnode/internal/wandelay"
)

func main() {
	cfg := wandelay.DefaultConfig()
	queue := flag.Uint("queue", 0, "netfilter queue number")
	flag.DurationVar(&cfg.RTTMin, "rtt-min", cfg.RTTMin, "smallest round-trip time added to a pair of addresses")
	flag.DurationVar(&cfg.RTTMax, "rtt-max", cfg.RTTMax, "largest round-trip time added to a pair of addresses")
	flag.Float64Var(&cfg.Loss, "loss", cfg.Loss, "share of packets dropped (0.005 is 0.5 %)")
	flag.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the loss draws")
	every := flag.Duration("every", 10*time.Second, "how often to print the counts")
	verbose := flag.Bool("v", false, "log every new address pair and its RTT")
	flag.Parse()
	cfg.Queue = uint16(*queue)
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	s, err := wandelay.New(cfg, log)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("WANDELAY ready queue=%d rtt=%s..%s loss=%g\n", cfg.Queue, cfg.RTTMin, cfg.RTTMax, cfg.Loss)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	tick := time.NewTicker(*every)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case <-tick.C:
		case <-ctx.Done():
			done = true
		}
		report(cfg.Queue, s.Stats())
	}
	if err := s.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "wandelay: close:", err)
	}
}

func report(queue uint16, st wandelay.Stats) {
	fmt.Printf("WANDELAY stats received=%d accepted=%d lost=%d unparsed=%d verdict_errors=%d read_errors=%d %s\n",
		st.Received, st.Accepted, st.Lost, st.Unparsed, st.VerdictErrors, st.ReadErrors, kernelDrops(queue))
}

// kernelDrops reads this namespace's /proc/net/netfilter/nfnetlink_queue:
// queue_dropped counts packets the queue had no room for, user_dropped
// those the socket could not take.
func kernelDrops(queue uint16) string {
	b, err := os.ReadFile("/proc/net/netfilter/nfnetlink_queue")
	if err != nil {
		return "kernel=unknown"
	}
	for line := range strings.Lines(string(b)) {
		// queue_number peer_portid queue_total copy_mode copy_range
		// queue_dropped user_dropped id_sequence 1
		f := strings.Fields(line)
		if len(f) >= 7 && f[0] == fmt.Sprint(queue) {
			return fmt.Sprintf("queue_total=%s queue_dropped=%s user_dropped=%s", f[2], f[5], f[6])
		}
	}
	return "kernel=unbound"
}
