package sqlite

// Group commit on the write connection. Every write (a single statement or a transaction function) queues a
// request; the writer that gets the connection (the leader) takes every queued request, up to maxGroup, and
// runs them in one IMMEDIATE transaction, each transaction function inside a savepoint of its own, then
// commits once and answers them all. A request is acknowledged only after the COMMIT that holds it, so
// durability is that of a single write (synchronous=NORMAL in WAL: an acknowledged write survives kill -9). A
// request that fails is rolled back alone (to its savepoint; a single statement's duplicate-key error undoes
// that statement only) and gets its own error while the others commit; an error that may have ended the
// transaction (I/O, any other error of a single statement, the COMMIT itself) fails every request of the
// group, none of which was acknowledged.
//
// Why: with many clients, a write spent most of its time waiting for the connection and paying its own
// BEGIN/COMMIT and WAL frames; one commit per group writes the pages the group's writes share (table and index
// pages, the WAL header) once. A lone request runs exactly as before (its statement alone, or BEGIN IMMEDIATE
// … COMMIT), with its own context. In a group, statements run with the requests' contexts stripped of their
// cancellation: SQLite's interrupt of one statement rolls back the whole transaction, so a cancelled request
// would fail the group. A request cancelled before the leader takes it is not run.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/openir/platform/pkg/docstore/internal/engine"
)

// maxGroup bounds the requests of one transaction, so that a group's latency stays bounded under a flood.
const maxGroup = 64

// Request states.
const (
	reqQueued int32 = iota
	reqTaken
	reqCancelled
)

// writeReq is one write waiting for the connection.
type writeReq struct {
	ctx   context.Context
	fn    func(ctx context.Context, tx *wtx) error
	txn   bool         // fn runs several statements: alone, it needs BEGIN IMMEDIATE … COMMIT
	state atomic.Int32 // reqQueued → reqTaken (by a leader) or reqCancelled (by its waiter)
	done  chan error   // buffered: the leader never blocks
}

// writeQueue is the requests not yet taken by a leader.
type writeQueue struct {
	mu      sync.Mutex
	pending []*writeReq
}

// submit queues a write and waits until a leader (possibly this goroutine) has run it and committed it.
func (e *Engine) submit(ctx context.Context, txn bool, fn func(ctx context.Context, tx *wtx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &writeReq{ctx: ctx, fn: fn, txn: txn, done: make(chan error, 1)}
	e.wq.mu.Lock()
	e.wq.pending = append(e.wq.pending, r)
	e.wq.mu.Unlock()
	for {
		select {
		case err := <-r.done:
			return err
		case e.wr.sem <- struct{}{}:
			if r.state.Load() == reqQueued { // else another leader runs it: let its answer come
				e.lead()
			}
			e.release()
		case <-ctx.Done():
			if r.state.CompareAndSwap(reqQueued, reqCancelled) {
				return ctx.Err()
			}
			// A leader has it: its outcome comes soon (the group's statements are not interruptible).
			return <-r.done
		}
	}
}

// lead runs the queued requests (up to maxGroup) while holding the write connection.
func (e *Engine) lead() {
	e.wq.mu.Lock()
	n := min(len(e.wq.pending), maxGroup)
	batch := make([]*writeReq, 0, n)
	for _, r := range e.wq.pending[:n] {
		if r.state.CompareAndSwap(reqQueued, reqTaken) {
			batch = append(batch, r)
		}
	}
	rest := copy(e.wq.pending, e.wq.pending[n:])
	clear(e.wq.pending[rest:])
	e.wq.pending = e.wq.pending[:rest]
	e.wq.mu.Unlock()
	switch len(batch) {
	case 0:
	case 1:
		r := batch[0]
		r.done <- e.runAlone(r)
	default:
		e.runGroup(batch)
	}
}

// runAlone runs one request as the engine always did: a single statement in autocommit, or fn in one
// IMMEDIATE transaction, with the request's context.
func (e *Engine) runAlone(r *writeReq) error {
	ctx, tx := r.ctx, &wtx{e: e}
	if !r.txn {
		return r.fn(ctx, tx)
	}
	if _, err := tx.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	if err := r.fn(ctx, tx); err != nil {
		// An interrupted statement may have ended the transaction already; then ROLLBACK fails harmlessly.
		_, _ = tx.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		return err
	}
	if _, err := tx.ExecContext(context.WithoutCancel(ctx), "COMMIT"); err != nil {
		_, _ = tx.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		return err
	}
	return nil
}

// runGroup runs the requests in one transaction, one savepoint each, and answers each after the commit.
func (e *Engine) runGroup(batch []*writeReq) {
	e.groups.Add(1)
	ctx, tx := context.Background(), &wtx{e: e}
	errs := make([]error, len(batch))
	failAll := func(err error) {
		_, _ = tx.ExecContext(ctx, "ROLLBACK")
		for _, r := range batch {
			r.done <- err
		}
	}
	if _, err := tx.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		failAll(err)
		return
	}
	for i, r := range batch {
		if !r.txn {
			// A single statement needs no savepoint: a constraint violation (a duplicate) undoes that statement
			// alone and the transaction goes on. Any other error may have ended the transaction: fail the group.
			if errs[i] = r.fn(context.WithoutCancel(r.ctx), tx); errs[i] != nil && !errors.Is(sqliteErr(errs[i]), engine.ErrDuplicate) {
				failAll(fmt.Errorf("docstore: write group rolled back: %w", errs[i]))
				return
			}
			continue
		}
		if _, err := tx.ExecContext(ctx, "SAVEPOINT w"); err != nil {
			failAll(fmt.Errorf("docstore: write group: %w", err))
			return
		}
		if errs[i] = r.fn(context.WithoutCancel(r.ctx), tx); errs[i] != nil {
			if _, err := tx.ExecContext(ctx, "ROLLBACK TO w"); err != nil {
				// The error ended the transaction: nothing of the group is stored.
				failAll(fmt.Errorf("docstore: write group rolled back (%v): %w", errs[i], err))
				return
			}
		}
		if _, err := tx.ExecContext(ctx, "RELEASE w"); err != nil {
			failAll(fmt.Errorf("docstore: write group: %w", err))
			return
		}
	}
	if _, err := tx.ExecContext(ctx, "COMMIT"); err != nil {
		failAll(err)
		return
	}
	for i, r := range batch {
		r.done <- errs[i]
	}
}
