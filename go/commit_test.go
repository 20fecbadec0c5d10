package dlock_test

import (
	"context"
	"testing"

	"dlock.dev/dlock"
)

// tokenOf is lock's token, read as an application reads it (a commit owed is paid here); a
// failure fails the test (t.Error: safe from any goroutine).
func tokenOf(t testing.TB, lock *dlock.Lock) uint64 {
	t.Helper()
	token, err := lock.Token(context.Background())
	if err != nil {
		t.Errorf("reading the token: %v", err)
	}
	return token
}
