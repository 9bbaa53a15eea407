package web

import (
	"context"
	"io"
	"sync"

	"github.com/openir/platform/pkg/apperr"
)

// Tenant is implemented by a principal that belongs to an organisation: the raw bodies its requests hold in
// memory count against that organisation's share of the budget (rawBudget). A principal without it counts
// against the budget only.
type Tenant interface {
	Tenant() string
}

// rawBudget bounds the raw bodies that authenticated requests hold in memory while they are read. A request
// reserves its body as the bytes arrive (the capacity of its buffer, as it grows), never its declared length
// ahead: a client that sends slowly holds what it sent, not the room of others (readRaw). The requests of one
// organisation hold at most share together. A request that would go over waits for room, with the rest of its
// body left unread; so that requests that each hold part of their body cannot wait for each other forever,
// the oldest reader of all may go over size, and the oldest reader of an organisation over its share, by what
// it needs to finish (at most one body limit).
type rawBudget struct {
	mu     sync.Mutex
	size   int64
	share  int64
	used   int64
	owners map[string]int64      // held by each organisation
	active map[*rawReader]uint64 // readers holding or waiting, with their ticket (the order they started in)
	next   uint64
	freed  chan struct{} // closed and replaced when room is given back
}

// rawReader is one request's part of the raw budget.
type rawReader struct {
	owner  string
	held   int64
	ticket uint64
}

func newRawBudget(size, share int64) *rawBudget {
	return &rawBudget{size: size, share: share, owners: map[string]int64{}, active: map[*rawReader]uint64{},
		freed: make(chan struct{})}
}

// start registers a reader of owner ("" = none).
func (b *rawBudget) start(owner string) *rawReader {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.next++
	r := &rawReader{owner: owner, ticket: b.next}
	b.active[r] = r.ticket
	return r
}

// oldest reports whether r is the oldest active reader (of its owner when ofOwner). Called with mu held.
func (b *rawBudget) oldest(r *rawReader, ofOwner bool) bool {
	for o, t := range b.active {
		if t < r.ticket && (!ofOwner || o.owner == r.owner) {
			return false
		}
	}
	return true
}

func (b *rawBudget) fits(r *rawReader, n int64) bool {
	if b.used+n > b.size && !b.oldest(r, false) {
		return false
	}
	return r.owner == "" || b.owners[r.owner]+n <= b.share || b.oldest(r, true)
}

// grow adds n to what r holds, waiting for room until ctx ends.
func (b *rawBudget) grow(ctx context.Context, r *rawReader, n int64) error {
	for {
		b.mu.Lock()
		if b.fits(r, n) {
			b.used += n
			r.held += n
			if r.owner != "" {
				b.owners[r.owner] += n
			}
			b.mu.Unlock()
			return nil
		}
		freed := b.freed
		b.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// end gives back what r holds and forgets it.
func (b *rawBudget) end(r *rawReader) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= r.held
	if r.owner != "" {
		if b.owners[r.owner] -= r.held; b.owners[r.owner] <= 0 {
			delete(b.owners, r.owner)
		}
	}
	r.held = 0
	delete(b.active, r)
	close(b.freed)
	b.freed = make(chan struct{})
}

// held returns what the readers hold, in all and per owner (for tests).
func (b *rawBudget) held() (int64, map[string]int64, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	per := make(map[string]int64, len(b.owners))
	for k, v := range b.owners {
		per[k] = v
	}
	return b.used, per, len(b.active)
}

// readRaw reads r to its end or past limit (the caller checks the length), reserving its buffer in the raw
// budget as it grows. Unauthenticated requests (whose bodies are small) and those outside a service built by
// New read without the budget.
func (b *bodyLimiter) readRaw(ctx context.Context, r io.Reader, limit int64) ([]byte, error) {
	if b.pools != nil && b.authed && b.raw == nil {
		b.raw = b.pools.raw.start(b.owner)
	}
	chunk := make([]byte, min(32<<10, limit+1))
	var body []byte
	for int64(len(body)) <= limit {
		n, err := r.Read(chunk[:min(int64(len(chunk)), limit+1-int64(len(body)))])
		if n > 0 {
			if len(body)+n > cap(body) {
				// Grown fourfold, and each buffer counted until the request ends: the ones it replaces are
				// garbage the collector has not taken yet (a 1 MiB body counts 1.33 MiB).
				c := int64(max(4*cap(body), len(body)+n, 4<<10))
				if b.declared > 0 {
					// The capacities are the declared length divided by powers of 4 (the smallest that holds
					// the bytes read), so that all of them together count at most 4/3 of it, whatever the
					// sizes the reads return (growing from the read's size, 32K, 128K, 512K then 1M counted 1.67 MiB).
					c = b.declared
					for c/4 >= int64(len(body)+n) && c/4 >= 4<<10 {
						c /= 4
					}
				}
				c = max(min(c, limit+1), int64(len(body)+n))
				if b.raw != nil {
					if err := b.pools.raw.grow(ctx, b.raw, c); err != nil {
						return nil, apperr.Wrap(apperr.Unavailable, "request abandoned while waiting for memory to read it", err)
					}
				}
				nb := make([]byte, len(body), c)
				copy(nb, body)
				body = nb
			}
			body = append(body, chunk[:n]...)
		}
		if err == io.EOF { //nolint:errorlint // the end of the body
			return body, nil
		}
		if err != nil {
			return nil, err
		}
	}
	return body, nil
}
