package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/pkg/protectzip"
	"github.com/openir/platform/pkg/web"
)

// downloadZip streams a stored file inside a zip protected by datastore.password (GET /api/datastorezip/{hash},
// the reference system's route that cortex4py and TheHive use to fetch samples): the same access as
// /api/datastore, the entry named after ?name= (reduced to a safe base name) or the hash. The archive is
// written as the file is read; a failure once the answer has started cuts it short (the client's unzip then
// reports a broken archive) and is logged.
func (h *handler) downloadZip(c echo.Context) error {
	r, info, err := h.jobs.OpenFile(c.Request().Context(), caller(c), web.Param(c, "hash"))
	if err != nil {
		return err
	}
	defer r.Close()
	entry := protectzip.EntryName(c.QueryParam("name"), info.ID)
	c.Response().Header().Set(echo.HeaderContentDisposition, protectzip.ContentDisposition(entry))
	c.Response().Header().Set(echo.HeaderContentType, "application/zip")
	c.Response().WriteHeader(http.StatusOK)
	if err := protectzip.Write(c.Response(), entry, h.downloadPassword(), r); err != nil {
		if h.cfg.Log != nil {
			h.cfg.Log.ErrorContext(c.Request().Context(), "datastorezip cut short", "file", info.ID, "err", err)
		}
	}
	return nil
}
