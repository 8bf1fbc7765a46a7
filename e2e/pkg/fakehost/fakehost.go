// Package fakehost is a machine for tests of what the e2e makes and undoes
// outside its root: network links with their ifalias, mount points, and
// Docker engines (networks and containers with their labels), all in
// memory, so that no test looks at (or changes) the host's. Processes,
// sysctls and cgroups are files in temporary directories (package
// fakeproc, and the tests' own directories).
package fakehost

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Host is the fake machine; safe for concurrent use.
type Host struct {
	mu sync.Mutex
	// Links are network interfaces and their ifalias ("" for none).
	Links map[string]string
	// Mounted are mount points.
	Mounted map[string]bool
	// Engines are the Docker engines by DOCKER_HOST ("" for the default).
	Engines map[string]*Engine
	seq     int
}

// Engine is one Docker engine.
type Engine struct {
	Networks   map[string]*Network   // by name
	Containers map[string]*Container // by ID
}

// Network is a docker network.
type Network struct {
	ID     string
	Labels map[string]string
	// Bridge is the link the bridge driver made for it (removed with it).
	Bridge string
}

// Container is a docker container: its labels and the networks it is
// attached to (name -> network ID).
type Container struct {
	Name     string
	Labels   map[string]string
	Networks map[string]string
}

// New is an empty machine.
func New() *Host {
	return &Host{Links: map[string]string{}, Mounted: map[string]bool{}, Engines: map[string]*Engine{}}
}

// Engine returns (making it) the engine at host.
func (h *Host) Engine(host string) *Engine {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.engine(host)
}

func (h *Host) engine(host string) *Engine {
	e := h.Engines[host]
	if e == nil {
		e = &Engine{Networks: map[string]*Network{}, Containers: map[string]*Container{}}
		h.Engines[host] = e
	}
	return e
}

// AddNetwork adds a network and returns its ID.
func (h *Host) AddNetwork(host, name string, labels map[string]string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	id := fmt.Sprintf("%064x", h.seq)
	h.engine(host).Networks[name] = &Network{ID: id, Labels: labels}
	return id
}

// AddContainer adds a container attached to the named network.
func (h *Host) AddContainer(host, name, network string, labels map[string]string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	id := fmt.Sprintf("c%063x", h.seq)
	e := h.engine(host)
	c := &Container{Name: name, Labels: labels, Networks: map[string]string{}}
	if n := e.Networks[network]; n != nil {
		c.Networks[network] = n.ID
	}
	e.Containers[id] = c
	return id
}

// ContainerNames lists an engine's containers' names, sorted.
func (h *Host) ContainerNames(host string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, c := range h.engine(host).Containers {
		out = append(out, c.Name)
	}
	sort.Strings(out)
	return out
}

