package redistest

import (
	"net"
	"strconv"
	"syscall"
	"time"
)

// Unanswering returns a loopback address that never completes a TCP
// handshake, as a host behind a firewall that drops packets: a listening
// socket with a backlog of 0 whose accept queue is filled and never
// accepted, so the kernel drops every further SYN and a dial hangs until
// its own deadline. Everything is closed when the test ends.
func Unanswering(tb TB) string {
	tb.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		tb.Fatalf("redistest: socket: %v", err)
	}
	tb.Cleanup(func() { _ = syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		tb.Fatalf("redistest: bind: %v", err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		tb.Fatalf("redistest: listen: %v", err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		tb.Fatalf("redistest: getsockname: %v", err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
	// Fill the accept queue: dials succeed until it is full, then hang.
	for i := 0; ; i++ {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return addr
		}
		tb.Cleanup(func() { _ = c.Close() })
		if i == 16 {
			tb.Fatalf("redistest: %s kept accepting connections", addr)
		}
	}
}
