package web

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/pkg/apperr"
)

// File is an uploaded file. It was streamed to a temporary file while the request was read (never held in
// memory) and is removed when the request ends.
type File struct {
	Filename string               // the name the client gave (not to be trusted as a path)
	Header   textproto.MIMEHeader // the part's header (Content-Type)
	Size     int64
	path     string
}

// Open opens the spooled content.
func (f *File) Open() (multipart.File, error) { return os.Open(f.path) }

// form is a multipart body read by readMultipart: its plain values and its files.
type form struct {
	values map[string][]string
	files  map[string][]*File
}

const formKey = "web.form"

// errPartHeader stops a part header that does not end within maxPartHeader bytes.
var errPartHeader = errors.New("multipart part header too large")

// headerWindow passes reads through, except that while allow >= 0 it refuses to read past allow bytes: the
// header of one part is read under that bound (the standard reader would accept up to 10 MB of them).
type headerWindow struct {
	r     io.Reader
	n     int64
	allow int64
}

func (w *headerWindow) Read(p []byte) (int, error) {
	if w.allow >= 0 {
		left := w.allow - w.n
		if left <= 0 {
			return 0, errPartHeader
		}
		if int64(len(p)) > left {
			p = p[:left]
		}
	}
	n, err := w.r.Read(p)
	w.n += int64(n)
	return n, err
}

// readMultipart streams a multipart/form-data body: plain values (the `_json` part among them) are kept, at
// most the Body limit in all; file parts go to temporary files, each at most the route's file limit (Upload),
// or the request's body limit on other routes.
func readMultipart(c echo.Context, req *http.Request) (*form, error) {
	_, params, err := mime.ParseMediaType(req.Header.Get(echo.HeaderContentType))
	if err != nil || params["boundary"] == "" {
		return nil, apperr.New(apperr.BadRequest, "malformed multipart body: no boundary")
	}
	lim := limitsOf(c)
	b := limiterOf(c)
	valueMax, fileMax := lim.Body, lim.Body
	if b != nil {
		valueMax = min(lim.Body, b.limit)
		fileMax = b.limit
		if b.upload > 0 {
			fileMax = b.upload
		}
	}
	win := &headerWindow{r: req.Body, allow: -1}
	mr := multipart.NewReader(win, params["boundary"])
	fm := &form{values: map[string][]string{}, files: map[string][]*File{}}
	var valueBytes int64
	for parts := 0; ; parts++ {
		if parts > maxParts {
			return nil, apperr.Errorf(apperr.BadRequest, "malformed multipart body: more than %d parts", maxParts)
		}
		win.allow = win.n + maxPartHeader
		p, err := mr.NextPart()
		win.allow = -1
		if err == io.EOF { //nolint:errorlint // the clean end; a wrapped EOF is a truncated body
			break
		}
		if err != nil {
			if errors.Is(err, errPartHeader) {
				return nil, apperr.Errorf(apperr.BadRequest, "malformed multipart body: a part header is longer than %d bytes", maxPartHeader)
			}
			return nil, bodyError(err, "malformed multipart body")
		}
		name := p.FormName()
		if name == "" {
			continue // not a form field: NextPart skips its content
		}
		if p.FileName() == "" {
			var v []byte
			if b != nil { // held in the raw budget as it arrives; files go to disk
				v, err = b.readRaw(c.Request().Context(), p, valueMax-valueBytes)
			} else {
				v, err = io.ReadAll(io.LimitReader(p, valueMax-valueBytes+1))
			}
			if err != nil {
				return nil, bodyError(err, "malformed multipart body")
			}
			valueBytes += int64(len(v))
			if valueBytes > valueMax {
				return nil, errTooLarge(valueMax)
			}
			fm.values[name] = append(fm.values[name], string(v))
			continue
		}
		f, err := spool(b, p, fileMax)
		if err != nil {
			return nil, err
		}
		fm.files[name] = append(fm.files[name], f)
	}
	return fm, nil
}

// spool copies a file part to a temporary file, which the limiter removes when the request ends.
func spool(b *bodyLimiter, p *multipart.Part, max int64) (*File, error) {
	tmp, err := os.CreateTemp("", "upload-")
	if err != nil {
		return nil, fmt.Errorf("spool upload: %w", err)
	}
	if b != nil {
		b.files = append(b.files, tmp.Name())
	}
	n, err := io.Copy(tmp, io.LimitReader(p, max+1))
	if cerr := tmp.Close(); err == nil && cerr != nil {
		return nil, fmt.Errorf("spool upload: %w", cerr)
	}
	if err != nil {
		return nil, bodyError(err, "cannot read the uploaded file")
	}
	if n > max {
		return nil, apperr.Errorf(apperr.TooLarge, "uploaded file too large (limit %d bytes)", max)
	}
	return &File{Filename: p.FileName(), Header: p.Header, Size: n, path: tmp.Name()}, nil
}

// FormFile returns the uploaded file in the multipart part named one of names (first found), or nil.
func FormFile(c echo.Context, names ...string) (*File, error) {
	if _, err := Fields(c); err != nil {
		return nil, err
	}
	fm, _ := c.Get(formKey).(*form)
	if fm == nil {
		return nil, nil
	}
	for _, n := range names {
		if fh := fm.files[n]; len(fh) > 0 {
			return fh[0], nil
		}
	}
	return nil, nil
}
