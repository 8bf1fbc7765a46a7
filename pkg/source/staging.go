package source

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
)

// StagingRepos lists the k8s.io repositories published from the tree's
// staging/src (staging/publishing/rules.yaml), e.g. "k8s.io/api".
func StagingRepos(tree string) (map[string]bool, error) {
	data, err := os.ReadFile(filepath.Join(tree, "staging", "publishing", "rules.yaml"))
	if err != nil {
		return nil, err
	}
	repos := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^- destination: (\S+)$`).FindAllSubmatch(data, -1) {
		repos["k8s.io/"+string(m[1])] = true
	}
	if len(repos) == 0 {
		return nil, fmt.Errorf("%s/staging/publishing/rules.yaml names no staging repositories", tree)
	}
	return repos, nil
}
