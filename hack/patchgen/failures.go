package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
)

// renderedHook is one hook of a row's series: the variant it was rendered
// from and the rendered patch.
type renderedHook struct {
	hook    string // the hook directory's name
	variant string // patches/hooks/<hook>/v1.<minor>.patch
	path    string // the rendered patch
}

// hookFailure is a hook whose variant does not apply to a tree.
type hookFailure struct {
	hook, variant string
	rejects       []string // "file: hunk #N (@@ ... @@)" or git apply's own words
	err           error
}

// hooksError lists every hook of a series that does not apply: the hook
// needs a new variant (patches/hooks/README.md, "Adding a variant").
type hooksError struct {
	tag    string
	failed []hookFailure
}

func (e *hooksError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d hook(s) do not apply on top of the library patch to %s: write a variant v1.<minor>.patch for each (patches/hooks/README.md)", len(e.failed), e.tag)
	for _, f := range e.failed {
		fmt.Fprintf(&b, "\n  hook %s (from %s):", f.hook, f.variant)
		if len(f.rejects) == 0 {
			fmt.Fprintf(&b, "\n    %v", f.err)
		}
		for _, r := range f.rejects {
			fmt.Fprintf(&b, "\n    %s", r)
		}
	}
	return b.String()
}

// rejectedHunks aborts the failed `git am` and applies the patch with
// --reject to learn which hunks fail, then puts the work tree back.
func rejectedHunks(ctx context.Context, git func(context.Context, []string, ...string) error, patch string) ([]string, error) {
	if err := git(ctx, nil, "am", "--abort"); err != nil {
		return nil, err
	}
	applyErr := git(ctx, nil, "apply", "--reject", "--verbose", patch)
	if err := git(ctx, nil, "reset", "-q", "--hard"); err != nil {
		return nil, err
	}
	if err := git(ctx, nil, "clean", "-q", "-fdx"); err != nil {
		return nil, err
	}
	if applyErr == nil {
		// git am refused something git apply accepts (a mail header,
		// say): nothing to point at.
		return nil, nil
	}
	var ee *exec.Error
	if !errors.As(applyErr, &ee) {
		return nil, applyErr
	}
	return parseRejects(ee.Stderr), nil
}

var (
	checkingRE = regexp.MustCompile(`^Checking patch (.+)\.\.\.$`)
	failedRE   = regexp.MustCompile(`^error: (while searching for:|patch failed: |.*: (does not exist in index|No such file or directory|already exists in working directory|patch does not apply))`)
	rejectedRE = regexp.MustCompile(`^Rejected hunk #(\d+)\.$`)
	applyingRE = regexp.MustCompile(`^Applying patch (.+) with \d+ rejects?\.\.\.$`)
)

// parseRejects reads `git apply --reject --verbose`'s stderr: the hunks it
// rejected, by file, and the files it could not patch at all.
func parseRejects(stderr string) []string {
	var out []string
	file := ""
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, line := range strings.Split(stderr, "\n") {
		line = strings.TrimRight(line, "\r")
		switch {
		case checkingRE.MatchString(line):
			file = checkingRE.FindStringSubmatch(line)[1]
		case applyingRE.MatchString(line):
			file = applyingRE.FindStringSubmatch(line)[1]
		case rejectedRE.MatchString(line):
			add(fmt.Sprintf("%s: hunk #%s rejected", file, rejectedRE.FindStringSubmatch(line)[1]))
		case strings.HasPrefix(line, "error: patch failed: "):
			add("patch failed at " + strings.TrimPrefix(line, "error: patch failed: "))
		case failedRE.MatchString(line) && !strings.HasPrefix(line, "error: while searching for:"):
			add(strings.TrimPrefix(line, "error: "))
		}
	}
	return out
}
