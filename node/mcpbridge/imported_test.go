package mcpbridge

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestStderrLog: an imported command's stderr is logged line by line,
// whatever the writes' boundaries; an overlong line in pieces.
func TestStderrLog(t *testing.T) {
	var logged bytes.Buffer
	w := &stderrLog{log: slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == slog.LevelKey || a.Key == slog.MessageKey || a.Key == "import" {
				return slog.Attr{}
			}
			return a
		},
	})), importID: "x"}
	long := strings.Repeat("a", stderrLine+10)
	for _, p := range []string{"one\ntw", "o\r\n\n", long, "\nthree"} {
		if n, err := w.Write([]byte(p)); n != len(p) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", p, n, err)
		}
	}
	want := "line=one\nline=two\nline=" + long[:stderrLine] + "\nline=aaaaaaaaaa\n"
	if logged.String() != want {
		t.Errorf("logged\n%q\nwant\n%q", logged.String(), want)
	}
	if string(w.buf) != "three" {
		t.Errorf("held back %q, want the unfinished line", w.buf)
	}
}

func TestCapabilityID(t *testing.T) {
	for in, want := range map[string]string{"get_weather": "get-weather", "Search Docs": "search-docs", "echo": "echo"} {
		if got := capabilityID(in); got != want {
			t.Errorf("capabilityID(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSourceValidateAndID(t *testing.T) {
	for _, bad := range []Source{{}, {URL: "http://x/mcp", Command: []string{"x"}}, {URL: "ftp://x"}, {Command: []string{""}}} {
		if bad.Validate() == nil {
			t.Errorf("%+v is valid", bad)
		}
	}
	a, b := Source{URL: "http://127.0.0.1:1/mcp"}, Source{Command: []string{"http://127.0.0.1:1/mcp"}}
	if a.Validate() != nil || b.Validate() != nil || a.ID() == b.ID() || len(a.ID()) != 12 || a.ID() != (Source{URL: a.URL}).ID() {
		t.Errorf("ids %q %q", a.ID(), b.ID())
	}
}
