package layout

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"text/template"
)

// Expand fills the fields of text ({{.Version}}, ...) with vars. escape,
// if set, is applied to the text around the fields but not to the values,
// e.g. rpm's %% for a literal % in a script whose fields are macros.
func Expand(text string, vars map[string]string, escape func(string) string) (string, error) {
	t, err := template.New("").Option("missingkey=error").Parse(text)
	if err != nil {
		return "", fmt.Errorf("layout text: %w", err)
	}
	// The fields are first filled with markers that no escape changes,
	// then the text is escaped, then the markers become the values.
	names := make([]string, 0, len(vars))
	for k := range vars {
		names = append(names, k)
	}
	sort.Strings(names)
	marked := map[string]string{}
	var replace []string
	for i, k := range names {
		if vars[k] == "" {
			marked[k] = "" // so that {{if .Field}} sees it empty
			continue
		}
		m := fmt.Sprintf("\x00%d\x00", i)
		marked[k] = m
		replace = append(replace, m, vars[k])
	}
	var b bytes.Buffer
	if err := t.Execute(&b, marked); err != nil {
		return "", fmt.Errorf("layout text: %w", err)
	}
	s := b.String()
	if escape != nil {
		s = escape(s)
	}
	return strings.NewReplacer(replace...).Replace(s), nil
}

// GuardText is the removal guard of a package in a format's terms.
func (l Layout) GuardText(g Guard, v Vars, removing string, escape func(string) string) (string, error) {
	sv := ScriptVars{Vars: v, Removing: removing, Stage: g.Stage, Unselectable: g.Unselectable,
		This: v.KubeDir + "/" + g.Stage, What: "Kubernetes " + v.Version, Selector: l.selector()}
	if g.Whole {
		sv.This, sv.What = v.KubeDir, g.Stage+" "+v.Version
	}
	return Expand(l.GuardScript, sv.Map(), escape)
}

func (l Layout) selector() string {
	if l.Selector == "" {
		return "kubernetes-select"
	}
	return l.Selector
}
