//go:build unix

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node/api"
)

// docFiles are the documents whose every shell block TestDocBlocks covers.
var docFiles = []string{"README.md", "docs/deploy.md", "docs/bridges.md"}

// docBlock is a fenced shell block of a document: the n-th (from 1) of
// its section.
type docBlock struct {
	file, section string
	n             int
	text          string
}

// shellFence tells the fences whose block a reader pastes into a shell
// (an unlabelled fence counts: it may be one).
var shellFence = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true, "zsh": true, "": true}

// docBlocks returns every shell block of the files, in order.
func docBlocks(t *testing.T) []docBlock {
	t.Helper()
	var blocks []docBlock
	for _, file := range docFiles {
		text, err := os.ReadFile(filepath.Join("../..", file))
		if err != nil {
			t.Fatal(err)
		}
		section, count := "", map[string]int{}
		var cur *docBlock
		for _, line := range strings.Split(string(text), "\n") {
			switch {
			case cur != nil && strings.HasPrefix(line, "```"):
				blocks, cur = append(blocks, *cur), nil
			case cur != nil:
				cur.text += line + "\n"
			case strings.HasPrefix(line, "```"):
				if lang := strings.TrimSpace(strings.TrimPrefix(line, "```")); shellFence[lang] {
					count[section]++
					cur = &docBlock{file: file, section: section, n: count[section]}
				} else {
					cur = &docBlock{} // skipped, but its lines are not headings
				}
			case strings.HasPrefix(line, "#"):
				section = strings.TrimSpace(strings.TrimLeft(line, "#"))
			}
		}
	}
	kept := blocks[:0]
	for _, b := range blocks {
		if b.file != "" {
			kept = append(kept, b)
		}
	}
	return kept
}

// docCase says how TestDocBlocks covers one block: run here in a setting,
// run by another test, or excluded with a reason.
type docCase struct {
	file, section string
	n             int

	// Run here: the block as pasted, in the setting, with the
	// replacements a reader makes (the placeholders the doc explains),
	// then after; its output must contain want.
	setting string // "home", "node", "demo" (see TestDocBlocks)
	replace []string
	drop    map[string]string // lines left out (by prefix), and why
	before  string
	after   string
	want    []string
	inTemp  bool // run in a directory of its own, not the repository
	// mcp: an MCP server (Go SDK, Streamable HTTP) is the doc's
	// 127.0.0.1:8931, and the node runs where npx finds the pinned
	// server-everything (scripts/interop/mcpeverything) without the network.
	mcp bool
	// a2aAgent: an A2A agent (the A2A JavaScript SDK's server,
	// scripts/interop/a2a/agent.mjs) is the doc's https://agent.example.com/.
	a2aAgent bool

	// Run by another test of this package, whose code names the section.
	test string

	// Not run, and why; tests names the tests that check what can be
	// checked, check checks the rest cheaply.
	skip  string
	tests []string
	check func(t *testing.T, block string)
}

const (
	// untilUp waits for the node of the default home (~/.lmosnode) to
	// answer.
	untilUp = "until lmosnode id 2>/dev/null | grep -q '^address:'; do sleep 0.2; done"
	// startNode starts a node on the default home, on loopback (see
	// loopbackHome), and waits for it.
	startNode = "lmosnode up >\"$HOME/node.log\" 2>&1 &\n" + untilUp
	// loopbackHome keeps the node of the default home to this machine:
	// what README says to add ("--mdns=false and a --listen on
	// 127.0.0.1"), with a free API port.
	loopbackHome = "lmosnode config set mdns false >/dev/null\n" +
		"lmosnode config set listen /ip4/127.0.0.1/tcp/0 >/dev/null\n" +
		"lmosnode config set api 127.0.0.1:0 >/dev/null\n"
	// demoAPI is the demo's API in the docs.
	demoAPI = "127.0.0.1:5080"
)

