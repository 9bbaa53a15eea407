package search

import (
	"reflect"
	"testing"
)

func TestParseRange(t *testing.T) {
	tests := []struct {
		in            string
		max           int
		offset, limit int
	}{
		{"", 100, 0, 10},
		{"", 5, 0, 5},
		{"all", 100, 0, 100},
		{"ALL", 100, 0, 100},
		{"0-10", 100, 0, 10},
		{"10-25", 100, 10, 15},
		{"0-1", 100, 0, 1},
		{"0-1000", 100, 0, 100},
		{"5", 100, 5, 10},
		{"5", 3, 5, 3},
		{"007-010", 100, 7, 3},
		{"9223372036854775806-9223372036854775807", 100, 9223372036854775806, 1},
		{"0-10", 0, 0, 1}, // max below 1 counts as 1
		{"all", -5, 0, 1},
	}
	for _, tt := range tests {
		off, lim, err := ParseRange(tt.in, tt.max)
		if err != nil || off != tt.offset || lim != tt.limit {
			t.Errorf("ParseRange(%q, %d) = %d, %d, %v; want %d, %d", tt.in, tt.max, off, lim, err, tt.offset, tt.limit)
		}
	}
	for _, in := range []string{
		"-1", "-1-5", "1--5", "5-5", "6-5", "10-0", "a", "1-b", "1-", "-", "1-2-3", " 1-2", "1-2 ", "+1-2", "1-+2",
		"1.5-3", "0x1-2", "99999999999999999999", "0-99999999999999999999", "al", "all-10", "1e3", "１-２",
	} {
		_, _, err := ParseRange(in, 100)
		checkBadRequest(t, err, "invalid range")
	}
}

func TestParseSort(t *testing.T) {
	tests := []struct {
		specs []string
		want  []SortKey
	}{
		{nil, nil},
		{[]string{""}, nil},
		{[]string{" , ,"}, nil},
		{[]string{"title"}, []SortKey{{Path: "title"}}},
		{[]string{"+title"}, []SortKey{{Path: "title"}}},
		{[]string{" title"}, []SortKey{{Path: "title"}}}, // "+title" after query-string decoding
		{[]string{"-_createdAt"}, []SortKey{{Path: "createdAt", Desc: true}}},
		{[]string{"-severity", "+title"}, []SortKey{{Path: "severity", Desc: true}, {Path: "title"}}},
		{[]string{"-severity,title, -owner"}, []SortKey{{Path: "severity", Desc: true}, {Path: "title"}, {Path: "owner.login", Desc: true}}},
		{[]string{"-title", "title", "+title,-title"}, []SortKey{{Path: "title", Desc: true}}},
		{[]string{"", "status", ""}, []SortKey{{Path: "status"}}},
	}
	for _, tt := range tests {
		got, err := ParseSort(tt.specs, testFields)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseSort(%q) = %v, %v; want %v", tt.specs, got, err, tt.want)
		}
	}
	bads := []struct {
		specs []string
		want  string
	}{
		{[]string{"nope"}, `unknown field "nope"`},
		{[]string{"title,-nope"}, `unknown field "nope"`},
		{[]string{"-"}, "missing field name"},
		{[]string{"+"}, "missing field name"},
		{[]string{"title", "--title"}, `unknown field "-title"`},
		{[]string{"$natural"}, `invalid field name "$natural"`},
		{[]string{"-$where"}, `invalid field name "$where"`},
	}
	for _, tt := range bads {
		_, err := ParseSort(tt.specs, testFields)
		checkBadRequest(t, err, tt.want)
	}
}
