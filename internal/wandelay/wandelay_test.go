package wandelay

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestValidate(t *testing.T) {
	ok := DefaultConfig()
	if err := ok.Validate(); err != nil {
		t.Fatalf("default: %v", err)
	}
	for name, edit := range map[string]func(*Config){
		"max below min":  func(c *Config) { c.RTTMax = c.RTTMin - 1 },
		"negative min":   func(c *Config) { c.RTTMin = -1 },
		"loss of one":    func(c *Config) { c.Loss = 1 },
		"negative loss":  func(c *Config) { c.Loss = -0.1 },
		"no queue space": func(c *Config) { c.MaxQueueLen = 0 },
	} {
		c := DefaultConfig()
		edit(&c)
		if c.Validate() == nil {
			t.Errorf("%s: Validate accepted %+v", name, c)
		}
	}
}

// TestPairRTT: symmetric, within the range, and spread over it: the 3600
// pairs of 10.78.K.2 (K = 1..60, as in the lab) fall into each fifth of
// 20–120 ms about equally often.
func TestPairRTT(t *testing.T) {
	c := DefaultConfig()
	var rtts []time.Duration
	for i := 1; i <= 60; i++ {
		for j := i + 1; j <= 60; j++ {
			a, b := netip.AddrFrom4([4]byte{10, 78, byte(i), 2}), netip.AddrFrom4([4]byte{10, 78, byte(j), 2})
			r := c.PairRTT(a, b)
			if r != c.PairRTT(b, a) {
				t.Fatalf("%s, %s: %s one way, %s the other", a, b, r, c.PairRTT(b, a))
			}
			if r < c.RTTMin || r > c.RTTMax {
				t.Fatalf("%s, %s: %s outside %s..%s", a, b, r, c.RTTMin, c.RTTMax)
			}
			rtts = append(rtts, r)
		}
	}
	var buckets [5]int
	for _, r := range rtts {
		buckets[min(int((r-c.RTTMin)*5/(c.RTTMax-c.RTTMin)), 4)]++
	}
	for i, n := range buckets {
		// 1770 pairs, 354 expected per fifth; ±25 % is over 5 standard
		// deviations of a uniform draw.
		if n < 265 || n > 443 {
			t.Errorf("fifth %d of the range has %d of %d pairs: %v", i, n, len(rtts), buckets)
		}
	}
	fixed := Config{RTTMin: 80 * time.Millisecond, RTTMax: 80 * time.Millisecond}
	if r := fixed.PairRTT(netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")); r != 80*time.Millisecond {
		t.Errorf("min = max = 80ms: got %s", r)
	}
}

// lab is two namespaces, a and b, routed through a third, r, whose
// FORWARD chain queues every packet to queue 0 (without --queue-bypass:
// with no Shaper bound, nothing passes).
type lab struct {
	a, b, r  string
	aIP, bIP string
	rFD      int
}

func newLab(t *testing.T) *lab {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates network namespaces")
	}
	for _, cmd := range []string{"ip", "iptables"} {
		if _, err := exec.LookPath(cmd); err != nil {
			t.Skipf("%s is missing (scripts/test.sh installs iptables)", cmd)
		}
	}
	p := fmt.Sprintf("wdt%d", os.Getpid()%100000)
	l := &lab{a: p + "a", b: p + "b", r: p + "r", aIP: "10.199.1.2", bIP: "10.199.2.2"}
	t.Cleanup(func() {
		for _, n := range []string{l.a, l.b, l.r} {
			_ = exec.Command("ip", "netns", "del", n).Run()
		}
	})
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	for _, n := range []string{l.a, l.b, l.r} {
		run("ip", "netns", "add", n)
		run("ip", "-n", n, "link", "set", "lo", "up")
	}
	for i, n := range []string{l.a, l.b} {
		sub := fmt.Sprintf("10.199.%d", i+1)
		run("ip", "-n", l.r, "link", "add", "v"+n, "type", "veth", "peer", "name", "eth0", "netns", n)
		run("ip", "-n", l.r, "addr", "add", sub+".1/24", "dev", "v"+n)
		run("ip", "-n", l.r, "link", "set", "v"+n, "up")
		run("ip", "-n", n, "addr", "add", sub+".2/24", "dev", "eth0")
		run("ip", "-n", n, "link", "set", "eth0", "up")
		run("ip", "-n", n, "route", "add", "default", "via", sub+".1")
	}
	run("ip", "netns", "exec", l.r, "sysctl", "-qw", "net.ipv4.ip_forward=1")
	run("ip", "netns", "exec", l.r, "iptables", "-A", "FORWARD", "-j", "NFQUEUE", "--queue-num", "0")
	fd, err := unix.Open("/run/netns/"+l.r, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Close(fd) })
	l.rFD = fd
	return l
}

