package docstore

import (
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/mongo"
)

// indexDropper is implemented by the collections of both engines.
type indexDropper interface {
	dropIndex(ctx context.Context, name string) error
}

// DropIndex removes the index a Spec used to declare under name (a replaced unique index, which would
// otherwise keep refusing writes); dropping one that does not exist is not an error. Declaring an index
// again under a name recreates it when the collection is next opened.
func (c *Collection) DropIndex(ctx context.Context, name string) error {
	d, ok := c.c.(indexDropper)
	if !ok {
		return errors.New("docstore: this engine cannot drop indexes")
	}
	if err := d.dropIndex(ctx, name); err != nil {
		return fmt.Errorf("drop index %s of %s: %w", name, c.name, err)
	}
	return nil
}

func (c *sqliteColl) dropIndex(ctx context.Context, name string) error {
	full := c.name + "_" + name
	if err := checkCollName(full); err != nil {
		return err
	}
	for _, n := range []string{full, full + "_null"} {
		if _, err := c.e.exec(ctx, `DROP INDEX IF EXISTS "`+n+`"`); err != nil {
			return err
		}
	}
	return nil
}

func (m *mongoColl) dropIndex(ctx context.Context, name string) error {
	err := m.c.Indexes().DropOne(ctx, name)
	var ce mongo.CommandError
	if errors.As(err, &ce) && (ce.Code == 27 || ce.Name == "IndexNotFound" || ce.Code == 26) { // no such index, or collection
		return nil
	}
	return err
}
