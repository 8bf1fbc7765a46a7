package kubeletcompat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
)

// Container hash eras, by the kubelet minor that computes the hash.
const (
	// Kubelets up to 1.15 hash go-spew's dump of the Go struct; the hash
	// changes with every new field and is not reproduced here.
	lastGoStructMinor = 15
	// Kubelets 1.16 to 1.30 hash the container's JSON.
	firstJSONMinor = 16
	lastJSONMinor  = 30
	// Kubelets from 1.31 hash the JSON of {name, image} only.
	firstNameImageMinor = 31
	// The newest minor this package knows (EraOf, the running kubelet's own
	// version, the CLI's versions): testdata/hashes.golden shows 1.32 to
	// 1.37 hash {name, image} exactly as 1.31 does.
	lastKnownMinor = 38
)

// HashEra is the algorithm a kubelet minor uses for container hashes.
type HashEra int

const (
	// EraUnknown: a version this package knows no hash of.
	EraUnknown HashEra = iota
	// EraGoStruct (<= 1.15): go-spew of the Go struct; not reproduced.
	EraGoStruct
	// EraJSON (1.16 .. 1.30): go-spew of the container's JSON.
	EraJSON
	// EraNameImage (1.31 .. 1.37): go-spew of the JSON of {name, image}.
	EraNameImage
)

func (e HashEra) String() string {
	switch e {
	case EraGoStruct:
		return "go-struct"
	case EraJSON:
		return "json"
	case EraNameImage:
		return "name-image"
	}
	return "unknown"
}

// EraOf returns the hash era of a kubelet version.
func EraOf(v Version) HashEra {
	switch {
	case v.Major != 1 || v.Minor > lastKnownMinor:
		return EraUnknown
	case v.Minor <= lastGoStructMinor:
		return EraGoStruct
	case v.Minor <= lastJSONMinor:
		return EraJSON
	}
	return EraNameImage
}

// ContainerHash returns the hash that a kubelet of the given version computes
// for container, where container was decoded by the types this package is
// compiled with. For JSON-era versions the JSON is first pruned to the fields
// that version's v1.Container had: a kubelet never sees fields its types lack.
func ContainerHash(v Version, container *v1.Container) (uint64, error) {
	return (&containerHashes{container: container}).of(v)
}

// containerHashes computes one container's hashes for several versions,
// encoding its JSON once.
type containerHashes struct {
	container *v1.Container
	json      []byte
}

func (h *containerHashes) of(v Version) (uint64, error) {
	if v.Major != 1 {
		return 0, fmt.Errorf("no container hash known for %s", v)
	}
	switch {
	case v.Minor <= lastGoStructMinor:
		return 0, fmt.Errorf("the container hash of %s (go-spew of the Go struct) is not implemented", v)
	case v.Minor <= lastJSONMinor:
		s, err := schemaFor(v.Minor)
		if err != nil {
			return 0, err
		}
		if h.json == nil {
			if h.json, err = json.Marshal(h.container); err != nil {
				return 0, err
			}
		}
		key := legacyHashKey{minor: v.Minor, containerJSON: string(h.json)}
		if hash, ok := legacyHashes.get(key); ok {
			return hash, nil
		}
		pruned, err := s.prune(h.json)
		if err != nil {
			return 0, fmt.Errorf("reproducing the JSON of %s: %v", v, err)
		}
		hash := hashJSON(pruned)
		legacyHashes.put(key, hash)
		return hash, nil
	case v.Minor <= lastKnownMinor:
		return hashNameImage(h.container), nil
	}
	return 0, fmt.Errorf("no container hash known for %s (newest known minor is 1.%d)", v, lastKnownMinor)
}

// SpecHash returns the hash of the container's JSON in the v1.Container
// layout of kubelet v (1.16 .. 1.37), as JSON-era kubelets hash it: the
// container hash itself up to 1.30, and from 1.31 the whole spec that the
// {name, image} hash leaves out. record writes it into the compat file
// (FormatSpecHash) so that an older kubelet can tell a container it reads
// the same spec of from one that changed or sets fields it does not know.
func SpecHash(v Version, container *v1.Container) (uint64, error) {
	return specHashAs(v, v, container)
}

