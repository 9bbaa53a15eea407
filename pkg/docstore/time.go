package docstore

import "time"

// Millis is a time as the stores keep it: epoch milliseconds, an integer on both engines (so it compares,
// sorts and indexes as a number); the zero time is 0.
func Millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// Time is the inverse of Millis: 0 is the zero time, others are UTC.
func Time(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}
