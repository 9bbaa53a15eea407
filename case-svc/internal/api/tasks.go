package api

import (
	"fmt"
	"mime"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/case-svc/internal/api/route"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/case-svc/internal/task"
	"github.com/openir/platform/pkg/web"
)

type taskResponse struct {
	route.Meta
	Title       string  `json:"title"`
	Group       string  `json:"group"`
	Description string  `json:"description"`
	Owner       *string `json:"owner"`
	Status      string  `json:"status"`
	Flag        bool    `json:"flag"`
	StartDate   *int64  `json:"startDate"`
	EndDate     *int64  `json:"endDate"`
	DueDate     *int64  `json:"dueDate"`
	Order       int     `json:"order"`
	Case        string  `json:"case"`
}

func taskJSON(t task.Task) taskResponse {
	return taskResponse{Meta: route.MetaOf(t.ID, "case_task", t.Meta), Title: t.Title, Group: t.Group,
		Description: t.Description, Owner: route.NullString(t.Owner), Status: t.Status, Flag: t.Flag,
		StartDate: route.NullMillis(t.StartDate), EndDate: route.NullMillis(t.EndDate), DueDate: route.NullMillis(t.DueDate),
		Order: t.Order, Case: t.CaseID}
}

type attachmentResponse struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	ContentType string   `json:"contentType"`
	Size        int64    `json:"size"`
	Hashes      []string `json:"hashes"`
}

type logResponse struct {
	route.Meta
	Message    string              `json:"message"`
	StartDate  int64               `json:"startDate"`
	Owner      string              `json:"owner"`
	Status     string              `json:"status"`
	Attachment *attachmentResponse `json:"attachment,omitempty"`
	Task       string              `json:"task"`
	Case       string              `json:"case"`
}

func logJSON(l task.Log) logResponse {
	r := logResponse{Meta: route.MetaOf(l.ID, "case_task_log", l.Meta), Message: l.Message, StartDate: route.Millis(l.Date),
		Owner: l.CreatedBy, Status: "Ok", Task: l.TaskID, Case: l.CaseID}
	if a := l.Attachment; a != nil {
		r.Attachment = &attachmentResponse{ID: a.ID, Name: a.Name, ContentType: a.ContentType, Size: a.Size, Hashes: a.Hashes}
	}
	return r
}

// createTaskJoined serves POST /api/case/{id}task, the contract's spelling: the router hands over "{id}task"
// as one parameter.
func (h *handler) createTaskJoined(c echo.Context) error {
	id, ok := strings.CutSuffix(c.Param("caseId"), "task")
	if !ok || id == "" {
		return echo.ErrNotFound
	}
	return h.createTaskIn(c, id)
}

func (h *handler) createTask(c echo.Context) error { return h.createTaskIn(c, c.Param("caseId")) }

func (h *handler) createTaskIn(c echo.Context, caseID string) error {
	var req route.TaskRequest
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	t, err := h.taskSvc.Create(c.Request().Context(), route.Caller(c), caseID, req.Input())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, taskJSON(t))
}

func (h *handler) listCaseTasks(c echo.Context) error { return h.tasks(c, c.Param("caseId")) }

func (h *handler) listTasks(c echo.Context) error { return h.tasks(c, "") }

func (h *handler) tasks(c echo.Context, caseID string) error {
	if err := rewriteSearchQuery(c); err != nil { // _parent (thehive4py's find_tasks), _is, _ne
		return err
	}
	f, p, err := web.Search(c, task.Fields, h.max)
	if err != nil {
		return err
	}
	ts, total, err := h.taskSvc.List(c.Request().Context(), route.Caller(c), caseID, f, p)
	if err != nil {
		return err
	}
	return web.List(c, total, route.MapSlice(ts, taskJSON))
}

