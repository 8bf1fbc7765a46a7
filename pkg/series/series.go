// Package series reads a patch series file (patches/v<minor>/series), which
// the harness applies and hack/patchgen writes: one patch name a line, in
// order; blank lines and lines starting with # are skipped.
package series

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// File is the series file's name inside a series directory.
const File = "series"

// Read returns the patch names that dir/series lists, in order.
func Read(dir string) ([]string, error) {
	data, err := os.ReadFile(filepath.Join(dir, File))
	if err != nil {
		return nil, err
	}
	return Parse(string(data)), nil
}

// Parse returns the patch names a series file's content lists, in order.
func Parse(content string) []string {
	var names []string
	for _, line := range strings.Split(content, "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") {
			names = append(names, line)
		}
	}
	return names
}

var diffHeader = regexp.MustCompile(`(?m)^diff --git a/(\S+) b/(\S+)$`)

// TouchedFiles lists, sorted, the files the patches change, create or
// delete (both sides of every `diff --git` header).
func TouchedFiles(patches []string) ([]string, error) {
	seen := map[string]bool{}
	var files []string
	for _, p := range patches {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		for _, m := range diffHeader.FindAllStringSubmatch(string(data), -1) {
			for _, f := range m[1:] {
				if !seen[f] {
					seen[f] = true
					files = append(files, f)
				}
			}
		}
	}
	sort.Strings(files)
	return files, nil
}
