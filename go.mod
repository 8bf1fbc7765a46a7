module github.com/kubelet-compat/kubelet-compat

go 1.23
