package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/case-svc/internal/api/route"
	"github.com/openir/platform/pkg/protectzip"
)

// downloadZip streams a file of the organisation (an observable's or a task log's attachment) inside a zip
// protected by datastore.password (GET /api/datastorezip/{id}?name=, which thehive4py's
// download_observable_attachment uses): the access of /api/datastore, the entry named after ?name= (reduced
// to a safe base name) or the file's hash. The archive is written as the file is read; a failure once the
// answer has started cuts it short (the client's unzip then reports a broken archive) and is logged.
func (h *handler) downloadZip(c echo.Context) error {
	r, a, err := h.svc.Attachment(c.Request().Context(), route.Caller(c), c.Param("fileId"))
	if err != nil {
		return err
	}
	defer r.Close()
	entry := protectzip.EntryName(c.QueryParam("name"), a.ID)
	c.Response().Header().Set(echo.HeaderContentDisposition, protectzip.ContentDisposition(entry))
	c.Response().Header().Set(echo.HeaderContentType, "application/zip")
	c.Response().WriteHeader(http.StatusOK)
	if err := protectzip.Write(c.Response(), entry, h.downloadPassword(), r); err != nil && h.cfg.Log != nil {
		h.cfg.Log.ErrorContext(c.Request().Context(), "datastorezip cut short", "file", a.ID, "err", err)
	}
	return nil
}

func (h *handler) downloadPassword() string {
	return protectzip.Password(h.cfg.DownloadPassword)
}
