package search

// Page is the slice of a list a caller asked for, from `range` and `sort`.
type Page struct {
	Offset int
	Limit  int
	Sort   []SortKey
}
