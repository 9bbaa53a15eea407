package docstore

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/openir/platform/pkg/docstore/sqlite"
	"github.com/openir/platform/pkg/search"
)

// BackupFile writes a consistent snapshot of the embedded database cfg names to out, a new file, whether or not
// a service is serving from it: it reads through a connection of its own (SQLite's VACUUM INTO reads one
// snapshot while writers go on), without the lock that keeps a second service off the file. On MongoDB it is an
// error: use mongodump.
func BackupFile(ctx context.Context, cfg Config, out string) error {
	if cfg.URI != "" {
		return errors.New("backup is for the embedded database; on MongoDB use mongodump")
	}
	return sqlite.BackupFile(ctx, cfg, out)
}

// MigrateReport says what Migrate did for one collection.
type MigrateReport struct {
	Collection string
	Source     int64 // documents in the source
	Copied     int64 // inserted by this run
	Present    int64 // already in the target with the same _id (an earlier run)
	Target     int64 // documents in the target afterwards
}

// Migrate copies every collection of from into to, with the indexes specs declare (a collection without a
// spec is copied without secondary indexes), in batches, and verifies that each target collection holds at
// least the source's documents. A document whose _id is already in the target is left as it is, so an
// interrupted run can be re-run safely; the source must not change meanwhile (stop the service first).
func Migrate(ctx context.Context, from, to *DB, specs []Spec, log io.Writer) ([]MigrateReport, error) {
	names, err := from.Collections(ctx)
	if err != nil {
		return nil, fmt.Errorf("list source collections: %w", err)
	}
	byName := map[string]Spec{}
	for _, s := range specs {
		byName[s.Name] = s
	}
	const batch = 500
	var reports []MigrateReport
	for _, name := range names {
		spec, ok := byName[name]
		if !ok {
			spec = Spec{Name: name}
		}
		src, err := from.Collection(ctx, Spec{Name: name})
		if err != nil {
			return reports, err
		}
		dst, err := to.Collection(ctx, spec)
		if err != nil {
			return reports, err
		}
		rep := MigrateReport{Collection: name}
		if rep.Source, err = src.Count(ctx, All()); err != nil {
			return reports, err
		}
		for offset := 0; ; offset += batch {
			docs, err := src.FindRaw(ctx, Query{Filter: All(), Sort: []search.SortKey{{Path: "_id"}}, Offset: offset, Limit: batch})
			if err != nil {
				return reports, err
			}
			if len(docs) == 0 {
				break
			}
			in := make([]any, len(docs))
			for i, d := range docs {
				in[i] = d
			}
			res, err := dst.InsertMany(ctx, in)
			if err != nil {
				return reports, err
			}
			for i, r := range res {
				switch {
				case r == nil:
					rep.Copied++
				case IsDuplicate(r):
					rep.Present++
				default:
					return reports, fmt.Errorf("copy %s document %d: %w", name, offset+i, r)
				}
			}
		}
		if rep.Target, err = dst.Count(ctx, All()); err != nil {
			return reports, err
		}
		if log != nil {
			fmt.Fprintf(log, "%-16s source %d  copied %d  already there %d  target %d\n", name, rep.Source, rep.Copied, rep.Present, rep.Target)
		}
		reports = append(reports, rep)
		if rep.Copied+rep.Present != rep.Source || rep.Target < rep.Source {
			return reports, fmt.Errorf("verify %s: %d documents in the source, %d copied or present, %d in the target",
				name, rep.Source, rep.Copied+rep.Present, rep.Target)
		}
	}
	return reports, nil
}
