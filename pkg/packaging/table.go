package packaging

import (
	"bufio"
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/pkg/layout"
)

// The release tables (rpm/releases.txt, deb/releases.txt) give the release
// (RPM) or revision (Debian) of the packages of each group, with the
// sha256 of the content it was given for. A build takes the release from
// its table and refuses content whose digest is not the one recorded, so a
// package whose files or scripts changed cannot come out under the number
// of different content, which the package manager would not replace.

// Row is one line of a release table.
type Row struct {
	Release int
	Digest  string
}

// ParseTable parses a release table: "<group> <release> <sha256>" lines,
// comments and blank lines. name is the file's name, for errors.
func ParseTable(name string, b []byte) (map[string]Row, error) {
	rows := map[string]Row{}
	s := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; s.Scan(); n++ {
		line := strings.TrimSpace(s.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			return nil, fmt.Errorf("%s:%d: want <template> <release> <sha256>, got %q", name, n, line)
		}
		rel, err := strconv.Atoi(f[1])
		if err != nil || rel < 1 {
			return nil, fmt.Errorf("%s:%d: release %q is not a positive number", name, n, f[1])
		}
		if len(f[2]) != 64 {
			return nil, fmt.Errorf("%s:%d: %q is not a sha256", name, n, f[2])
		}
		if _, dup := rows[f[0]]; dup {
			return nil, fmt.Errorf("%s:%d: %s given twice", name, n, f[0])
		}
		rows[f[0]] = Row{Release: rel, Digest: f[2]}
	}
	return rows, s.Err()
}

// FormatTable writes rows under header, sorted by group.
func FormatTable(header string, rows map[string]Row) []byte {
	keys := make([]string, 0, len(rows))
	for k := range rows {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	b.WriteString(header)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s %d %s\n", k, rows[k].Release, rows[k].Digest)
	}
	return b.Bytes()
}

// BumpTable returns table (named name, written with header) with the
// release of every key whose digest is not the one recorded raised by one
// (a key not in the table starts at 1), and the keys it raised.
func BumpTable(name, header string, table []byte, keys []string, digest func(key string) (string, error)) ([]byte, []string, error) {
	rows, err := ParseTable(name, table)
	if err != nil {
		return nil, nil, err
	}
	var bumped []string
	for _, key := range keys {
		d, err := digest(key)
		if err != nil {
			return nil, nil, err
		}
		if row, ok := rows[key]; !ok || row.Digest != d {
			rows[key] = Row{Release: rows[key].Release + 1, Digest: d}
			bumped = append(bumped, key)
		}
	}
	return FormatTable(header, rows), bumped, nil
}

// TableRelease returns the release table gives key if its content has
// digest; the error says how to record new content (fix: the command).
func TableRelease(name string, table []byte, key, digest, fix string) (int, error) {
	rows, err := ParseTable(name, table)
	if err != nil {
		return 0, err
	}
	row, ok := rows[key]
	if !ok {
		return 0, fmt.Errorf("%s has no release for %s (content sha256 %s): run %s", name, key, digest, fix)
	}
	if row.Digest != digest {
		return 0, fmt.Errorf("the content of the %s packages changed (sha256 %s) since %s gave them release %d (sha256 %s): "+
			"run %s, which raises it to %d, and commit %s",
			key, digest[:12], name, row.Release, row.Digest[:12], fix, row.Release+1, name)
	}
	return row.Release, nil
}

// Table is a format's release table (rpm/releases.txt, deb/releases.txt)
// and how that format digests the content of a group.
type Table struct {
	// Name is the table's file, for messages.
	Name string
	// Header is the comment Bump writes above the rows.
	Header string
	// Fix is the command that records new content, for messages.
	Fix string
	// Digest is the sha256 of the content of the packages of a group.
	Digest func(key string) (string, error)
}

// Release returns the release table gives the group key, if its content
// is the one recorded.
func (t Table) Release(table []byte, key string) (string, error) {
	digest, err := t.Digest(key)
	if err != nil {
		return "", err
	}
	rel, err := TableRelease(t.Name, table, key, digest, t.Fix)
	if err != nil {
		return "", err
	}
	return strconv.Itoa(rel), nil
}

// Resolve returns the release of kubernetes-unversioned and of every
// versioned group (only when versioned packages are built), each from
// table unless set: unversioned for the first, versioned for every
// versioned group (overrides, e.g. for binaries rebuilt under unchanged
// packaging, which the table does not see).
func (t Table) Resolve(table []byte, l layout.Layout, buildsVersioned bool, unversioned, versioned string) (string, map[string]string, error) {
	var err error
	if unversioned == "" {
		u, _ := l.Unversioned()
		if unversioned, err = t.Release(table, u.Key); err != nil {
			return "", nil, err
		}
	}
	releases := map[string]string{}
	for _, g := range l.Groups {
		if !g.Versioned || !buildsVersioned {
			continue
		}
		rel := versioned
		if rel == "" {
			if rel, err = t.Release(table, g.Key); err != nil {
				return "", nil, err
			}
		}
		releases[g.Key] = rel
	}
	return unversioned, releases, nil
}

// Bump returns table with the release of every group of l whose content
// is not the one recorded raised by one, and the groups it raised.
func (t Table) Bump(table []byte, l layout.Layout) ([]byte, []string, error) {
	var keys []string
	for _, g := range l.Groups {
		keys = append(keys, g.Key)
	}
	return BumpTable(t.Name, t.Header, table, keys, t.Digest)
}

// BumpSets bumps table over the groups of every package set
// (layout.Sets), which share a format's release table; of returns the
// format's table and description of a set.
func BumpSets(table []byte, of func(set string) (Table, layout.Layout)) ([]byte, []string, error) {
	var all []string
	for _, set := range layout.Sets {
		t, l := of(set)
		var bumped []string
		var err error
		if table, bumped, err = t.Bump(table, l); err != nil {
			return nil, nil, err
		}
		all = append(all, bumped...)
	}
	return table, all, nil
}
