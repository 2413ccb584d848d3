package logroute

import (
	"bytes"
	"log"
	"log/slog"
	"strings"
	"testing"

	golog "github.com/ipfs/go-log/v2"
	"github.com/libp2p/go-libp2p/gologshim"
)

// textHandler writes records to w at every level. A plain buffer is enough:
// in this test binary only the test goroutine logs.
func textHandler(w *bytes.Buffer) slog.Handler {
	return slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug})
}

// TestRouting checks that go-libp2p (gologshim, slog) and go-log (zap)
// records reach the most recently registered handler still registered, at
// or above its level; that a logger derived with attributes follows the
// current handler; and that nothing reaches a handler once unregistered.
func TestRouting(t *testing.T) {
	var first, second bytes.Buffer
	unregisterFirst := Register(textHandler(&first), slog.LevelInfo)

	shim := gologshim.Logger("lmos-test-shim")
	derived := shim.With("d", "x")
	zapLog := golog.Logger("lmos-test-golog")
	shim.Info("first info", "k", "v1")
	shim.Debug("first debug below the level")
	zapLog.Errorw("first golog error", "k", "v2")
	derived.Info("first derived")

	unregisterSecond := Register(textHandler(&second), slog.LevelDebug)
	shim.Debug("second debug")
	derived.Info("second derived")
	zapLog.Errorw("second golog error")
	unregisterSecond()

	derived.Info("first again")
	unregisterFirst()
	shim.Warn("after unregister")
	derived.Warn("derived after unregister")

	for _, c := range []struct {
		name      string
		out       *bytes.Buffer
		want, not []string
	}{
		{"first", &first,
			[]string{
				`msg="first info" logger=lmos-test-shim k=v1`,
				`msg="first golog error" logger=lmos-test-golog k=v2`,
				`msg="first derived" logger=lmos-test-shim d=x`,
				`msg="first again" logger=lmos-test-shim d=x`,
			},
			[]string{"below the level", "second", "after unregister"}},
		{"second", &second,
			[]string{
				`msg="second debug" logger=lmos-test-shim`,
				`msg="second derived" logger=lmos-test-shim d=x`,
				`msg="second golog error" logger=lmos-test-golog`,
			},
			[]string{"first", "after unregister"}},
	} {
		got := c.out.String()
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s handler lacks %q:\n%s", c.name, w, got)
			}
		}
		for _, n := range c.not {
			if strings.Contains(got, n) {
				t.Errorf("%s handler has %q:\n%s", c.name, n, got)
			}
		}
	}
}

// TestStdlog checks that lines of the standard library's log package
// (zeroconf's) reach the registered handler as records with their tag as
// level or logger, and are filtered by the registered level.
func TestStdlog(t *testing.T) {
	var out bytes.Buffer
	unregister := Register(textHandler(&out), slog.LevelWarn)
	defer unregister()
	log.Printf("[zeroconf] no suitable IPv4 interface: %s", "udp4: no such device")
	log.Println("[ERR] zeroconf: failed to send probe:", "broken pipe")
	log.Printf("[WARN] mdns: Failed to set multicast interface: %v", "x")
	log.Printf("[INFO] zeroconf: below the level")
	got := out.String()
	for _, w := range []string{
		`level=WARN msg="no suitable IPv4 interface: udp4: no such device" logger=zeroconf`,
		`level=ERROR msg="failed to send probe: broken pipe" logger=zeroconf`,
		`level=WARN msg="Failed to set multicast interface: x" logger=mdns`,
	} {
		if !strings.Contains(got, w) {
			t.Errorf("handler lacks %q:\n%s", w, got)
		}
	}
	if strings.Contains(got, "below the level") || strings.Contains(got, "[zeroconf]") {
		t.Errorf("unexpected line:\n%s", got)
	}
}
