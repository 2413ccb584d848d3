package acts

import (
	"fmt"
	"strings"
)

// Levels are the conformance levels in report order.
var Levels = []string{"must", "should", "may"}

// Count is the number of results of a transport and level by outcome.
type Count struct{ Pass, Fail, Skip int }

// Tally counts results by transport and level.
func Tally(results []Result) map[string]map[string]*Count {
	out := map[string]map[string]*Count{}
	for _, tr := range Transports {
		out[tr] = map[string]*Count{}
		for _, l := range Levels {
			out[tr][l] = &Count{}
		}
	}
	for _, r := range results {
		c := out[r.Transport][r.Level]
		switch r.Outcome {
		case Pass:
			c.Pass++
		case Fail:
			c.Fail++
		default:
			c.Skip++
		}
	}
	return out
}

// Summary renders the tally (§12.7) as a table: a row per transport, a
// pass/fail/skip column group per level.
func Summary(results []Result) string {
	t := Tally(results)
	var b strings.Builder
	fmt.Fprintf(&b, "%-9s", "transport")
	for _, l := range Levels {
		fmt.Fprintf(&b, " | %-6s pass fail skip", l)
	}
	b.WriteString("\n")
	for _, tr := range Transports {
		fmt.Fprintf(&b, "%-9s", tr)
		for _, l := range Levels {
			c := t[tr][l]
			fmt.Fprintf(&b, " | %-6s %4d %4d %4d", "", c.Pass, c.Fail, c.Skip)
		}
		b.WriteString("\n")
	}
	return b.String()
}
