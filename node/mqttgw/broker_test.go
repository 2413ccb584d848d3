package mqttgw

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testBroker returns the URL of an MQTT broker on 127.0.0.1: the one in
// LMOS_TEST_MQTT_URL (scripts/mosquitto.sh start), or a mosquitto started
// for this test and stopped at its end. The test is skipped only when
// neither is available.
func testBroker(t *testing.T) string {
	t.Helper()
	if u := os.Getenv("LMOS_TEST_MQTT_URL"); u != "" {
		return u
	}
	url, _ := startBroker(t, freePort(t))
	return url
}

// startBroker starts mosquitto on 127.0.0.1:port; stop kills it (also done
// at the end of the test).
func startBroker(t *testing.T, port int) (url string, stop func()) {
	t.Helper()
	bin, err := exec.LookPath("mosquitto")
	if err != nil {
		for _, b := range []string{"/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto"} {
			if _, err := os.Stat(b); err == nil {
				bin = b
				break
			}
		}
	}
	if bin == "" {
		t.Skip("mosquitto is not installed (apt-get install -y mosquitto, or bash scripts/mosquitto.sh install) and LMOS_TEST_MQTT_URL is not set")
	}
	dir := t.TempDir()
	cfg := fmt.Sprintf("listener %d 127.0.0.1\nallow_anonymous true\npersistence false\n", port)
	if os.Geteuid() == 0 {
		cfg += "user root\n" // else mosquitto drops to a user that cannot read dir
	}
	cfgFile := filepath.Join(dir, "mosquitto.conf")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	cmd := exec.Command(bin, "-c", cfgFile)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop = func() {
		_ = cmd.Process.Kill()
		<-exited
	}
	t.Cleanup(stop)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			_ = c.Close()
			break
		}
		select {
		case <-exited:
			t.Fatalf("mosquitto exited: %s", log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("mosquitto not listening on %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return "mqtt://" + addr, stop
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
