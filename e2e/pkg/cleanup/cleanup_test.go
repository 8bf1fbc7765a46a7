package cleanup

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

func TestRunOrderAndErrors(t *testing.T) {
	tests := []struct {
		name     string
		actions  []string // "name" or "name!" (fails) or "name?" (panics)
		wantRun  string
		wantErrs []string
	}{
		{name: "empty", wantRun: ""},
		{name: "reverse order", actions: []string{"a", "b", "c"}, wantRun: "c,b,a"},
		{name: "failure does not stop the rest", actions: []string{"a", "b!", "c"}, wantRun: "c,b,a", wantErrs: []string{"cleanup b: boom"}},
		{name: "panic does not stop the rest", actions: []string{"a?", "b"}, wantRun: "b,a", wantErrs: []string{"cleanup a: panic: oops"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log bytes.Buffer
			s := New(&log)
			var ran []string
			for _, a := range tt.actions {
				name := strings.TrimRight(a, "!?")
				fail, panics := strings.HasSuffix(a, "!"), strings.HasSuffix(a, "?")
				s.Push(name, func(context.Context) error {
					ran = append(ran, name)
					if panics {
						panic("oops")
					}
					if fail {
						return errors.New("boom")
					}
					return nil
				})
			}
			err := s.Run(context.Background(), 0)
			if got := strings.Join(ran, ","); got != tt.wantRun {
				t.Errorf("ran %q, want %q", got, tt.wantRun)
			}
			for _, w := range tt.wantErrs {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error %v, want it to contain %q", err, w)
				}
			}
			if len(tt.wantErrs) == 0 && err != nil {
				t.Errorf("unexpected error %v", err)
			}
			if s.Len() != 0 {
				t.Errorf("%d actions left after Run", s.Len())
			}
			if err := s.Run(context.Background(), 0); err != nil {
				t.Errorf("second Run: %v", err)
			}
		})
	}
}
