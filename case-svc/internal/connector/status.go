package connector

import (
	"context"
	"sync"
	"time"
)

// StatusProber is what an analysis server offers for the status page: its version and whether it accepts our
// key ("OK", "AUTH_ERROR", "ERROR"), as the reference system's Cortex connector reports them. A server that
// does not implement it is reported as "OK" with an empty version.
type StatusProber interface {
	Probe(ctx context.Context) (version, status string)
}

// ServerStatus is one analysis server on the status page.
type ServerStatus struct {
	Name    string
	Version string
	Status  string // OK, AUTH_ERROR, ERROR
}

// Status sums up the analysis servers: Status is "OK" when all answer OK, "WARNING" when some do,
// "ERROR" when none does (the reference system's rule).
type Status struct {
	Enabled bool
	Status  string
	Servers []ServerStatus
}

// StatusTTL is how long a connector status is reused; ProbeTimeout bounds one server's check.
const (
	StatusTTL    = 5 * time.Second
	ProbeTimeout = 2 * time.Second
)

// statusCache holds the last connector status so that /api/status stays fast; one check runs at a time.
type statusCache struct {
	mu  sync.Mutex
	at  time.Time
	val Status
}

// Status checks the configured servers (all at once, each bounded by ProbeTimeout) or returns the status of
// a check made less than StatusTTL ago. With no server configured the connector is not enabled.
func (a *Analyses) Status(ctx context.Context) Status {
	if a == nil || len(a.order) == 0 {
		return Status{Enabled: false, Status: "OK", Servers: []ServerStatus{}}
	}
	a.status.mu.Lock()
	defer a.status.mu.Unlock()
	if !a.status.at.IsZero() && time.Since(a.status.at) < StatusTTL {
		return a.status.val
	}
	out := make([]ServerStatus, len(a.order))
	var wg sync.WaitGroup
	for i, n := range a.order {
		out[i] = ServerStatus{Name: n, Status: "OK"}
		p, ok := a.servers[n].(StatusProber)
		if !ok {
			continue
		}
		wg.Add(1)
		go func(i int, p StatusProber) {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ProbeTimeout)
			defer cancel()
			out[i].Version, out[i].Status = p.Probe(cctx)
		}(i, p)
	}
	wg.Wait()
	ok := 0
	for _, s := range out {
		if s.Status == "OK" {
			ok++
		}
	}
	st := "ERROR"
	switch {
	case ok == len(out):
		st = "OK"
	case ok > 0:
		st = "WARNING"
	}
	a.status.val, a.status.at = Status{Enabled: true, Status: st, Servers: out}, time.Now()
	return a.status.val
}
