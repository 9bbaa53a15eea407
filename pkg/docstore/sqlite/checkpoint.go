package sqlite

// Checkpoints. In WAL mode a commit appends pages to the -wal file; a checkpoint copies them back into the
// database file and syncs it. SQLite runs one by default in the committing connection whenever the WAL
// holds 1,000 pages, so every few hundred writes one request paid for the copy and its fsyncs: on the
// project's machines that was most of the p99 of a write (POST /api/case at 1k cases: 72 ms → 21 ms without)
// and half of the write throughput. Here the write connection never checkpoints on its own
// (wal_autocheckpoint=0): a background checkpointer, on a connection of its own, runs a PASSIVE checkpoint
// (it waits for no reader nor writer) every checkpointEvery after a write. Durability is unchanged: a commit
// is acknowledged once it is in the WAL, which is read back at the next open whatever was copied.
//
// A PASSIVE checkpoint copies the frames committed when it starts; while writes keep coming the WAL does not
// start over, so when the WAL grows past walMaxFrames the next writer, which holds the write connection,
// checkpoints it itself (then no frame is appended meanwhile, and the WAL starts over at the next write).

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"
	"time"
)

const (
	checkpointEvery = 500 * time.Millisecond
	walMaxFrames    = 16384 // 64 MiB of 4 KiB pages
)

type checkpointer struct {
	db     *sql.DB     // one connection, for checkpoints only
	dirty  atomic.Bool // a write committed since the last checkpoint
	inline atomic.Bool // the WAL is past walMaxFrames: the next writer checkpoints
	stop   context.CancelFunc
	done   sync.WaitGroup
	runs   atomic.Int64 // checkpoints run (tests)
}

// start runs the checkpointer until stopped.
func (c *checkpointer) start(log func(msg string, args ...any)) {
	ctx, cancel := context.WithCancel(context.Background())
	c.stop = cancel
	c.done.Go(func() {
		t := time.NewTicker(checkpointEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if !c.dirty.Swap(false) {
				continue
			}
			frames, copied, err := checkpoint(ctx, c.db)
			if err != nil {
				if ctx.Err() == nil {
					log("docstore: background checkpoint", "err", err)
				}
				continue
			}
			c.runs.Add(1)
			if frames > walMaxFrames && copied < frames {
				c.inline.Store(true)
			}
		}
	})
}

// wrote records a commit; with the WAL past its bound it checkpoints on the write connection, which the
// caller holds.
func (c *checkpointer) wrote(ctx context.Context, conn *sql.Conn, log func(msg string, args ...any)) {
	c.dirty.Store(true)
	if !c.inline.Swap(false) {
		return
	}
	if _, err := conn.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)"); err != nil {
		log("docstore: checkpoint of a large WAL", "err", err)
	}
	c.runs.Add(1)
}

// close stops the checkpointer and closes its connection.
func (c *checkpointer) close() error {
	if c.stop != nil {
		c.stop()
	}
	c.done.Wait()
	return c.db.Close()
}

// checkpoint runs a PASSIVE checkpoint: the WAL's frames, and how many are now in the database file.
func checkpoint(ctx context.Context, db *sql.DB) (frames, copied int64, err error) {
	var busy int64
	err = db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied)
	return frames, copied, err
}
