package analysissvc

import (
	"context"
	"io"
	"time"

	"github.com/openir/platform/case-svc/internal/connector"
)

// Adapter presents a Client as an connector.AnalysisServer.
type Adapter struct{ *Client }

var _ connector.AnalysisServer = Adapter{}

// Serves reports whether the server is open to the organisation.
func (a Adapter) Serves(org string) bool { return a.srv.Serves(org) }

// Workers lists analyzers or responders, of a data type or all.
func (a Adapter) Workers(ctx context.Context, responder bool, dataType string) ([]connector.RemoteWorker, error) {
	var ws []Worker
	var err error
	switch {
	case responder && dataType == "":
		ws, err = a.Responders(ctx)
	case responder:
		ws, err = a.RespondersFor(ctx, dataType)
	case dataType == "":
		ws, err = a.Analyzers(ctx)
	default:
		ws, err = a.AnalyzersFor(ctx, dataType)
	}
	if err != nil {
		return nil, err
	}
	out := make([]connector.RemoteWorker, len(ws))
	for i, w := range ws {
		out[i] = connector.RemoteWorker{ID: w.ID, Name: w.Name, Version: w.Version, Description: w.Description,
			DefinitionID: w.DefinitionID, DataTypeList: w.DataTypeList, MaxTLP: w.MaxTLP, MaxPAP: w.MaxPAP}
	}
	return out, nil
}

// Run creates a job.
func (a Adapter) Run(ctx context.Context, responder bool, workerID string, r connector.RemoteRequest, key string) (connector.RemoteJob, error) {
	req := JobRequest{DataType: r.DataType, Data: r.Data, TLP: r.TLP, PAP: r.PAP, Message: r.Message, Parameters: r.Parameters}
	if r.File != nil {
		req.File = &File{Name: r.File.Name, ContentType: r.File.ContentType, Open: r.File.Open}
	}
	var j ServerJob
	var err error
	if responder {
		j, err = a.RunResponder(ctx, workerID, req, key)
	} else {
		j, err = a.RunAnalyzer(ctx, workerID, req, key)
	}
	return remote(j), err
}

// WaitReport long-polls a job.
func (a Adapter) WaitReport(ctx context.Context, jobID string, atMost time.Duration) (connector.RemoteJob, error) {
	j, err := a.Client.WaitReport(ctx, jobID, atMost)
	return remote(j), err
}

// Download fetches a file.
func (a Adapter) Download(ctx context.Context, id string) (io.ReadCloser, error) {
	return a.Client.Download(ctx, id)
}

func millis(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

func remote(j ServerJob) connector.RemoteJob {
	r := connector.RemoteJob{ID: j.ID, Status: j.Status, WorkerID: j.AnalyzerID, WorkerName: j.AnalyzerName,
		DefinitionID: j.AnalyzerDefinitionID, StartDate: millis(j.StartDate), EndDate: millis(j.EndDate)}
	if j.ResponderID != "" {
		r.WorkerID, r.WorkerName = j.ResponderID, j.ResponderName
	}
	if rep := j.Report; rep != nil {
		rr := &connector.RemoteReport{Success: rep.Success, Summary: rep.Summary, Full: rep.Full, Operations: rep.Operations,
			ErrorMessage: rep.ErrorMessage}
		for _, art := range rep.Artifacts {
			ra := connector.RemoteArtifact{DataType: art.DataType, Data: art.Data, Message: art.Message, TLP: art.TLP, Tags: art.Tags}
			if at := art.Attachment; at != nil {
				ra.FileID, ra.FileName, ra.ContentType = at.ID, at.Name, at.ContentType
			}
			rr.Artifacts = append(rr.Artifacts, ra)
		}
		r.Report = rr
	}
	return r
}
