package devicecheckpoint

import (
	"testing"

	"gotest.tools/v3/assert"
)

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		deviceIDs string
		want      int
	}{
		{deviceIDs: `["dev-0"]`, want: 1},
		{deviceIDs: `{"0": ["dev-0"], "-1": ["dev-1"]}`, want: 2},
		{deviceIDs: `{"numa": ["dev-0"]}`, want: 0},
		{deviceIDs: `"dev-0"`, want: 0},
	} {
		cp, err := Parse([]byte(`{"Data": {"PodDeviceEntries": [{"PodUID": "u", "DeviceIDs": ` + tc.deviceIDs + `}]}}`))
		assert.NilError(t, err)
		assert.Equal(t, cp.Data.PodDeviceEntries[0].Format(), tc.want, tc.deviceIDs)
	}
	_, err := Parse([]byte("{"))
	assert.Assert(t, err != nil)
}
