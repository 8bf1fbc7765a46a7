package execlog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubelet-compat/kubelet-compat/pkg/snapshot"
)

func TestCheck(t *testing.T) {
	cands := []snapshot.Container{
		{Pod: "kc-e2e/nonroot", Name: "app", ID: "c1"},
		{Pod: "kc-e2e/web", Name: "httpd", ID: "c2"},
	}
	exitErr := errors.New("exec c1: exit 1")
	for _, tc := range []struct {
		name       string
		exec       map[string]error // per ID; missing: "ok"
		logErr     error
		fatal      func(error) bool
		cands      []snapshot.Container
		wantExec   bool
		wantLog    bool
		wantUsed   string
		wantDetail string
	}{
		{name: "the first takes the exec, its log holds the line", cands: cands,
			wantExec: true, wantLog: true, wantUsed: "c1", wantDetail: "kc-e2e/nonroot/app (c1"},
		{name: "the command's own exit tries the next", cands: cands, exec: map[string]error{"c1": exitErr},
			fatal:    func(err error) bool { return !strings.Contains(err.Error(), ": exit ") },
			wantExec: true, wantLog: true, wantUsed: "c2", wantDetail: "kc-e2e/web/httpd (c2"},
		{name: "the runtime's error ends the check", cands: cands, exec: map[string]error{"c1": errors.New("rpc error: code = Unavailable")},
			fatal:    func(err error) bool { return !strings.Contains(err.Error(), ": exit ") },
			wantUsed: "c1", wantDetail: "kc-e2e/nonroot/app: rpc error: code = Unavailable"},
		{name: "without Fatal every error tries the next", cands: cands, exec: map[string]error{"c1": errors.New("rpc error")},
			wantExec: true, wantLog: true, wantUsed: "c2"},
		{name: "the line never reaches the log", cands: cands, logErr: errors.New("crictl logs has no marker"),
			wantExec: true, wantUsed: "c1", wantDetail: "kc-e2e/nonroot/app (c1"},
		{name: "no container takes the exec", cands: cands, exec: map[string]error{"c1": exitErr, "c2": exitErr},
			wantDetail: "no container took the exec: kc-e2e/nonroot/app: exec c1: exit 1; kc-e2e/web/httpd: exec c1: exit 1"},
		{name: "no candidates", wantDetail: "no container took the exec: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var marker string
			n := Node{
				Exec: func(_ context.Context, id string, argv ...string) (string, error) {
					if err := tc.exec[id]; err != nil {
						return "", err
					}
					marker = strings.Fields(argv[len(argv)-1])[1]
					return "ok\n", nil
				},
				LogHas: func(_ context.Context, id, m string) (string, error) {
					assert.Check(t, is.Equal(m, marker), "the log must be searched for the line the exec wrote")
					return "/var/log/pods/x/0.log", tc.logErr
				},
				Fatal: tc.fatal,
			}
			execC, logC, used := Check(context.Background(), n, tc.cands)
			assert.Check(t, is.Equal(execC.Passed, tc.wantExec), execC.Detail)
			assert.Check(t, is.Equal(logC.Passed, tc.wantLog), logC.Detail)
			assert.Check(t, is.Equal(used.ID, tc.wantUsed))
			assert.Check(t, is.Contains(execC.Detail, tc.wantDetail))
			assert.Check(t, is.Equal(execC.Name, ExecCheck))
			if tc.logErr != nil {
				assert.Check(t, is.Contains(logC.Detail, tc.logErr.Error()))
			}
		})
	}
}

func TestAttach(t *testing.T) {
	c := snapshot.Container{Pod: "kc-e2e/web", Name: "httpd", ID: "c2"}
	for _, tc := range []struct {
		name string
		// attach is the transport: lines holds what the exec wrote.
		attach     func(ctx context.Context, lines <-chan string, out io.Writer) error
		execErr    error
		c          snapshot.Container
		wantPassed bool
		wantDetail string
	}{
		{name: "the stream carries the line as it is written", c: c, wantPassed: true,
			attach: func(ctx context.Context, lines <-chan string, out io.Writer) error {
				for {
					select {
					case <-ctx.Done():
						return ctx.Err()
					case l := <-lines:
						fmt.Fprintln(out, l)
					}
				}
			},
			wantDetail: "kc-e2e/web/httpd (c2): the attached stream carried the line"},
		{name: "the stream is written only when the attach ends (crictl in a node)", c: c, wantPassed: true,
			attach: func(ctx context.Context, lines <-chan string, out io.Writer) error {
				var got []string
				deadline := time.After(1200 * time.Millisecond)
				for {
					select {
					case l := <-lines:
						got = append(got, l)
					case <-deadline:
						_, err := fmt.Fprintln(out, strings.Join(got, "\n"))
						return err
					}
				}
			},
			wantDetail: "the attached stream carried the line"},
		{name: "the attach fails", c: c,
			attach: func(context.Context, <-chan string, io.Writer) error {
				return errors.New("rpc error: code = NotFound")
			},
			wantDetail: "kc-e2e/web/httpd (c2): attach: rpc error: code = NotFound"},
		{name: "the stream never carries the line", c: c,
			attach: func(ctx context.Context, _ <-chan string, out io.Writer) error {
				<-ctx.Done()
				return ctx.Err()
			},
			wantDetail: "none reached the attached stream"},
		{name: "no line can be written", c: c, execErr: errors.New("ExecSync c2: exit 1: sh: not found"),
			attach: func(ctx context.Context, _ <-chan string, out io.Writer) error {
				<-ctx.Done()
				return ctx.Err()
			},
			wantDetail: "no line written: ExecSync c2: exit 1"},
		{name: "no container", wantDetail: "no container took the exec"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines := make(chan string, 64)
			n := Node{
				Exec: func(_ context.Context, id string, argv ...string) (string, error) {
					assert.Check(t, is.Equal(id, tc.c.ID))
					if tc.execErr != nil {
						return "", tc.execErr
					}
					lines <- strings.Fields(argv[len(argv)-1])[1]
					return "", nil
				},
				Attach: func(ctx context.Context, id string, out io.Writer) error {
					assert.Check(t, is.Equal(id, tc.c.ID))
					return tc.attach(ctx, lines, out)
				},
				AttachFor: 1500 * time.Millisecond,
			}
			ch := Attach(context.Background(), n, tc.c)
			assert.Check(t, is.Equal(ch.Passed, tc.wantPassed), ch.Detail)
			assert.Check(t, is.Contains(ch.Detail, tc.wantDetail))
			assert.Check(t, is.Equal(ch.Name, AttachCheck))
		})
	}
}
