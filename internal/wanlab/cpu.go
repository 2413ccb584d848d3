package main

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/procfs"
)

// cpuProfileSeconds is how long the nodes' CPU profiles of the loaded
// propagation samples run (about as long as six samples take at 50 nodes).
const cpuProfileSeconds = 20

// machineCPU is what /proc says the machine's CPUs have done, in seconds
// (procfs): time by state (/proc/stat's cpu line, in cpuStates' order)
// and by process name (/proc/PID/stat: user and system time of every
// process alive, kernel threads named without their "/N" suffix).
type machineCPU struct {
	at     time.Time
	states []float64
	procs  map[string]float64
	count  map[string]int // processes by name
}

var cpuStates = []string{"user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"}

func readCPU() (machineCPU, error) {
	m := machineCPU{at: time.Now(), procs: map[string]float64{}, count: map[string]int{}}
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return m, err
	}
	st, err := fs.Stat()
	if err != nil {
		return m, err
	}
	c := st.CPUTotal
	m.states = []float64{c.User, c.Nice, c.System, c.Idle, c.Iowait, c.IRQ, c.SoftIRQ, c.Steal}
	procs, err := fs.AllProcs()
	if err != nil {
		return m, err
	}
	for _, p := range procs {
		ps, err := p.Stat()
		if err != nil {
			continue // exited
		}
		name, _, _ := strings.Cut(ps.Comm, "/")
		m.procs[name] += ps.CPUTime()
		m.count[name]++
	}
	return m, nil
}

// since says how the machine's CPU time went between before and m: each
// state's share, and the cores the busiest process names used (a process
// that started or ended in between counts only what /proc shows of it at
// both ends).
func (m machineCPU) since(before machineCPU, cores int) string {
	var total float64
	for i := range cpuStates {
		total += m.states[i] - before.states[i]
	}
	secs := m.at.Sub(before.at).Seconds()
	var b strings.Builder
	fmt.Fprintf(&b, "machine CPU over %.1f s (%d cores):", secs, cores)
	for i, name := range cpuStates {
		if d := m.states[i] - before.states[i]; total > 0 && d > 0 {
			fmt.Fprintf(&b, " %s %.0f %%,", name, 100*d/total)
		}
	}
	type use struct {
		name string
		secs float64
	}
	var uses []use
	for name, t := range m.procs {
		if t > before.procs[name] {
			uses = append(uses, use{name, t - before.procs[name]})
		}
	}
	slices.SortFunc(uses, func(a, b use) int { return cmp.Compare(b.secs, a.secs) })
	b.WriteString(" by process, in cores:")
	for _, u := range uses[:min(len(uses), 8)] {
		fmt.Fprintf(&b, " %s %.2f (%d),", u.name, u.secs/secs, m.count[u.name])
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