// FormatSpecHash is how the compat file writes a SpecHash.
func FormatSpecHash(h uint64) string { return fmt.Sprintf("%016x", h) }

// specHashAs is SpecHash of v for the container as a kubelet reader decodes
// it: the fields reader's v1.Container lacks are dropped first. In a kubelet
// reader that is what its own types did already; the CLI predicts with it.
func specHashAs(v, reader Version, container *v1.Container) (uint64, error) {
	for _, m := range []Version{v, reader} {
		if m.Major != 1 || m.Minor < firstJSONMinor || m.Minor > lastKnownMinor {
			return 0, fmt.Errorf("no v1.Container layout known for %s", m)
		}
	}
	data, err := json.Marshal(container)
	if err != nil {
		return 0, err
	}
	// After a rollback the kubelet asks on every sync of each kept pod.
	key := legacyHashKey{minor: v.Minor, reader: reader.Minor, containerJSON: string(data)}
	if hash, ok := legacyHashes.get(key); ok {
		return hash, nil
	}
	for _, minor := range []int{reader.Minor, v.Minor} {
		s, err := schemaFor(minor)
		if err != nil {
			return 0, err
		}
		if data, err = s.prune(data); err != nil {
			return 0, fmt.Errorf("reproducing the JSON of 1.%d: %v", minor, err)
		}
	}
	hash := hashJSON(data)
	legacyHashes.put(key, hash)
	return hash, nil
}

type schemaField struct {
	name   string
	always bool   // written by encoding/json even when empty
	typ    string // layout of the object(s) it holds; "" for values copied verbatim
}

// schema is the JSON shape of v1.Container in one minor: layouts by type name.
type schema map[string][]schemaField

var (
	schemaMu    sync.Mutex
	schemaCache = map[int]schema{}
)

func schemaFor(minor int) (schema, error) {
	schemaMu.Lock()
	defer schemaMu.Unlock()
	if s, ok := schemaCache[minor]; ok {
		return s, nil
	}
	ids, ok := containerSchemas[minor]
	if !ok {
		return nil, fmt.Errorf("no v1.Container schema for 1.%d", minor)
	}
	s := schema{}
	for i, id := range ids {
		name, fields, err := parseLayout(schemaTypes[id])
		if err != nil {
			return nil, err
		}
		if i == 0 && name != "Container" {
			return nil, fmt.Errorf("schema 1.%d starts with %s, not Container", minor, name)
		}
		s[name] = fields
	}
	for name, fields := range s {
		for _, f := range fields {
			if _, ok := s[f.typ]; f.typ != "" && !ok {
				return nil, fmt.Errorf("schema 1.%d: %s.%s refers to unknown layout %s", minor, name, f.name, f.typ)
			}
		}
	}
	schemaCache[minor] = s
	return s, nil
}

// parseLayout parses "Name(field field! field:Type)".
func parseLayout(layout string) (string, []schemaField, error) {
	open := strings.IndexByte(layout, '(')
	if open <= 0 || !strings.HasSuffix(layout, ")") {
		return "", nil, fmt.Errorf("bad schema layout %q", layout)
	}
	var fields []schemaField
	for _, word := range strings.Fields(layout[open+1 : len(layout)-1]) {
		var f schemaField
		if i := strings.IndexByte(word, ':'); i >= 0 {
			word, f.typ = word[:i], word[i+1:]
		}
		if strings.HasSuffix(word, "!") {
			word, f.always = strings.TrimSuffix(word, "!"), true
		}
		f.name = word
		fields = append(fields, f)
	}
	return layout[:open], fields, nil
}

// prune rewrites container JSON to exactly what json.Marshal of the schema's
// v1.Container would have written: that version's fields, in its order, with
// every value's bytes unchanged.
func (s schema) prune(containerJSON []byte) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(len(containerJSON))
	p := pruner{schema: s, buf: &buf}
	if err := p.value(containerJSON, "Container", ""); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// UnknownFields lists the JSON paths of container's set fields that the
