package docstore

import (
	"context"
	"errors"
	"fmt"
)

// indexDropper is implemented by the collections of both engines.
type indexDropper interface {
	DropIndex(ctx context.Context, name string) error
}

// DropIndex removes the index a Spec used to declare under name (a replaced unique index, which would
// otherwise keep refusing writes); dropping one that does not exist is not an error. Declaring an index
// again under a name recreates it when the collection is next opened.
func (c *Collection) DropIndex(ctx context.Context, name string) error {
	d, ok := c.c.(indexDropper)
	if !ok {
		return errors.New("docstore: this engine cannot drop indexes")
	}
	if err := d.DropIndex(ctx, name); err != nil {
		return fmt.Errorf("drop index %s of %s: %w", name, c.name, err)
	}
	return nil
}
