package wandelay

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	nfqueue "github.com/florianl/go-nfqueue"
	"golang.org/x/sys/unix"
)

// Config describes the emulated links.
type Config struct {
	// Queue is the netfilter queue number the router's rule sends packets
	// to (iptables -j NFQUEUE --queue-num Queue).
	Queue uint16
	// NetNS, when not 0, is an open file descriptor of the network
	// namespace whose queue to read (for tests); 0 is the caller's.
	NetNS int
	// RTTMin and RTTMax bound the round-trip time added to a pair of
	// addresses; each pair's is spread uniformly between them.
	RTTMin, RTTMax time.Duration
	// Loss is the probability, 0 ≤ Loss < 1, that a packet is dropped.
	Loss float64
	// MaxQueueLen is how many packets the kernel holds for the Shaper;
	// it must cover RTTMax/2 of the lab's busiest moment.
	MaxQueueLen uint32
	// Seed seeds the loss decisions, so a run can be repeated.
	Seed uint64
}

// DefaultConfig is the lab's: 20–120 ms RTT, 0.5 % loss, room for 64k
// packets in flight.
func DefaultConfig() Config {
	return Config{RTTMin: 20 * time.Millisecond, RTTMax: 120 * time.Millisecond, Loss: 0.005, MaxQueueLen: 1 << 16, Seed: 1}
}

// Validate reports a configuration the Shaper cannot run.
func (c Config) Validate() error {
	switch {
	case c.RTTMin < 0 || c.RTTMax < c.RTTMin:
		return fmt.Errorf("wandelay: RTT range %s..%s: want 0 ≤ min ≤ max", c.RTTMin, c.RTTMax)
	case c.Loss < 0 || c.Loss >= 1:
		return fmt.Errorf("wandelay: loss %g: want 0 ≤ loss < 1", c.Loss)
	case c.MaxQueueLen == 0:
		return errors.New("wandelay: MaxQueueLen must be positive")
	}
	return nil
}

// PairRTT is the round-trip time the Shaper adds between a and b: the same
// for (a, b) and (b, a), uniform over [RTTMin, RTTMax] across pairs.
func (c Config) PairRTT(a, b netip.Addr) time.Duration {
	if b.Less(a) {
		a, b = b, a
	}
	h := fnv.New64a()
	ab, bb := a.As16(), b.As16()
	_, _ = h.Write(ab[:])
	_, _ = h.Write(bb[:])
	// FNV of near-identical inputs is not uniform in its high bits; the
	// splitmix64 finaliser spreads it.
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	u := float64(x>>11) / (1 << 53)
	return c.RTTMin + time.Duration(u*float64(c.RTTMax-c.RTTMin))
}

// Stats counts what a Shaper did.
type Stats struct {
	Received      uint64 // packets read from the queue
	Accepted      uint64 // accepted after their delay
	Lost          uint64 // dropped by the Loss draw
	Unparsed      uint64 // not IPv4: accepted at once
	VerdictErrors uint64 // verdicts the kernel did not take
	ReadErrors    uint64 // queue read errors (ENOBUFS: the socket overflowed)
}

// Shaper delays and drops the packets of one netfilter queue. Its methods
// are safe for concurrent use.
type Shaper struct {
	cfg    Config
	log    *slog.Logger
	nf     *nfqueue.Nfqueue
	cancel context.CancelFunc
	rng    *rand.Rand // used by the queue's callback goroutine only
	lanes  map[[8]byte]*lane
	wg     sync.WaitGroup
	closed atomic.Bool
	epoch  time.Time

	received, accepted, lost, unparsed, verdictErrs, readErrs atomic.Uint64
}

// held is a packet waiting in a lane: no pointers, so that the collector
// does not scan the packets in flight.
type held struct {
	id  uint32
	due time.Duration // since Shaper.epoch (monotonic)
}

// A lane holds the packets of one direction of one pair until they are
// due: a queue that grows with the packets in flight, not a buffer per
// pair (a hundred hosts talk in ~40k pairs), and that the queue's
// callback never waits on.
type lane struct {
	mu   sync.Mutex
	q    []held // due times increase: one pair, one delay
	wake chan struct{}
	done bool
}

func newLane() *lane { return &lane{wake: make(chan struct{}, 1)} }