// v1.Container of version v does not have: a kubelet of that version never
// sees them, and they are why its hash differs from a newer kubelet's.
func UnknownFields(v Version, container *v1.Container) ([]string, error) {
	if v.Major != 1 || v.Minor < firstJSONMinor || v.Minor > lastKnownMinor {
		return nil, fmt.Errorf("no v1.Container schema for %s", v)
	}
	s, err := schemaFor(v.Minor)
	if err != nil {
		return nil, err
	}
	full, err := json.Marshal(container)
	if err != nil {
		return nil, err
	}
	p := pruner{schema: s, buf: &bytes.Buffer{}, dropped: []string{}}
	if err := p.value(full, "Container", ""); err != nil {
		return nil, err
	}
	return p.dropped, nil
}

// NewFields lists the JSON paths of container's set fields that the
// v1.Container of newer has and that of older lacks: after a rollback from
// newer to older, the older kubelet does not see them, and the patched one
// restarts the container (Decider.KeepChanged).
func NewFields(older, newer Version, container *v1.Container) ([]string, error) {
	unknownOlder, err := UnknownFields(older, container)
	if err != nil {
		return nil, err
	}
	unknownNewer, err := UnknownFields(newer, container)
	if err != nil {
		return nil, err
	}
	skip := make(map[string]bool, len(unknownNewer))
	for _, f := range unknownNewer {
		skip[f] = true
	}
	var out []string
	for _, f := range unknownOlder {
		if !skip[f] {
			out = append(out, f)
		}
	}
	return out, nil
}

// pruner rewrites JSON to a schema's shape; dropped, when non-nil, collects
// the paths it leaves out.
type pruner struct {
	schema  schema
	buf     *bytes.Buffer
	dropped []string
}

func (p *pruner) value(raw []byte, typ, path string) error {
	buf := p.buf
	switch {
	case len(raw) == 0:
		return fmt.Errorf("empty value for %s", typ)
	case raw[0] == '{':
		return p.object(raw, typ, path)
	case raw[0] == '[':
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return err
		}
		buf.WriteByte('[')
		for i, item := range items {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := p.value(item, typ, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
		return nil
	case string(raw) == "null":
		buf.Write(raw)
		return nil
	}
	return fmt.Errorf("%s: want an object, got %.20q", typ, raw)
}

func (p *pruner) object(raw []byte, typ, path string) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return err
	}
	buf := p.buf
	buf.WriteByte('{')
	written := 0
	known := p.schema[typ]
	if p.dropped != nil {
		p.recordDropped(obj, known, path)
	}
	for _, f := range known {
		value, ok := obj[f.name]
		if !ok {
			if f.always {
				// That version wrote this field even when empty; its bytes
				// cannot be reproduced from JSON that lacks it.
				return fmt.Errorf("%s.%s is missing but was always written", typ, f.name)
			}
			continue
		}
		if written > 0 {
			buf.WriteByte(',')
		}
		written++
		buf.WriteByte('"')
		buf.WriteString(f.name)
		buf.WriteString(`":`)
		if f.typ == "" {
			buf.Write(value)
			continue
		}
		if err := p.value(value, f.typ, joinPath(path, f.name)); err != nil {
			return err
		}
	}
	buf.WriteByte('}')
	return nil
}

func (p *pruner) recordDropped(obj map[string]json.RawMessage, known []schemaField, path string) {
	var names []string
	for name := range obj {
		found := false
		for _, f := range known {
			found = found || f.name == name
		}
		if !found {
			names = append(names, joinPath(path, name))
		}
	}
	sort.Strings(names)
	p.dropped = append(p.dropped, names...)
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// legacyHashes remembers pruned hashes by minor and container JSON: the
// kubelet asks again for every kept container on every sync of its pod,
// and pruning and hashing cost several times the JSON encoding.
var legacyHashes = &hashCache{entries: map[legacyHashKey]uint64{}}

// maxLegacyHashes bounds the cache (a container's JSON is a few KiB).
const maxLegacyHashes = 512

type legacyHashKey struct {
	minor int
	// reader is the minor whose layout the JSON was pruned to first
	// (specHashAs); 0 for ContainerHash.
	reader        int
	containerJSON string
}

type hashCache struct {
	mu      sync.Mutex
	entries map[legacyHashKey]uint64
}

func (c *hashCache) get(k legacyHashKey) (uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.entries[k]
	return h, ok
}

func (c *hashCache) put(k legacyHashKey, h uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= maxLegacyHashes {
		c.entries = map[legacyHashKey]uint64{}
	}
	c.entries[k] = h
}
