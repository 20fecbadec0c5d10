package dlock_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dlock.dev/dlock/internal/servers"
)

// docs/go.md shows the example programs as they are (one source: the files the tests build).
func TestDocsShowTheExamplesAsTheyAre(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(servers.Repo(), "docs/go.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, example := range []string{"examples/quorum/main.go", "examples/redsync/main.go", "examples/election/main.go", "examples/sets/main.go", "examples/goredis/main.go"} {
		code, err := os.ReadFile(example)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(doc), "```go example=go/"+example+"\n"+string(code)+"```") {
			t.Errorf("docs/go.md does not show %s as it is", example)
		}
	}
}