func (l *lane) push(h held) {
	l.mu.Lock()
	l.q = append(l.q, h)
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// pop waits for the next packet; false once the lane is closed and empty.
func (l *lane) pop() (held, bool) {
	for {
		l.mu.Lock()
		if len(l.q) > 0 {
			h := l.q[0]
			l.q = l.q[1:]
			if len(l.q) == 0 {
				l.q = nil // let a burst's array go
			}
			l.mu.Unlock()
			return h, true
		}
		done := l.done
		l.mu.Unlock()
		if done {
			return held{}, false
		}
		<-l.wake
	}
}

func (l *lane) close() {
	l.mu.Lock()
	l.done = true
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// New binds to cfg.Queue and starts shaping. Close stops it.
func New(cfg Config, log *slog.Logger) (s *Shaper, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	nf, err := nfqueue.Open(&nfqueue.Config{
		NfQueue:      cfg.Queue,
		NetNS:        cfg.NetNS,
		MaxPacketLen: 20, // the IPv4 header without options: the addresses
		MaxQueueLen:  cfg.MaxQueueLen,
		Copymode:     nfqueue.NfQnlCopyPacket,
		AfFamily:     unix.AF_INET,
		WriteTimeout: time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("wandelay: open queue %d: %w", cfg.Queue, err)
	}
	if err := nf.Con.SetReadBuffer(64 << 20); err != nil {
		log.Warn("wandelay: could not raise the queue socket's buffer", "err", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s = &Shaper{cfg: cfg, log: log, nf: nf, cancel: cancel,
		rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)), lanes: make(map[[8]byte]*lane), epoch: time.Now()}
	if err := nf.RegisterWithErrorFunc(ctx, s.packet, s.readError); err != nil {
		cancel()
		return nil, errors.Join(fmt.Errorf("wandelay: bind queue %d: %w", cfg.Queue, err), nf.Close())
	}
	return s, nil
}

// packet is the queue's callback: one packet, read on one goroutine.
func (s *Shaper) packet(a nfqueue.Attribute) int {
	if a.PacketID == nil {
		return 0
	}
	id := *a.PacketID
	s.received.Add(1)
	var p []byte
	if a.Payload != nil {
		p = *a.Payload
	}
	if len(p) < 20 || p[0]>>4 != 4 {
		s.unparsed.Add(1)
		s.verdict(id, nfqueue.NfAccept)
		return 0
	}
	if s.cfg.Loss > 0 && s.rng.Float64() < s.cfg.Loss {
		s.lost.Add(1)
		s.verdict(id, nfqueue.NfDrop)
		return 0
	}
	var key [8]byte
	copy(key[:], p[12:20]) // source, destination
	l, ok := s.lanes[key]
	if !ok {
		src := netip.AddrFrom4([4]byte(p[12:16]))
		dst := netip.AddrFrom4([4]byte(p[16:20]))
		l = newLane()
		s.lanes[key] = l
		s.wg.Go(func() { s.drain(l) })
		s.log.Debug("wandelay: new pair", "src", src, "dst", dst, "rtt", s.cfg.PairRTT(src, dst))
	}
	oneWay := s.cfg.PairRTT(netip.AddrFrom4([4]byte(p[12:16])), netip.AddrFrom4([4]byte(p[16:20]))) / 2
	l.push(held{id: id, due: time.Since(s.epoch) + oneWay})
	return 0
}

// drain accepts the packets of one lane when they are due.
func (s *Shaper) drain(l *lane) {
	for {
		h, ok := l.pop()
		if !ok {
			return
		}
		if d := h.due - time.Since(s.epoch); d > 0 {
			time.Sleep(d)
		}
		s.verdict(h.id, nfqueue.NfAccept)
		s.accepted.Add(1)
	}
}

func (s *Shaper) verdict(id uint32, v int) {
	if err := s.nf.SetVerdict(id, v); err != nil && !s.closed.Load() {
		if s.verdictErrs.Add(1) == 1 {
			s.log.Warn("wandelay: verdict refused", "err", err)
		}
	}
}

func (s *Shaper) readError(err error) int {
	if s.closed.Load() {
		return 1
	}
	if n := s.readErrs.Add(1); n == 1 || n%1000 == 0 {
		s.log.Warn("wandelay: queue read error (packets lost to the lab)", "err", err, "count", n)
	}
	return 0
}

// Stats returns the counts so far.
func (s *Shaper) Stats() Stats {
	return Stats{Received: s.received.Load(), Accepted: s.accepted.Load(), Lost: s.lost.Load(),
		Unparsed: s.unparsed.Load(), VerdictErrors: s.verdictErrs.Load(), ReadErrors: s.readErrs.Load()}
}

// Close unbinds the queue (the kernel drops what it still holds) and stops
// the lanes.
func (s *Shaper) Close() error {
	s.closed.Store(true)
	s.cancel()
	err := s.nf.Close() // waits for the callback goroutine
	for _, l := range s.lanes {
		l.close()
	}
	s.wg.Wait()
	return err
}
