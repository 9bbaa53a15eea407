// Package background runs a service's background work (job workers, trackers, event senders) until it is
// stopped, and stops it in the order it started, waiting for each piece.
package background

import (
	"context"
	"sync"
)

// Group is background work started with Go. The zero value is ready to use.
type Group struct {
	mu    sync.Mutex
	stops []func()
}

// Go runs f in a goroutine with a context that ends when parent ends, when the returned stop is called, or at
// Stop. stop waits until f has returned; it may be called more than once.
func (g *Group) Go(parent context.Context, f func(context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(parent)
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(ctx)
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	g.mu.Lock()
	g.stops = append(g.stops, stop)
	g.mu.Unlock()
	return stop
}

// Stop stops the work Go started, in the order it started, waiting for each.
func (g *Group) Stop() {
	g.mu.Lock()
	stops := g.stops
	g.stops = nil
	g.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
}
