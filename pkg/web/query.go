package web

import "net/url"

func urlParseQuery(s string) (map[string][]string, error) { return url.ParseQuery(s) }
