package local

import "os"

// LinkExists reports whether a network interface exists.
func LinkExists(name string) bool {
	_, err := os.Stat("/sys/class/net/" + name)
	return err == nil
}
