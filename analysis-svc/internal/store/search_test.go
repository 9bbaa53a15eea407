package store

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/search"
)

// Search reads the queue and the finished jobs; its total counts each job once, also a job caught between
// its end written to jobs and its removal from the queue, with the filters clients use (which the jobs tally
// serves on SQLite) and with one it does not hold.
func TestJobStore_SearchTotal(t *testing.T) {
	ctx := context.Background()
	s := newJobStore(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	for i, id := range []string{"d1", "d2"} {
		c := queueAndClaim(t, s, id, now.Add(time.Minute), now.Add(time.Duration(i)*time.Second))
		c.Status, c.EndDate = analysis.JobSuccess, now
		if err := s.Finish(ctx, c, &analysis.Report{Success: true}, "w1"); err != nil {
			t.Fatal(err)
		}
	}
	queued := []analysis.Job{}
	for i, id := range []string{"q1", "q2", "q3"} {
		j := analysis.Job{ID: id, Kind: analysis.KindAnalyzer, Organization: "o", DataType: "ip", Status: analysis.JobWaiting,
			CreatedAt: now.Add(time.Duration(10+i) * time.Second), Parameters: map[string]any{}}
		if err := s.Enqueue(ctx, j); err != nil {
			t.Fatal(err)
		}
		queued = append(queued, j)
	}
	other := analysis.Job{ID: "x1", Kind: analysis.KindAnalyzer, Organization: "o2", Status: analysis.JobWaiting, CreatedAt: now,
		Parameters: map[string]any{}}
	if err := s.Enqueue(ctx, other); err != nil {
		t.Fatal(err)
	}
	// q3's end is in jobs, and q3 is still in the queue.
	end := queued[2]
	end.Status, end.EndDate = analysis.JobSuccess, now
	d, err := toJobDoc(end)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.jobs.Insert(ctx, d); err != nil {
		t.Fatal(err)
	}
	org := docstore.Eq("organization", "o")
	for _, tc := range []struct {
		name string
		f    search.Node
		want []string
	}{
		{"the organization", org, []string{"d1", "d2", "q1", "q2", "q3"}},
		{"not Deleted", docstore.And(org, docstore.Not(docstore.Eq("status", analysis.JobDeleted))), []string{"d1", "d2", "q1", "q2", "q3"}},
		// The queue's q3 is Waiting, its end in jobs Success: a search for Success finds the end.
		{"Success", docstore.And(org, docstore.Eq("status", analysis.JobSuccess)), []string{"d1", "d2", "q3"}},
		{"Waiting, ip", docstore.And(org, docstore.Eq("status", analysis.JobWaiting), docstore.Eq("dataType", "ip")), []string{"q1", "q2", "q3"}},
		{"a path the tally does not hold", docstore.And(org, docstore.Gte("createdAt", now.Add(10*time.Second).UnixMilli())), []string{"q1", "q2", "q3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, p := range []search.Page{{Limit: 50}, {Offset: 1, Limit: 2}} {
				got, total, err := s.Search(ctx, tc.f, search.Page{Offset: p.Offset, Limit: p.Limit, Sort: []search.SortKey{{Path: "createdAt"}}})
				if err != nil {
					t.Fatal(err)
				}
				var ids []string
				for _, j := range got {
					ids = append(ids, j.ID)
				}
				want := tc.want[min(p.Offset, len(tc.want)):min(p.Offset+p.Limit, len(tc.want))]
				if total != int64(len(tc.want)) || !slices.Equal(ids, want) {
					t.Errorf("page %+v: %q, total %d; want %q, total %d", p, ids, total, want, len(tc.want))
				}
			}
		})
	}
}

// While queued jobs end (their end written to jobs, then their queue entry removed), every search of all of
// them answers each job once, and its total is the number of jobs: the count of the ended ones and the page
// agree with the queue the search read.
func TestJobStore_SearchWhileJobsEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := newJobStore(t)
	const n = 40
	now := time.Now().UTC().Truncate(time.Millisecond)
	for i := range n {
		j := analysis.Job{ID: fmt.Sprintf("j%02d", i), Kind: analysis.KindAnalyzer, Organization: "o", DataType: "ip",
			Status: analysis.JobWaiting, CreatedAt: now.Add(time.Duration(i) * time.Millisecond), Parameters: map[string]any{}}
		if err := s.Enqueue(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() {
		for range n {
			c, err := s.Claim(ctx, "w1", now.Add(time.Minute), now, analysis.ClaimRule{})
			if err == nil {
				c.Status, c.EndDate = analysis.JobSuccess, now
				err = s.Finish(ctx, c, &analysis.Report{Success: true}, "w1")
			}
			if err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	f := docstore.And(docstore.Eq("organization", "o"), docstore.Not(docstore.Eq("status", analysis.JobDeleted)))
	for ended := false; !ended; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			ended = true
		default:
		}
		got, total, err := s.Search(ctx, f, search.Page{Limit: 0, Sort: []search.SortKey{{Path: "createdAt"}}})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, j := range got {
			seen[j.ID] = true
		}
		if total != n || len(got) != n || len(seen) != n {
			t.Fatalf("search while jobs end: %d jobs (%d distinct), total %d; want %d", len(got), len(seen), total, n)
		}
	}
}
