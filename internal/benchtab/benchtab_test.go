package benchtab

import (
	"strings"
	"testing"
)

func TestParseAndWrite(t *testing.T) {
	in := "goos: linux\n" +
		`BENCHTAB {"row":"3","case":"request-reply c=1","metric":"p50","unit":"µs","lmos":100,"base":40,"baseline":"direct HTTP","target":"≤ 2.5×"}` + "\n" +
		"BenchmarkX-2   10  100 ns/op\n" +
		`BENCHTAB {"row":"1","case":"propagation N=10","metric":"p99","unit":"ms","lmos":30,"base":20}` + "\n" +
		`BENCHTAB {"row":"1","case":"propagation N=10","metric":"p99","unit":"ms","lmos":33,"base":22}` + "\n"
	rows, err := Parse(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("rows = %d, want 2 (the repeated row replaces the first): %+v", len(rows), rows)
	}
	var out strings.Builder
	if err := Write(&out, rows); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	lines := strings.Split(strings.TrimSpace(got), "\n")
	if len(lines) != 4 {
		t.Fatalf("table has %d lines, want 4:\n%s", len(lines), got)
	}
	if !strings.Contains(lines[2], "propagation N=10") || !strings.Contains(lines[2], "33.00 ms") || !strings.Contains(lines[2], "1.50×") {
		t.Errorf("row 1 line = %q", lines[2])
	}
	if !strings.Contains(lines[3], "2.50×") || !strings.Contains(lines[3], "40.00 µs (direct HTTP)") {
		t.Errorf("row 3 line = %q", lines[3])
	}
	if _, err := Parse("BENCHTAB {not json\n"); err == nil {
		t.Error("Parse accepted a broken line")
	}
}
