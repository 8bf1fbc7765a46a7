package roll

import (
	"fmt"
)

// store keeps the roll's State in StateFile: a new file, synced, renamed
// over the old one.
type store struct{ files Files }

// load reads the state; none (a zero State) when the node has no roll.
func (s store) load() (State, error) {
	data, err := s.files.ReadFile(StateFile)
	if notExist(err) {
		return State{}, nil
	}
	if err != nil {
		return State{}, fmt.Errorf("reading %s on the node: %w", StateFile, err)
	}
	return ParseState(string(data)), nil
}

// save writes st.
func (s store) save(st State) error {
	if err := s.files.MkdirAll(RollDir); err != nil {
		return err
	}
	if err := writeAtomic(s.files, StateFile, StateFile+".new", []byte(st.Format()), 0o644); err != nil {
		return fmt.Errorf("writing %s on the node: %w", StateFile, err)
	}
	return nil
}

// remove drops the state (a new roll begins).
func (s store) remove() error { return s.files.Remove(StateFile) }

// archive ends the record of a finished roll: its state kept as
// LastRollFile, its picture and backup dropped.
func (s store) archive() error {
	if err := s.files.Rename(StateFile, LastRollFile); err != nil {
		return err
	}
	for _, f := range []string{BeforeFile, ReadyBeforeFile, ProbesBaseFile, BackupDir} {
		if err := s.files.RemoveAll(f); err != nil {
			return err
		}
	}
	return s.files.SyncDir(RollDir)
}
