package docstore

// The engines are in sqlite.go and mongo.go.
