package fake

// SetVersion makes Version report another runtime, e.g. containerd v2.4.2.
func (r *Runtime) SetVersion(name, version string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.name, r.version = name, version
}

func (r *Runtime) runtimeVersion() (string, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.name == "" {
		return "crifake", "1.0.0"
	}
	return r.name, r.version
}