// docCases covers every shell block of docFiles. A block missing here
// fails TestDocBlocks.
var docCases = []docCase{
	{file: "README.md", section: "lmosnode", n: 1, setting: "home",
		drop: map[string]string{"bash scripts/test.sh": "the test command itself: CI runs it (.ci/run); pasted inside the suite it would run the suite again"},
		want: []string{"peer ID"}},
	{file: "README.md", section: "Try it", n: 1, setting: "demo"},
	{file: "README.md", section: "Five-minute walk-through", n: 1, test: "TestREADMEWalkThrough"},
	{file: "README.md", section: "Two nodes find each other", n: 1, test: "TestREADMETwoNodes"},
	{file: "README.md", section: "Two nodes find each other", n: 2, test: "TestREADMETwoNodes"},
	{file: "README.md", section: "Call a Thing on another node", n: 1, setting: "demo",
		want: []string{`"modelName":"canned-1"`, "Bonn today:", `"href":"http://127.0.0.1:`}},
	{file: "README.md", section: "A2A: every agent of the federation, for any A2A client", n: 1, setting: "demo",
		want: []string{`"skills":[`, "urn:lmosnode:demo:weather-agent"}},
	{file: "README.md", section: "Signed agent groups", n: 1, test: "TestREADMEGroups"},
	{file: "README.md", section: "MCP: use the federation from an MCP host, bring MCP servers into it", n: 1, setting: "node", mcp: true,
		after: "lmosnode mcp imports", want: []string{"connected", "(greeter 1.0.0)", "mcp-servers/everything", "urn:lmos:mcp:"}},
	{file: "docs/deploy.md", section: "Joining a federation", n: 1, setting: "home",
		// the doc: "get the multiaddr of one of its nodes (lmosnode id on
		// that node prints them)"
		before: "lmosnode up --home \"$HOME/partner\" --listen /ip4/127.0.0.1/tcp/0 --api 127.0.0.1:0 --mdns=false >\"$HOME/partner.log\" 2>&1 &\n" +
			"until lmosnode id --home \"$HOME/partner\" 2>/dev/null | grep -q '^address:'; do sleep 0.2; done\n" +
			"PARTNER=$(lmosnode id --home \"$HOME/partner\" | sed -n 's/^address: //p' | head -1)",
		replace: []string{"/dns4/node.partner.example/tcp/4001/p2p/12D3KooW…", `"$PARTNER"`},
		after:   "until lmosnode peers 2>/dev/null | grep -q connected; do sleep 0.2; done\nlmosnode peers",
		want:    []string{"connected"}},
	{file: "docs/deploy.md", section: "As a systemd service", n: 1,
		skip:  "needs systemd as PID 1 and installs into /usr/local/bin and /etc/systemd/system",
		tests: []string{"TestSystemdUnit", "TestStaticBinary"}, check: checkSystemdBlock},
	{file: "docs/deploy.md", section: "In a container", n: 1,
		skip:  "needs a container runtime (none runs on the test machine, which is offline)",
		tests: []string{"TestDockerfileAndCompose", "TestStaticBinary"}, check: checkContainerBlock},
	{file: "docs/deploy.md", section: "Driving a node from elsewhere", n: 1, setting: "node", inTemp: true,
		// the node's URL and token, and two TDs of the reader's
		replace: []string{"https://lmos.internal.example", `"$(cat "$HOME/.lmosnode/api")"`, "LMOS_API_TOKEN=…", `LMOS_API_TOKEN="$(cat "$HOME/.lmosnode/api-token")"`},
		before:  "cp " + repoPath("examples/things/weather-agent.json") + " a.json\ncp " + repoPath("examples/things/geocoder-tool.json") + " b.json",
		want:    []string{"peer ID", "created " + weatherID}},
	{file: "docs/deploy.md", section: "Key backup and restore", n: 1, setting: "home", inTemp: true,
		replace: []string{"/var/lib/lmosnode", "$HOME/lmos-home"}, before: "lmosnode init --home \"$HOME/lmos-home\" >/dev/null",
		want: []string{"ED25519 Private-Key"}},
	{file: "docs/bridges.md", section: "MCP servers as Things", n: 1, setting: "node", mcp: true,
		// <id>: an id 'mcp imports' lists (the first)
		replace: []string{"<id>", `"$(lmosnode mcp imports | awk 'NR==1{print $1}')"`},
		// remove left one import of the two
		after: "lmosnode mcp imports\ntest \"$(lmosnode mcp imports | grep -c '^[0-9a-f]')\" -eq 1",
		want:  []string{"connected", "(greeter 1.0.0)", "mcp-servers/everything"}},
	{file: "docs/bridges.md", section: "Any A2A agent joins", n: 1, setting: "node", a2aAgent: true,
		want: []string{"imported urn:uuid:", "EchoAgent"}},
}

