package store

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/docstore"
)

// FileStore is the attachment store plus, per organization, which files it may read: the store is
// content-addressed and shared, so one organization's upload must not let another read it.
type FileStore struct {
	files  *docstore.Attachments
	grants *docstore.Collection
}

var _ analysis.FileStore = (*FileStore)(nil)

// NewFileStore returns the store, opening its collections.
func NewFileStore(ctx context.Context, db *docstore.DB) (*FileStore, error) {
	files, err := docstore.NewAttachments(ctx, db)
	if err != nil {
		return nil, err
	}
	grants, err := Collection(ctx, db, grantsName)
	if err != nil {
		return nil, err
	}
	return &FileStore{files: files, grants: grants}, nil
}

func info(i docstore.FileInfo) analysis.FileInfo {
	return analysis.FileInfo{ID: i.ID, Size: i.Size, SHA256: i.SHA256, SHA1: i.SHA1, MD5: i.MD5}
}

// Put stores a file.
func (s *FileStore) Put(ctx context.Context, r io.Reader, max int64) (analysis.FileInfo, error) {
	i, err := s.files.Put(ctx, r, max)
	return info(i), err
}

// Open reads a file.
func (s *FileStore) Open(ctx context.Context, id string) (io.ReadCloser, analysis.FileInfo, error) {
	r, i, err := s.files.Open(ctx, id)
	if errors.Is(err, docstore.ErrFileNotFound) {
		return nil, analysis.FileInfo{}, apperr.New(apperr.NotFound, "file not found")
	}
	return r, info(i), err
}

// grantDoc says that an organization may read a file: its _id is "<organization>:<file id>".
type grantDoc struct {
	ID string `json:"_id"`
}

// Grant lets org read the file.
func (s *FileStore) Grant(ctx context.Context, org, id string) error {
	err := s.grants.Insert(ctx, grantDoc{ID: org + ":" + id})
	if err != nil && !docstore.IsDuplicate(err) {
		return fmt.Errorf("grant file: %w", err)
	}
	return nil
}

// Granted reports whether org may read the file.
func (s *FileStore) Granted(ctx context.Context, org, id string) (bool, error) {
	var d grantDoc
	err := s.grants.Get(ctx, org+":"+id, &d)
	if errors.Is(err, docstore.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("check file grant: %w", err)
	}
	return true, nil
}
