package preflight

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
	v1 "k8s.io/api/core/v1"
)

// asSeenBy returns the container as a kubelet of version v decodes it: the
// fields its v1.Container lacks are dropped. A manifest decoded with newer
// types carries fields an older kubelet never sees, and the patched
// kubelet's own hash must be computed without them.
func asSeenBy(v kubeletcompat.Version, c *v1.Container) (*v1.Container, error) {
	paths, err := kubeletcompat.UnknownFields(v, c)
	if err != nil || len(paths) == 0 {
		return c, nil // not a JSON-era kubelet, or nothing to drop
	}
	data, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	var obj interface{}
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil, err
	}
	for _, p := range paths {
		if err := deletePath(obj, p); err != nil {
			return nil, fmt.Errorf("dropping %s: %w", p, err)
		}
	}
	if data, err = json.Marshal(obj); err != nil {
		return nil, err
	}
	var out v1.Container
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// deletePath deletes a field named by a path such as ports[0].name.
func deletePath(obj interface{}, path string) error {
	segs := strings.Split(path, ".")
	cur := obj
	for i, seg := range segs {
		key, idxs, err := splitIndexes(seg)
		if err != nil {
			return err
		}
		m, ok := cur.(map[string]interface{})
		if !ok {
			return fmt.Errorf("%s is not an object", seg)
		}
		if i == len(segs)-1 && len(idxs) == 0 {
			delete(m, key)
			return nil
		}
		cur = m[key]
		for _, ix := range idxs {
			list, ok := cur.([]interface{})
			if !ok || ix >= len(list) {
				return fmt.Errorf("%s is not a list of %d items", seg, ix+1)
			}
			cur = list[ix]
		}
	}
	return fmt.Errorf("path %s names a list item", path)
}

func splitIndexes(seg string) (string, []int, error) {
	open := strings.IndexByte(seg, '[')
	if open < 0 {
		return seg, nil, nil
	}
	key, rest := seg[:open], seg[open:]
	var idxs []int
	for rest != "" {
		end := strings.IndexByte(rest, ']')
		if rest[0] != '[' || end < 0 {
			return "", nil, fmt.Errorf("bad path segment %q", seg)
		}
		n, err := strconv.Atoi(rest[1:end])
		if err != nil {
			return "", nil, fmt.Errorf("bad path segment %q", seg)
		}
		idxs = append(idxs, n)
		rest = rest[end+1:]
	}
	return key, idxs, nil
}
