package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/pkg/matrix"
)

// The matrix is edited as text: every row but the one being added keeps its
// bytes (rows order their fields as their authors did), and the new row is
// written in the field order of the newest rows.

// newestSets are the matrix sets whose last member is the newest build row:
// "ci" builds the oldest and the newest tree.
var newestSets = []string{"ci"}

// matrixText is matrix.json cut into the text before the rows, one text
// block per row ("    {\n" .. "    }") and the text after them.
type matrixText struct {
	head   string
	blocks []string
	rows   []matrix.Row // decoded blocks
	tail   string
}

const (
	rowsOpen  = "  \"rows\": [\n"
	rowOpen   = "    {\n"
	rowClose  = "    }"
	rowsClose = "\n  ]\n"
)

func splitMatrix(data []byte) (*matrixText, error) {
	s := string(data)
	i := strings.Index(s, rowsOpen)
	j := strings.LastIndex(s, rowsClose)
	if i < 0 || j < i {
		return nil, fmt.Errorf("matrix.json: no %q ... %q", strings.TrimSpace(rowsOpen), strings.TrimSpace(rowsClose))
	}
	m := &matrixText{head: s[:i+len(rowsOpen)], tail: s[j:]}
	body := s[i+len(rowsOpen) : j]
	for _, b := range strings.Split(body, rowClose+",\n") {
		if !strings.HasSuffix(b, rowClose) {
			b += rowClose
		}
		if !strings.HasPrefix(b, rowOpen) || !strings.HasSuffix(b, rowClose) {
			return nil, fmt.Errorf("matrix.json: a row does not look like %q ... %q: %.60q", rowOpen, rowClose, b)
		}
		var r matrix.Row
		dec := json.NewDecoder(strings.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("matrix.json: row %.60q: %w", b, err)
		}
		m.blocks = append(m.blocks, b)
		m.rows = append(m.rows, r)
	}
	return m, nil
}

func (m *matrixText) bytes() []byte {
	return []byte(m.head + strings.Join(m.blocks, ",\n") + m.tail)
}

// jsonString is s as encoding/json writes it, without HTML escaping.
func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// renderRow writes a row as the newest rows are written.
func renderRow(r matrix.Row) string {
	var b strings.Builder
	b.WriteString(rowOpen)
	field := func(k, v string) { fmt.Fprintf(&b, "      %s: %s,\n", jsonString(k), v) }
	field("kubernetes", jsonString(r.Kubernetes))
	if r.Note != "" {
		field("note", jsonString(r.Note))
	}
	field("go", jsonString(r.Go))
	if r.GoNote != "" {
		field("goNote", jsonString(r.GoNote))
	}
	field("sourceSum", jsonString(r.SourceSum))
	field("toolchainSum", jsonString(r.ToolchainSum))
	if len(r.Stubs) > 0 {
		var q []string
		for _, s := range r.Stubs {
			q = append(q, jsonString(s))
		}
		field("stubs", "["+strings.Join(q, ", ")+"]")
	}
	if len(r.Overrides) > 0 {
		var keys, q []string
		for k := range r.Overrides {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			q = append(q, jsonString(k)+": "+jsonString(r.Overrides[k]))
		}
		field("overrides", "{"+strings.Join(q, ", ")+"}")
	}
	fmt.Fprintf(&b, "      \"build\": %t\n", r.Build)
	b.WriteString(rowClose)
	return b.String()
}

func minorOf(release string) int {
	parts := strings.Split(strings.TrimPrefix(release, "v"), ".")
	if len(parts) < 2 {
		return -1
	}
	n, err := strconv.Atoi(parts[1])
	if err != nil {
		return -1
	}
	return n
}

// setRow puts row into the matrix: in place of the row of its minor if
// there is one, else in minor order. A set of newestSets whose last member
// was the newest build row follows the row when it becomes the newest.
// It returns the row it replaced (zero if none).
func setRow(data []byte, row matrix.Row) ([]byte, matrix.Row, error) {
	if err := row.Validate(); err != nil {
		return nil, matrix.Row{}, err
	}
	m, err := splitMatrix(data)
	if err != nil {
		return nil, matrix.Row{}, err
	}
	newest := ""
	for _, r := range m.rows {
		if r.Build {
			newest = r.Kubernetes
		}
	}
	var replaced matrix.Row
	block := renderRow(row)
	at := len(m.rows)
	for i, r := range m.rows {
		if minorOf(r.Kubernetes) == minorOf(row.Kubernetes) {
			replaced = r
			m.blocks[i], m.rows[i] = block, row
			at = -1
			break
		}
		if minorOf(r.Kubernetes) > minorOf(row.Kubernetes) {
			at = i
			break
		}
	}
	if at >= 0 {
		m.blocks = append(m.blocks[:at], append([]string{block}, m.blocks[at:]...)...)
		m.rows = append(m.rows[:at], append([]matrix.Row{row}, m.rows[at:]...)...)
	}
	isNewest := row.Build
	for _, r := range m.rows {
		if r.Build && minorOf(r.Kubernetes) > minorOf(row.Kubernetes) {
			isNewest = false
		}
	}
	if m.head, err = retargetSets(m.head, newest, replaced.Kubernetes, row.Kubernetes, isNewest); err != nil {
		return nil, matrix.Row{}, err
	}
	out := m.bytes()
	if _, err := matrix.Parse(out); err != nil {
		return nil, matrix.Row{}, fmt.Errorf("the edited matrix does not parse: %w", err)
	}
	return out, replaced, nil
}

// retargetSets rewrites the set lines of head (`    "name": [..],`): a
// member that was the replaced row becomes the new release, and in
// newestSets the previous newest build row does when the new row is newest.
func retargetSets(head, previousNewest, replaced, release string, isNewest bool) (string, error) {
	lines := strings.SplitAfter(head, "\n")
	for i, line := range lines {
		trimmed := strings.TrimSpace(line)
		if !strings.HasPrefix(line, "    \"") || !strings.Contains(trimmed, ": [") {
			continue
		}
		name, err := strconv.Unquote(trimmed[:strings.Index(trimmed, ":")])
		if err != nil {
			return "", fmt.Errorf("matrix.json set line %q: %w", trimmed, err)
		}
		var members []string
		open := strings.Index(line, "[")
		close := strings.LastIndex(line, "]")
		if err := json.Unmarshal([]byte(line[open:close+1]), &members); err != nil {
			return "", fmt.Errorf("matrix.json set %q: %w", name, err)
		}
		changed := false
		for j, mem := range members {
			newestSet := false
			for _, n := range newestSets {
				newestSet = newestSet || n == name
			}
			if (replaced != "" && mem == replaced) || (newestSet && isNewest && j == len(members)-1 && mem == previousNewest) {
				if members[j] != release {
					members[j], changed = release, true
				}
			}
		}
		if !changed {
			continue
		}
		var q []string
		for _, mem := range members {
			q = append(q, jsonString(mem))
		}
		lines[i] = line[:open] + "[" + strings.Join(q, ", ") + "]" + line[close+1:]
	}
	return strings.Join(lines, ""), nil
}
