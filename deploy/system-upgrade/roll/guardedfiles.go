package roll

import (
	"context"
	"io/fs"
	"time"
)

// guardedFiles are the node's files for a run: once the run's context has
// ended (the Job is dying), nothing on the node is changed any more.
type guardedFiles struct {
	Files
	ctx context.Context
}

func (g guardedFiles) MkdirAll(name string) error {
	if err := g.ctx.Err(); err != nil {
		return err
	}
	return g.Files.MkdirAll(name)
}

func (g guardedFiles) Create(name string, perm fs.FileMode) (File, error) {
	if err := g.ctx.Err(); err != nil {
		return nil, err
	}
	return g.Files.Create(name, perm)
}

func (g guardedFiles) Rename(from, to string) error {
	if err := g.ctx.Err(); err != nil {
		return err
	}
	return g.Files.Rename(from, to)
}

func (g guardedFiles) Remove(name string) error {
	if err := g.ctx.Err(); err != nil {
		return err
	}
	return g.Files.Remove(name)
}

func (g guardedFiles) RemoveAll(name string) error {
	if err := g.ctx.Err(); err != nil {
		return err
	}
	return g.Files.RemoveAll(name)
}

func (g guardedFiles) Chtimes(name string, mtime time.Time) error {
	if err := g.ctx.Err(); err != nil {
		return err
	}
	return g.Files.Chtimes(name, mtime)
}