// repoPath is path (relative to the repository) from this package.
func repoPath(path string) string {
	abs, err := filepath.Abs(filepath.Join("../..", path))
	if err != nil {
		panic(err)
	}
	return abs
}

// TestDocBlocks pastes every shell block of README.md, docs/deploy.md and
// docs/bridges.md as written (a block missing from docCases fails), or
// checks that the test named for it exists and names its section, or that
// an excluded block says why. Settings: "home", a fresh $HOME whose
// default home (~/.lmosnode) keeps its node on loopback; "node", the same
// with that node running; "demo", `lmosnode demo` running (the "Try it"
// block itself), one for all the blocks that need it. A foreground
// `lmosnode up` of a block runs in the background until it answers.
func TestDocBlocks(t *testing.T) {
	blocks := docBlocks(t)
	demo := &docDemo{parent: t}
	for _, b := range blocks {
		if b.section == "Try it" {
			demo.block = b.text
		}
	}
	cases := map[[3]string]*docCase{}
	key := func(file, section string, n int) [3]string { return [3]string{file, section, strconv.Itoa(n)} }
	for i := range docCases {
		c := &docCases[i]
		cases[key(c.file, c.section, c.n)] = c
	}
	seen := map[[3]string]bool{}
	for _, b := range blocks {
		k := key(b.file, b.section, b.n)
		c, ok := cases[k]
		if !ok {
			t.Errorf("new doc block: add it to TestDocBlocks (docCases): %s, section %q, block %d:\n%s", b.file, b.section, b.n, b.text)
			continue
		}
		seen[k] = true
		t.Run(b.file+"/"+b.section+"/"+strconv.Itoa(b.n), func(t *testing.T) { c.cover(t, b, demo) })
	}
	for k, c := range cases {
		if !seen[k] {
			t.Errorf("docCases names a block the docs no longer have: %s, section %q, block %d", c.file, c.section, c.n)
		}
	}
}

