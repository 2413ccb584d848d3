package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runCLI runs the command in-process and returns its exit code and output.
func runCLI(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(""), &out, &out)
	return code, out.String()
}

// TestTDCommands walks the README's td walk-through: validate, sign, verify,
// and a tampered file that must fail verification.
func TestTDCommands(t *testing.T) {
	home := t.TempDir()
	agent := filepath.Join("..", "..", "examples", "things", "weather-agent.json")
	invalid := filepath.Join("..", "..", "proto", "testdata", "conformance", "invalid", "noTitle.json")

	if code, out := runCLI(t, "td", "validate", agent); code != 0 || !strings.Contains(out, "valid") {
		t.Fatalf("validate example: exit %d\n%s", code, out)
	}
	code, out := runCLI(t, "td", "validate", agent, invalid)
	if code != 1 || !strings.Contains(out, `missing required member "title"`) {
		t.Fatalf("validate invalid: exit %d, want 1 and the missing field named\n%s", code, out)
	}

	if code, out := runCLI(t, "init", "--home", home); code != 0 {
		t.Fatalf("init: exit %d\n%s", code, out)
	}
	code, signed := runCLI(t, "td", "sign", "--home", home, agent)
	if code != 0 || !strings.Contains(signed, `"lmos:seq": 1`) || !strings.Contains(signed, `"cryptosuite": "eddsa-jcs-2022"`) {
		t.Fatalf("sign: exit %d\n%s", code, signed)
	}
	file := filepath.Join(t.TempDir(), "signed.json")
	if err := os.WriteFile(file, []byte(signed), 0o600); err != nil {
		t.Fatal(err)
	}
	// Signing a signed TD again publishes the next version.
	if code, again := runCLI(t, "td", "sign", "--home", home, file); code != 0 || !strings.Contains(again, `"lmos:seq": 2`) {
		t.Fatalf("re-sign: exit %d\n%s", code, again)
	}

	_, id := runCLI(t, "id", "--home", home)
	did := strings.TrimPrefix(firstLine(id, "did:key: "), "did:key: ")
	code, out = runCLI(t, "td", "verify", file)
	if code != 0 || did == "" || !strings.Contains(out, "did:key: "+did) || !strings.Contains(out, "peer ID: 12D3KooW") {
		t.Fatalf("verify: exit %d, want 0 naming %s\n%s", code, did, out)
	}

	tampered := filepath.Join(t.TempDir(), "tampered.json")
	if err := os.WriteFile(tampered, []byte(strings.Replace(signed, "WeatherAgent", "EvilAgent", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out := runCLI(t, "td", "verify", tampered); code != 1 || !strings.Contains(out, "signature does not verify") {
		t.Fatalf("verify tampered: exit %d, want 1\n%s", code, out)
	}
}

// TestTDSignPlain: a plain TD 1.1 document (no LMOS context) signs into a
// record that binds the "lmos" prefix for the lmos:seq it gains, and
// verifies.
func TestTDSignPlain(t *testing.T) {
	home := t.TempDir()
	if code, out := runCLI(t, "init", "--home", home); code != 0 {
		t.Fatalf("init: exit %d\n%s", code, out)
	}
	plain := filepath.Join(t.TempDir(), "lamp.json")
	doc := `{"@context":"https://www.w3.org/2022/wot/td/v1.1","id":"urn:example:lamp","title":"Lamp",` +
		`"securityDefinitions":{"nosec_sc":{"scheme":"nosec"}},"security":"nosec_sc"}`
	if err := os.WriteFile(plain, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	code, signed := runCLI(t, "td", "sign", "--home", home, plain)
	if code != 0 || !strings.Contains(signed, `"lmos": "https://eclipse.dev/lmos/protocol/v1"`) || !strings.Contains(signed, `"lmos:seq": 1`) {
		t.Fatalf("sign plain TD: exit %d\n%s", code, signed)
	}
	file := filepath.Join(t.TempDir(), "signed.json")
	if err := os.WriteFile(file, []byte(signed), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out := runCLI(t, "td", "verify", file); code != 0 {
		t.Fatalf("verify: exit %d\n%s", code, out)
	}
	if code, out := runCLI(t, "td", "validate", file); code != 0 {
		t.Fatalf("validate signed: exit %d\n%s", code, out)
	}
}
