package store

import (
	"context"
	"errors"
	"io"

	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/pkg/docstore"
)

// Files adapts the attachment store of pkg/docstore to the domain.
type Files struct {
	store *docstore.Attachments
}

var _ record.FileStore = (*Files)(nil)

// NewFiles returns the file store of the database.
func NewFiles(ctx context.Context, db *docstore.DB) (*Files, error) {
	a, err := docstore.NewAttachments(ctx, db)
	if err != nil {
		return nil, err
	}
	return &Files{store: a}, nil
}

// Put stores a file's content once.
func (f *Files) Put(ctx context.Context, r io.Reader) (record.File, error) {
	info, err := f.store.Put(ctx, r, 0)
	if err != nil {
		return record.File{}, err
	}
	return record.File{ID: info.ID, Size: info.Size, SHA256: info.SHA256, SHA1: info.SHA1, MD5: info.MD5}, nil
}

// Open reads a file's content.
func (f *Files) Open(ctx context.Context, id string) (io.ReadCloser, record.File, error) {
	r, info, err := f.store.Open(ctx, id)
	if errors.Is(err, docstore.ErrFileNotFound) {
		return nil, record.File{}, record.ErrAttachmentNotFound
	}
	if err != nil {
		return nil, record.File{}, err
	}
	return r, record.File{ID: info.ID, Size: info.Size, SHA256: info.SHA256, SHA1: info.SHA1, MD5: info.MD5}, nil
}
