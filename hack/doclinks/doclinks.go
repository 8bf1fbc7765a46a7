// Package doclinks checks the repository's Markdown: every relative link
// `](path)` and `](path#anchor)` must name a file inside the repository,
// and an anchor must be a heading of that file as GitHub renders it. Its
// test runs the check over the whole repository (make test).
package doclinks

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

var (
	linkRE       = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	inlineCodeRE = regexp.MustCompile("`[^`]*`")
	headingRE    = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	mdLinkRE     = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	schemeRE     = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// Slug is the anchor GitHub gives a heading's text: links reduced to their
// text, lower case, every character but letters, digits, '-', '_' and
// spaces dropped, spaces turned into '-'.
func Slug(heading string) string {
	h := mdLinkRE.ReplaceAllString(heading, "$1")
	h = strings.ToLower(strings.TrimSpace(h))
	var b strings.Builder
	for _, r := range h {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// lines returns a file's lines outside fenced code blocks, with their
// numbers.
func lines(path string) (map[int]string, []int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	out := map[int]string{}
	var order []int
	fence := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		if strings.HasPrefix(l, "```") {
			fence = !fence
			continue
		}
		if !fence {
			out[n] = l
			order = append(order, n)
		}
	}
	return out, order, sc.Err()
}

// Anchors are the anchors of a Markdown file's headings; a repeated
// heading gets -1, -2, ... as on GitHub.
func Anchors(path string) (map[string]bool, error) {
	ls, order, err := lines(path)
	if err != nil {
		return nil, err
	}
	seen := map[string]int{}
	out := map[string]bool{}
	for _, n := range order {
		m := headingRE.FindStringSubmatch(ls[n])
		if m == nil {
			continue
		}
		s := Slug(m[2])
		if c, ok := seen[s]; ok {
			seen[s] = c + 1
			s = fmt.Sprintf("%s-%d", s, c+1)
		} else {
			seen[s] = 0
		}
		out[s] = true
	}
	return out, nil
}

// MarkdownFiles lists the *.md files under root, skipping hidden
// directories and _output.
func MarkdownFiles(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "_output") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".md") {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// Check returns one line per broken relative link in the Markdown files
// under root.
func Check(root string) ([]string, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	files, err := MarkdownFiles(root)
	if err != nil {
		return nil, err
	}
	anchors := map[string]map[string]bool{}
	var bad []string
	for _, f := range files {
		rel, _ := filepath.Rel(root, f)
		ls, order, err := lines(f)
		if err != nil {
			return nil, err
		}
		for _, n := range order {
			for _, m := range linkRE.FindAllStringSubmatch(inlineCodeRE.ReplaceAllString(ls[n], ""), -1) {
				target := m[1]
				if schemeRE.MatchString(target) {
					continue
				}
				where := fmt.Sprintf("%s:%d: %s", rel, n, target)
				p, anchor, _ := strings.Cut(target, "#")
				file := f
				if p != "" {
					file = filepath.Join(filepath.Dir(f), p)
				}
				if r, err := filepath.Rel(root, file); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
					bad = append(bad, where+": points outside the repository")
					continue
				}
				st, err := os.Stat(file)
				if err != nil {
					bad = append(bad, where+": no such file")
					continue
				}
				if anchor == "" {
					continue
				}
				if st.IsDir() || !strings.HasSuffix(file, ".md") {
					bad = append(bad, where+": an anchor on a file that is not Markdown")
					continue
				}
				a, ok := anchors[file]
				if !ok {
					if a, err = Anchors(file); err != nil {
						return nil, err
					}
					anchors[file] = a
				}
				if !a[anchor] {
					bad = append(bad, where+": no heading with that anchor")
				}
			}
		}
	}
	return bad, nil
}
