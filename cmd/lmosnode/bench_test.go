package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/internal/benchtab"
	"github.com/lmosnode/lmosnode/node/apiclient"
	"github.com/lmosnode/lmosnode/node/config"
	"github.com/lmosnode/lmosnode/node/homedir"
)

// bnDeadline bounds each start and stop of the daemon: a bound for a hung
// run, not a speed requirement.
const bnDeadline = 30 * time.Second

// BenchmarkStartup is row 7 of the performance table (scripts/bench.sh):
// `lmosnode up`, the real binary built once with go build, from exec until
// its API answers GET /api/v1/node, cold (a fresh home: the identity key
// is generated, the datastore created) and warm (the same home again).
// The node listens on 127.0.0.1 only with mDNS, AutoNAT, hole punching and
// the relay client off and no bootstrap peers (config.json written before
// the first start), so it sends nothing off the machine. Each iteration
// is one cold and one warm start; run it with -benchtime Nx. The time of
// `lmosnode version` (exec and Go runtime start) is reported as the floor.
func BenchmarkStartup(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "lmosnode")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	var cold, warm, floor []time.Duration
	for b.Loop() {
		home := filepath.Join(b.TempDir(), "home")
		if err := os.MkdirAll(home, 0o700); err != nil {
			b.Fatal(err)
		}
		cfg := config.Loopback(home)
		if err := config.Write(home, cfg); err != nil {
			b.Fatal(err)
		}
		cold = append(cold, bnStartUp(b, bin, home, nil))
		warm = append(warm, bnStartUp(b, bin, home, nil))
		start := time.Now()
		if out, err := exec.Command(bin, "version").CombinedOutput(); err != nil {
			b.Fatalf("lmosnode version: %v\n%s", err, out)
		}
		floor = append(floor, time.Since(start))
	}
	b.StopTimer()
	// Row 6 from the real binary: the resident memory of `lmosnode up`
	// after it idled 2 s.
	home := filepath.Join(b.TempDir(), "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		b.Fatal(err)
	}
	if err := config.Write(home, config.Loopback(home)); err != nil {
		b.Fatal(err)
	}
	var rss float64
	bnStartUp(b, bin, home, func(pid int) { time.Sleep(2 * time.Second); rss = bnRSSOf(b, pid) })
	benchtab.Print(benchtab.Row{Row: "6", Case: "lmosnode up (the binary), idle 2 s", Metric: "RSS", Unit: "MB", LMOS: rss, Target: "≤ 60 MB"})
	for _, c := range []struct {
		name   string
		ds     []time.Duration
		target string
	}{{"cold (fresh home, new key)", cold, "≤ 300 ms"}, {"warm (existing home)", warm, "≤ 300 ms"}, {"exec floor (lmosnode version)", floor, ""}} {
		p50 := bnPercentile(c.ds, 50)
		b.ReportMetric(p50, "p50-ms-"+c.name[:4])
		benchtab.Print(benchtab.Row{Row: "7", Case: "startup " + c.name, Metric: "p50", Unit: "ms", LMOS: p50, Target: c.target})
	}
}

// bnStartUp runs `lmosnode up` on home, waits until its API answers, calls
// running (if not nil) with its process ID, stops it with SIGINT and
// returns the time from exec to the API's answer.
func bnStartUp(b *testing.B, bin, home string, running func(pid int)) time.Duration {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bnDeadline)
	defer cancel()
	cmd := exec.Command(bin, "up", "--home", home, "--listen", "/ip4/127.0.0.1/tcp/0",
		"--api", "127.0.0.1:0", "--mdns=false", "--log-level", "warn")
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var d time.Duration
	for d == 0 {
		if u, err := homedir.ReadAPIFile(home); err == nil {
			if _, err := apiclient.New(u, nil).Node(ctx); err == nil {
				d = time.Since(start)
				break
			}
		}
		select {
		case err := <-exited:
			b.Fatalf("lmosnode up exited before its API answered: %v", err)
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			b.Fatalf("lmosnode up: API not answering after %s", bnDeadline)
		case <-time.After(time.Millisecond):
		}
	}
	if running != nil {
		running(cmd.Process.Pid)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		b.Fatal(err)
	}
	select {
	case err := <-exited:
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			b.Fatal(err)
		} else if err != nil {
			b.Fatalf("lmosnode up after SIGINT: %v", err)
		}
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		b.Fatalf("lmosnode up did not exit within %s of SIGINT", bnDeadline)
	}
	return d
}

// bnPercentile returns the p-th percentile (nearest rank) of ds in
// milliseconds.
func bnPercentile(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := min(max(int(float64(len(s))*p/100+0.999999)-1, 0), len(s)-1)
	return float64(s[rank]) / float64(time.Millisecond)
}

// bnRSSOf returns the resident set size of process pid in MiB (VmRSS).
func bnRSSOf(b *testing.B, pid int) float64 {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb / 1024
		}
	}
	b.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}
