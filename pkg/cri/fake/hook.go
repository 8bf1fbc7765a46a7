package fake

// OnCall makes the runtime run hook each time it answers method
// ("ListPodSandbox", "ListContainers", "ContainerStatus", "Version") before
// answering: tests use it to act while a command waits for the runtime.
// nil removes it.
func (r *Runtime) OnCall(method string, hook func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hooks == nil {
		r.hooks = map[string]func(){}
	}
	if hook == nil {
		delete(r.hooks, method)
		return
	}
	r.hooks[method] = hook
}

func (r *Runtime) runHook(method string) {
	r.mu.Lock()
	hook := r.hooks[method]
	r.mu.Unlock()
	if hook != nil {
		hook()
	}
}
