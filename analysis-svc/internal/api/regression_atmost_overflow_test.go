package api

// Regression (found by FuzzParseAtMost, input "1000000d"; crash file in
// /tmp/analysis-bugs/testdata/fuzz/FuzzParseAtMost/9ada1c62fb563ded — copy it to
// internal/api/testdata/fuzz/FuzzParseAtMost/ to keep it as a seed): parseAtMost (internal/api/jobs.go) allows
// n ≤ 1e6 of any unit, but n × 24h overflows time.Duration from n = 106752 days: "1000000d" gives
// -1620477h52m48.55s, "300000days" gives a positive 86496 days. WaitReport then treats a negative value as Inf
// and caps a positive one at job.waitreport.max, which hides it today, but the function's result is wrong.
// Request: GET /api/job/{id}/waitreport?atMost=1000000d → today waits job.waitreport.max through the negative
// value. Expected: either 400 BadRequest (value out of range) or the cap, with parseAtMost never returning a
// negative duration other than -1 (check n against math.MaxInt64/unit, or cap at the maximum).
//
// Save as internal/api/atmost_overflow_test.go once fixed.

import "testing"

func TestRegression_ParseAtMostDoesNotOverflow(t *testing.T) {
	for _, s := range []string{"106752d", "200000days", "300000day", "1000000d"} {
		d, err := parseAtMost(s)
		if err == nil && d < 0 {
			t.Errorf("parseAtMost(%q) = %v: overflowed", s, d)
		}
		if err == nil && d > 0 && d < 106751*24*3600*1e9 {
			t.Errorf("parseAtMost(%q) = %v: wrapped", s, d)
		}
	}
}
