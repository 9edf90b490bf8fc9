package redistest

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// echoServer answers every line with the same line.
func echoServer(t *testing.T) string {
	return tcpServer(t, func(c net.Conn) { _, _ = io.Copy(c, c) })
}

// tcpServer listens on a loopback port until the test ends and serves
// each connection with serve, closing it after.
func tcpServer(t *testing.T, serve func(c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(c)
			}()
		}
	}()
	return ln.Addr().String()
}

func newTestProxy(t *testing.T) *Proxy {
	t.Helper()
	p, err := NewProxy(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

type lineConn struct {
	net.Conn
	r *bufio.Reader
}

func dialLine(t *testing.T, addr string) *lineConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &lineConn{Conn: c, r: bufio.NewReader(c)}
}

// roundTrip sends a line and waits up to timeout for its echo.
func (c *lineConn) roundTrip(line string, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	_ = c.SetDeadline(start.Add(timeout))
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		return 0, err
	}
	got, err := c.r.ReadString('\n')
	if err != nil {
		return time.Since(start), err
	}
	if got != line+"\n" {
		return 0, errors.New("echo mismatch: " + got)
	}
	return time.Since(start), nil
}

func TestProxyPassAndLatency(t *testing.T) {
	p := newTestProxy(t)
	c := dialLine(t, p.Addr())
	if _, err := c.roundTrip("hello", 2*time.Second); err != nil {
		t.Fatal(err)
	}
	p.SetLatency(60 * time.Millisecond)
	d, err := c.roundTrip("slow", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// Both directions are delayed: at least 2 × 60ms.
	if d < 120*time.Millisecond {
		t.Fatalf("round trip %v with 60ms latency each way, want >= 120ms", d)
	}
	p.SetLatency(0)
	if _, err := c.roundTrip("fast", 2*time.Second); err != nil {
		t.Fatal(err)
	}
}

func TestProxyBlackholeHoldsThenDelivers(t *testing.T) {
	p := newTestProxy(t)
	c := dialLine(t, p.Addr())
	p.SetMode(Blackhole)
	if _, err := c.roundTrip("lost", 200*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("blackhole answered: %v", err)
	}
	// A new connection is accepted but silent too.
	c2 := dialLine(t, p.Addr())
	if _, err := c2.roundTrip("lost2", 200*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("blackhole answered a new connection: %v", err)
	}
	p.SetMode(Pass)
	// The held request arrives late, in order, then the next one.
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	got, err := c.r.ReadString('\n')
	if err != nil || got != "lost\n" {
		t.Fatalf("held bytes: %q %v", got, err)
	}
	if _, err := c.roundTrip("again", 2*time.Second); err != nil {
		t.Fatal(err)
	}
}

func TestProxyRejectAndCut(t *testing.T) {
	p := newTestProxy(t)
	c := dialLine(t, p.Addr())
	if _, err := c.roundTrip("a", 2*time.Second); err != nil {
		t.Fatal(err)
	}
	p.SetMode(Reject)
	if _, err := c.roundTrip("b", 2*time.Second); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("open connection survived reject: %v", err)
	}
	c2, err := net.Dial("tcp", p.Addr())
	if err == nil {
		_ = c2.SetDeadline(time.Now().Add(2 * time.Second))
		_, _ = c2.Write([]byte("x\n"))
		_, err = bufio.NewReader(c2).ReadString('\n')
		c2.Close()
	}
	if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("new connection served in reject mode: %v", err)
	}
	p.SetMode(Pass)
	c3 := dialLine(t, p.Addr())
	if _, err := c3.roundTrip("c", 2*time.Second); err != nil {
		t.Fatal(err)
	}
	p.Cut()
	if _, err := c3.roundTrip("d", 2*time.Second); err == nil {
		t.Fatal("connection survived a cut")
	}
	c4 := dialLine(t, p.Addr())
	if _, err := c4.roundTrip("e", 2*time.Second); err != nil {
		t.Fatalf("cut must not refuse new connections: %v", err)
	}
}

func TestProxyCloseWithHeldConnections(t *testing.T) {
	p, err := NewProxy(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	c := dialLine(t, p.Addr())
	p.SetMode(Blackhole)
	_, _ = c.Write([]byte("held\n"))
	time.Sleep(50 * time.Millisecond)
	done := make(chan error, 1)
	go func() { done <- p.Close() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hangs with a blackholed connection")
	}
}

// recordingEcho is echoServer that also hands every line it received to
// got, so a test can tell a request that arrived from one that did not.
func recordingEcho(t *testing.T) (addr string, got <-chan string) {
	lines := make(chan string, 16)
	addr = tcpServer(t, func(c net.Conn) {
		r := bufio.NewReader(c)
		for {
			l, err := r.ReadString('\n')
			if err != nil {
				return
			}
			lines <- l
			if _, err := c.Write([]byte(l)); err != nil {
				return
			}
		}
	})
	return addr, lines
}

func TestProxyLoseRepliesExecutesWithoutAnswer(t *testing.T) {
	addr, got := recordingEcho(t)
	p, err := NewProxy(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	received := func(want string) {
		t.Helper()
		select {
		case l := <-got:
			if l != want+"\n" {
				t.Fatalf("server received %q, want %q", l, want)
			}
		case <-time.After(2 * time.Second):
			t.Fatalf("server never received %q", want)
		}
	}
	c := dialLine(t, p.Addr())
	if _, err := c.roundTrip("a", 2*time.Second); err != nil {
		t.Fatal(err)
	}
	received("a")
	p.SetMode(LoseReplies)
	// The request reaches the server; its answer does not come back.
	if _, err := c.roundTrip("executed", 200*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("lose-replies answered: %v", err)
	}
	received("executed")
	// A new connection is served the same way.
	c2 := dialLine(t, p.Addr())
	if _, err := c2.roundTrip("executed2", 200*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("lose-replies answered a new connection: %v", err)
	}
	received("executed2")
	p.SetMode(Pass)
	// The held answer arrives late, in order, then the next one.
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if l, err := c.r.ReadString('\n'); err != nil || l != "executed\n" {
		t.Fatalf("held answer: %q %v", l, err)
	}
	if _, err := c.roundTrip("b", 2*time.Second); err != nil {
		t.Fatal(err)
	}
	received("b")
}
