package ctxtime

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestSleepWaits(t *testing.T) {
	start := time.Now()
	if err := Sleep(context.Background(), 20*time.Millisecond); err != nil {
		t.Fatalf("Sleep: %v", err)
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Fatalf("Sleep returned after %s, want at least 20ms", d)
	}
}

func TestSleepNonPositive(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second} {
		if err := Sleep(context.Background(), d); err != nil {
			t.Fatalf("Sleep(%s): %v", d, err)
		}
	}
}

func TestSleepCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		time.Sleep(10 * time.Millisecond)
		cancel()
	}()
	start := time.Now()
	err := Sleep(ctx, time.Minute)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep: %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("Sleep returned after %s, not when the context was cancelled", d)
	}
}

func TestSleepDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := Sleep(ctx, time.Minute); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Sleep: %v, want context.DeadlineExceeded", err)
	}
}