// NetworkNames lists an engine's networks, sorted.
func (h *Host) NetworkNames(host string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for n := range h.engine(host).Networks {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// LinkExists, LinkAlias, SetLinkAlias, AddLink and DeleteLink manage the
// links.
func (h *Host) LinkExists(name string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.Links[name]
	return ok
}

func (h *Host) LinkAlias(name string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.Links[name]
}

func (h *Host) SetLinkAlias(_ context.Context, name, alias string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.Links[name]; !ok {
		return fmt.Errorf("ip link set dev %s alias: Cannot find device %q", name, name)
	}
	h.Links[name] = alias
	return nil
}

func (h *Host) AddLink(_ context.Context, name string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.Links[name]; ok {
		return fmt.Errorf("ip link add %s: RTNETLINK answers: File exists", name)
	}
	h.Links[name] = ""
	return nil
}

func (h *Host) DeleteLink(_ context.Context, name string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.Links, name)
	return nil
}

// Mounts lists the mount points at or under dir, deepest first;
// Unmount unmounts one.
func (h *Host) Mounts(dir string) ([]string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for m := range h.Mounted {
		if m == dir || strings.HasPrefix(m, dir+"/") {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if a, b := strings.Count(out[i], "/"), strings.Count(out[j], "/"); a != b {
			return a > b
		}
		return out[i] < out[j]
	})
	return out, nil
}

func (h *Host) Unmount(mp string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.Mounted[mp] {
		return fmt.Errorf("unmount %s: not mounted", mp)
	}
	delete(h.Mounted, mp)
	return nil
}

// Docker runs the subset of the docker CLI the e2e uses against the
// engine at host: version, network inspect/create/rm, ps -aq with label=
// and network= filters, rm -f -v. An engine that was never made does not
// answer.
func (h *Host) Docker(_ context.Context, host string, args ...string) ([]byte, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.Engines[host]
	if e == nil {
		return nil, fmt.Errorf("docker %s: Cannot connect to the Docker daemon at %s", strings.Join(args, " "), host)
	}
	fail := func(format string, a ...interface{}) ([]byte, error) {
		return nil, fmt.Errorf("docker %s: %s", strings.Join(args, " "), fmt.Sprintf(format, a...))
	}
	switch {
	case len(args) >= 1 && args[0] == "version":
		return []byte("20.10.24\n"), nil
	case len(args) >= 3 && args[0] == "network" && args[1] == "inspect":
		name := args[len(args)-1]
		n := e.Networks[name]
		if n == nil {
			return fail("Error: No such network: %s", name)
		}
		return json.Marshal([]map[string]interface{}{{"Name": name, "Id": n.ID, "Labels": n.Labels}})
	case len(args) >= 3 && args[0] == "network" && args[1] == "rm":
		for _, x := range args[2:] {
			name := e.networkName(x)
			if name == "" {
				return fail("Error: No such network: %s", x)
			}
			for _, c := range e.Containers {
				for _, id := range c.Networks {
					if id == e.Networks[name].ID {
						return fail("Error response from daemon: error while removing network: network %s id %s has active endpoints", name, id)
					}
				}
			}
			if b := e.Networks[name].Bridge; b != "" {
				delete(h.Links, b)
			}
			delete(e.Networks, name)
		}
		return nil, nil
	case len(args) >= 3 && args[0] == "network" && args[1] == "create":
		return h.networkCreate(e, args, fail)
	case len(args) >= 2 && args[0] == "ps":
		filters := map[string][]string{}
		for i := 1; i < len(args); i++ {
			if args[i] == "--filter" && i+1 < len(args) {
				k, v, _ := strings.Cut(args[i+1], "=")
				filters[k] = append(filters[k], v)
				i++
			}
		}
		var ids []string
		for id, c := range e.Containers {
			if c.matches(filters) {
				ids = append(ids, id)
			}
		}
		sort.Strings(ids)
		if len(ids) == 0 {
			return nil, nil
		}
		return []byte(strings.Join(ids, "\n") + "\n"), nil
	case len(args) >= 2 && args[0] == "rm":
		for _, id := range args[1:] {
			if strings.HasPrefix(id, "-") {
				continue
			}
			if e.Containers[id] == nil {
				return fail("Error: No such container: %s", id)
			}
			delete(e.Containers, id)
		}
		return nil, nil
	}
	return fail("not faked")
}

// networkCreate is docker network create [--label k=v] [--opt
// com.docker.network.bridge.name=B] NAME.
func (h *Host) networkCreate(e *Engine, args []string, fail func(string, ...interface{}) ([]byte, error)) ([]byte, error) {
	name := args[len(args)-1]
	if e.Networks[name] != nil {
		return fail("Error response from daemon: network with name %s already exists", name)
	}
	labels := map[string]string{}
	bridge := ""
	for i := 2; i < len(args)-1; i++ {
		if args[i] == "--label" && i+1 < len(args)-1 {
			k, v, _ := strings.Cut(args[i+1], "=")
			labels[k] = v
			i++
		} else if args[i] == "--opt" && i+1 < len(args)-1 {
			bridge, _ = strings.CutPrefix(args[i+1], "com.docker.network.bridge.name=")
			i++
		}
	}
	h.seq++
	id := fmt.Sprintf("%064x", h.seq)
	n := &Network{ID: id, Labels: labels}
	e.Networks[name] = n
	// The bridge driver makes the network's bridge (or takes the
	// existing one of that name, which it leaves on removal).
	if _, ok := h.Links[bridge]; bridge != "" && !ok {
		h.Links[bridge] = ""
		n.Bridge = bridge
	}
	return []byte(id + "\n"), nil
}

func (e *Engine) networkName(x string) string {
	if e.Networks[x] != nil {
		return x
	}
	for name, n := range e.Networks {
		if n.ID == x {
			return name
		}
	}
	return ""
}

// matches applies docker ps filters: values of one key are ORed, keys
// ANDed; label=k=v, network=<name or ID prefix>.
func (c *Container) matches(filters map[string][]string) bool {
	for key, values := range filters {
		any := false
		for _, v := range values {
			switch key {
			case "label":
				k, want, hasValue := strings.Cut(v, "=")
				got, ok := c.Labels[k]
				any = any || (ok && (!hasValue || got == want))
			case "network":
				for name, id := range c.Networks {
					any = any || name == v || (id != "" && strings.HasPrefix(id, v))
				}
			}
		}
		if !any {
			return false
		}
	}
	return true
}
