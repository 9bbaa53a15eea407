package analysis

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestFinishing: the context's OnFinishing function runs beside the store's lease check (each waits for the
// other here, which only side by side can end), and the check's error wins over the function's.
func TestFinishing(t *testing.T) {
	errCheck, errHook := errors.New("lease lost"), errors.New("hold failed")
	checkStarted, hookStarted := make(chan struct{}), make(chan struct{})
	wait := func(ch chan struct{}) error {
		select {
		case <-ch:
			return nil
		case <-time.After(10 * time.Second):
			return errors.New("not run side by side")
		}
	}
	ctx := OnFinishing(context.Background(), func() error { close(hookStarted); return wait(checkStarted) })
	if err := Finishing(ctx, func() error { close(checkStarted); return wait(hookStarted) }); err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct {
		name        string
		check, hook error
		want        error
	}{
		{"both fail: the check's error", errCheck, errHook, errCheck},
		{"the hook fails", nil, errHook, errHook},
		{"the check fails", errCheck, nil, errCheck},
		{"both pass", nil, nil, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := OnFinishing(context.Background(), func() error { return tt.hook })
			if err := Finishing(ctx, func() error { return tt.check }); !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
	// Without a hook, the check alone.
	if err := Finishing(context.Background(), func() error { return errCheck }); !errors.Is(err, errCheck) {
		t.Fatalf("err = %v, want %v", err, errCheck)
	}
}
