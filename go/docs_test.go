package dlock_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dlock.dev/dlock/internal/servers"
)

// docs/go.md and its pages (docs/go/*.md) show the example programs as they are (one source:
// the files the tests build).
func TestDocsShowTheExamplesAsTheyAre(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join(servers.Repo(), "docs/go/*.md"))
	if err != nil {
		t.Fatal(err)
	}
	var doc strings.Builder
	for _, page := range append([]string{filepath.Join(servers.Repo(), "docs/go.md")}, pages...) {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		doc.Write(text)
	}
	for _, example := range []string{"examples/quorum/main.go", "examples/redsync/main.go", "examples/election/main.go", "examples/sets/main.go", "examples/goredis/main.go"} {
		code, err := os.ReadFile(example)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(doc.String(), "```go example=go/"+example+"\n"+string(code)+"```") {
			t.Errorf("docs/go.md and docs/go/*.md do not show %s as it is", example)
		}
	}
}
