// Package benchtab is how the benchmarks behind scripts/bench.sh report a
// row of the performance table: each benchmark measures lmosnode and its
// raw-stack baseline side by side in one run and prints one line per
// figure; cmd/benchtab collects the lines of every benchmark into one
// table (docs/performance.md).
package benchtab

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
)

// Prefix starts every line Print writes, so that the lines survive in the
// middle of `go test -bench` output.
const Prefix = "BENCHTAB "

// Row is one figure of the table: lmosnode's value and the baseline's,
// measured in the same run.
type Row struct {
	Row    string  `json:"row"`    // table row, "1" … "8"
	Case   string  `json:"case"`   // e.g. "propagation N=25"
	Metric string  `json:"metric"` // e.g. "p99", "throughput", "RSS"
	Unit   string  `json:"unit"`   // e.g. "ms", "ops/s", "MB"
	LMOS   float64 `json:"lmos"`   // lmosnode's figure
	Base   float64 `json:"base"`   // the baseline's figure; 0 if the row has none
	// Baseline names what Base measured, e.g. "raw gossipsub".
	Baseline string `json:"baseline,omitempty"`
	// Target is the goal for this figure as written in the issue, e.g.
	// "≤ 1.5×" (a ratio) or "≤ 1 ms" (an absolute figure); empty if none.
	Target string `json:"target,omitempty"`
}

// Ratio is LMOS / Base, or 0 without a baseline.
func (r Row) Ratio() float64 {
	if r.Base == 0 {
		return 0
	}
	return r.LMOS / r.Base
}

var mu sync.Mutex

// Print writes r to standard output as one line: Prefix and r as JSON.
// It is safe for concurrent use.
func Print(r Row) {
	b, err := json.Marshal(r)
	if err != nil { // impossible: Row has only strings and floats
		panic(err)
	}
	mu.Lock()
	defer mu.Unlock()
	fmt.Fprintf(os.Stdout, "%s%s\n", Prefix, b)
}

// Parse returns the rows of the lines of text that start with Prefix, in
// order, ignoring every other line; a later row with the same Row, Case and
// Metric replaces an earlier one.
func Parse(text string) ([]Row, error) {
	var rows []Row
	for line := range strings.Lines(text) {
		i := strings.Index(line, Prefix)
		if i < 0 {
			continue
		}
		var r Row
		if err := json.Unmarshal([]byte(strings.TrimSpace(line[i+len(Prefix):])), &r); err != nil {
			return nil, fmt.Errorf("benchtab: %q: %w", strings.TrimSpace(line), err)
		}
		if j := slices.IndexFunc(rows, func(o Row) bool { return o.Row == r.Row && o.Case == r.Case && o.Metric == r.Metric }); j >= 0 {
			rows[j] = r
			continue
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// Write renders rows as one Markdown table, sorted by row (stable within a
// row).
func Write(w io.Writer, rows []Row) error {
	rows = slices.Clone(rows)
	slices.SortStableFunc(rows, func(a, b Row) int { return strings.Compare(a.Row, b.Row) })
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.Debug)
	fmt.Fprintln(tw, "| # \t case \t metric \t lmosnode \t baseline \t ratio \t target \t")
	fmt.Fprintln(tw, "|---\t---\t---\t---:\t---:\t---:\t---\t")
	for _, r := range rows {
		base, ratio := "—", "—"
		if r.Base != 0 {
			base = figure(r.Base, r.Unit)
			if r.Baseline != "" {
				base += " (" + r.Baseline + ")"
			}
			ratio = fmt.Sprintf("%.2f×", r.Ratio())
		}
		fmt.Fprintf(tw, "| %s \t %s \t %s \t %s \t %s \t %s \t %s \t\n", r.Row, r.Case, r.Metric, figure(r.LMOS, r.Unit), base, ratio, r.Target)
	}
	return tw.Flush()
}

// figure formats v with three significant digits and its unit.
func figure(v float64, unit string) string {
	var s string
	switch {
	case v >= 1000:
		s = fmt.Sprintf("%.0f", v)
	case v >= 100:
		s = fmt.Sprintf("%.1f", v)
	case v >= 10:
		s = fmt.Sprintf("%.2f", v)
	default:
		s = fmt.Sprintf("%.3g", v)
	}
	if unit == "" {
		return s
	}
	return s + " " + unit
}
