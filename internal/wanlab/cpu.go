package main

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// userHZ is the unit of /proc's CPU times (USER_HZ, 100 on Linux).
const userHZ = 100

// cpuProfileSeconds is how long the nodes' CPU profiles of the loaded
// propagation samples run (about as long as six samples take at 50 nodes).
const cpuProfileSeconds = 20

// machineCPU is what /proc says the machine's CPUs have done: time by
// state (/proc/stat's cpu line) and by process name (/proc/PID/stat:
// utime + stime of every process alive, kernel threads named without
// their "/N" suffix), in USER_HZ ticks.
type machineCPU struct {
	at     time.Time
	states map[string]uint64
	procs  map[string]uint64
	count  map[string]int // processes by name
}

var cpuStates = []string{"user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"}

func readCPU() (machineCPU, error) {
	m := machineCPU{at: time.Now(), states: map[string]uint64{}, procs: map[string]uint64{}, count: map[string]int{}}
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return m, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	for i, name := range cpuStates {
		if i+1 < len(f) && f[0] == "cpu" {
			m.states[name], _ = strconv.ParseUint(f[i+1], 10, 64)
		}
	}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, file := range stats {
		b, err := os.ReadFile(file)
		if err != nil {
			continue // exited
		}
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		name, _, _ := strings.Cut(s[open+1:end], "/")
		rest := strings.Fields(s[end+1:]) // from field 3, state
		if len(rest) < 13 {
			continue
		}
		ut, _ := strconv.ParseUint(rest[11], 10, 64)
		st, _ := strconv.ParseUint(rest[12], 10, 64)
		m.procs[name] += ut + st
		m.count[name]++
	}
	return m, nil
}

// since says how the machine's CPU time went between before and m: each
// state's share, and the cores the busiest process names used (a process
// that started or ended in between counts only what /proc shows of it at
// both ends).
func (m machineCPU) since(before machineCPU, cores int) string {
	var total uint64
	for _, name := range cpuStates {
		total += m.states[name] - before.states[name]
	}
	secs := m.at.Sub(before.at).Seconds()
	var b strings.Builder
	fmt.Fprintf(&b, "machine CPU over %.1f s (%d cores):", secs, cores)
	for _, name := range cpuStates {
		if d := m.states[name] - before.states[name]; total > 0 && d > 0 {
			fmt.Fprintf(&b, " %s %.0f %%,", name, 100*float64(d)/float64(total))
		}
	}
	type use struct {
		name  string
		ticks uint64
	}
	var uses []use
	for name, t := range m.procs {
		if t > before.procs[name] {
			uses = append(uses, use{name, t - before.procs[name]})
		}
	}
	slices.SortFunc(uses, func(a, b use) int { return cmp.Compare(b.ticks, a.ticks) })
	b.WriteString(" by process, in cores:")
	for _, u := range uses[:min(len(uses), 8)] {
		fmt.Fprintf(&b, " %s %.2f (%d),", u.name, float64(u.ticks)/userHZ/secs, m.count[u.name])
	}
	return strings.TrimSuffix(b.String(), ",")
}

// profileCPU starts the machine's CPU accounting and, with the nodes on,
// CPU profiles of the first directory node and the first light node (or
// node 1) for cpuProfileSeconds. The function it returns waits for the
// profiles and prints the accounting and where the profiles are (the lab
// prints their top entries).
func (d *driver) profileCPU(ctx context.Context, what string) func() {
	before, berr := readCPU()
	if berr != nil {
		fmt.Printf("machine CPU: %v\n", berr)
	}
	var wg sync.WaitGroup
	if d.lmosOn {
		for role, k := range d.profiled() {
			wg.Go(func() {
				var out struct {
					File string `json:"file"`
				}
				q := url.Values{"seconds": {strconv.Itoa(cpuProfileSeconds)}}
				if err := d.ctl(ctx, k, http.MethodPost, "/lmos/cpu", q, &out); err != nil {
					fmt.Printf("cpu profile of node %d: %v\n", k, err)
					return
				}
				fmt.Printf("cpu profile: %s node %d: %s\n", role, k, out.File)
			})
		}
	}
	return func() {
		if after, err := readCPU(); err == nil && berr == nil {
			fmt.Printf("%s: %s\n", what, after.since(before, runtime.NumCPU()))
		}
		wg.Wait()
	}
}
