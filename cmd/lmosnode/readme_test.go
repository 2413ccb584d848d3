//go:build unix

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// readmeBlock returns the first ```sh block of the README section titled
// heading.
func readmeBlock(t *testing.T, heading string) string {
	t.Helper()
	return readmeBlocks(t, heading)[0]
}

// readmeBlocks returns every ```sh block of the README section titled
// heading, in order.
func readmeBlocks(t *testing.T, heading string) []string {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## "+heading+"\n")
	if !ok {
		t.Fatalf("README has no section %q", heading)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var blocks []string
	for {
		_, rest, ok := strings.Cut(section, "```sh\n")
		if !ok {
			break
		}
		block, after, _ := strings.Cut(rest, "```")
		blocks, section = append(blocks, block), after
	}
	if len(blocks) == 0 {
		t.Fatalf("README section %q has no sh block", heading)
	}
	return blocks
}

// exitComment finds the exit status a README comment announces.
var exitComment = regexp.MustCompile(`\bexit [1-9]\b`)

// runBlock runs a README block with bash from the repository root, as a
// reader pastes it, with ./lmosnode the built binary and the given
// replacements (homes in the test's directory, free ports); background
// daemons are stopped at the end.
func runBlock(t *testing.T, block string, replace ...string) string {
	t.Helper()
	return paste(t, block, pasteOpts{dir: "../..", home: t.TempDir(), replace: replace})
}

// pasteOpts says where and how paste runs a block.
type pasteOpts struct {
	dir, home string   // working directory and $HOME
	env       []string // more variables
	replace   []string // old, new pairs, applied after ./lmosnode → the binary
	before    string   // script run first (the block's setting)
	after     string   // script run last (checks of what the block did)
}

// paste runs a doc block with bash (set -e) as a reader pastes it: with
// ./lmosnode and `go run ./cmd/lmosnode` the built binary, which is also
// `lmosnode` on PATH (as `go install` puts it), and o's replacements;
// background jobs are stopped at the end. It returns the output, and
// fails the test if the block fails.
func paste(t *testing.T, block string, o pasteOpts) string {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl: the docs' blocks use it")
	}
	bin := buildBinary(t)
	// A line the doc marks as failing ("# exit 1: …", "(exit 3)") must
	// fail; every other line must succeed (set -e).
	lines := strings.Split(block, "\n")
	for i, l := range lines {
		if _, comment, ok := strings.Cut(l, "# "); ok && exitComment.MatchString(comment) {
			lines[i] = "! " + l
		}
	}
	block = strings.Join(lines, "\n")
	block = strings.NewReplacer(append([]string{"./lmosnode ", bin + " ", "go run ./cmd/lmosnode ", bin + " "}, o.replace...)...).Replace(block)
	script := "set -e\ntrap 'kill $(jobs -p) 2>/dev/null || true; wait' EXIT\n" + o.before + "\n" + block + "\n" + o.after
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bash, "-c", script)
	// On timeout, kill the whole group: the block's background daemons
	// too, which would otherwise keep the output open and outlive the test.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Dir = o.dir
	cmd.Env = append([]string{"HOME=" + o.home, "PATH=" + filepath.Dir(bin) + string(os.PathListSeparator) + os.Getenv("PATH")}, o.env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("doc block failed: %v\nscript:\n%s\noutput:\n%s", err, script, out)
	}
	return string(out)
}

// TestREADMETwoNodes runs every block of "Two nodes find each other" as
// written, one after the other, on free ports and fresh homes: the
// readiness waits, the bootstrap address, the publication found from the
// other node, the trust list.
func TestREADMETwoNodes(t *testing.T) {
	dir := t.TempDir()
	block := strings.Join(readmeBlocks(t, "Two nodes find each other"), "\n")
	out := runBlock(t, block,
		"/tmp/a", filepath.Join(dir, "a"), "/tmp/b", filepath.Join(dir, "b"),
		"4101", freePort(t), "4102", freePort(t), "5101", freePort(t), "5102", freePort(t))
	for _, want := range []string{"created " + weatherID, "WeatherAgent  agent", "connected  out  direct", "removed " + weatherID, "prefer"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestREADMEWalkThrough runs the five-minute walk-through: steps 1 to 4 as
// written, step 5's node in the background until its API answers.
func TestREADMEWalkThrough(t *testing.T) {
	dir := t.TempDir()
	block := readmeBlock(t, "Five-minute walk-through")
	var lines []string
	for _, l := range strings.Split(block, "\n") {
		switch {
		case strings.HasPrefix(l, "go build"): // the test built it
		case strings.HasPrefix(l, "./lmosnode up "):
			lines = append(lines, l+" &", "until curl -sf http://127.0.0.1:5090/api/v1/node >/dev/null; do sleep 0.2; done")
		default:
			lines = append(lines, l)
		}
	}
	api := freePort(t)
	out := runBlock(t, strings.Join(lines, "\n"),
		"/tmp/alice", filepath.Join(dir, "alice"), "weather.signed.json", filepath.Join(dir, "weather.signed.json"),
		"tampered.json", filepath.Join(dir, "tampered.json"), "4090", freePort(t), "5090", api)
	for _, want := range []string{"examples/things/weather-agent.json: valid", "proof verifies", "signature does not verify", `"peerID":"12D3KooW`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestREADMEGroups runs "Two nodes find each other" and then "Signed agent
// groups" on the nodes it leaves running, as a reader does.
func TestREADMEGroups(t *testing.T) {
	for _, tool := range []string{"jq", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s: the README's groups block uses it", tool)
		}
	}
	dir := t.TempDir()
	block := readmeBlock(t, "Two nodes find each other") + readmeBlock(t, "Signed agent groups")
	out := runBlock(t, block,
		"/tmp/a", filepath.Join(dir, "a"), "/tmp/b", filepath.Join(dir, "b"), "/tmp/c", filepath.Join(dir, "c"),
		"/tmp/be", filepath.Join(dir, "be"), "/tmp/diagnostics.json", filepath.Join(dir, "diagnostics.json"),
		"4101", freePort(t), "4102", freePort(t), "4103", freePort(t),
		"5101", freePort(t), "5102", freePort(t), "5103", freePort(t), "9000", freePort(t))
	for _, want := range []string{"joined group diagnostics", `"model":"m1"`, "disk 3 on rack 7 is failing", "lmosnode: no matching Things"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