// cover runs, delegates or excludes one block.
func (c *docCase) cover(t *testing.T, b docBlock, demo *docDemo) {
	switch {
	case c.test != "":
		if !testNamesSection(t, c.test, b.section) {
			t.Errorf("%s does not exist here or does not name section %q", c.test, b.section)
		}
	case c.skip != "":
		for _, name := range c.tests {
			if !testNamesSection(t, name, "") {
				t.Errorf("%s does not exist", name)
			}
		}
		if c.check != nil {
			c.check(t, b.text)
		}
		t.Skipf("not run: %s (checked instead: %s)", c.skip, strings.Join(c.tests, ", "))
	default:
		out := c.run(t, b.text, demo)
		for _, want := range c.want {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
	}
}

// run pastes the block in its setting and returns the output.
func (c *docCase) run(t *testing.T, block string, demo *docDemo) string {
	o := pasteOpts{dir: "../..", home: t.TempDir(), replace: c.replace, before: loopbackHome + c.before, after: c.after}
	if c.inTemp {
		o.dir = t.TempDir()
	}
	var lines []string
	for _, l := range strings.Split(block, "\n") {
		if why, ok := dropped(c.drop, l); ok {
			t.Logf("line left out: %s (%s)", l, why)
			continue
		}
		lines = append(lines, foreground(l)...)
	}
	block = strings.Join(lines, "\n")
	switch c.setting {
	case "home":
	case "node":
		o.before += "\n" + startNode
		if c.mcp {
			dir := repoPath("scripts/interop/mcpeverything")
			testnet.NPM(t, dir)
			_, url, _ := goMCPServer(t)
			o.replace = append(o.replace, "http://127.0.0.1:8931/mcp", url)
			o.before = loopbackHome + c.before + "\n(cd " + dir + " && exec lmosnode up >\"$HOME/node.log\" 2>&1) &\n" + untilUp
			o.env = append(o.env, "npm_config_offline=true", "npm_config_update_notifier=false")
		}
		if c.a2aAgent {
			o.replace = append(o.replace, "https://agent.example.com/", a2aAgent(t))
		}
	case "demo":
		api := demo.start(t)
		if c.section == "Try it" {
			return ""
		}
		o.replace = append(o.replace, demoAPI, api)
	default:
		t.Fatalf("unknown setting %q", c.setting)
	}
	return paste(t, block, o)
}

// dropped tells whether line is one the case leaves out, and why.
func dropped(drop map[string]string, line string) (string, bool) {
	for prefix, why := range drop {
		if strings.HasPrefix(line, prefix) {
			return why, true
		}
	}
	return "", false
}

// foreground turns a foreground `lmosnode up` (Ctrl-C stops it) into one
// in the background that the lines after it find answering.
func foreground(line string) []string {
	cmd, _, _ := strings.Cut(line, " #")
	cmd = strings.TrimSpace(cmd)
	for _, prefix := range []string{"lmosnode up", "./lmosnode up", "go run ./cmd/lmosnode up"} {
		if (cmd == prefix || strings.HasPrefix(cmd, prefix+" ")) && !strings.HasSuffix(cmd, "&") && !strings.HasSuffix(cmd, "\\") {
			return []string{cmd + " &", untilUp}
		}
	}
	return []string{line}
}

// testNamesSection tells whether this package has a test function name
// whose code names section (any test, for an empty section).
func testNamesSection(t *testing.T, name, section string) bool {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range files {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.Name == name {
				body := string(src[fset.Position(fn.Pos()).Offset:fset.Position(fn.End()).Offset])
				return strings.Contains(body, `"`+section+`"`) || section == ""
			}
		}
	}
	return false
}

// docDemo is the demo of README's "Try it", started once for the blocks
// that need it, until the end of TestDocBlocks.
type docDemo struct {
	parent *testing.T
	block  string
	once   sync.Once
	api    string // host:port of node 3's API
	err    string
}

// start starts the demo (once) and returns node 3's API address. Not on
// 5080, the port the docs name: a reader's own node (`lmosnode up`'s
// default API) or another run of this test may hold it; README names the
// flag that moves it (`--api-port`), and the blocks' 127.0.0.1:5080 is
// replaced with the port used.
func (d *docDemo) start(t *testing.T) string {
	t.Helper()
	d.once.Do(func() { d.api, d.err = d.run() })
	if d.err != "" {
		t.Fatal(d.err)
	}
	return d.api
}

func (d *docDemo) run() (string, string) {
	t := d.parent
	bin := buildBinary(t)
	port := freePort(t)
	script := strings.TrimSpace(strings.ReplaceAll(d.block, "go run ./cmd/lmosnode ", bin+" "))
	if strings.Contains(script, "\n") || !strings.HasSuffix(script, " demo") {
		return "", "the 'Try it' block is no longer one demo command: update docDemo:\n" + d.block
	}
	cmd := exec.Command("bash", "-c", "exec "+script+" --api-port "+port)
	cmd.Dir = "../.."
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", err.Error()
	}
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return "", err.Error()
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
		timer := time.AfterFunc(10*time.Second, func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
		_ = cmd.Wait()
		timer.Stop()
	})
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var out bytes.Buffer
	deadline := time.After(90 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				return "", "the demo exited:\n" + out.String() + stderr.String()
			}
			out.WriteString(l + "\n")
			if strings.Contains(l, "or: lmosnode --api http://127.0.0.1:"+port) {
				go func() { // drain the rest
					for range lines {
					}
				}()
				if !strings.Contains(out.String(), "pattern 6 (request-stream/response-stream): ok") {
					return "", "the demo's patterns did not all run:\n" + out.String()
				}
				return "127.0.0.1:" + port, loopbackOnly("http://127.0.0.1:" + port)
			}
		case <-deadline:
			return "", "the demo did not come up in 90 s:\n" + out.String() + stderr.String()
		}
	}
}

