package report

func ptr[T any](v T) *T { return &v }
