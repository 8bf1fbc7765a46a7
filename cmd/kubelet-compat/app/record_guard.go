package app

import "context"

// prepareRecord runs before record does anything else: it takes the lock
// sweep takes, so that sweep cannot delete what record writes between its
// check and its delete.
func (o *nodeOptions) prepareRecord(ctx context.Context, env Env) (release func(), err error) {
	return o.lockCompatFile(ctx, o.compatPath())
}