// loopbackOnly checks that the node whose API is at url listens on
// 127.0.0.1 only; it returns what is wrong.
func loopbackOnly(url string) string {
	resp, err := http.Get(url + api.PathNode)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	var info api.NodeInfo
	if err := json.NewDecoder(resp.Body).Decode(&info); err != nil {
		return err.Error()
	}
	for _, a := range info.Addrs {
		if !strings.HasPrefix(a, "/ip4/127.0.0.1/") {
			return "the demo listens on " + a + ", not on 127.0.0.1 only"
		}
	}
	if len(info.Addrs) == 0 {
		return "the demo's node 3 lists no addresses"
	}
	return ""
}

// a2aAgent starts the A2A JavaScript SDK's agent (scripts/interop/a2a)
// until the end of the test and returns its base URL.
func a2aAgent(t *testing.T) string {
	t.Helper()
	dir := repoPath("scripts/interop/a2a")
	testnet.NPM(t, dir)
	cmd := exec.Command("node", "agent.mjs")
	cmd.Dir = dir
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
	var agent struct{ URL string }
	if err := json.NewDecoder(stdout).Decode(&agent); err != nil {
		t.Fatalf("agent.mjs: %v\n%s", err, stderr.String())
	}
	return agent.URL
}

// checkSystemdBlock checks what the systemd block relies on without
// systemd: the files it names exist, and its lmosnode commands run on a
// home in place of /var/lib/lmosnode.
func checkSystemdBlock(t *testing.T, block string) {
	for _, f := range []string{"scripts/build-static.sh", "packaging/lmosnode.service"} {
		if !strings.Contains(block, f) {
			t.Errorf("the block no longer names %s: update checkSystemdBlock", f)
		}
		if _, err := os.Stat(repoPath(f)); err != nil {
			t.Error(err)
		}
	}
	runLmosnodeCommands(t, block, "/var/lib/lmosnode")
}

// checkContainerBlock checks what the container block relies on without
// a container runtime: the build argument it passes is the Dockerfile's,
// the volume and the ports it publishes are the image's.
func checkContainerBlock(t *testing.T, block string) {
	dockerfile, err := os.ReadFile(repoPath("Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, pair := range [][2]string{
		{"--build-arg VERSION=", "ARG VERSION"},
		{"-v lmosnode:/var/lib/lmosnode", `VOLUME ["/var/lib/lmosnode"]`},
		{"-p 4001:4001 -p 4001:4001/udp -p 4002:4002 -p 127.0.0.1:5080:5080", "EXPOSE 4001/tcp 4001/udp 4002/tcp 5080/tcp"},
	} {
		if strings.Contains(block, pair[0]) && !strings.Contains(string(dockerfile), pair[1]) {
			t.Errorf("the block passes %q but the Dockerfile lacks %q", pair[0], pair[1])
		}
		if !strings.Contains(block, pair[0]) {
			t.Errorf("the block no longer has %q: update checkContainerBlock", pair[0])
		}
	}
}

// runLmosnodeCommands runs each `lmosnode …` command of block (up to
// `&&`, `|` or a comment) on a fresh home in place of home: their
// commands and flags still exist.
func runLmosnodeCommands(t *testing.T, block, home string) {
	bin := buildBinary(t)
	dir := filepath.Join(t.TempDir(), "home")
	runOK(t, bin, "init", "--home", dir)
	ran := 0
	for _, line := range strings.Split(block, "\n") {
		line, _, _ = strings.Cut(line, "#")
		for _, part := range strings.FieldsFunc(line, func(r rune) bool { return r == '&' || r == '|' || r == ';' }) {
			args := strings.Fields(strings.ReplaceAll(part, home, dir))
			if len(args) < 2 || args[0] != "lmosnode" {
				continue
			}
			runOK(t, bin, args[1:]...)
			ran++
		}
	}
	if ran == 0 {
		t.Error("no lmosnode command in the block")
	}
}
