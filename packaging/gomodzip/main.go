// Command gomodzip writes a Go module's zip as a module proxy serves it (golang.org/x/mod/zip:
// the same rules `go mod download` checks), for make dist's file-based module proxy:
//
//	gomodzip -module dlock.dev/dlock -version v0.5.0 -dir go -out v0.5.0.zip
//
// It prints what the rules leave out (nested modules, vendor/, VCS folders) and fails on any
// file they refuse.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"

	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

func main() {
	path := flag.String("module", "", "the module path")
	version := flag.String("version", "", "the version, vX.Y.Z")
	dir := flag.String("dir", "", "the module's folder (its go.mod)")
	out := flag.String("out", "", "the zip to write")
	flag.Parse()
	if *path == "" || *version == "" || *dir == "" || *out == "" {
		flag.Usage()
		os.Exit(2)
	}
	mod := module.Version{Path: *path, Version: *version}
	if err := module.Check(mod.Path, mod.Version); err != nil {
		log.Fatal(err)
	}
	checked, err := zip.CheckDir(*dir)
	for _, omitted := range checked.Omitted {
		fmt.Printf("gomodzip: left out %s (%v)\n", omitted.Path, omitted.Err)
	}
	if err != nil {
		log.Fatalf("gomodzip: %s cannot be a module zip: %v", *dir, checked.Err())
	}
	f, err := os.Create(*out)
	if err != nil {
		log.Fatal(err)
	}
	if err := zip.CreateFromDir(f, mod, *dir); err != nil {
		f.Close()
		os.Remove(*out)
		log.Fatalf("gomodzip: %v", err)
	}
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("gomodzip: %s %s: %d files\n", mod.Path, mod.Version, len(checked.Valid))
}
