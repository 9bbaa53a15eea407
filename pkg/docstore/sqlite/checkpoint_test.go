package sqlite

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// Writes leave the WAL to the background checkpointer: the write connection does not checkpoint on its own,
// and soon after the writes every frame of the WAL is in the database file. Past the WAL's bound the next
// writer checkpoints itself.
func TestCheckpointer(t *testing.T) {
	ctx := context.Background()
	e, c := groupDB(t)
	var auto int
	if err := e.wr.conn.QueryRowContext(ctx, "PRAGMA wal_autocheckpoint").Scan(&auto); err != nil || auto != 0 {
		t.Fatalf("the write connection's wal_autocheckpoint is %d (%v), want 0", auto, err)
	}
	before := e.ck.runs.Load()
	for i := range 200 {
		if err := insert(ctx, c, map[string]any{"_id": fmt.Sprint("d", i), "n": i}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		// Once the checkpointer has run after the last write (dirty cleared, a run counted), the WAL is copied.
		if e.ck.runs.Load() > before && !e.ck.dirty.Load() {
			frames, copied, err := checkpoint(ctx, e.ck.db)
			if err != nil {
				t.Fatal(err)
			}
			if frames == 0 || copied == frames {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no background checkpoint copied the WAL within 30 s (runs %d)", e.ck.runs.Load())
		}
		time.Sleep(20 * time.Millisecond)
	}

	e.ck.inline.Store(true) // as the checkpointer sets it for a WAL past walMaxFrames
	runs := e.ck.runs.Load()
	if err := insert(ctx, c, map[string]any{"_id": "last", "n": -1}); err != nil {
		t.Fatal(err)
	}
	if e.ck.inline.Load() || e.ck.runs.Load() == runs {
		t.Errorf("the writer did not checkpoint a WAL past its bound (inline %v, runs %d → %d)", e.ck.inline.Load(), runs, e.ck.runs.Load())
	}
	var n int
	if err := e.r.QueryRowContext(ctx, `SELECT count(*) FROM "g"`).Scan(&n); err != nil || n != 201 {
		t.Errorf("%d documents (%v), want 201", n, err)
	}
}