func (h *handler) getTask(c echo.Context) error {
	t, err := h.taskSvc.Task(c.Request().Context(), route.Caller(c), c.Param("taskId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, taskJSON(t))
}

type updateTaskRequest struct {
	Title       web.Opt[string] `json:"title"`
	Group       web.Opt[string] `json:"group"`
	Description web.Opt[string] `json:"description"`
	Owner       web.Opt[string] `json:"owner"`
	Assignee    web.Opt[string] `json:"assignee"`
	Status      web.Opt[string] `json:"status"`
	Flag        web.Opt[bool]   `json:"flag"`
	StartDate   web.Opt[int64]  `json:"startDate"`
	EndDate     web.Opt[int64]  `json:"endDate"`
	DueDate     web.Opt[int64]  `json:"dueDate"`
	Order       web.Opt[int]    `json:"order"`
}

func (h *handler) updateTask(c echo.Context) error {
	var req updateTaskRequest
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	if !req.Owner.Set {
		req.Owner = req.Assignee
	}
	t, err := h.taskSvc.Update(c.Request().Context(), route.Caller(c), c.Param("taskId"), task.Update{
		Title: route.Change(req.Title), Group: route.Change(req.Group), Description: route.Change(req.Description),
		Owner: route.Change(req.Owner), Status: route.Change(req.Status), Flag: route.Change(req.Flag),
		StartDate: route.TimeChange(req.StartDate), EndDate: route.TimeChange(req.EndDate), DueDate: route.TimeChange(req.DueDate),
		Order: route.Change(req.Order)})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, taskJSON(t))
}

// --- logs ---

type createLogRequest struct {
	Message string `json:"message"`
}

// createLog takes JSON, or multipart with the fields in `_json` (or plain parts) and the file in `attachment`.
func (h *handler) createLog(c echo.Context) error {
	var req createLogRequest
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	fh, err := web.FormFile(c, "attachment")
	if err != nil {
		return err
	}
	var up *record.Upload
	if fh != nil {
		f, err := fh.Open()
		if err != nil {
			return fmt.Errorf("open uploaded file: %w", err)
		}
		defer f.Close()
		up = &record.Upload{Name: fh.Filename, ContentType: fh.Header.Get(echo.HeaderContentType), Body: f}
	}
	l, err := h.taskSvc.CreateLog(c.Request().Context(), route.Caller(c), c.Param("taskId"), req.Message, up)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, logJSON(l))
}

func (h *handler) listTaskLogs(c echo.Context) error { return h.logs(c, c.Param("taskId")) }

func (h *handler) listLogs(c echo.Context) error { return h.logs(c, "") }

func (h *handler) logs(c echo.Context, taskID string) error {
	if err := rewriteSearchQuery(c); err != nil { // _parent with _type case_task, _is, _ne
		return err
	}
	f, p, err := web.Search(c, task.LogFields, h.max)
	if err != nil {
		return err
	}
	ls, total, err := h.taskSvc.Logs(c.Request().Context(), route.Caller(c), taskID, f, p)
	if err != nil {
		return err
	}
	return web.List(c, total, route.MapSlice(ls, logJSON))
}

func (h *handler) getLog(c echo.Context) error {
	l, err := h.taskSvc.Log(c.Request().Context(), route.Caller(c), c.Param("logId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, logJSON(l))
}

type updateLogRequest struct {
	Message *string `json:"message"`
}

// updateLog changes a log's message (PATCH /api/case/task/log/{id}); without a message the log is answered as
// it is.
func (h *handler) updateLog(c echo.Context) error {
	var req updateLogRequest
	if err := web.Bind(c, &req); err != nil {
		return err
	}
	ctx, cl := c.Request().Context(), route.Caller(c)
	var (
		l   task.Log
		err error
	)
	if req.Message == nil {
		if err = cl.Require(identity.ManageTask); err == nil {
			l, err = h.taskSvc.Log(ctx, cl, c.Param("logId"))
		}
	} else {
		l, err = h.taskSvc.UpdateLog(ctx, cl, c.Param("logId"), *req.Message)
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, logJSON(l))
}

func (h *handler) deleteLog(c echo.Context) error {
	if err := h.taskSvc.DeleteLog(c.Request().Context(), route.Caller(c), c.Param("logId")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// download streams an attached file (GET /api/datastore/{id}?name=), as the reference system does.
func (h *handler) download(c echo.Context) error {
	r, a, err := h.svc.Attachment(c.Request().Context(), route.Caller(c), c.Param("fileId"))
	if err != nil {
		return err
	}
	defer r.Close()
	name := c.QueryParam("name")
	if name == "" {
		name = a.Name
	}
	c.Response().Header().Set(echo.HeaderContentDisposition, mime.FormatMediaType("attachment", map[string]string{"filename": name}))
	return c.Stream(http.StatusOK, "application/octet-stream", r)
}
