package backoff

import (
	"context"
	"testing"
	"time"
)

// TestBounds: every delay lies within [min, max], the nominal delay doubles
// with each failure, the delays vary (jitter), and Reset starts over.
func TestBounds(t *testing.T) {
	const lo, hi = time.Second, time.Minute
	b := New(lo, hi)
	seen := map[time.Duration]bool{}
	for run := range 50 {
		var delays []time.Duration
		for range 12 {
			d := b.NextBackOff()
			if d < lo || d > hi {
				t.Fatalf("run %d: delay %s outside [%s, %s]", run, d, lo, hi)
			}
			delays = append(delays, d)
		}
		// Nominal delays 1, 2, 4, 8 s: the fourth lies in [4 s, 12 s].
		if d := delays[3]; d < 4*lo || d > 12*lo {
			t.Errorf("run %d: fourth delay %s, want within ±50 %% of %s", run, d, 8*lo)
		}
		// By the eighth failure the nominal delay is the maximum; half of
		// the jitter range lies above it and is clamped.
		if d := delays[len(delays)-1]; d < hi/2 {
			t.Errorf("run %d: last delay %s, want at least %s", run, d, hi/2)
		}
		seen[delays[1]] = true
		b.Reset()
		if d := b.NextBackOff(); d > 3*lo/2 {
			t.Errorf("run %d: first delay after Reset %s, want at most %s", run, d, 3*lo/2)
		}
		b.Reset()
	}
	if len(seen) < 10 {
		t.Errorf("second delays took %d values in 50 runs; no jitter?", len(seen))
	}
}

// TestMaxBelowMin: a maximum below the minimum counts as the minimum.
func TestMaxBelowMin(t *testing.T) {
	b := New(time.Second, time.Millisecond)
	for range 5 {
		if d := b.NextBackOff(); d != time.Second {
			t.Fatalf("delay %s, want 1s", d)
		}
	}
}

// TestSleep: Sleep waits the whole delay on a live context and reports
// true; on an ended one it returns false at once, however long the delay.
func TestSleep(t *testing.T) {
	if !Sleep(context.Background(), time.Millisecond) {
		t.Fatal("Sleep(live context, 1ms) = false, want true")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Sleep(ctx, time.Hour) {
		t.Fatal("Sleep(ended context, 1h) = true, want false")
	}
}
