package deb

import (
	"flag"
	"os"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

var updateReleases = flag.Bool("update-releases", false, "raise the revision in releases.txt of every group whose content changed (make deb-releases)")

// TestReleasesUpToDate: releases.txt records the content of every group as
// it is; with -update-releases it raises the revisions that are out of
// date instead.
func TestReleasesUpToDate(t *testing.T) {
	onDisk, err := os.ReadFile("releases.txt")
	assert.NilError(t, err)
	if *updateReleases {
		table, bumped, err := BumpReleases(onDisk, Config{})
		assert.NilError(t, err)
		assert.NilError(t, os.WriteFile("releases.txt", table, 0o644))
		t.Logf("releases.txt: raised %v; rebuild (go test) to embed it", bumped)
		return
	}
	table, bumped, err := BumpReleases(ReleaseTable, Config{})
	assert.NilError(t, err)
	assert.Check(t, is.Len(bumped, 0), "run make deb-releases")
	assert.Check(t, is.Equal(string(table), string(ReleaseTable)), "releases.txt is not as make deb-releases writes it")
}
