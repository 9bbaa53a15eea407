package benchkit

// The web interface rows of both bench programs: a page rendered by the server against the API request that
// returns the same data (same filter, sort and page), timed one after the other by the same client in the
// same run, so that both see the same machine load.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// PageVsAPI is a page and the API request that returns its data.
type PageVsAPI struct {
	Metric string // the row's name (" p50", " p99" are added)
	Page   string // GET path of the page
	Method string // the API request
	API    string
	Body   any
	// Check is given the page's and the API's bodies of the warm-up: it says what of the API's answer the
	// page does not show (nil: all of it).
	Check   func(page, api []byte) error
	FloorIs string // the API request, in words
	Note    string
	// Lat and APILat are the timed requests of the page and of the API.
	Lat, APILat []time.Duration
}

// Time GETs the page and sends the API request reps times each, alternated, after one of each as a warm-up
// (not counted) whose bodies go to Check. Every answer must be 200, the page's text/html.
func (p *PageVsAPI) Time(ctx context.Context, c *Client, reps int) error {
	for k := range reps + 1 {
		var page, api *Response
		d, err := Timed(func() error {
			var err error
			page, err = c.Call(ctx, http.MethodGet, p.Page, nil, http.StatusOK, nil)
			return err
		})
		if err != nil {
			return err
		}
		if ct := page.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
			return fmt.Errorf("GET %s: Content-Type %q", p.Page, ct)
		}
		ad, err := Timed(func() error {
			var err error
			api, err = c.Call(ctx, p.Method, p.API, p.Body, http.StatusOK, nil)
			return err
		})
		if err != nil {
			return err
		}
		if k == 0 { // the page shows what the API answers
			if err := p.Check(page.Body, api.Body); err != nil {
				return fmt.Errorf("GET %s (%d bytes) against %s %s: %w", p.Page, len(page.Body), p.Method, p.API, err)
			}
			continue
		}
		p.Lat, p.APILat = append(p.Lat, d), append(p.APILat, ad)
	}
	return nil
}

// AddRows logs p's medians and adds its p50 and p99 rows to r under section, the API request as the floor.
func (p *PageVsAPI) AddRows(r *Run, section string) {
	r.Logf("  %s: p50 %.1f ms, API p50 %.1f ms", p.Metric, Percentile(p.Lat, .5), Percentile(p.APILat, .5))
	for _, q := range []float64{.5, .99} {
		name := fmt.Sprintf("p%d", int(q*100))
		r.Add(TimeKind, section, p.Metric+" "+name, "ms", Percentile(p.Lat, q), Percentile(p.APILat, q), p.FloorIs+" "+name,
			fmt.Sprintf("%d of each, one client, alternated; %s", len(p.Lat), p.Note))
	}
}

// ListItems is the Check of a list page: the API answers a JSON array of want items, and the page holds
// show(item) for each.
func ListItems(want int, show func(item map[string]any) string) func(page, api []byte) error {
	return func(page, api []byte) error {
		var items []map[string]any
		if err := json.Unmarshal(api, &items); err != nil {
			return fmt.Errorf("the API's answer: %w", err)
		}
		if len(items) != want {
			return fmt.Errorf("the API answers %d items, want %d", len(items), want)
		}
		body := string(page)
		for _, it := range items {
			if s := show(it); !strings.Contains(body, s) {
				return fmt.Errorf("no %s in the page", s)
			}
		}
		return nil
	}
}
