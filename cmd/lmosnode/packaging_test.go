package main

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestStaticBinary checks the binary the container image ships, built
// with the script its Dockerfile runs (buildBinary): static (no program
// interpreter, no shared libraries), and it runs.
func TestStaticBinary(t *testing.T) {
	dockerfile, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(dockerfile), "RUN sh scripts/build-static.sh /out/lmosnode") {
		t.Fatal("the Dockerfile does not build with scripts/build-static.sh: this test would check another binary")
	}
	bin := buildBinary(t)
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary names a program interpreter: it is dynamically linked")
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("shared libraries %v (%v), want none", libs, err)
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "lmosnode "+testVersion+" (") {
		t.Errorf("--version: %v %q", err, out)
	}
}

// TestDockerfileAndCompose checks what can be checked of the image and the
// compose file without a container runtime (none runs offline here): a
// multi-stage build, a non-root user, the home on a volume, the API behind
// a token; three nodes, two of them bootstrapping from the first.
func TestDockerfileAndCompose(t *testing.T) {
	dockerfile, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	d := string(dockerfile)
	for _, want := range []string{"FROM golang:1.26-alpine AS build", "COPY --from=build /out/lmosnode /usr/local/bin/lmosnode",
		"USER 10001:10001", `VOLUME ["/var/lib/lmosnode"]`, "LMOS_HOME=/var/lib/lmosnode", "LMOS_API=0.0.0.0:5080", "LMOS_MDNS=false"} {
		if !strings.Contains(d, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	compose, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	c := string(compose)
	for _, want := range []string{"  node1:\n", "  node2:\n", "  node3:\n", "LMOS_API_TOKEN: ${LMOS_API_TOKEN:?",
		`"127.0.0.1:5080:5080"`, "lmosnode id --api http://node1:5080", `--bootstrap "/dns4/node1/tcp/4001/p2p/$$ID"`} {
		if !strings.Contains(c, want) {
			t.Errorf("docker-compose.yml lacks %q", want)
		}
	}
	if strings.Count(c, "<<: *joiner") != 2 {
		t.Error("docker-compose.yml: want node2 and node3 to join through node1")
	}
}

// TestSystemdUnit checks packaging/lmosnode.service with systemd-analyze
// verify (no warning) and its offline security assessment, when systemd
// is installed.
func TestSystemdUnit(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed: the unit is not verified")
	}
	unit, err := os.ReadFile("../../packaging/lmosnode.service")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ProtectSystem=strict", "NoNewPrivileges=yes", "DynamicUser=yes", "StateDirectory=lmosnode",
		"Environment=LMOS_HOME=/var/lib/lmosnode", "ExecStart=/usr/local/bin/lmosnode up", "CapabilityBoundingSet=\n"} {
		if !strings.Contains(string(unit), want) {
			t.Errorf("unit lacks %q", want)
		}
	}
	// verify wants ExecStart's binary to exist: point it at a built one.
	bin := buildBinary(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "lmosnode.service")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(unit), "/usr/local/bin/lmosnode", bin)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(sa, "verify", path).CombinedOutput()
	if err != nil || strings.Contains(string(out), path) {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	out, err = exec.Command(sa, "security", "--offline=yes", path).CombinedOutput()
	m := regexp.MustCompile(`Overall exposure level for lmosnode.service: ([0-9.]+)`).FindSubmatch(out)
	if err != nil || m == nil {
		t.Logf("systemd-analyze security --offline not available here (%v); exposure not checked", err)
		return
	}
	exposure, _ := strconv.ParseFloat(string(m[1]), 64)
	t.Logf("systemd-analyze security: exposure %.1f (0 safest, 10 unsafe)", exposure)
	if exposure > 2.5 {
		t.Errorf("exposure %.1f, want at most 2.5 (systemd's OK band):\n%s", exposure, out)
	}
}