// in runs fn on a thread inside namespace ns: the sockets fn creates
// belong to ns.
func in(t *testing.T, ns string, fn func()) {
	t.Helper()
	runtime.LockOSThread()
	self, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(self)
	target, err := unix.Open("/run/netns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(target)
	if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
		t.Fatal(err)
	}
	fn()
	if err := unix.Setns(self, unix.CLONE_NEWNET); err != nil {
		// Leave the thread locked: it dies with the goroutine.
		t.Fatal(err)
	}
	runtime.UnlockOSThread()
}

func (l *lab) shaper(t *testing.T, cfg Config) *Shaper {
	t.Helper()
	cfg.NetNS = l.rFD
	s, err := New(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestShaperDelay: a TCP echo between a and b through the router takes at
// least the configured round-trip time, every time, and every packet the
// router forwarded went through the Shaper.
func TestShaperDelay(t *testing.T) {
	l := newLab(t)
	const rtt = 80 * time.Millisecond
	s := l.shaper(t, Config{RTTMin: rtt, RTTMax: rtt, MaxQueueLen: 1024})
	defer s.Close()

	var ln net.Listener
	in(t, l.b, func() {
		var err error
		if ln, err = net.Listen("tcp", l.bIP+":7000"); err != nil {
			t.Fatal(err)
		}
	})
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.Copy(c, c)
	}()
	var c net.Conn
	in(t, l.a, func() {
		var err error
		if c, err = (&net.Dialer{Timeout: 10 * time.Second}).Dial("tcp", l.bIP+":7000"); err != nil {
			t.Fatal(err)
		}
	})
	defer c.Close()
	buf := make([]byte, 64)
	for i := range 5 {
		start := time.Now()
		if _, err := c.Write(buf); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d < rtt {
			t.Errorf("echo %d took %s through a %s link", i, d, rtt)
		}
	}
	st := s.Stats()
	if st.Received == 0 || st.Lost != 0 || st.Unparsed != 0 || st.VerdictErrors != 0 {
		t.Errorf("stats %+v: want packets, none lost, all IPv4, every verdict taken", st)
	}
}

// TestShaperLoss: of 2000 UDP datagrams from a to b, the Shaper drops
// about Loss of them (20 %: 400 ± 18 expected, a window of over 5
// standard deviations), and b receives exactly the ones it accepted.
func TestShaperLoss(t *testing.T) {
	l := newLab(t)
	const n, loss = 2000, 0.2
	s := l.shaper(t, Config{RTTMin: 10 * time.Millisecond, RTTMax: 10 * time.Millisecond, Loss: loss, MaxQueueLen: 1 << 14, Seed: 7})
	defer s.Close()

	var rx, tx *net.UDPConn
	in(t, l.b, func() {
		var err error
		if rx, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.MustParseAddrPort(l.bIP+":7001"))); err != nil {
			t.Fatal(err)
		}
	})
	defer rx.Close()
	_ = rx.SetReadBuffer(4 << 20)
	in(t, l.a, func() {
		var err error
		if tx, err = net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(netip.MustParseAddrPort(l.bIP+":7001"))); err != nil {
			t.Fatal(err)
		}
	})
	defer tx.Close()
	got := make(chan []int, 1)
	go func() {
		var seen []int
		buf := make([]byte, 64)
		for {
			_ = rx.SetReadDeadline(time.Now().Add(time.Second))
			k, err := rx.Read(buf)
			if err != nil {
				got <- seen
				return
			}
			var i int
			_, _ = fmt.Sscan(string(buf[:k]), &i)
			seen = append(seen, i)
		}
	}()
	for i := range n {
		if _, err := fmt.Fprint(tx, i); err != nil {
			t.Fatal(err)
		}
		if i%20 == 19 {
			time.Sleep(time.Millisecond) // paced: no socket buffer overflows
		}
	}
	seen := <-got
	st := s.Stats()
	if st.Received != n || st.Lost+st.Accepted != n || st.VerdictErrors != 0 {
		t.Fatalf("stats %+v: want %d received, each lost or accepted", st, n)
	}
	if uint64(len(seen)) != st.Accepted {
		t.Errorf("b received %d datagrams, the Shaper accepted %d", len(seen), st.Accepted)
	}
	if st.Lost < 300 || st.Lost > 500 {
		t.Errorf("lost %d of %d at loss %g: want 300..500", st.Lost, n, loss)
	}
	if !slices.IsSorted(seen) {
		t.Errorf("datagrams of one pair arrived out of order")
	}
}
