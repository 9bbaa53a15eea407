package background

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"
)

// Stop stops the work in the order it started and waits for each; a stop called before is not repeated.
func TestGroup_StopInOrder(t *testing.T) {
	var g Group
	var mu sync.Mutex
	var ended []int
	work := func(i int) func(context.Context) {
		return func(ctx context.Context) {
			<-ctx.Done()
			mu.Lock()
			ended = append(ended, i)
			mu.Unlock()
		}
	}
	g.Go(context.Background(), work(1))
	stop2 := g.Go(context.Background(), work(2))
	g.Go(context.Background(), work(3))
	stop2()
	stop2()
	g.Stop()
	if !slices.Equal(ended, []int{2, 1, 3}) {
		t.Fatalf("ended in the order %v, want [2 1 3]", ended)
	}
}

// The work ends with its parent context.
func TestGroup_ParentEnds(t *testing.T) {
	var g Group
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	g.Go(ctx, func(ctx context.Context) { <-ctx.Done(); close(done) })
	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the work did not end within 30 s of its parent")
	}
	g.Stop()
}
