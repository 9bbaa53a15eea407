package api_test

import (
	"net/http"
	"testing"
	"time"
)

// pollUntil polls a stream until a message satisfies last (30 s), and returns every message it got on the way.
func pollUntil(t *testing.T, as *client, stream string, last func(map[string]any) bool) []map[string]any {
	t.Helper()
	var got []map[string]any
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		for _, m := range as.Call(t, http.MethodGet, "/api/stream/"+stream, nil).Want(t, http.StatusOK).List(t) {
			got = append(got, m)
			if last(m) {
				return got
			}
		}
	}
	t.Fatalf("the stream did not show the awaited message; it showed %v", got)
	return nil
}

// TestStream_JobStartedAndDeleted: a job that runs shows one start (Update to InProgress) on its
// organisation's stream, and a job deleted twice one Delete, as Cortex's stream shows them; the other
// organisation's stream sees none of it. Each stream is read up to a later job of its own organisation (the
// tailer hands events over in date order), so "exactly one" and "none" are checked without waiting for time.
func TestStream_JobStartedAndDeleted(t *testing.T) {
	f := newEventFixture(t, noAdjust)
	st := f.reads.Call(t, http.MethodPost, "/api/stream", nil).Want(t, http.StatusOK).Text(t)
	otherSt := f.other.Call(t, http.MethodPost, "/api/stream", nil).Want(t, http.StatusOK).Text(t)

	id := f.run(t, f.analyst, map[string]any{"dataType": "ip", "data": "10.0.0.1"})["id"].(string)
	if j := f.wait(t, f.analyst, id); j["status"] != "Success" {
		t.Fatalf("job %v", j)
	}
	f.analyst.Call(t, http.MethodDelete, "/api/job/"+id, nil).Want(t, http.StatusNoContent)
	f.admin.Call(t, http.MethodDelete, "/api/job/"+id, nil).Want(t, http.StatusNoContent) // no second event
	f.other.Call(t, http.MethodDelete, "/api/job/"+id, nil).WantError(t, http.StatusNotFound, "NotFoundError")
	if j := f.reads.Call(t, http.MethodGet, "/api/job/"+id, nil).Want(t, http.StatusOK).Object(t); j["status"] != "Deleted" {
		t.Fatalf("job after the deletion %v", j)
	}
	// The marks: one later job in each organisation.
	mark := f.run(t, f.analyst, map[string]any{"dataType": "ip", "data": "10.0.0.2"})["id"].(string)
	otherMark := f.other.Call(t, http.MethodPost, "/api/analyzer/"+f.otherAnalyzer+"/run", map[string]any{"dataType": "ip", "data": "10.0.0.3"}).
		Want(t, http.StatusOK).Object(t)["id"].(string)
	created := func(job string) func(map[string]any) bool {
		return func(m map[string]any) bool { return m["objectId"] == job && m["operation"] == "Creation" }
	}

	var started, deleted []map[string]any
	var last float64
	for _, m := range pollUntil(t, f.reads, st, created(mark)) {
		if m["organisation"] != "soc" || m["objectType"] != "job" {
			t.Errorf("soc's stream got %v", m)
		}
		if m["objectId"] != id {
			continue
		}
		// The job's changes arrive in the order they were made (creation, start, end, deletion).
		if at, _ := m["startDate"].(float64); at < last {
			t.Errorf("%s %v dated %v arrived after a change dated %v", m["operation"], m["details"], at, last)
		} else {
			last = at
		}
		d, _ := m["details"].(map[string]any)
		switch {
		case m["operation"] == "Update" && d["status"] == "InProgress":
			started = append(started, m)
		case m["operation"] == "Delete":
			deleted = append(deleted, m)
		}
	}
	if len(started) != 1 || len(deleted) != 1 {
		t.Fatalf("the job's starts %v and deletions %v, want one of each", started, deleted)
	}
	s := started[0]
	if d := s["details"].(map[string]any); d["startDate"] == nil {
		t.Errorf("start without its date: %v", s)
	}
	if o, _ := s["object"].(map[string]any); o["id"] != id || o["status"] != "InProgress" || s["base"] != true {
		t.Errorf("start %v", s)
	}
	d := deleted[0]
	if o, _ := d["object"].(map[string]any); o["id"] != id || o["status"] != "Deleted" || d["createdBy"] != "soc-analyst" {
		t.Errorf("deletion %v", d)
	}

	for _, m := range pollUntil(t, f.other, otherSt, created(otherMark)) {
		if m["organisation"] != "other" || m["objectId"] != otherMark {
			t.Errorf("the other organisation's stream got %v", m)
		}
	}
}
