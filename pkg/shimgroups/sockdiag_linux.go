package shimgroups

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Listener is a listening unix socket as the kernel's sock_diag lists it:
// its socket inode, the inode of the file it is bound to (its VFS inode)
// and its bound name.
type Listener struct {
	Inode    string
	VFSInode uint64
	Name     string
}

// sock_diag's unix family (linux/unix_diag.h).
const (
	udiagShowName = 0x1
	udiagShowVFS  = 0x2
	unixDiagName  = 0
	unixDiagVFS   = 1
	tcpListen     = 10
)

// UnixListeners lists the listening unix sockets of the caller's network
// namespace with their bound files (NETLINK_SOCK_DIAG, UNIX_DIAG_VFS).
// /proc/net/unix alone cannot tell them apart: a socket whose file was
// removed keeps its name there, beside the one bound at the path since.
func UnixListeners() ([]Listener, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return nil, fmt.Errorf("sock_diag: %w", err)
	}
	defer unix.Close(fd)
	// Bound to port ID 0, the kernel gives the socket a free one; the
	// kernel's replies carry it.
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, fmt.Errorf("sock_diag: %w", err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return nil, fmt.Errorf("sock_diag: %w", err)
	}
	self, ok := sa.(*unix.SockaddrNetlink)
	if !ok {
		return nil, fmt.Errorf("sock_diag: the socket's address is a %T", sa)
	}
	if err := unix.Sendto(fd, dumpRequest(dumpSeq), 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, fmt.Errorf("sock_diag: %w", err)
	}
	// A reply that never comes (or never passes readDump's checks) is an
	// error, not a wait without end.
	const wait = 10 * time.Second
	tv := unix.NsecToTimeval(wait.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return nil, fmt.Errorf("sock_diag: %w", err)
	}
	buf := make([]byte, 1<<16)
	return readDump(func() ([]byte, unix.Sockaddr, error) {
		n, from, err := unix.Recvfrom(fd, buf, 0)
		for errors.Is(err, unix.EINTR) {
			// The kernel does not restart a receive with a timeout that a
			// signal interrupted (signal(7)): again.
			n, from, err = unix.Recvfrom(fd, buf, 0)
		}
		if errors.Is(err, unix.EAGAIN) {
			return nil, nil, fmt.Errorf("no reply of the kernel's to this request within %s: %w", wait, err)
		}
		if err != nil {
			return nil, nil, err
		}
		return buf[:n], from, nil
	}, dumpSeq, self.Pid)
}

// dumpSeq is the sequence number of UnixListeners' request.
const dumpSeq = 1

// dumpRequest asks for every listening unix socket with its name and
// bound file (a unix_diag_req).
func dumpRequest(seq uint32) []byte {
	req := make([]byte, 16+24)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	ne.PutUint32(req[8:], seq)
	req[16] = unix.AF_UNIX
	ne.PutUint32(req[20:], 1<<tcpListen)
	ne.PutUint32(req[28:], udiagShowName|udiagShowVFS)
	ne.PutUint32(req[32:], ^uint32(0))
	ne.PutUint32(req[36:], ^uint32(0))
	return req
}

// readDump reads the replies to the dump request seq of the socket whose
// port ID is port through recv (one datagram a call, with its sender)
// until the kernel's NLMSG_DONE. Only the kernel's replies to that
// request count: a datagram whose sender is not the kernel (port ID 0) is
// passed over unread (any process may send to this socket's port ID), as
// is a message of another sequence number or for another port ID (the
// kernel's replies carry the requester's).
func readDump(recv func() ([]byte, unix.Sockaddr, error), seq, port uint32) ([]Listener, error) {
	var out []Listener
	for {
		b, from, err := recv()
		if err != nil {
			return nil, fmt.Errorf("sock_diag: %w", err)
		}
		if sa, ok := from.(*unix.SockaddrNetlink); !ok || sa.Pid != 0 {
			continue
		}
		msgs, err := syscall.ParseNetlinkMessage(b)
		if err != nil {
			return nil, fmt.Errorf("sock_diag: %w", err)
		}
		for _, m := range msgs {
			if m.Header.Seq != seq || m.Header.Pid != port {
				continue // not a reply to this request of this socket
			}
			switch m.Header.Type {
			case unix.NLMSG_DONE:
				return out, nil
			case unix.NLMSG_ERROR:
				if len(m.Data) >= 4 {
					if errno := int32(binary.NativeEndian.Uint32(m.Data)); errno != 0 {
						return nil, fmt.Errorf("sock_diag: %w", syscall.Errno(-errno))
					}
				}
				return out, nil
			}
			if m.Header.Type != unix.SOCK_DIAG_BY_FAMILY {
				continue // NLMSG_NOOP and the like: no socket
			}
			l, err := parseUnixDiag(m.Data)
			if err != nil {
				return nil, fmt.Errorf("sock_diag: %w", err)
			}
			out = append(out, l)
		}
	}
}

// parseUnixDiag reads a unix_diag_msg and its attributes, each bounds-
// checked: its length must cover its header and fit in what is left of
// b. The last may end without its padding (the kernel's nla_ok/nla_next
// take it); a message cut short anywhere else (the unix_diag_msg, an
// attribute, an attribute's header) is an error, not a listener read in
// part.
func parseUnixDiag(b []byte) (Listener, error) {
	const msgLen = 16
	if len(b) < msgLen {
		return Listener{}, fmt.Errorf("a unix_diag_msg of %d bytes, below %d", len(b), msgLen)
	}
	ne := binary.NativeEndian
	l := Listener{Inode: strconv.FormatUint(uint64(ne.Uint32(b[4:])), 10)}
	a := b[msgLen:]
	for i := 0; len(a) > 0; i++ {
		if len(a) < 4 {
			after := "the unix_diag_msg"
			if i > 0 {
				after = fmt.Sprintf("attribute %d", i-1)
			}
			return Listener{}, fmt.Errorf("socket %s: %d bytes after %s: a truncated attribute header", l.Inode, len(a), after)
		}
		alen, atype := int(ne.Uint16(a[0:])), ne.Uint16(a[2:])
		if alen < 4 {
			return Listener{}, fmt.Errorf("socket %s: attribute %d (type %d) of %d bytes, below its header's 4", l.Inode, i, atype, alen)
		}
		if alen > len(a) {
			return Listener{}, fmt.Errorf("socket %s: attribute %d (type %d) of %d bytes, %d left: truncated", l.Inode, i, atype, alen, len(a))
		}
		data := a[4:alen]
		switch atype {
		case unixDiagName:
			// A path's name ends with its NUL; an abstract name starts
			// with one.
			if len(data) > 0 && data[0] != 0 {
				data = bytes.TrimRight(data, "\x00")
			}
			l.Name = string(data)
		case unixDiagVFS:
			if len(data) < 8 {
				return Listener{}, fmt.Errorf("socket %s: a UNIX_DIAG_VFS of %d bytes, below 8", l.Inode, len(data))
			}
			l.VFSInode = uint64(ne.Uint32(data[0:]))
		}
		// The padding, where there is one: the last attribute's may be cut.
		a = a[min(attrAlign(alen), len(a)):]
	}
	return l, nil
}

// attrAlign is an attribute's length with its padding (NLA_ALIGN).
func attrAlign(n int) int { return (n + 3) &^ 3 }
