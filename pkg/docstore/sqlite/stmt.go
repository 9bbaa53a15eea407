package sqlite

import (
	"context"
	"database/sql"
	"sync"
)

// Prepared statements, cached per pool by their SQL text: preparing a statement costs more than running a
// point query. The generated SQL only varies with the shape of a filter (values are parameters), so the set
// is small; the cache is cleared when it reaches maxStmts (IN lists of many lengths).
const maxStmts = 512

type stmtCache struct {
	db *sql.DB
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

func (s *stmtCache) get(ctx context.Context, q string) (*sql.Stmt, error) {
	s.mu.Lock()
	st := s.m[q]
	s.mu.Unlock()
	if st != nil {
		return st, nil
	}
	st, err := s.db.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.m[q]; old != nil { // prepared meanwhile by another goroutine
		_ = st.Close()
		return old, nil
	}
	if s.m == nil || len(s.m) >= maxStmts {
		for _, o := range s.m {
			_ = o.Close() // database/sql closes it once its running queries end
		}
		s.m = make(map[string]*sql.Stmt)
	}
	s.m[q] = st
	return st, nil
}

func (s *stmtCache) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range s.m {
		_ = o.Close()
	}
	s.m = nil
}

// query runs a read on the read pool.
func (e *Engine) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	st, err := e.rs.get(ctx, q)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// writer is the one write connection of the engine, held by one goroutine at a time (sem), and the statements
// prepared on it.
type writer struct {
	sem   chan struct{}
	conn  *sql.Conn
	stmts map[string]*sql.Stmt // guarded by sem
}

// acquire takes the write connection (waiting in Go, not in SQLite's busy handler).
func (e *Engine) acquire(ctx context.Context) error {
	select {
	case e.wr.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (e *Engine) release() { <-e.wr.sem }

func (w *writer) closeStmts() {
	for _, st := range w.stmts {
		_ = st.Close()
	}
	w.stmts = nil
}

// wtx is the write connection while a goroutine holds it (inside write or exec).
type wtx struct{ e *Engine }

// stmt returns the statement q prepared on the write connection.
func (t *wtx) stmt(ctx context.Context, q string) (*sql.Stmt, error) {
	w := &t.e.wr
	if st := w.stmts[q]; st != nil {
		return st, nil
	}
	st, err := w.conn.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	if w.stmts == nil || len(w.stmts) >= maxStmts {
		w.closeStmts()
		w.stmts = make(map[string]*sql.Stmt)
	}
	w.stmts[q] = st
	return st, nil
}

func (t *wtx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	st, err := t.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

func (t *wtx) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	st, err := t.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

func (t *wtx) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	st, err := t.stmt(ctx, q)
	if err != nil {
		return t.e.wr.conn.QueryRowContext(ctx, q, args...) // reports the same error
	}
	return st.QueryRowContext(ctx, args...)
}

// exec runs one write statement, its own transaction when alone, on the write connection.
func (e *Engine) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	var res sql.Result
	err := e.submit(ctx, false, func(ctx context.Context, tx *wtx) error {
		var err error
		res, err = tx.ExecContext(ctx, q, args...)
		return err
	})
	return res, err
}
