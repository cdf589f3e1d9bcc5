//go:build unix

package lockx

import (
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// droppingAddr returns a loopback address whose listener never accepts and
// whose accept queue is full, so the kernel drops new connection attempts:
// a dial hangs, as to a host that is down or firewalled.
func droppingAddr(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil { // room for one pending connection
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
	for range 8 {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			return addr // the queue is full: attempts are dropped now
		}
		t.Cleanup(func() { _ = c.Close() })
	}
	t.Fatalf("%s still accepts connections after 8", addr)
	return ""
}

// refusingAddr returns a loopback address nothing listens on.
func refusingAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}
