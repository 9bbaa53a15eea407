package archive

import (
	"context"
	"io"

	"github.com/openir/platform/case-svc/internal/cases"
)

// Zips is the case service's cases.Archives: zip archives unpacked within Limits (zero: DefaultLimits).
type Zips struct{ Limits Limits }

var _ cases.Archives = Zips{}

// Unpack unzips body (Unzip) and hands its files over as the case service reads them.
func (z Zips) Unpack(ctx context.Context, body io.Reader, password string) ([]cases.ArchivedFile, func(), error) {
	lim := z.Limits
	if lim == (Limits{}) {
		lim = DefaultLimits
	}
	files, cleanup, err := Unzip(ctx, body, password, lim)
	if err != nil {
		return nil, nil, err
	}
	out := make([]cases.ArchivedFile, len(files))
	for i, f := range files {
		out[i] = cases.ArchivedFile{Name: f.Name, Body: f.Body}
	}
	return out, cleanup, nil
}
