package nodeimage

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// aptSourcesDir holds the machine's apt sources; debootstrap uses the
// mirror that serves the suite there.
var aptSourcesDir = "/etc/apt/sources.list.d"

// mirrorFor returns the first mirror URI serving suite in apt sources,
// deb822 (.sources) or one-line (.list) format.
func mirrorFor(content []byte, suite string) string {
	// one-line format: deb [opts] URI suite components...
	sc := bufio.NewScanner(bytes.NewReader(content))
	var uris, suites []string
	var types string
	flush := func() string {
		defer func() { uris, suites, types = nil, nil, "" }()
		if !strings.Contains(" "+types+" ", " deb ") {
			return ""
		}
		for _, s := range suites {
			if s == suite && len(uris) > 0 {
				return uris[0]
			}
		}
		return ""
	}
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			if m := flush(); m != "" {
				return m
			}
			continue
		}
		if strings.HasPrefix(line, "#") {
			continue
		}
		key, val, ok := strings.Cut(line, ":")
		switch {
		case ok && strings.EqualFold(key, "Types"):
			types = strings.TrimSpace(val)
			continue
		case ok && strings.EqualFold(key, "URIs"):
			uris = strings.Fields(val)
			continue
		case ok && strings.EqualFold(key, "Suites"):
			suites = strings.Fields(val)
			continue
		}
		f := strings.Fields(line)
		if len(f) < 3 || f[0] != "deb" {
			continue
		}
		f = f[1:]
		if strings.HasPrefix(f[0], "[") {
			for len(f) > 0 && !strings.HasSuffix(f[0], "]") {
				f = f[1:]
			}
			if len(f) > 0 {
				f = f[1:]
			}
		}
		if len(f) >= 2 && f[1] == suite {
			return f[0]
		}
	}
	return flush()
}

// findMirror looks through the machine's apt sources for suite's mirror.
func findMirror(suite string) (string, error) {
	paths, _ := filepath.Glob(filepath.Join(aptSourcesDir, "*"))
	paths = append(paths, filepath.Join(filepath.Dir(aptSourcesDir), "sources.list"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if m := mirrorFor(b, suite); m != "" {
			return m, nil
		}
	}
	return "", fmt.Errorf("no apt source for Debian %s in %s", suite, aptSourcesDir)
}
